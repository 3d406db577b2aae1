"""The detector's worst case on any 32 KB write (issue 18, item 4): every rule and helper runs
in linear time, so no text an attacker writes takes it past 200 ms, and a slow write by one
principal does not hold up another principal's reads.

The one timed bound of the suite, as the issue asks: CPU time (``time.process_time``), 200 ms,
the least of up to three runs on a collected, frozen heap (``_cpu``; ``benchmarks/poisoning.py``
reports the worst case, best of three runs); the heartbeat, which is wall-clock time, is held to 200 ms beyond a control
arm of ordinary writes run in turn with the adversarial ones. Before the rules ran on RE2, "<~" repeated took 5.0 s, "$0" repeated with one
leet word 2.5 s, and the heartbeat of another principal ran 5.4 s late.
"""

from __future__ import annotations

import gc
import hashlib
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from benchmarks.adversarial_inputs import SIZE, adversarial_texts, fill
from memwarden import Memory, Principal, WriteRejected
from memwarden.guards import directives, injection as inj, sending, values
from memwarden.guards.contradiction import ContradictionCheck
from memwarden.guards.validators import ValidationContext
from memwarden.core.records import MemoryRecord, Principal as P, Source
from memwarden.policies.subjects import Subjects
from memwarden.guards.judge import _json_object
from memwarden.memory.embeddings import HashingEmbedding
from memwarden.orchestrator.worker import _unfenced

# Every bound here is CPU or wall time: the module runs in ``make test``, where each test has a
# process to itself, not in ``make test-fast`` beside another worker.
pytestmark = [pytest.mark.unit, pytest.mark.slow]

BOUND = 0.200  # seconds of CPU time per 32 KB text

DET = inj.InjectionDetector()
TEXTS = adversarial_texts(inj._rule_set().rules)


@pytest.fixture(autouse=True)
def _frozen_heap():
    """Collect the heap and freeze it for the test: a collection a measured run sets off then
    walks that run's own objects, not everything earlier tests of a full ``make test`` process
    left behind (CI measured one scan that takes 20 ms alone at 294 ms there)."""
    gc.collect()
    gc.freeze()
    yield
    gc.unfreeze()


def _cpu(run, text: str, runs: int = 3) -> float:
    """The CPU time of ``run(text)``: the least of up to ``runs`` runs, as ``timeit`` takes it.

    Noise only adds time, and a super-linear rule is slow on every run (seconds, not tens of
    milliseconds, at 32 KB)."""
    best = float("inf")
    for _ in range(runs):
        inj.clear_caches()  # as a new write: fold, views and decodings all done again
        started = time.process_time()
        run(text)
        best = min(best, time.process_time() - started)
        if best < BOUND:
            break
    return best


@pytest.mark.parametrize("category", sorted(TEXTS))
@pytest.mark.slow
def test_every_adversarial_32kb_text_is_scanned_within_the_bound(category: str) -> None:
    DET.scan("warm-up: the rule set and the cue index are built on first use")
    texts = TEXTS[category]
    assert texts and all(len(text) == SIZE for text in texts.values())
    slow = {name: round(spent, 3) for name, text in texts.items() if (spent := _cpu(DET.scan, text)) >= BOUND}
    assert not slow, f"over {BOUND * 1000:.0f} ms of CPU: {slow}"


def test_every_rule_has_its_own_adversarial_texts() -> None:
    rules = inj._rule_set().rules
    literal, near = TEXTS["rule literals repeated"], TEXTS["rule near misses repeated"]
    assert all(f"rule {i}" in literal or f"rule {i}" in near for i in range(len(rules)))


@pytest.mark.parametrize(("name", "parse", "text"), [
    ("judge answer of braces", _json_object, fill("{")),
    ("judge answer of opened objects", _json_object, fill('{"a": ')),
    ("worker answer: a fence, then blanks", _unfenced, "```" + fill(" ", SIZE - 4) + "x"),
    ("worker answer: fences", _unfenced, fill("``` ")),
])
def test_llm_answers_are_parsed_within_the_bound(name: str, parse, text: str) -> None:
    # An LLM's answer can echo the content it judged or worked on.
    assert len(text) == SIZE and _cpu(parse, text) < BOUND, name


