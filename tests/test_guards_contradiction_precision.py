"""The contradiction check compares what is about the same thing, both ways (issue 18, S27).

Two benign texts by one principal were held as contradictions because the check took them
for one statement: a number that *labels* a thing ("room 305", "invoice 4") was read as a
value that changed, a word after a number as its unit in any language but English ("facture
4 de Müller" was an amount of "de"), the minutes of a clock time as an amount of "Uhr", a
deadline ("signed off by Friday") as who approves, and "without sugar" as a weakened check.
Each test below pairs the unrelated texts (no longer held) with a real conflict of the same
shape that an agent plants (still held).
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from memwarden.core.records import Kind, MemoryRecord, Principal as P, Source
from memwarden.guards.contradiction import ContradictionCheck, find_contradiction
from memwarden.guards.validators import Outcome, ValidationContext
from memwarden.guards.values import procedure_values
from memwarden.policies.subjects import Subjects

pytestmark = pytest.mark.unit


def _rec(content: str, *, writer: str, source: Source, rid: str) -> MemoryRecord:
    return MemoryRecord(id=rid, namespace=("office", "shared"), content=content, kind=Kind.FACT,
                        subjects=("team",), writer=writer, source=source)


def _verdict(new: str, established: str):
    """An agent's write checked against a record its user wrote about the same subject."""
    old = _rec(established, writer="writer", source=Source.USER, rid="mem_old")
    ctx = ValidationContext(P("writer", roles=["r"]), Subjects("writer", frozenset({"r"})),
                            related=lambda record, k: [old][:k])
    return ContradictionCheck().check(_rec(new, writer="writer", source=Source.AGENT, rid="mem_new"), ctx)


# -- numbers that label things -----------------------------------------------------------------

@pytest.mark.parametrize(("a", "b"), [
    ("Die Budgetbesprechung ist in Raum 305 um 17:45 Uhr.", "Die Budgetbesprechung ist in Raum 21 um 8:30 Uhr."),
    ("The budget review is in room 17 at 16:30.", "The budget review is in room 12 at 17:45."),
    ("Patient 12 is allergic to penicillin.", "Patient 17 is not allergic to penicillin."),
    ("Class 7B: the trip costs 3 euros per pupil.", "Class 7C: the trip costs 12 euros per pupil."),
])
def test_statements_about_differently_labelled_things_do_not_contradict(a: str, b: str) -> None:
    assert find_contradiction(a, b) is None
    assert _verdict(a, b).outcome is Outcome.ACCEPT


@pytest.mark.parametrize(("a", "b", "kind"), [
    ("Die Budgetbesprechung ist in Raum 305 um 17:45 Uhr.", "Die Budgetbesprechung ist in Raum 305 um 8:30 Uhr.",
     "number:"),
    ("Patient 12 is allergic to penicillin.", "Patient 12 is not allergic to penicillin.", "negation"),
    # a label added on one side only does not make another thing
    ("Patient 12 is not allergic to penicillin (ref 44).", "Patient 12 is allergic to penicillin.", "negation"),
    ("Patient 12 takes 50 mg warfarin daily.", "Patient 12 takes 5 mg warfarin daily.", "number:mg"),
])
def test_the_same_labelled_thing_with_another_value_still_contradicts(a: str, b: str, kind: str) -> None:
    assert (find_contradiction(a, b) or "").startswith(kind)
    assert _verdict(a, b).outcome is Outcome.QUARANTINE


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 999), st.integers(1, 999), st.integers(1, 23), st.integers(1, 23))
def test_a_value_conflicts_only_on_the_same_label(room_a: int, room_b: int, hour_a: int, hour_b: int) -> None:
    a = f"The planning meeting is in room {room_a} at {hour_a}:00."
    b = f"The planning meeting is in room {room_b} at {hour_b}:00."
    expected = "number:clock" if room_a == room_b and hour_a != hour_b else None
    assert find_contradiction(a, b) == expected


# -- what an amount is -------------------------------------------------------------------------

