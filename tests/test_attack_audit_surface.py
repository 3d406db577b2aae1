"""Fresh-eyes attacks on the audit, dashboard and CLI surface (issue 21): each test is an attack
that worked against the merged code, kept so that it keeps failing to work.

- terminal escapes: a record's content reached the operator's terminal raw through ``records
  show|list|history`` (rich strips only BEL, BS, VT, FF and CR): ESC [2J cleared the screen,
  ESC ] 52 wrote the clipboard, ESC [8m hid text, C1 CSI (U+009B) passed even in ``--json``;
- exception messages on spans: a failed operation's ``exception`` event carried the
  exception's message, which held the query an embedder refused, or the subject id an
  erasure was asked for, with content capture off.
"""

from __future__ import annotations

import json
import unicodedata
from collections.abc import Iterator
from pathlib import Path

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from memwarden import InvalidRequest, Memory, Principal
from memwarden.cli import main
from memwarden.memory import tracing
from memwarden.memory.embeddings import HashingEmbedding
from tests.conftest import HOSPITAL

pytestmark = pytest.mark.integration

POLICY = HOSPITAL + "p, physician, ward3/patients/*, history\n"

#: What a record may hold that a terminal would act on: CSI clear screen and home, OSC 52
#: (write the clipboard), SGR 8 (conceal), C1 CSI, DEL, a lone CR and a backspace.
HOSTILE = ("Bed 4 \x1b[2J\x1b[H cleared", "Bed 5 \x1b]52;c;ZWNobyBwd25lZA==\x07 clipboard",
           "Bed 6 \x1b[8m concealed", "Bed 7 \x9b2J C1 clear", "Bed 8 \x7f\x08 rubout")


def _terminal_controls(text: str) -> list[str]:
    """Every character of ``text`` a terminal could act on (newline and tab aside)."""
    return [f"U+{ord(ch):04X}" for ch in text if ch not in "\n\t"
            and (unicodedata.category(ch) == "Cc" or ch in "\u061c\u200e\u200f" or 0x202A <= ord(ch) <= 0x202E
                 or 0x2066 <= ord(ch) <= 0x2069)]


@pytest.fixture
def hostile_store(tmp_path: Path) -> tuple[list[str], list[str]]:
    policy = tmp_path / "policy.csv"
    policy.write_text(POLICY, encoding="utf-8")
    with Memory.open(tmp_path / "d", policy=policy, embedding=HashingEmbedding()) as mem:
        alice = mem.session(Principal("alice"))
        ids = [alice.write(text, "ward3/patients/p12").id for text in HOSTILE]
        ids.append(alice.update(ids[0], HOSTILE[0] + " again").id)
    return ids, ["--data", str(tmp_path / "d"), "--policy", str(policy), "--principal", "alice"]


def test_records_verbs_never_send_terminal_controls(hostile_store, capsys) -> None:
    ids, actor = hostile_store
    outputs = []
    for args in (["list", "--namespace", "ward3"], ["history", ids[-1]], *(["show", i] for i in ids[1:])):
        assert main(["records", *args, *actor]) == 0
        outputs.append(capsys.readouterr().out)
    for out in outputs:
        assert _terminal_controls(out) == [], out
    # What was neutralised is still visible: the operator sees that something was there.
    assert "Bed 4 \u241b[2J\u241b[H cleared again" in outputs[-1]


def test_records_json_is_exact_and_holds_no_terminal_controls(hostile_store, capsys) -> None:
    ids, actor = hostile_store
    assert main(["records", "list", *actor, "--namespace", "ward3", "--json", "-k", "50"]) == 0
    out = capsys.readouterr().out
    assert _terminal_controls(out) == []
    contents = {json.loads(line)["content"] for line in out.splitlines()}
    assert set(HOSTILE[1:]) <= contents  # escapes decode to the exact text


# -- exception messages on spans -------------------------------------------------------------------

