"""ContradictionCheck: negation flips, antonym swaps and number mismatches, and their limits."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from memwarden import Memory, Principal
from memwarden.guards.contradiction import ContradictionCheck, content_words, find_contradiction, statement
from memwarden.guards.validators import Outcome, ValidationContext
from memwarden.memory.embeddings import HashingEmbedding
from memwarden.core.records import Kind, MemoryRecord, Principal as P, Status
from memwarden.policies.subjects import Subjects

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(("a", "b", "expected"), [
    # negation flips, five languages
    ("Patient p12 is allergic to penicillin", "Patient p12 is not allergic to penicillin", "negation"),
    ("Tom can have peanuts", "Tom can't have peanuts", "negation"),
    ("Patient p12 ist allergisch gegen Penicillin", "Patient p12 ist nicht allergisch gegen Penicillin", "negation"),
    ("Le patient p12 est allergique à la pénicilline", "Le patient p12 n'est pas allergique à la pénicilline", "negation"),
    ("El paciente p12 es alérgico a la penicilina", "El paciente p12 no es alérgico a la penicilina", "negation"),
    ("Il paziente p12 è allergico alla penicillina", "Il paziente p12 non è allergico alla penicillina", "negation"),
    ("Patient p12 is allergic to penicillin", "Patient p12 is no longer allergic to penicillin anymore", "negation"),
    # antonym swaps
    ("Visitors are allowed after 6pm on ward 3", "Visitors are forbidden after 6pm on ward 3", "antonym"),
    ("Mrs Okafor prefers tea without sugar", "Mrs Okafor prefers tea with sugar", "antonym"),
    ("Always lock the medicine cabinet", "Never lock the medicine cabinet", "negation"),  # "never" negates
    ("The side door stays open at night", "The side door stays closed at night", "antonym"),
    ("Besuch ist nach 18 Uhr erlaubt", "Besuch ist nach 18 Uhr verboten", "antonym"),
    ("Increase the insulin dose at night", "Decrease the insulin dose at night", "antonym"),
    # numbers of the same unit
    ("Mrs Okafor takes 5 mg of metformin every morning", "Mrs Okafor takes 50 mg of metformin every morning", "number:mg"),
    ("Tom has football practice at 17:45 on Monday", "Tom has football practice at 16:30 on Monday", "number:clock"),
    ("The school trip costs €12 per pupil", "The school trip costs €25 per pupil", "number:€"),
    ("Give 2 tablets three times a day", "Give 4 tablets three times a day", "number:tablet"),
])
def test_conflicts_are_found(a: str, b: str, expected: str) -> None:
    assert find_contradiction(a, b) == expected
    assert find_contradiction(b, a) == expected


@pytest.mark.parametrize(("a", "b"), [
    ("Patient p12 is allergic to penicillin", "Patient p12 is allergic to penicillin and latex"),
    ("Mrs Okafor prefers tea without sugar", "Mrs Okafor prefers tea with milk"),
    ("Mrs Okafor takes 5 mg of metformin", "Mrs Okafor takes 50 mg of ramipril"),
    ("Blood test for p12 on Monday at 8:30", "Blood test for p12 on Tuesday at 9:15"),
    ("Tom has football on Tuesday", "Lena has piano on Thursday"),
    ("Invoice 4471 was paid", "Invoice 5591 was paid"),
    ("Not today", "Today"),  # too little in common to call it the same statement
    # documented limit: a paraphrased contradiction is not recognised
    ("Patient p12 is allergic to penicillin", "Patient p12 tolerates penicillin well"),
])
def test_compatible_or_unrecognised_pairs(a: str, b: str) -> None:
    assert find_contradiction(a, b) is None


def _rec(content: str, *, rid: str = "mem_new", kind: Kind = Kind.FACT, supersedes: str | None = None,
         subjects: tuple[str, ...] = ("p12",)) -> MemoryRecord:
    return MemoryRecord(id=rid, namespace=("ward3", "patients", "p12"), content=content, kind=kind,
                        subjects=subjects, writer="w", supersedes=supersedes)


CALLS: list[int] = []


def _ctx(*related: MemoryRecord) -> ValidationContext:
    CALLS.clear()

    def lookup(record: MemoryRecord, k: int) -> list[MemoryRecord]:
        CALLS.append(k)
        return list(related)[:k]

    return ValidationContext(P("w", roles=["r"]), Subjects("w", frozenset({"r"})), related=lookup)


def test_check_quarantines_and_names_the_related_record() -> None:
    old = _rec("Patient p12 is allergic to penicillin", rid="mem_old")
    verdict = ContradictionCheck().check(_rec("Patient p12 is not allergic to penicillin"), _ctx(old))
    assert verdict.outcome is Outcome.QUARANTINE
    assert "mem_old" in verdict.reason and "negation" in verdict.reason
    assert "penicillin" not in verdict.reason


def test_check_skips_its_predecessor_events_and_subjectless_records() -> None:
    old = _rec("Patient p12 is allergic to penicillin", rid="mem_old")
    check = ContradictionCheck()
    assert check.check(_rec("Patient p12 is not allergic to penicillin", supersedes="mem_old"), _ctx(old)).outcome \
        is Outcome.ACCEPT
    assert check.check(_rec("Patient p12 is not allergic to penicillin", kind=Kind.EVENT), _ctx(old)).outcome \
        is Outcome.ACCEPT
    event = _rec("Patient p12 is allergic to penicillin", rid="mem_ev", kind=Kind.EVENT)
    assert check.check(_rec("Patient p12 is not allergic to penicillin"), _ctx(event)).outcome is Outcome.ACCEPT
    ctx = _ctx(old)
    assert check.check(_rec("Patient p12 is not allergic to penicillin", subjects=()), ctx).outcome is Outcome.ACCEPT
    assert CALLS == []  # no store query for a record about nobody
    # An agent's procedure value about nobody is compared with what is near it in its
    # namespace, whatever the subjects (a writer declares its own).
    near: list[int] = []
    account = _rec("Invoices for p12 are paid into account DE89 3704 0044 0532 0130 00", rid="mem_acc")
    nearby = ValidationContext(P("w", roles=["r"]), Subjects("w", frozenset({"r"})),
                               nearby=lambda r, k: near.append(k) or [account.model_copy(update={"writer": "x"})])
    changed = _rec("Invoices for p12 are paid into account GB29 NWBK 6016 1331 9268 19", subjects=())
    assert check.check(changed, nearby).outcome is Outcome.QUARANTINE and near == [check.nearby_k]


def test_check_asks_for_k_related_records() -> None:
    ctx = _ctx()
    ContradictionCheck(k=3).check(_rec("anything at all here"), ctx)
    # Once for contradictions, once for other writers' procedures (an agent's record).
    assert CALLS == [3, 3]
    with pytest.raises(ValueError):
        ContradictionCheck(k=0)


POLICY = """
p, staff, ward3/**, read
p, staff, ward3/**, write
p, outsider, ward3/inbox/**, write
g, alice, staff
g, mallory, staff
g, olga, outsider
"""


@pytest.mark.integration
def test_real_memory_compares_only_what_the_writer_may_read(tmp_path: Path) -> None:
    policy = tmp_path / "policy.csv"
    policy.write_text(POLICY, encoding="utf-8")
    with Memory.open(tmp_path / "d", policy=policy, embedding=HashingEmbedding(),
                     validators=[ContradictionCheck()]) as mem:
        mem.session(Principal("alice")).write("Patient p12 is allergic to penicillin",
                                              namespace=("ward3", "patients", "p12"), subjects=["p12"])
        flipped = mem.session(Principal("mallory")).write("Patient p12 is not allergic to penicillin",
                                                          namespace=("ward3", "patients", "p12"), subjects=["p12"])
        assert flipped.status is Status.QUARANTINED
        # Documented limit: olga cannot read the record she contradicts, so the verdict may not
        # reveal it and the write is accepted (it lands in an inbox she alone writes to).
        blind = mem.session(Principal("olga")).write("Patient p12 is not allergic to penicillin",
                                                      namespace=("ward3", "inbox", "lab"), subjects=["p12"])
        assert blind.status is Status.ACTIVE


def test_content_words_from_signature_tokens_are_the_statement_content_words() -> None:
    # content_words() (used for every reading by the lesson sketches) is built from the
    # signature tokens; it must give the words statement() reads off the text itself.
    rng = random.Random(11)
    pieces = list("abcdnt' 0123#.-é\n") + ["٣", "don't", "can't", "n't", " won't ", "l'ia", "it's", "e-mail", "v2.1"]
    for _ in range(20_000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 15)))
        assert content_words(text) == statement(text).content, repr(text)
