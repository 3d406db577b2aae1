"""The attack classes of "Governance that holds under attack (1)", one test (or more) each.

Written against the public API only, so that the same file runs against older code: each
test here failed on the code before the pipeline restructuring (commit 9c790f2) and passes
after it. See docs/threat-model.md for what is promised.
"""

from __future__ import annotations

import statistics
import time
from pathlib import Path

import pytest
from langgraph.store.base import PutOp

from memwarden import AccessDenied, InvalidRequest, Memory, Principal, Status, WriteOp
from memwarden.integrations.binding import bind_principal
from memwarden.memory.embeddings import HashingEmbedding

pytestmark = pytest.mark.integration

POLICY = """
p, physician, ward3/**, read
p, physician, ward3/**, write
p, physician, ward3/**, update
p, physician, ward3/**, approve
p, physician, ward3/**, history
p, nurse, ward3/notes/**, read, allow, label.sensitivity!=restricted
p, nurse, ward3/notes/**, write
p, nurse, ward3/notes/**, update
p, contractor, ward3/notes/**, read, allow, label.audience=external
p, portal, ward3/notes/**, read, allow, writer_role=physician
p, reviewer, ward3/review/**, approve
p, writer, ward3/review/**, write, review
p, writer, ward3/review/**, read
p, writer, ward3/review/**, update
p, writer, ward3/facts/**, read
p, officer, ward3/notes/**, erase
p, officer, ward3/notes/**, read
p, stranger, elsewhere/**, read
p, stranger, elsewhere/**, write
p, stranger, elsewhere/**, erase
p, stranger, elsewhere/**, approve
p, stranger, elsewhere/**, history
p, stranger, elsewhere/**, update
p, stranger, elsewhere/**, forget
p, anyone, ward3/notes/**, write
cap, ward3/inbox/*, 2
p, physician, ward3/inbox/*, write
p, physician, ward3/inbox/*, read
p, physician, ward3/inbox/*, forget
p, intern, ward3/inbox/*, write
p, intern, ward3/inbox/*, read
g, alice, physician
g, nora, nurse
g, cora, contractor
g, pat, portal
g, rev1, reviewer
g, rev2, reviewer
g, wes, writer
g, olga, officer
g, sam, stranger
g, ian, intern
g, norole, anyone
"""

ALICE, NORA, CORA, PAT = (Principal(p) for p in ("alice", "nora", "cora", "pat"))
REV1, REV2, WES, OLGA, SAM, IAN = (Principal(p) for p in ("rev1", "rev2", "wes", "olga", "sam", "ian"))
MISSING = "mem_" + "f" * 32


class CountingEmbedding(HashingEmbedding):
    """The test embedding, counting the texts it is given."""

    def __init__(self) -> None:
        super().__init__()
        self.texts: list[str] = []

    def embed_documents_array(self, texts):
        self.texts += list(texts)
        return super().embed_documents_array(texts)

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.texts += list(texts)
        return super().embed_documents(texts)

    def embed_query(self, text: str) -> list[float]:
        self.texts.append(text)
        return super().embed_query(text)


@pytest.fixture
def embedder() -> CountingEmbedding:
    return CountingEmbedding()


@pytest.fixture
def mem(tmp_path: Path, embedder: CountingEmbedding):
    policy = tmp_path / "policy.csv"
    policy.write_text(POLICY, encoding="utf-8")
    memory = Memory.open(tmp_path / "data", policy=policy, embedding=embedder, validators=[], quorum=2)
    yield memory
    memory.close()


def _answer(call) -> tuple[str, str]:
    """What a caller sees of one call: the exception type and message, or the result."""
    try:
        return "ok", repr(call())
    except Exception as exc:  # noqa: BLE001 - the answer is what is compared
        return type(exc).__name__, str(exc)


