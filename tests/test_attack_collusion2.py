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
  they fill the user tier's first round, and his IBAN record, ranked 21st, is never compared
  (a strict xfail: a fix needs a query per principal found, or rows per principal, in BM25).

Every text is written for this file; each attack test failed on the code before its fix.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from memwarden import Memory, Principal, Status
from memwarden.guards.defaults import default_validators
from memwarden.memory.embeddings import HashingEmbedding
from memwarden.memory.nearby import ROUNDS
from memwarden.memory.pipeline import Pipeline

pytestmark = pytest.mark.integration

_ESTABLISHED = "Globex remittances go to IBAN FR7630006000011234567890189 only."
_CHANGED = "Globex remittances go to IBAN GB33BUKB20201555555555"
_NOTES = ("office", "projects", "orion", "notes")
# Rare words only the pads and the change hold: each pad outranks the manager's record.
_RARE = ("vellor quambit sprindle torvex halcyn brumble oskerat pellimon drav zintle "
         "morrowgate fennix glimmet tarrowby quelsh ambrit yorvane ceddix plunt wharrel").split()
_COLLUDERS = [f"teammate{i}" for i in range(ROUNDS)]


def _office(tmp_path: Path) -> Memory:
    chain = default_validators()
    chain[0].quarantine_at = 0.3  # the detector as the benchmark tunes it
    return Memory.open(tmp_path / "data", policy="office", embedding=HashingEmbedding(), validators=chain)


def _manager_establishes(mem: Memory) -> None:
    frank = mem.session(Principal("frank", roles=["manager"]))  # source user
    assert frank.write(_ESTABLISHED, _NOTES, kind="fact", subjects=["globex"]).status is Status.ACTIVE


def _held_and_hidden(mem: Memory, status: Status, planted: str) -> None:
    assert status is Status.QUARANTINED
    frank = mem.session(Principal("frank", roles=["manager"]))
    found = [h.record.content for h in frank.search("Globex remittance IBAN", _NOTES, k=500)]
    assert planted not in found and _ESTABLISHED in found


def _agents(mem: Memory) -> list:
    return [mem.session(Principal(name, roles=["employee"]), source="agent") for name in _COLLUDERS]


@pytest.mark.slow  # 101 governed writes
@pytest.mark.parametrize("declared", ["tool", "external"])
def test_a_less_trusted_declared_source_never_lets_agents_share_the_users_tier(
        tmp_path: Path, declared: str) -> None:
    """Nearest window: five colleagues' agents, graded pads so that each lexical round is one
    colleague's; the change declared from a less trusted source than its agent binding."""
    with _office(tmp_path) as mem:
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
    with _office(tmp_path) as mem:
        _manager_establishes(mem)
        for agent, name in zip(_agents(mem), _COLLUDERS):
            pad = agent.write(f"Globex remittances go to IBAN on the ledger today ({name}).", _NOTES,
                              kind="fact", subjects=["globex"])
            assert pad.status is Status.ACTIVE
        planted = f"{_CHANGED} on the ledger today."
        mallory = mem.session(Principal("mallory", roles=["employee"]), source="agent")
        record = mallory.write(planted, _NOTES, kind="fact", subjects=["globex"], source=declared)
        _held_and_hidden(mem, record.status, planted)


@pytest.mark.xfail(strict=True, reason=(
    "a round of the nearest window takes the k (20) best rows, then leaves their principals "
    "out of later rounds: twenty of the manager's own notes that the change echoes fill the "
    "first round, and his established record, ranked below them, is never reached (the subject "
    "window finds nothing: the change declares no subject)"))
def test_the_established_writers_own_notes_never_crowd_out_his_record(tmp_path: Path) -> None:
    with _office(tmp_path) as mem:
        _manager_establishes(mem)
        frank = mem.session(Principal("frank", roles=["manager"]))
        for j in range(len(_RARE)):
            words = " ".join(_RARE[(j + n) % len(_RARE)] for n in range(6))
            note = frank.write(f"Globex remittances reconciled with {words} this week.", _NOTES, kind="fact")
            assert note.status is Status.ACTIVE
        planted = f"{_CHANGED} ({' '.join(_RARE)})."
        mallory = mem.session(Principal("mallory", roles=["employee"]), source="agent")
        _held_and_hidden(mem, mallory.write(planted, _NOTES, kind="fact").status, planted)