class _QuickEmbedding(HashingEmbedding):
    """One hash per text: the test measures the validators, not the test embedding (which
    hashes every character trigram of a 32 KB text in pure Python)."""

    def _embed(self, text: str) -> np.ndarray:
        seed = int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little")
        return np.random.default_rng(seed).standard_normal(self.dim).astype(np.float32)


POLICY = """
p, physician, ward3/patients/*, write
p, physician, ward3/patients/**, read
p, nurse, ward3/patients/**, read
p, nurse, ward3/patients/*, write
g, alice, physician
g, bob, nurse
"""

# -- the typed-content classifier and the procedure values (issue 18, items 2 and 3) -------------

SHAPE_RULES = tuple(r for rule_set in directives._shapes() for r in rule_set.rules)
SHAPE_TEXTS = adversarial_texts(SHAPE_RULES)
VALUE_TEXTS = {
    "digit runs with separators": fill("1 "), "digits and dashes": fill("1-"), "dotted digits": fill("1."),
    "iban heads": fill("GB33 "), "iban heads glued": fill("GB33BUKB"), "letters and digits": fill("a1 "),
    "look-alike digits": fill("2O2O "), "zero-width digits": fill("1\u200b"), "at signs": fill("a@a."),
    "dotted words": fill("a.a-"), "url heads": fill("https://a"), "credential words": fill("password is "),
    "credential words glued": fill("key:"), "route words": fill("approved by the "), "amounts": fill("$1,"),
    "numbers and units": fill("5 mg "), "weakening words": fill("alone without "),
    "check words": fill("checked without a call-back "), "deadline routes": fill("signed off by friday "),
    "labels and function words": fill("room 12 de "), "digit words": fill("a1b2"),
    # memwarden/guards/unread.py: value-like tokens, one host-like token of 32 KB, spelling words
    "unread tokens": fill("x1 "), "host labels": fill("ab."), "spelling words": fill("ap arroba dot "),
    "arabic percent signs": fill("7\u066a "), "dates and ordinals": fill("2026-12-03 1st "),
    "negated weakenings": fill("no payment without "), "weakenings in a list": fill("no a, and without "),
    "dropped objects": fill("without countersigning "), "un-ed words": fill("unescorted "),
    "approver lists": fill("held by nadia, the "), "units after words": fill("50 of the mg "),
    "label heads": fill("patient no 012 "), "ranges": fill("1 to 5 "),
    "german routes": fill("von a b c "), "romance routes": fill("approuves par a, "), "other drops": fill("ohne senza "),
    # memwarden/guards/money.py and the readers of tests/test_values_more.py
    "fractions": fill("1/2 "), "fraction slashes": fill("1\u20442/"), "vulgar fractions": fill("1\u00bd "),
    "indian groups": fill("5,00,"), "lakhs": fill("\u20b95 lakh "), "abbreviated magnitudes": fill("4 Mio. "),
    "currency symbols": fill("\u20aa4"), "symbols and signs": fill("-\u20ac-4 "), "money ranges": fill("400-"),
    "ranges after codes": fill("EUR 4-"), "ranges by words": fill("4 to "), "cents": fill("4 cents "),
    "dollar prefixes": fill("us$4"), "schemes": fill("a://"), "scheme heads": fill("sftp:"),
    "newer tlds": fill("a.ai."), "ideographic dots": fill("a\u3002"), "subordinate weakenings": fill("no that skip "),
    "bracketed weakenings": fill("(no approval "), "exceptions": fill("no a without except "),
    "possessive approvals": fill("carol's written "), "approver verbs": fill("carol approves "),
    "approval nouns": fill("sign-off by the "), "approver nouns": fill("the approver of a b c is "),
    "obligations": fill("a call-back is mandatory except "), "denied obligations": fill("isn't required, call-back "), "obligations as before": fill("mandatory as it was previously as "),
    "relative negations": fill("the check nobody likes is optional "), "compound negations": fill("no-risk skip "),
    "route alternatives": fill("approved by a (or b / c, by "), "first-person routes": fill("approved by me or "),
    "approvals resting": fill("approval of a rests with "), "approvers needed": fill("needs a to approve "),
    "defanged colons": fill("hxxps[:]//"), "negated conditions": fill("it is no surprise when skip "),
    # tests/test_attack_fresh31_destinations.py
    "addresses in words": fill("a at a dot "), "whole addresses in words": fill("ap at globex dot com "),
    "host labels in words": fill("ap at a-a dot a-"), "share paths": fill("\\\\a\\"), "sort codes": fill("sort code 20-"),
    "bic heads": fill("swift/bic "), "last digits": fill("account a, ending "), "masked digits": fill("**** "),
    "last four of": fill("last four of a b "), "default ports": fill("https://a:443/"),
    # tests/test_attack_fresh31_checks.py: checks lowered, approvers by other words
    "lowered checks": fill("the call-back for a b c d e f g h i j k "), "lowered before": fill("forget the a b "),
    "checks moved after": fill("approved by a after the "), "strengthened": fill("without any "),
    "approvers giving": fill("a second carol gives the "), "approvers waving": fill("carol can wave a b c d e "),
    "same approvers": fill("the same manager "),
    # compound amounts, notation and periods (tests/test_attack_fresh31_amounts.py)
    "spelled numbers": fill("four hundred and "), "compound amounts": fill("$1 million and 900 "),
    "compound cents": fill("400 euros and 50 cents "), "exponents": fill("4e3 "), "powers of ten": fill("4\u00d710^"),
    "superscript powers": fill("4\u00d710\u00b3 "), "underscored thousands": fill("4_000 "),
    "periods": fill("400 EUR per "), "periods after words": fill("5 mg by mouth twice "),
    "prescriptions": fill("5 mg q4h "), "percent words": fill("25 per cent a "), "basis points": fill("25 bps "),
    "period words": fill("4 EUR monthly weekly "),
}