def _same_answer(call, hidden: str) -> None:
    """``call(id)`` answers a hidden id exactly as a missing one (ids aside)."""
    kind_h, text_h = _answer(lambda: call(hidden))
    kind_m, text_m = _answer(lambda: call(MISSING))
    assert kind_h == kind_m and text_h.replace(hidden, "ID") == text_m.replace(MISSING, "ID"), \
        (kind_h, text_h, kind_m, text_m)


# -- 1. existence oracles: decide before lookup ----------------------------------------------------

def test_id_operations_answer_a_hidden_record_like_a_missing_one(mem: Memory) -> None:
    secret = mem.session(ALICE).write("Patient 12 is HIV positive", "ward3/patients/p12", subjects=["p12"])
    sam = mem.session(SAM)  # holds every action, but only under elsewhere/
    _same_answer(sam.get, secret.id)
    _same_answer(sam.retract, secret.id)
    _same_answer(sam.history, secret.id)
    _same_answer(sam.approve, secret.id)
    _same_answer(lambda i: sam.update(i, "changed"), secret.id)
    _same_answer(sam.forget, secret.id)
    _same_answer(lambda i: sam.erase(ids=[i]).model_dump(include={"count", "cascaded", "held", "erased_ids_sha256",
                                                                   "record_leaves", "records_digest", "rules"}),
                 secret.id)


def test_erase_by_subject_without_rights_says_nothing_about_the_subject(mem: Memory) -> None:
    mem.session(ALICE).write("Patient 12 is HIV positive", "ward3/patients/p12", subjects=["p12"])
    nora = mem.session(NORA)  # no erase right anywhere
    assert _answer(lambda: nora.erase(subject="p12")) == _answer(lambda: nora.erase(subject="p99"))
    assert _answer(lambda: nora.erase(subject="p12"))[0] == "AccessDenied"


def test_a_receipt_confirms_nothing_outside_the_callers_scope(mem: Memory) -> None:
    mem.session(ALICE).write("Patient 12 is HIV positive", "ward3/patients/p12", subjects=["p12"])
    sam = mem.session(SAM)  # may erase under elsewhere/ only
    hidden = sam.erase(subject="p12")
    nothing = sam.erase(subject="p99")
    fields = ("count", "cascaded", "erased_ids_sha256")
    assert [getattr(hidden, f) for f in fields] == [getattr(nothing, f) for f in fields]


def test_a_tombstone_confirms_no_erasure_outside_the_writers_scope(mem: Memory) -> None:
    text = "Patient 12 takes lithium"
    mem.session(ALICE).write(text, "ward3/notes/p12", subjects=["p12"])
    assert mem.session(OLGA).erase(subject="p12").count == 1
    # In another namespace the same text is a new record: nothing says it was erased elsewhere.
    assert mem.session(SAM).write(text, "elsewhere/p12", subjects=["p12"]).status is Status.ACTIVE


@pytest.mark.slow
def test_get_of_a_hidden_id_costs_what_a_missing_one_costs(tmp_path: Path) -> None:
    policy = tmp_path / "policy.csv"
    policy.write_text(POLICY, encoding="utf-8")
    with Memory.open(tmp_path / "data", policy=policy, embedding=HashingEmbedding(), validators=[]) as mem:
        alice = mem.session(ALICE)
        # Many partitions, so that probing all of them for an unknown id is what it costs.
        for i in range(24):
            alice.write(f"note {i}", f"ward3/w{i}/x")
        secret = alice.write("Patient 12 is HIV positive", "ward3/patients/p12")
        sam = mem.session(SAM)
        hidden, missing = [], []
        for _ in range(3):  # warm up
            sam.get(secret.id), sam.get(MISSING)
        for _ in range(40):  # interleaved, so that the machine's load falls on both alike
            for rid, times in ((secret.id, hidden), (MISSING, missing)):
                started = time.perf_counter()
                assert sam.get(rid) is None
                times.append(time.perf_counter() - started)
        ratio = statistics.median(missing) / statistics.median(hidden)
        assert 0.5 < ratio < 2.0, ratio  # before the restructuring: about 20x