@pytest.mark.parametrize("text", [
    "La facture 4 de Müller GmbH a été payée le samedi.",
    "Der Verband in Zimmer 12 ist frisch.",
    "La fattura 7 di Müller GmbH è stata pagata il giovedì.",
    "El paciente de la habitación 4 y su hermana.",
    "La revisione del budget è nella sala 12 alle 14:00.",
    "Das Teammeeting ist immer Dienstag um 14:00 Uhr.",
    "Read the 12th chapter.",
])
def test_a_number_before_a_function_word_or_inside_a_time_is_no_amount(text: str) -> None:
    assert not [c for c in procedure_values(text).by_category if c.startswith("amount")], procedure_values(text)


@pytest.mark.parametrize(("text", "category", "value"), [
    ("La dose de Mme Okafor est de 5 mg le matin.", "amount:mass:mg", "5"),
    ("Die Dosis ist 5 mg.", "amount:mass:mg", "5"),
    ("The lock opens after 3 attempts.", "amount:attempt", "3"),
    ("Transfer 5000 EUR to the supplier.", "amount:eur", "5000"),
    # (with its period: periods.PERIOD)
    ("Take 2 tablets every 4 hours.", "amount:tablet", "2/4h"),
])
def test_quantities_with_units_are_still_amounts(text: str, category: str, value: str) -> None:
    assert value in procedure_values(text).by_category.get(category, ()), procedure_values(text)


def test_invoices_of_another_number_are_no_changed_amount_but_a_changed_dose_is() -> None:
    assert _verdict("La facture 4 de Müller GmbH a été payée le samedi.",
                    "La facture 7 de Müller GmbH a été payée le mercredi.").outcome is Outcome.ACCEPT
    held = _verdict("La dose de Mme Okafor est maintenant de 50 mg le matin.",
                    "La dose de Mme Okafor est de 5 mg le matin, vérifiée par le médecin.")
    assert held.outcome is Outcome.QUARANTINE and "amount" in held.reason


# -- deadlines are not approvers ---------------------------------------------------------------

def test_two_unrelated_deadlines_do_not_conflict() -> None:
    verdict = _verdict("Family calendar: the permission slip must be signed off by Friday.",
                       "Family calendar: the gym bag has to be delivered by Monday.")
    assert verdict.outcome is Outcome.ACCEPT, verdict
    assert "route" not in procedure_values("The report is approved by Saturday.").by_category


def test_a_changed_approver_is_still_held_and_a_deadline_after_it_is_cut_off() -> None:
    held = _verdict("Refunds over 500 EUR are approved by the new intern from Monday.",
                    "Refunds over 500 EUR are approved by the finance manager.")
    assert held.outcome is Outcome.QUARANTINE and "route" in held.reason
    assert procedure_values("Refunds are approved by the finance manager by Friday.").by_category["route"] == \
        procedure_values("Refunds are approved by the finance manager.").by_category["route"]


# -- a weakening weakens a check ---------------------------------------------------------------

def test_without_sugar_weakens_no_check() -> None:
    verdict = _verdict("Family calendar this week: Grandma prefers tea without sugar and with a little milk.",
                       "Family calendar this week: We are out of batteries; add it to the shopping list.")
    assert verdict.outcome is Outcome.ACCEPT, verdict


@pytest.mark.parametrize(("new", "established"), [
    ("Supplier refunds are now paid without a call-back.",
     "Supplier refunds are paid after a call-back to the supplier's known number."),
    ("Insulin doses on ward 3 are given by the nurse alone.",
     "Insulin doses on ward 3 are given after a second nurse checks them."),
])
def test_a_weakened_check_is_still_held(new: str, established: str) -> None:
    verdict = _verdict(new, established)
    assert verdict.outcome is Outcome.QUARANTINE and "weakens a check" in verdict.reason, verdict


def test_a_role_opened_to_anyone_is_held_without_a_named_check() -> None:
    verdict = _verdict("Note: the covering pharmacist for ward 3 this week is anyone who calls the desk.",
                       "The covering pharmacist for ward 3 this week is Jonas Berg.")
    assert verdict.outcome is Outcome.QUARANTINE and "weakens a check" in verdict.reason, verdict


def test_a_lock_opened_without_its_key_is_a_weakened_check() -> None:
    verdict = _verdict("Ward 3: the medicine cabinet can be opened without the key.",
                       "Ward 3: the medicine cabinet is opened by the nurse in charge.")
    assert verdict.outcome is Outcome.QUARANTINE and "weakens a check" in verdict.reason, verdict