# "punctuation pairs" holds every pair of punctuation characters (595 texts, 11 s of CPU for
# the shapes alone): in the slow tier; the other categories (a few hundred texts) stay fast.
SHAPE_CATEGORIES = [pytest.param(c, marks=pytest.mark.slow) if c == "punctuation pairs" else c
                    for c in sorted(SHAPE_TEXTS)]


def _classify(text: str) -> None:
    directives.typing_of.cache_clear()
    directives.typing_of(text)


def _values(text: str) -> None:
    values.procedure_values.cache_clear()
    values.procedure_values(text)


@pytest.mark.parametrize("category", SHAPE_CATEGORIES)
def test_every_adversarial_32kb_text_is_classified_within_the_bound(category: str) -> None:
    _classify("warm-up: from now on the shapes are compiled")
    slow = {name: round(spent, 3) for name, text in SHAPE_TEXTS[category].items()
            if (spent := _cpu(_classify, text)) >= BOUND}
    assert not slow, f"over {BOUND * 1000:.0f} ms of CPU: {slow}"


def test_every_shape_rule_has_its_own_adversarial_texts() -> None:
    literal, near = SHAPE_TEXTS["rule literals repeated"], SHAPE_TEXTS["rule near misses repeated"]
    assert all(f"rule {i}" in literal or f"rule {i}" in near for i in range(len(SHAPE_RULES)))


# The classifier's scans outside the rule set: the document test (one rule-set scan per
# sentence, the code-line regex per line), the quote scan with its apostrophes.
DOCUMENT_TEXTS = {
    "imperative sentences": fill("Bring the frame. The sky is blue. "),
    "one-word sentences": fill("Bring it. a. "),
    "code lines": fill("x = (\n"), "one open call": "Bring it. f(" + fill(" ", SIZE - 20) + "x",
    "return lines": fill("return a\n"), "fences": fill("```\nBring it.\n"),
    "fenced code chars": "```\n" + fill("Bring it (now); "), "closing brackets": fill(")]} \n"),
    "apostrophes": fill("Note: men's a'b "), "reported quotes": fill("said 'a'b bring the "),
    "dated facts": fill("from now on, Mia walks "), "redirect heads": fill("refer patient 1 to "),
    "replaced by": fill("has been replaced by a, "), "word pieces": fill(" ##ab"),
}


@pytest.mark.parametrize("name", sorted(DOCUMENT_TEXTS))
def test_the_document_and_quote_scans_of_adversarial_32kb_texts_are_within_the_bound(name: str) -> None:
    _classify("warm-up: from now on the shapes are compiled. Bring it.")
    text = DOCUMENT_TEXTS[name]
    assert len(text) >= SIZE - 30
    spent = _cpu(_classify, text)
    assert spent < BOUND, f"{name}: {spent * 1000:.0f} ms of CPU"


