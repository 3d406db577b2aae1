"""The procedure-category windows of the contradiction check (memwarden/memory/nearby.py), as
an outsider would attack them after tests/test_attack_collusion2.py.

Attacks:

- A weakening of what the established record names, without naming a check the index
  knows: the manager wrote "payments go out only once the controller countersigns them"
  (no word of _CHECK, so the lexical index keeps no "check" for it) and an agent writes
  "payments go out without countersigning". The check compares them as a weakening (the
  dropped stem "count" starts a word of the record), but the record is never among the first
  window (it holds no category the change may change), and in the second the change's rare
  words, echoed from twenty of the manager's own notes, rank those notes first: his record,
  21st, was never compared and the change was stored active. Now a window is ranked by the
  dropped words alone (nearest window), and the subject window counts a record whose words
  a dropped stem starts among those holding what the change may change.

- Sixty-four words of nonsense before the change: a lexical query read the first MAX_TERMS
  distinct terms of its text, so none of the change's own words were asked for, and the
  manager's IBAN record matched nothing in either nearest window (the change named no
  subject): stored active, and returned beside his record to his search. The window of
  records holding what the change may change now reads the change's words nearest a value
  it holds first (memwarden/memory/nearby.py). Reading every term instead let twenty
  colluders' copies outrank an agent's record (tests/test_attack_collusion.py).
- The same with a decoy number beside each made-up word: they are as near a value as the
  change's own words, and first (strict xfail, see its reason).
- Cost: the category filter was planned as a lookup of every query term for every record
  holding a category (64 x holders per window); it is now checked per matching posting
  (memwarden/memory/lexical.py).
- The established value in a format the patterns missed: the manager's IBAN grouped by two
  spaces (a pasted table cell) or across line breaks held no account, so the agent's new
  IBAN was compared with nothing and stored active. A group may now be set off by up to three
  spaces or a line break (memwarden/guards/values.py), and keys drop line breaks too.
- The change's value in such a format: an agent's IBAN grouped by non-breaking hyphens, en
  dashes or middle dots held no account, so it was compared with nothing. Any character the
  projection reads as other separates a group now; dashes and middle dots leave the key.

Every text is written for this file; each attack test failed on the code before its fix.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from memwarden import Principal, Status
from memwarden.memory.pipeline import Pipeline
from tests.office_attacks import held_and_hidden, office_memory, planted_against

pytestmark = pytest.mark.integration

_NOTES = ("office", "projects", "orion", "notes")
_RARE = ("vellor quambit sprindle torvex halcyn brumble oskerat pellimon drav zintle "
         "morrowgate fennix glimmet tarrowby quelsh ambrit yorvane ceddix plunt wharrel").split()




@pytest.mark.parametrize("window", ["nearest", "related"])
def test_a_weakening_of_an_unnamed_check_is_compared_past_the_managers_notes(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, window: str) -> None:
    """The manager's countersignature rule and twenty of his notes that the change echoes."""
    established = "Globex payments go out only once the controller countersigns them."
    subjects = ["globex"] if window == "related" else []
    if window == "related":
        monkeypatch.setattr(Pipeline, "nearby", lambda self, ctx, record, k: [])
    with office_memory(tmp_path) as mem:
        frank = mem.session(Principal("frank", roles=["manager"]))
        assert frank.write(established, _NOTES, kind="fact", subjects=subjects).status is Status.ACTIVE
        for j in range(len(_RARE)):
            words = " ".join(_RARE[(j + n) % len(_RARE)] for n in range(6))
            note = frank.write(f"Globex payments reconciled with {words} this week.", _NOTES, kind="fact",
                               subjects=subjects)
            assert note.status is Status.ACTIVE
        planted = f"Globex payments go out without countersigning ({' '.join(_RARE)})."
        mallory = mem.session(Principal("mallory", roles=["employee"]), source="agent")
        record = mallory.write(planted, _NOTES, kind="fact", subjects=subjects)
        held_and_hidden(mem, record.status, planted, established, "Globex payments", _NOTES)


