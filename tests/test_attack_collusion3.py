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

Every text is written for this file; each attack test failed on the code before its fix.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from memwarden import Memory, Principal, Status
from memwarden.memory.pipeline import Pipeline
from tests.test_attack_contradiction import office_memory

pytestmark = pytest.mark.integration

_NOTES = ("office", "projects", "orion", "notes")
_RARE = ("vellor quambit sprindle torvex halcyn brumble oskerat pellimon drav zintle "
         "morrowgate fennix glimmet tarrowby quelsh ambrit yorvane ceddix plunt wharrel").split()


def _held_and_hidden(mem: Memory, status: Status, planted: str, established: str, query: str) -> None:
    assert status is Status.QUARANTINED
    frank = mem.session(Principal("frank", roles=["manager"]))
    found = [h.record.content for h in frank.search(query, _NOTES, k=500)]
    assert planted not in found and established in found


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
        _held_and_hidden(mem, record.status, planted, established, "Globex payments")


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
        _held_and_hidden(mem, record.status, planted, established, "Globex payments")
