"""Attacks on the contradiction check's neighbour lookup and its kinds (issue 18), as an agent
writing under the bundled office policy. Each attack got an account change of a manager's
established record stored ACTIVE and returned to the manager's search:

- The BM25 window was filled before the established record was reached: the writer's own
  records (same voice, filtered out only after the cut) or its records under a more trusted
  source of its own (another voice, but one voice's near copies took every slot), padded with
  words the change repeats so that they outrank the established record.
- Five voices filled the five records compared: written from 'external', the writer's user,
  agent and tool records are three other voices, and two colleagues' agents made five.
- The lookup covered one namespace: the same change written to a sibling project, to the
  project itself (a manager's agent) or to a namespace spelt with another case was never
  compared, though a search of the common prefix returns both records.
- The check ran for facts, rules and preferences only: the change declared an event
  ("Acme's IBAN changed to ...") was never compared.
- A chain of updates, the first harmless, replaced only the writer's own version the second
  time, and the established version was superseded, so nothing compared it.
- "The same topic" counted exact words: "Pay the Acme invoice to ..." shares only "acme" with
  "Acme invoices are paid to IBAN ...". The false-positive direction: two unrelated texts that
  each hold a link shared "https", "www" and "com", and were compared.

Every example is written for this file. Each attack test failed on the code before its fix.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from memwarden import Memory, Principal, Status
from memwarden.core.records import Kind, MemoryRecord, Principal as P, Source
from memwarden.guards.contradiction import ContradictionCheck
from memwarden.guards.validators import Outcome, ValidationContext
from memwarden.policies.subjects import Subjects
from tests.office_attacks import office_memory

pytestmark = pytest.mark.integration

ESTABLISHED = "Acme invoices are paid to IBAN DE89370400440532013000."
CHANGED = "Acme invoices are paid to IBAN LT121000011101001000."
NOTES = ("office", "projects", "alpha", "notes")
# Words only the padding and the change share: each pad outranks the established record.
PAD_WORDS = ("zorblat quixel mervane plotrix sandune tovrel gambrik hollen fistrel yarrow lumbrik crenshaw "
              "dovetal ombrel pristak vantel wemble kestrik norvane jallop brindle caspell drovik elmtrix").split()


def _planted_and_hidden(mem: Memory, planted: MemoryRecord, where: tuple[str, ...]) -> None:
    """The change is held, and the manager's search of ``where`` returns its own record only."""
    assert planted.status is Status.QUARANTINED
    frank = mem.session(Principal("frank", roles=["manager"]))
    found = [h.record.content for h in frank.search("Where are Acme invoices paid to, which IBAN?", where, k=50)]
    assert planted.content not in found and ESTABLISHED in found


@pytest.mark.parametrize("pad_source", ["agent", "user"])
def test_the_writers_own_records_never_fill_the_nearest_window(tmp_path: Path, pad_source: str) -> None:
    """Pads in the change's own voice (agent) or in a more trusted voice of the same writer
    (user, each a voice of its own): 24 of them, each sharing a rare word with the change."""
    mem = office_memory(tmp_path)
    try:
        mem.session(Principal("frank", roles=["manager"])).write(ESTABLISHED, NOTES, kind="fact", subjects=["acme"])
        pads = mem.session(Principal("erin", roles=["employee"]), source=pad_source)
        for word in PAD_WORDS:
            assert pads.write(f"Acme invoices are paid, IBAN {word}.", NOTES, kind="fact").status is Status.ACTIVE
        erin = mem.session(Principal("erin", roles=["employee"]), source="agent")
        planted = erin.write(f"{CHANGED[:-1]} ({' '.join(PAD_WORDS)}).", NOTES, kind="fact")
        _planted_and_hidden(mem, planted, NOTES)
    finally:
        mem.close()


@pytest.mark.parametrize(("writer", "namespace"), [
    ("erin", ("office", "projects", "beta", "notes")),   # a sibling project
    ("erin", ("office", "projects", "Alpha", "notes")),  # the same project spelt with a capital
    ("frank", ("office", "projects", "alpha")),          # the project itself, by the manager's agent
])
def test_a_change_one_namespace_over_is_compared(tmp_path: Path, writer: str, namespace: tuple[str, ...]) -> None:
    mem = office_memory(tmp_path)
    try:
        mem.session(Principal("frank", roles=["manager"])).write(ESTABLISHED, NOTES, kind="fact", subjects=["acme"])
        role = "manager" if writer == "frank" else "employee"
        agent = mem.session(Principal(writer, roles=[role]), source="agent")
        _planted_and_hidden(mem, agent.write(CHANGED, namespace, kind="fact"), ("office", "projects"))
    finally:
        mem.close()


@pytest.mark.parametrize("subjects", [["acme"], []])
def test_a_change_declared_an_event_is_compared(tmp_path: Path, subjects: list[str]) -> None:
    mem = office_memory(tmp_path)
    try:
        mem.session(Principal("frank", roles=["manager"])).write(ESTABLISHED, NOTES, kind="fact", subjects=["acme"])
        erin = mem.session(Principal("erin", roles=["employee"]), source="agent")
        planted = erin.write("Acme's IBAN changed today: invoices are paid to IBAN LT121000011101001000.", NOTES,
                             kind="event", subjects=subjects)
        _planted_and_hidden(mem, planted, NOTES)
    finally:
        mem.close()