# -- 2. complete records: nothing carries over from an earlier version -------------------------------

def _put(mem: Memory, principal: Principal, key: str, value: dict, ttl: float | None = None) -> None:
    with bind_principal(principal):
        mem.as_store().batch([PutOp(("ward3", "notes", "n1"), key, value, ttl=ttl)])


def _get(mem: Memory, principal: Principal, key: str):
    with bind_principal(principal):
        return mem.as_store().get(("ward3", "notes", "n1"), key)


def test_a_keyed_overwrite_drops_the_old_labels(mem: Memory) -> None:
    alice = mem.session(ALICE)
    alice.write("Visiting hours are 2-4pm", "ward3/notes/n1", key="k", labels={"audience": "external"})
    assert mem.session(CORA).search(None, "ward3/notes", k=5)
    alice.write("Internal: staff shortage on night shift", "ward3/notes/n1", key="k")
    assert mem.session(CORA).search(None, "ward3/notes", k=5) == []


def test_a_keyed_overwrite_drops_the_old_writers_roles(mem: Memory) -> None:
    mem.session(ALICE).write("Dose: 5 mg", "ward3/notes/n1", key="k")
    assert [h.record.content for h in mem.session(PAT).search(None, "ward3/notes", k=5)] == ["Dose: 5 mg"]
    # A principal the policy names but gives no role to (it may write here, and could not read
    # the item under the key anyway, so its overwrite is refused); a nurse's overwrite is a nurse's.
    with pytest.raises(AccessDenied):
        mem.session(Principal("norole")).write("Dose: 50 mg", "ward3/notes/n1", key="k")
    mem.session(NORA).write("Dose: 50 mg", "ward3/notes/n1", key="k")
    assert mem.session(PAT).search(None, "ward3/notes", k=5) == []  # not physician-written any more


def test_a_put_without_ttl_after_one_with_ttl_does_not_expire(mem: Memory) -> None:
    _put(mem, ALICE, "k", {"v": 1}, ttl=0.005)  # minutes: 0.3 s
    _put(mem, ALICE, "k", {"v": 2})
    time.sleep(0.5)
    item = _get(mem, ALICE, "k")
    assert item is not None and item.value == {"v": 2}


def test_an_expired_key_put_again_is_visible(mem: Memory) -> None:
    _put(mem, ALICE, "k", {"v": 1}, ttl=0.005)
    time.sleep(0.5)
    assert _get(mem, ALICE, "k") is None
    _put(mem, ALICE, "k", {"v": 2})
    item = _get(mem, ALICE, "k")
    assert item is not None and item.value == {"v": 2}


def test_every_field_of_a_version_is_its_own(mem: Memory) -> None:
    alice = mem.session(ALICE)
    first = alice.write("v1", "ward3/notes/n1", key="k", labels={"a": "x", "b": "y"}, subjects=["p1", "p2"],
                        ttl=3600)
    second = alice.write("v2", "ward3/notes/n1", key="k", labels={"b": "z"}, subjects=["p3"])
    got = alice.get(second.id)
    assert got is not None and first.id == second.id
    assert (got.content, got.labels, got.subjects, got.expires_at, got.version) == ("v2", {"b": "z"}, ("p3",), None, 2)
    third = alice.write("v3", "ward3/notes/n1", key="k")
    got = alice.get(third.id)
    assert (got.labels, got.subjects, got.approvals, got.version) == ({}, (), (), 3)


# -- 3. a keyed overwrite needs read and update on the old record ------------------------------------

