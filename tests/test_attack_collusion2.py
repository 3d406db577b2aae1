"""Colluding principals against the trust tiers of the windows a procedure change is compared
with (issue 18), as outsiders would try them after tests/test_attack_collusion.py.

What more trusted sources established is served first in both windows. Attacks:

- A less trusted source needs no claim, so the change is written from 'tool' (or 'external'):
  for such a writer agents are "more trusted" too, and five colleagues' agent pads shared the
  first tier with the manager's record and filled its rounds (nearest window), or sorted
  beside it and filled the five related records (subject window). Each more trusted source is
  now a tier of its own, the most trusted first (and the tiers share 2 * ROUNDS queries).
- No collusion at all: the manager's own notes crowd out his record. A round takes the k best
  rows and then leaves their principals out, so a principal's rows below the k are never
  reached. The change repeats words of twenty of the manager's notes about the same customer,
  they fill the user tier's first round, and his IBAN record, ranked 21st, is never compared;
  in the subject window, five notes about the customer fill the five. Each window now first
  takes the records that hold what the change may change (the lexical index keeps each
  record's procedure categories), then the rest: notes without a value never come first.

Every text is written for this file; each attack test failed on the code before its fix.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from memwarden import Memory, Principal, Status
from memwarden.memory.pipeline import Pipeline
from tests.office_attacks import agents, held_and_hidden, office_memory

pytestmark = pytest.mark.integration

_ESTABLISHED = "Globex remittances go to IBAN FR7630006000011234567890189 only."
_CHANGED = "Globex remittances go to IBAN GB33BUKB20201555555555"
_NOTES = ("office", "projects", "orion", "notes")
# Rare words only the pads and the change hold: each pad outranks the manager's record.
_RARE = ("vellor quambit sprindle torvex halcyn brumble oskerat pellimon drav zintle "
         "morrowgate fennix glimmet tarrowby quelsh ambrit yorvane ceddix plunt wharrel").split()
_COLLUDERS = [f"teammate{chr(97 + i)}" for i in range(5)]  # as many as the related records compared


def _manager_establishes(mem: Memory) -> None:
    frank = mem.session(Principal("frank", roles=["manager"]))  # source user
    assert frank.write(_ESTABLISHED, _NOTES, kind="fact", subjects=["globex"]).status is Status.ACTIVE


def _held_and_hidden(mem: Memory, status: Status, planted: str) -> None:
    held_and_hidden(mem, status, planted, _ESTABLISHED, "Globex remittance IBAN", _NOTES)


def _agents(mem: Memory, names: list[str] = _COLLUDERS) -> list:
    return agents(mem, names)


@pytest.mark.slow  # 101 governed writes
@pytest.mark.parametrize("declared", ["tool", "external"])
def test_a_less_trusted_declared_source_never_lets_agents_share_the_users_tier(
        tmp_path: Path, declared: str) -> None:
    """Nearest window: five colleagues' agents, graded pads so that each lexical round is one
    colleague's; the change declared from a less trusted source than its agent binding."""
    with office_memory(tmp_path) as mem:
        _manager_establishes(mem)
        for rank, (agent, name) in enumerate(zip(_agents(mem), _COLLUDERS)):
            held = len(_COLLUDERS) + 1 - rank
            for j in range(len(_RARE)):
                words = " ".join(_RARE[(j + n) % len(_RARE)] for n in range(held))
                pad = agent.write(f"Globex remittances go to IBAN {words} ({name}).", _NOTES, kind="fact")
                assert pad.status is Status.ACTIVE
        planted = f"{_CHANGED} ({' '.join(_RARE)})."
        mallory = mem.session(Principal("mallory", roles=["employee"]), source="agent")
        record = mallory.write(planted, _NOTES, kind="fact", source=declared)
        assert record.source.value == declared  # no claim needed to declare less trust
        _held_and_hidden(mem, record.status, planted)