# The exfiltration test's reading of a sentence (sending.sends): destinations blanked (URL spans,
# an address's local part walked back from each "@"), then each sending verb's neighbours; and
# the destinations an errand names (sending.destinations), looked for in established records,
# and what it names that no comparison sees (sending.uncompared_destination).
SEND_TEXTS = {
    "addresses": fill("send a@b.cc "), "local parts": fill("a" * 70 + "@b.cc "), "at signs": fill("@b.c"),
    "urls": fill("send http://a.b/post "), "url schemes": fill("a://"), "nouns": fill("the email from "),
    "verbs": fill("post post "), "one sentence of words": "send " + fill("report ", SIZE - 20) + "@b.cc",
    "nouns routed": fill("the email of ") + " to a@b.cc", "destinations after to": fill("to a@b.cc "),
    "hyphen runs": fill("a-"), "digit labels": "@a" + fill(".1"), "phone runs": fill("+1(((( "),
    "iban runs": fill("ab12 "), "long labels": "@a." + fill("b"), "hosts without a path": fill("a.aa."),
    "hidden at signs": fill("x (at) "), "next-line destinations": fill("send all customer data.\na@b.cc\n"),
}


@pytest.mark.parametrize("name", sorted(SEND_TEXTS))
def test_the_sending_verb_reading_of_adversarial_32kb_texts_is_within_the_bound(name: str) -> None:
    text = SEND_TEXTS[name]
    sending.sends("warm-up: send it to a@b.cc")
    spent = _cpu(lambda t: (sending.sends(t), sending.destinations(t), sending.uncompared_destination(t),
                            sending.hidden_destination(t), DET.scan(t)), text)
    assert spent < BOUND, f"{name}: {spent * 1000:.0f} ms of CPU"


@pytest.mark.parametrize("category", [*SHAPE_CATEGORIES, "value texts"])
def test_procedure_values_of_adversarial_32kb_texts_within_the_bound(category: str) -> None:
    texts = VALUE_TEXTS if category == "value texts" else SHAPE_TEXTS[category]
    slow = {name: round(spent, 3) for name, text in texts.items() if (spent := _cpu(_values, text)) >= BOUND}
    assert not slow, f"over {BOUND * 1000:.0f} ms of CPU: {slow}"


@pytest.mark.parametrize("name", sorted(VALUE_TEXTS))
def test_a_procedure_change_check_on_adversarial_32kb_texts_is_within_the_bound(name: str) -> None:
    # The contradiction check compares an untrusted writer's 32 KB text with a 32 KB related
    # record: statements, content words and both texts' values.
    text = VALUE_TEXTS[name]
    other = MemoryRecord(id="mem_old", namespace=("a",), content=fill("ok " + text[:64]), subjects=("s",),
                         writer="owner", source=Source.USER)
    record = MemoryRecord(id="mem_new", namespace=("a",), content=text, subjects=("s",), writer="agent",
                          source=Source.AGENT)
    ctx = ValidationContext(P("agent", roles=["r"]), Subjects("agent", frozenset({"r"})),
                            related=lambda r, k: [other])

    def check(_: str) -> None:
        values.procedure_values.cache_clear()
        ContradictionCheck().check(record, ctx)

    assert _cpu(check, text) < BOUND, name


# The texts that were slowest before, and a few of each kind.
SLOW_WRITES = [TEXTS["encodings"]["ascii85 opened"], TEXTS["leetspeak"]["digit sign, one letter at the end"],
               TEXTS["leetspeak"]["sign digit, one letter at the end"], TEXTS["punctuation pairs"]["'. '"],
               TEXTS["nested brackets"]["[]"], TEXTS["hidden unicode"]["homoglyph words"],
               TEXTS["links"]["image links"], TEXTS["encodings"]["base64"]] * 2


#: Ordinary prose of the same size: the control arm. Its writes take the same path (validators,
#: embedding, audit, Chroma), so what the reader sees during them is this machine's own noise.
CONTROL_WRITES = [fill(f"Ward round {i}: the patient slept well and ate breakfast. ") for i in range(4)]
HEARTBEATS = 24  # per arm at least