SECRET = "Zanzibarine"


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    provider, exporter = TracerProvider(), InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracing.set_tracer_provider(provider)
    tracing.capture_content(False)
    yield exporter
    tracing.set_tracer_provider(None)
    tracing.capture_content(None)


class _RefusingEmbedding(HashingEmbedding):
    """A hosted embedding API that quotes the input it refuses, as many clients do."""

    def embed_query(self, text: str) -> list[float]:
        if "refuse" in text:
            raise RuntimeError(f"embedding API refused input {text!r}: policy violation")
        return super().embed_query(text)


def _leaks(exporter: InMemorySpanExporter, secret: str) -> list[str]:
    found = []
    for span in exporter.get_finished_spans():
        blob = json.loads(span.to_json())
        if secret in json.dumps(blob):
            found.append(f"{span.name}: {json.dumps(blob['attributes'])} {json.dumps(blob['events'])}"[:400])
    return found


def test_a_failed_operation_span_carries_no_query_or_subject(tmp_path: Path, policy_file: Path, spans) -> None:
    with Memory.open(tmp_path / "d", policy=policy_file, embedding=_RefusingEmbedding()) as mem:
        alice, dpo = mem.session(Principal("alice")), mem.session(Principal("dpo"))
        alice.write(f"Patient {SECRET} is allergic to penicillin", "ward3/patients/p12", subjects=["p12"])
        with pytest.raises(RuntimeError, match=SECRET):  # the caller still gets the whole message
            alice.search(f"please refuse {SECRET}", "ward3/patients")
        with pytest.raises(InvalidRequest, match=SECRET):
            dpo.erase(subject=f"{SECRET}\u200b")
        with pytest.raises(InvalidRequest, match=SECRET):
            alice.write("Bed 9 is free", f"ward3/patients/{SECRET}\u200b")
    assert _leaks(spans, SECRET) == []
    failed = [s for s in spans.get_finished_spans() if s.attributes.get("error.type")]
    assert sorted(s.attributes["error.type"] for s in failed) == ["InvalidRequest", "InvalidRequest", "RuntimeError"]
    for span in failed:
        (event,) = [e for e in span.events if e.name == "exception"]
        assert event.attributes["exception.type"] == span.attributes["error.type"]
        assert event.attributes["exception.message"] == tracing.MESSAGE_WITHHELD
        assert "Traceback" not in event.attributes["exception.stacktrace"]  # frames only, no message line


def test_with_content_capture_on_the_span_has_the_message(tmp_path: Path, policy_file: Path, spans) -> None:
    tracing.capture_content(True)
    with Memory.open(tmp_path / "d", policy=policy_file, embedding=_RefusingEmbedding()) as mem:
        with pytest.raises(RuntimeError):
            mem.session(Principal("alice")).search(f"please refuse {SECRET}", "ward3/patients")
    (event,) = [e for s in spans.get_finished_spans() for e in s.events if e.name == "exception"]
    assert SECRET in event.attributes["exception.message"]


# -- policy who-can against the engine and the reference model ---------------------------------------