def test_a_keyed_overwrite_of_an_item_the_writer_may_not_read_is_refused_without_a_version(mem: Memory) -> None:
    mem.session(ALICE).write("Restricted assessment", "ward3/notes/n1", key="k", labels={"sensitivity": "restricted"})
    nora = mem.session(NORA)
    with pytest.raises(AccessDenied) as info:
        nora.write("my note", "ward3/notes/n1", key="k")
    assert "version" not in str(info.value) and "restricted" not in str(info.value)
    got = mem.session(ALICE).search(None, "ward3/notes", k=5)
    assert [h.record.content for h in got] == ["Restricted assessment"]


# -- 4. quorum bound to content ------------------------------------------------------------------------

def test_approvals_do_not_survive_a_keyed_overwrite(mem: Memory) -> None:
    wes = mem.session(WES)
    first = wes.write("Proposal: buy new beds", "ward3/review/r1", key="k")
    assert first.status is Status.QUARANTINED
    mem.session(REV1).approve(first.id)
    wes.write("Proposal: wire 10,000 EUR to account 99", "ward3/review/r1", key="k")
    assert mem.session(REV2).approve(first.id).status is Status.QUARANTINED  # one fresh vote of two


def test_approvals_do_not_survive_a_retraction(mem: Memory) -> None:
    alice = mem.session(ALICE)
    root = alice.write("Supplier X is trusted", "ward3/facts/a")
    wes = mem.session(WES)
    child = wes.write("Order from supplier X weekly", "ward3/review/c", parents=[root.id])
    mem.session(REV1).approve(child.id)
    assert mem.session(REV2).approve(child.id).status is Status.ACTIVE
    alice.retract(root.id)  # the child is quarantined again, as tainted
    assert mem.session(REV1).approve(child.id).status is Status.QUARANTINED


def test_approve_returns_no_content_to_a_reviewer_who_may_not_read(mem: Memory) -> None:
    pending = mem.session(WES).write("Proposal: a secret plan", "ward3/review/r1")
    result = mem.session(REV1).approve(pending.id)
    assert "secret plan" not in repr(result)


# -- 5. one lifecycle for all reads ----------------------------------------------------------------------

def test_history_hides_an_expired_record_like_get(mem: Memory) -> None:
    alice = mem.session(ALICE)
    rec = alice.write("Door code 4711", "ward3/notes/n1", ttl=0.3)
    time.sleep(0.5)
    assert alice.get(rec.id) is None
    with pytest.raises(InvalidRequest):
        alice.history(rec.id)


def test_capacity_eviction_is_the_policys_and_audited_as_such(mem: Memory) -> None:
    alice, ian = mem.session(ALICE), mem.session(IAN)
    a = alice.write("alice 1", "ward3/inbox/x")
    alice.write("alice 2", "ward3/inbox/x")
    ian.write("ian 1", "ward3/inbox/x")  # ian may not forget: the cap line evicts, not ian
    assert alice.get(a.id) is None
    evictions = [e for e in mem.audit_log.entries() if e["op"] == "evict" and e["records"]]
    assert evictions and evictions[-1]["records"] == [a.id] and evictions[-1]["rules"] == ["cap, ward3/inbox/*, 2"]
    assert evictions[-1]["principal"] != "ian"


# -- 6. nothing before the decision; spans end with the real outcome ---------------------------------------

def test_a_denied_batch_of_writes_embeds_nothing(mem: Memory, embedder: CountingEmbedding) -> None:
    with pytest.raises(AccessDenied):
        mem.session(CORA).batch([WriteOp(f"secret text {i}", "ward3/notes/n1") for i in range(5)])
    assert not any(t.startswith("secret text") for t in embedder.texts)


def test_a_batch_embeds_its_writes_together_and_only_after_they_are_decided(mem: Memory,
                                                                             embedder: CountingEmbedding) -> None:
    ops = [WriteOp(f"note {i}", "ward3/notes/n1") for i in range(3)] + [WriteOp("not allowed", "ward3/other/x")]
    with pytest.raises(AccessDenied):
        mem.session(NORA).batch(ops)
    assert sorted(embedder.texts) == ["note 0", "note 1", "note 2"]  # stored: the ones before the denial