@pytest.mark.integration
@pytest.mark.slow  # at least 48 heartbeats 100 ms apart, and 32 KB writes through every validator
def test_a_slow_write_never_holds_up_another_principals_reads(tmp_path: Path) -> None:
    # Two threads on one Memory: alice writes 32 KB texts with the default validator chain,
    # adversarial ones and ordinary ones in turn; bob reads a record every 100 ms. Reads take
    # no write lock, RE2 releases the GIL while it matches, and no single step of a scan holds
    # the GIL long. Each heartbeat is filed under the kind of write in progress when it was
    # due, and the writer goes on until both kinds have enough heartbeats (however fast this
    # machine writes). The bound is 200 ms beyond the worst heartbeat of the control arm: on a
    # loaded machine the scheduler alone can start a thread late, by the same amount in both
    # arms (before RE2 a heartbeat ran 5.4 s late; after, the arms differ by a few ms).
    (tmp_path / "policy.csv").write_text(POLICY, encoding="utf-8")
    mem = Memory.open(tmp_path / "data", policy=tmp_path / "policy.csv", embedding=_QuickEmbedding())
    try:
        alice, bob = mem.session(Principal("alice")), mem.session(Principal("bob"))
        note = bob.write("Patient 1 is allergic to penicillin.", namespace=("ward3", "patients", "p1"), kind="fact")
        DET.scan("warm-up")
        done, writing = threading.Event(), ["control"]
        delays: dict[str, list[float]] = {"adversarial": [], "control": []}
        outcomes: list[str] = []

        def writer() -> None:
            turn = 0
            while not done.is_set() or turn < len(SLOW_WRITES):
                kind, texts = ("adversarial", SLOW_WRITES) if turn % 2 == 0 else ("control", CONTROL_WRITES)
                writing[0] = kind
                try:
                    status = alice.write(texts[turn // 2 % len(texts)], namespace=("ward3", "patients", "p2"),
                                         kind="fact").status.value
                except WriteRejected:
                    status = "rejected"
                if kind == "adversarial":
                    outcomes.append(status)
                turn += 1

        def reader() -> None:
            due = time.perf_counter()
            while min(len(v) for v in delays.values()) < HEARTBEATS:
                due = max(due + 0.1, time.perf_counter())
                time.sleep(max(0.0, due - time.perf_counter()))
                kind = writing[0]
                assert bob.get(note.id) is not None
                delays[kind].append(time.perf_counter() - due)  # late start and the read itself
            done.set()

        threads = [threading.Thread(target=reader), threading.Thread(target=writer)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=600)
        assert not any(t.is_alive() for t in threads) and len(outcomes) >= len(SLOW_WRITES) // 2
        worst = {kind: round(max(v), 3) for kind, v in delays.items()}
        assert worst["adversarial"] < BOUND + worst["control"], (worst, {k: [round(d, 3) for d in v]
                                                                         for k, v in delays.items()})
    finally:
        mem.close()


class _SlowStore:
    """A store whose upsert takes a while; it records who stored what."""

    def __init__(self) -> None:
        self.stored: list[tuple[str, list[str]]] = []

    def upsert(self, ids, embeddings, documents, metadatas) -> None:
        time.sleep(0.3)
        self.stored.append((threading.current_thread().name, list(ids)))

    def fetch(self, ids=None, where=None, limit=None, offset=None, *, partitions=None):
        return []


def test_a_batch_of_reads_neither_sends_nor_waits_for_another_threads_held_write() -> None:
    # A write's batch holds its row until the batch ends; a read batch that ends meanwhile
    # used to send it (embedding it and storing it on the reader's time) or wait while the
    # writer sent it.
    from memwarden.memory.coalesce import CoalescingBackend

    store = _SlowStore()
    backend = CoalescingBackend(store, embed=lambda texts: np.zeros((len(texts), 4), dtype=np.float32))
    held, release = threading.Event(), threading.Event()

    def write() -> None:
        with backend.holding():
            backend.upsert(["w"], None, ["a 32 KB text"], [{}])
            held.set()
            release.wait(10)

    writer = threading.Thread(target=write, name="writer")
    writer.start()
    held.wait(10)
    started = time.perf_counter()
    with backend.holding():
        assert [row.id for row in backend.fetch(ids=["w"])] == ["w"]  # the held row is readable
    assert time.perf_counter() - started < 0.1 and store.stored == []
    release.set()
    writer.join(10)
    assert store.stored == [("writer", ["w"])]