def test_who_can_agrees_with_decide_on_random_policies() -> None:
    """Every row of who-can is the engine's decision (and the reference model's) for that role or
    principal; it lists every role and declared principal; and a principal given any set of
    roles at run time is allowed only if some role row it holds says allow (the doc's claim that
    the role rows answer for it)."""
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from memwarden.policies.tools import who_can
    from tests.test_policy_property import (
        ACTIONS, FAST, ROLES, codes, decode_namespace, engine_for, policies, ref_decide, ref_principals, ref_refused,
        ref_review,
    )

    @settings(max_examples=300, **FAST)
    @given(policy=policies, code=codes, action=st.sampled_from(ACTIONS), mask=st.integers(0, 7))
    def prop(policy, code, action, mask):
        rules, links = policy
        engine = engine_for(rules, links)
        namespace = decode_namespace(code, rules)
        holders = who_can(engine, action, namespace)
        principals = ref_principals(links)
        names = {s for s, *_ in rules} | {m for m, _ in links} | {r for _, r in links}
        assert {h.name for h in holders if not h.is_role} == principals
        assert {h.name for h in holders if h.is_role} == names - principals
        for holder in holders:
            who, given_roles = ("u9", (holder.name,)) if holder.is_role else (holder.name, ())
            expected = ref_decide(rules, links, who, given_roles, action, namespace)
            assert holder.decision.allowed == expected, (holder, rules, links, action, namespace)
            assert holder.decision.review == ref_review(rules, links, who, given_roles, action, namespace)
            assert holder.decision.allowed == engine.decide(engine.subjects(who, given_roles), action,
                                                            namespace).allowed
        run_time = tuple(r for i, r in enumerate(ROLES) if mask >> i & 1)
        if run_time and not ref_refused(run_time, links) and ref_decide(rules, links, "u9", run_time, action,
                                                                        namespace):
            rows = {h.name: h.decision.allowed for h in holders if h.is_role}
            assert any(rows.get(r) for r in run_time), (rules, links, run_time, action, namespace)

    prop()


# -- a mistyped --audit made a new, empty audit log -----------------------------------------------------

def test_records_never_audit_into_a_new_log(tmp_path: Path, capsys) -> None:
    """``records list --audit TYPO`` served the records and audited the read in a new log
    created at TYPO, so the store's own log never saw it; the same for any open that may not
    create a store (``erase`` without ``--create``, ``read_only=True``)."""
    policy = tmp_path / "policy.csv"
    policy.write_text(POLICY, encoding="utf-8")
    log = tmp_path / "external-audit.sqlite3"
    with Memory.open(tmp_path / "d", policy=policy, audit=log, embedding=HashingEmbedding()) as mem:
        mem.session(Principal("alice")).write("Patient 12 is allergic to penicillin", "ward3/patients/p12",
                                              subjects=["p12"])
    actor = ["--data", str(tmp_path / "d"), "--policy", str(policy)]
    # In another directory, so that the log's anchored head (beside its key) does not catch it.
    (tmp_path / "elsewhere").mkdir()
    typo = tmp_path / "elsewhere" / "external-audit.sqlite3"
    assert main(["records", "list", *actor, "--principal", "alice", "--audit", str(typo)]) == 2
    out = capsys.readouterr().out
    assert "no audit log at" in out and "penicillin" not in out
    assert main(["erase", *actor, "--principal", "dpo", "--subject", "p12", "--audit", f"sqlite:///{typo}"]) == 2
    capsys.readouterr()
    assert not typo.exists()
    # Without --audit, the store's directory holds no log of its own: refused too, not created.
    with pytest.raises(InvalidRequest, match="no audit log"):
        Memory.open(tmp_path / "d", policy=policy, read_only=True)
    assert not (tmp_path / "d" / "audit.sqlite3").exists()
    # The right log still opens.
    assert main(["records", "list", *actor, "--principal", "alice", "--audit", str(log)]) == 0


# -- demo --data pointed at a real store ------------------------------------------------------------------

def test_the_demo_never_runs_in_an_existing_store(tmp_path: Path, capsys) -> None:
    """``memwarden demo --data ./data`` (``--data`` names the real store for every other verb)
    wrote the ward scenario into that store and erased subject p14 there: the store's own
    records about p14 were erased with the demo's."""
    store = tmp_path / "data"
    with Memory.open(store, policy="hospital") as mem:  # the demo's own embedding, so that it could run
        own = mem.session(Principal("alice")).write("Patient 14 was admitted on Monday", "ward3/patients/p14",
                                                    subjects=["p14"])
    before = sorted(p.name for p in store.iterdir())
    assert main(["demo", "--data", str(store)]) == 2
    assert "not a new or empty directory" in capsys.readouterr().out
    assert sorted(p.name for p in store.iterdir()) == before
    with Memory.open(store, policy="hospital", read_only=True) as mem:
        assert mem.session(Principal("alice")).get(own.id) is not None