def test_many_dropped_words_never_hide_the_one_the_record_names(tmp_path: Path) -> None:
    """Seventy weakenings of nonsense before the one that matters: the dropped words are read
    MAX_TERMS at a time, so the one sorted last still ranks the manager's record."""
    established = "Globex payments go out only once the controller countersigns them."
    with office_memory(tmp_path) as mem:
        frank = mem.session(Principal("frank", roles=["manager"]))
        assert frank.write(established, _NOTES, kind="fact").status is Status.ACTIVE
        for j in range(len(_RARE)):
            words = " ".join(_RARE[(j + n) % len(_RARE)] for n in range(6))
            assert frank.write(f"Globex payments reconciled with {words} this week.", _NOTES,
                               kind="fact").status is Status.ACTIVE
        padding = ", ".join(f"without aa{chr(97 + i // 26)}{chr(97 + i % 26)}b" for i in range(70))
        # The rare words first: the change's query reads its first MAX_TERMS terms, so the notes
        # outrank the record there, and the dropped words are what is left to find it by.
        planted = f"Globex payments go out ({' '.join(_RARE)}) {padding}, without countersigning."
        mallory = mem.session(Principal("mallory", roles=["employee"]), source="agent")
        record = mallory.write(planted, _NOTES, kind="fact")
        held_and_hidden(mem, record.status, planted, established, "Globex payments", _NOTES)


@pytest.mark.parametrize(("established", "change"), [
    ("Globex remittances go to IBAN FR7630006000011234567890189 only.",
     "Globex remittances go to IBAN GB33BUKB20201555555555."),
    ("Globex travel advances are capped at $500 per trip.", "Globex travel advances are capped at $5000 per trip."),
])
def test_nonsense_before_the_change_never_hides_its_words_from_the_windows(
        tmp_path: Path, established: str, change: str) -> None:
    """MAX_TERMS distinct made-up words open the change; its own words come after them."""
    junk = " ".join(f"zq{chr(97 + i // 26)}{chr(97 + i % 26)}x" for i in range(64))
    planted = f"({junk}) {change}"
    planted_against(tmp_path, established, planted, established)


# 64 decoy numbers, each beside a made-up word and all before the change's own words, once put
# 64 made-up words as near a value as "IBAN" is, and first: the holders window read only those.
# It now reads every term, MAX_TERMS a window (memwarden/memory/nearby.py).
def test_decoy_values_never_hide_the_changes_words_from_the_windows(tmp_path: Path) -> None:
    """Each made-up word stands next to a number of its own (an account to the patterns)."""
    established = "Globex remittances go to IBAN FR7630006000011234567890189 only."
    decoys = " ".join(f"zq{chr(97 + i // 26)}{chr(97 + i % 26)}x {5550000 + 7 * i}" for i in range(64))
    planted = f"({decoys}) Globex remittances go to IBAN GB33BUKB20201555555555."
    planted_against(tmp_path, established, planted, "Globex remittances IBAN")


@pytest.mark.parametrize("grouped", ["FR76  3000  6000  0112  3456  7890  189", "FR76\n3000\n6000\n0112\n3456\n7890\n189"])
def test_an_account_grouped_by_wide_spaces_or_line_breaks_is_held(tmp_path: Path, grouped: str) -> None:
    """The manager's IBAN as a pasted table cell (two spaces a group) or a wrapped line."""
    established = f"Globex remittances go to IBAN {grouped} only."
    planted = "Globex remittances go to IBAN GB33BUKB20201555555555."
    planted_against(tmp_path, established, planted, "Globex remittances IBAN")


@pytest.mark.parametrize("dash", ["\u2011", "\u2013", "\u00b7"])
def test_a_new_account_typeset_with_unicode_dashes_is_held(tmp_path: Path, dash: str) -> None:
    """The agent's IBAN grouped by non-breaking hyphens, en dashes or middle dots: a reader
    (and a payment form that strips them) reads it as GB33BUKB20201555555555."""
    established = "Globex remittances go to IBAN FR7630006000011234567890189 only."
    planted = f"Globex remittances go to IBAN {dash.join(['GB33', 'BUKB', '2020', '1555', '5555', '55'])}."
    planted_against(tmp_path, established, planted, "Globex remittances IBAN")