@pytest.mark.parametrize("declared", ["tool", "external"])
def test_a_less_trusted_declared_source_never_lets_agents_push_a_user_out_of_the_related_records(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, declared: str) -> None:
    """Subject window alone (no lexical index, as against a Chroma server): five colleagues'
    agent pads about "globex", each sharing more words with the change than the manager's."""
    monkeypatch.setattr(Pipeline, "nearby", lambda self, ctx, record, k: [])
    with office_memory(tmp_path) as mem:
        _manager_establishes(mem)
        for agent, name in zip(_agents(mem), _COLLUDERS):
            pad = agent.write(f"Globex remittances go to IBAN on the ledger today ({name}).", _NOTES,
                              kind="fact", subjects=["globex"])
            assert pad.status is Status.ACTIVE
        planted = f"{_CHANGED} on the ledger today."
        mallory = mem.session(Principal("mallory", roles=["employee"]), source="agent")
        record = mallory.write(planted, _NOTES, kind="fact", subjects=["globex"], source=declared)
        _held_and_hidden(mem, record.status, planted)


@pytest.mark.parametrize("declared", ["tool", "external"])
def test_agents_holding_the_new_account_never_share_the_users_tier(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, declared: str) -> None:
    """Subject window alone: ten colleagues' agents write about "globex" in words the manager's
    record does not hold (so each is stored) and the change repeats, five of them the new
    account. Those five are among the records compared first (they hold an account), the
    other five among the rest. For a change declared from a less trusted source, agents are
    more trusted too, and ranked beside the manager's record they filled both. Each more
    trusted source is a tier of its own."""
    monkeypatch.setattr(Pipeline, "nearby", lambda self, ctx, record, k: [])
    new_account = _CHANGED.rsplit(" ", 1)[1]
    names = [f"teammate{chr(97 + i)}" for i in range(2 * len(_COLLUDERS))]
    with office_memory(tmp_path) as mem:
        _manager_establishes(mem)
        for n, (agent, name) in enumerate(zip(_agents(mem, names), names)):
            value = new_account if n < len(_COLLUDERS) else "entries"
            pad = agent.write(f"{value} on the ledger today after audit review signoff ({name}).", _NOTES,
                              kind="fact", subjects=["globex"])
            assert pad.status is Status.ACTIVE
        planted = f"{_CHANGED} on the ledger today after audit review signoff."
        mallory = mem.session(Principal("mallory", roles=["employee"]), source="agent")
        record = mallory.write(planted, _NOTES, kind="fact", subjects=["globex"], source=declared)
        _held_and_hidden(mem, record.status, planted)


@pytest.mark.parametrize("window", ["nearest", "related"])
def test_the_established_writers_own_notes_never_crowd_out_his_record(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, window: str) -> None:
    """Twenty of the manager's notes that the change echoes, without a value: only records
    that hold what the change changes (an account here) take the first places of a window.
    ``related``: the subject window alone (no lexical index, as against a Chroma server), the
    notes and the change about "globex"."""
    subjects = ["globex"] if window == "related" else []
    if window == "related":
        monkeypatch.setattr(Pipeline, "nearby", lambda self, ctx, record, k: [])
    with office_memory(tmp_path) as mem:
        _manager_establishes(mem)
        frank = mem.session(Principal("frank", roles=["manager"]))
        for j in range(len(_RARE)):
            words = " ".join(_RARE[(j + n) % len(_RARE)] for n in range(6))
            note = frank.write(f"Globex remittances reconciled with {words} this week.", _NOTES, kind="fact",
                               subjects=subjects)
            assert note.status is Status.ACTIVE
        planted = f"{_CHANGED} ({' '.join(_RARE)})."
        mallory = mem.session(Principal("mallory", roles=["employee"]), source="agent")
        _held_and_hidden(mem, mallory.write(planted, _NOTES, kind="fact", subjects=subjects).status, planted)