# -- issue 17, class 7: provenance the caller cannot forge -------------------------------------------

CLAIM_POLICY = """
p, nurse, ward/**, read
p, nurse, ward/**, write
p, nurse, ward/**, write, review, source=tool|external
p, ingest, ward/**, write
p, ingest, ward/**, read
p, ingest, ward/**, claim, allow, source=tool
g, nina, nurse
g, bot, ingest
"""


@pytest.fixture
def claims(tmp_path: Path):
    policy = tmp_path / "policy.csv"
    policy.write_text(CLAIM_POLICY, encoding="utf-8")
    with Memory.open(tmp_path / "data", policy=policy, embedding=HashingEmbedding(), validators=[]) as memory:
        yield memory


def test_a_tool_bound_session_cannot_declare_a_more_trusted_source(claims: Memory) -> None:
    tool = claims.session(Principal("nina"), source="tool")
    assert tool.write("Lab system: potassium 5.9", "ward/p1").status is Status.QUARANTINED
    with pytest.raises(AccessDenied, match="may not claim"):
        tool.write("Lab system: potassium 6.1", "ward/p1", source="agent")  # the bypass of the review rule
    with pytest.raises(AccessDenied, match="may not claim"):  # nor more trust than its binding
        claims.session(Principal("nina"), source="tool", trust=0.5).write("potassium 6.2", "ward/p1", trust=0.9)
    # Declaring less trust than the binding gives is always allowed.
    assert claims.session(Principal("nina")).write("copied from the lab system", "ward/p1",
                                                     source="tool").status is Status.QUARANTINED


def test_a_claim_is_granted_only_as_the_policy_says(claims: Memory) -> None:
    bot = claims.session(Principal("bot"), source="external")
    assert bot.write("Feed: bed 4 free", "ward/beds", source="tool").source.value == "tool"
    with pytest.raises(AccessDenied, match="may not claim"):
        bot.write("Feed: bed 5 free", "ward/beds", source="user")


def test_the_store_and_the_tools_write_as_an_agent(claims: Memory) -> None:
    from memwarden.integrations.tools import memory_tools

    with bind_principal(Principal("nina")):
        claims.as_store().put(("ward", "p2"), "k", {"v": 1})
    [record] = [h.record for h in claims.session(Principal("nina")).search(None, "ward/p2", k=5)]
    assert record.source.value == "agent"
    remember = next(t for t in memory_tools(claims.session(Principal("nina"))) if t.name == "remember")
    remember.invoke({"content": "a tool-written note", "namespace": "ward/p3"})
    [record] = [h.record for h in claims.session(Principal("nina")).search(None, "ward/p3", k=5)]
    assert record.source.value == "agent"


def test_maintenance_at_open_is_audited_as_the_cores_own_operation(tmp_path: Path) -> None:
    policy = tmp_path / "policy.csv"
    policy.write_text(POLICY, encoding="utf-8")
    opened = dict(policy=policy, embedding=HashingEmbedding(), validators=[])
    with Memory.open(tmp_path / "data", **opened) as mem:
        mem.session(ALICE).write("Bed 3 is free", "ward3/notes/n1")
    (tmp_path / "data" / "lexical.sqlite3").unlink()  # lost: the open rebuilds it from Chroma
    with Memory.open(tmp_path / "data", **opened) as mem:
        [entry] = [e for e in mem.audit_log.entries() if e["op"] == "maintain"]
        assert entry["principal"] == "memwarden" and entry["outcome"] == "ok"
        assert any("lexical index rebuilt" in rule for rule in entry["rules"])
        assert mem.audit_log.verify().ok
    with Memory.open(tmp_path / "data", **opened) as mem:  # nothing to do: nothing logged
        assert len([e for e in mem.audit_log.entries() if e["op"] == "maintain"]) == 1
