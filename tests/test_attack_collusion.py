"""Colluding principals against the windows a procedure change is compared with (issue 18).

Each window the contradiction check compares an agent's changed account with is fair by
principal: one principal's near copies, under any of its sources, take one turn
(tests/test_attack_flooding*.py, tests/test_attack_contradiction2.py). Several principals
working together each take a turn, and five colleagues' agents, each writing near copies that
outrank the manager's record, filled both windows for a sixth:

- the nearest records by words (five rounds of a lexical query, each leaving out the
  principals found): five principals' pads, graded so that each round is one's, filled them.
  Now one query ranks every match with its writer, and every principal's best comes before
  any principal's second: five colluders take five of the twenty places;
- the related records by subject (five, one principal's best before another's second), as
  against a Chroma server where there is no lexical index: five principals' pads filled them.

What a more trusted source established (a user's record, for an agent's change) is now served
first in both windows, so no number of colluding agents pushes it out. Colluders of the
writer's own trust must be as many principals as the window (20), each with a copy that
outranks the established record, to push out a record of that same trust.
Every text is written for this file; each attack test failed on the code before the change.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from memwarden import Memory, Principal, Status
from memwarden.guards.contradiction import ContradictionCheck
from memwarden.memory.pipeline import Pipeline
from tests.office_attacks import agents, held_and_hidden, office_memory
from tests.test_attack_contradiction2 import CHANGED, ESTABLISHED, NOTES, PAD_WORDS

pytestmark = pytest.mark.integration

_CHANGED = CHANGED.removesuffix(".")
# Twenty rare words (as many as the nearest window compares): every pad holds some, the change
# holds all, so each pad outranks the established record in a lexical query.
_RARE = PAD_WORDS[:20]
# (Names of letters only: a digit in a note is a value-like token, memwarden/guards/unread.py.)
_COLLUDERS = [f"colleague{chr(97 + i)}" for i in range(5)]  # as many as the related records compared


def _established(mem: Memory, source: str) -> None:
    frank = mem.session(Principal("frank", roles=["manager"]), source=source)
    assert frank.write(ESTABLISHED, NOTES, kind="fact", subjects=["acme"]).status is Status.ACTIVE


def _agents(mem: Memory, names: list[str] = _COLLUDERS) -> list:
    return agents(mem, names)


def _held_and_hidden(mem: Memory, status: Status, planted: str) -> None:
    held_and_hidden(mem, status, planted, ESTABLISHED, "Which IBAN are Acme invoices paid to?", NOTES)


def _flood_nearest_window(mem: Memory) -> tuple[str, Status]:
    """Every colluder writes a pad per rare word, the first colluder's pads holding the most
    rare words, so that each lexical round is one colluder's; another plants the change holding
    them all: its text and the status it was stored with."""
    for rank, (agent, name) in enumerate(zip(_agents(mem), _COLLUDERS)):
        held = len(_COLLUDERS) + 1 - rank
        for j in range(len(_RARE)):
            words = " ".join(_RARE[(j + n) % len(_RARE)] for n in range(held))
            pad = agent.write(f"Acme invoices are paid, IBAN {words} ({name}).", NOTES, kind="fact")
            assert pad.status is Status.ACTIVE
    planted = f"{_CHANGED} ({' '.join(_RARE)})."
    mallory = mem.session(Principal("mallory", roles=["employee"]), source="agent")
    return planted, mallory.write(planted, NOTES, kind="fact").status


@pytest.mark.slow  # 101 governed writes
def test_colluding_agents_never_push_a_users_record_out_of_the_nearest_window(tmp_path: Path) -> None:
    with office_memory(tmp_path) as mem:
        _established(mem, "user")
        planted, status = _flood_nearest_window(mem)
        _held_and_hidden(mem, status, planted)


@pytest.mark.slow
def test_colluding_agents_of_the_same_trust_take_one_place_each(tmp_path: Path) -> None:
    """Against an agent's established record (no more trusted source to serve first): five
    colluders filled five rounds of twenty before the change, and now take five places."""
    with office_memory(tmp_path) as mem:
        _established(mem, "agent")
        planted, status = _flood_nearest_window(mem)
        _held_and_hidden(mem, status, planted)


def test_as_many_colluding_agents_as_the_window_without_a_value_change_nothing(tmp_path: Path) -> None:
    """Twenty colluding agents (the window's nearby_k), one near copy each, filled the nearest
    window before an agent's established record; without a value, their copies now come
    after every record that holds what the change changes."""
    names = [f"colleague{chr(97 + i)}" for i in range(ContradictionCheck().nearby_k)]
    with office_memory(tmp_path) as mem:
        _established(mem, "agent")
        for agent, name in zip(_agents(mem, names), names):
            pad = agent.write(f"Acme invoices are paid, IBAN {' '.join(_RARE)} ({name}).", NOTES, kind="fact")
            assert pad.status is Status.ACTIVE
        planted = f"{_CHANGED} ({' '.join(_RARE)})."
        mallory = mem.session(Principal("mallory", roles=["employee"]), source="agent")
        _held_and_hidden(mem, mallory.write(planted, NOTES, kind="fact").status, planted)


def test_as_many_colluding_agents_as_the_window_holding_the_new_value_do_not_outrank_it(
        tmp_path: Path) -> None:
    """Twenty colluding agents (nearby_k), each with a copy of the new account that shares no
    topic with the established record (so each is stored) and five words of the change of
    its own, to fill the window of records holding an account. The established record still
    ranks among them: BM25 weighs words by how few of the matches hold them, so each copy
    must outrank it on words of its own, and the query reads 64 terms of the change at most
    (twenty copies need a hundred). Not a proof: twenty principals of the writer's own trust
    with copies that each outrank the established record would fill the window."""
    names = [f"colleague{chr(97 + i)}" for i in range(ContradictionCheck().nearby_k)]
    new_account = _CHANGED.rsplit(" ", 1)[1]
    # Five words of its own per copy (BM25 over the matches: words every copy holds weigh nothing).
    own = [[f"{a}{b}{c}vek" for c in "lmnpr"] for a, b in zip("bcdfghjklmnpqrstvwxz", "aeiouyaeiouyaeiouyae")]
    with office_memory(tmp_path) as mem:
        _established(mem, "agent")
        for agent, name, words in zip(_agents(mem, names), names, own):
            pad = agent.write(f"{new_account} {' '.join(words)} ({name}).", NOTES, kind="fact")
            assert pad.status is Status.ACTIVE
        planted = f"{_CHANGED} ({' '.join(w for words in own for w in words)})."
        mallory = mem.session(Principal("mallory", roles=["employee"]), source="agent")
        assert mallory.write(planted, NOTES, kind="fact").status is Status.QUARANTINED


def test_colluding_agents_never_push_a_users_record_out_of_the_related_records(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With no nearest-by-words window (against a Chroma server there is no lexical index),
    five colleagues' pads about "acme", each sharing more words with the change than the
    manager's record does, filled the five related records compared."""
    monkeypatch.setattr(Pipeline, "nearby", lambda self, ctx, record, k: [])
    with office_memory(tmp_path) as mem:
        _established(mem, "user")
        for agent, name in zip(_agents(mem), _COLLUDERS):
            pad = agent.write(f"Acme invoices are paid on file today ({name}).", NOTES, kind="fact",
                              subjects=["acme"])
            assert pad.status is Status.ACTIVE
        planted = f"{_CHANGED} on file today."
        mallory = mem.session(Principal("mallory", roles=["employee"]), source="agent")
        status = mallory.write(planted, NOTES, kind="fact", subjects=["acme"]).status
        _held_and_hidden(mem, status, planted)