@pytest.mark.unit
def test_an_event_is_compared_for_procedures_only() -> None:
    """The statement heuristics stay with facts, rules and preferences: an event may say what
    a fact denies ("the door was open" against "the door is closed")."""
    old = MemoryRecord(id="mem_old", namespace=NOTES, content="The server room door is closed.", kind=Kind.FACT,
                       subjects=("door",), writer="frank", source=Source.USER)
    ctx = ValidationContext(P("erin", roles=["r"]), Subjects("erin", frozenset({"r"})),
                            related=lambda record, k: [old][:k])
    event = MemoryRecord(id="mem_new", namespace=NOTES, content="The server room door is open.", kind=Kind.EVENT,
                         subjects=("door",), writer="erin", source=Source.AGENT)
    assert ContradictionCheck().check(event, ctx).outcome is Outcome.ACCEPT
    fact = event.model_copy(update={"kind": Kind.FACT})
    assert ContradictionCheck().check(fact, ctx).outcome is Outcome.QUARANTINE


def _verdict(new: str, established: str) -> Outcome:
    old = MemoryRecord(id="mem_old", namespace=NOTES, content=established, subjects=("acme",), writer="frank",
                       source=Source.USER)
    ctx = ValidationContext(P("erin", roles=["r"]), Subjects("erin", frozenset({"r"})),
                            related=lambda record, k: [old][:k])
    new_record = MemoryRecord(id="mem_new", namespace=NOTES, content=new, subjects=("acme",), writer="erin",
                              source=Source.AGENT)
    return ContradictionCheck().check(new_record, ctx).outcome


@pytest.mark.unit
@pytest.mark.parametrize("new", [
    "Pay the Acme invoice to LT121000011101001000.",     # 'invoice' for 'invoices', 'pay' for 'paid'
    "Acme invoice payments: LT121000011101001000.",
])
def test_an_inflection_is_the_same_topic(new: str) -> None:
    assert _verdict(new, ESTABLISHED) is Outcome.QUARANTINE


@pytest.mark.unit
def test_one_shared_word_is_still_no_topic() -> None:
    """Inflections count once: 'Acme' alone (with 'invoice' nowhere) does not make two texts
    about the same thing."""
    assert _verdict("Acme parcels go to locker LT121000011101001000.", ESTABLISHED) is Outcome.ACCEPT


@pytest.mark.parametrize("how", ["update", pytest.param("key", marks=pytest.mark.xfail(
    strict=True, reason="a keyed put overwrites the item's row in place: after the writer's harmless put, the "
                        "version the manager established is no longer stored, so the next put is compared only "
                        "with the writer's own version (the item would need to keep who established it)"))])
def test_a_chain_of_own_updates_is_compared_with_what_another_established(tmp_path: Path, how: str) -> None:
    """A harmless first change makes the writer the author of the current version; the second
    change then replaced only the writer's own version and was never compared."""
    mem = office_memory(tmp_path)
    try:
        frank = mem.session(Principal("frank", roles=["manager"]))
        erin = mem.session(Principal("erin", roles=["employee"]), source="agent")
        key = "acme-payee" if how == "key" else None
        old = frank.write(ESTABLISHED, NOTES, kind="fact", subjects=["acme"], key=key)
        first = "Acme invoices are paid to IBAN DE89370400440532013000 (confirmed)."
        changed = "Acme invoices are paid to IBAN LT121000011101001000 (confirmed)."
        if how == "update":
            one = erin.update(old.id, first)
            assert one.status is Status.ACTIVE
            planted = erin.update(one.id, changed)
        else:
            assert erin.write(first, NOTES, kind="fact", subjects=["acme"], key=key).status is Status.ACTIVE
            planted = erin.write(changed, NOTES, kind="fact", subjects=["acme"], key=key)
        assert planted.status is Status.QUARANTINED
        found = [h.record.content for h in frank.search("Which IBAN are Acme invoices paid to?", NOTES, k=10)]
        assert changed not in found and first in found
    finally:
        mem.close()


@pytest.mark.unit
def test_two_links_are_no_topic() -> None:
    """The false-positive direction: an agent's unrelated link shared only 'https', 'www' and
    'com' with another's and was held as a changed destination (docs chunks of the jailbreak
    benchmark against "Search link for the boots Leo wants: https://shop...")."""
    assert _verdict("Library opening hours: https://www.citylib.com/hours",
                    "Leo's winter boots: https://www.shop-boots.com/leo") is Outcome.ACCEPT
    assert _verdict("Acme invoices are paid via https://pay.acme-payments.com/portal",
                    "Acme invoices are paid via https://pay.acme.com/portal") is Outcome.QUARANTINE


def test_a_window_of_voices_is_more_than_one_writer_and_a_friend_can_fill(tmp_path: Path) -> None:
    """Written from 'external', the change counts the writer's user, agent and tool records as
    three other voices; with two colleagues' agents, five voices of near copies filled the
    five records compared, and the manager's was not among them."""
    mem = office_memory(tmp_path)
    try:
        mem.session(Principal("frank", roles=["manager"])).write(ESTABLISHED, NOTES, kind="fact", subjects=["acme"])
        voices = [mem.session(Principal("erin", roles=["employee"]), source=s) for s in ("user", "agent", "tool")]
        voices += [mem.session(Principal(p, roles=["employee"]), source="agent") for p in ("lena", "omar")]
        for i, word in enumerate(PAD_WORDS):
            pad = voices[i % len(voices)].write(f"Acme invoices are paid, IBAN {word}.", NOTES, kind="fact")
            assert pad.status is Status.ACTIVE
        external = mem.session(Principal("erin", roles=["employee"]), source="external")
        planted = external.write(f"{CHANGED[:-1]} ({' '.join(PAD_WORDS)}).", NOTES, kind="fact")
        _planted_and_hidden(mem, planted, NOTES)
    finally:
        mem.close()
