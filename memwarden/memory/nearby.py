"""The established records nearest to a write by its words, whatever its subjects.

A writer declares its own subjects, so the contradiction check also compares an untrusted
procedure change with the records of other writers that share the most words with it
(:meth:`~memwarden.memory.pipeline.Pipeline.nearby`, BM25 over the lexical index). That
window is what an attacker fills first: with records of its own, with near copies under
another of its sources, with records the writer cannot read, by writing one namespace over,
or with colleagues' near copies (tests/test_attack_contradiction2.py,
tests/test_attack_collusion.py). So the window is chosen in the query itself:

- every namespace under the write's top-level one that the writer may read (a reader's search
  of a common prefix returns both records). Not the whole store: the jailbreak benchmark's
  benign writes are spread over four top-level scenarios, and comparing across them held
  16.8% of them instead of 13.6% (benchmarks/results/poisoning_corpus_quick_s28_attack18e.json);
- never the writer's own voice (left out by the query, not after the cut);
- round by round, each query leaving out the principals already found, so that one
  principal's near copies, under any of its sources, take one round;
- first among the records of sources more trusted than the writer's (a user's, for an
  agent's change): however many principals collude, their agents' near copies never reach
  those rounds; one query of its own per more trusted source, the most trusted first (for a
  tool's change an agent's records are more trusted too, but never share a user's rounds);
  then among all.
"""

from __future__ import annotations

from collections.abc import Callable

from memwarden.core.fields import Meta
from memwarden.core.records import SOURCE_ORDER, MemoryRecord, Status
from memwarden.guards.validators import by_another
from memwarden.memory.caches import INDEXED_KINDS
from memwarden.memory.codec import from_row
from memwarden.memory.view import StoreView
from memwarden.memory.writers import across_principals, record_writer
from memwarden.policies.engine import ReadScope
from memwarden.policies.pushdown import Where, all_of, any_of, scope_filter

__all__ = ["ROUNDS", "nearest_by_others"]

#: Lexical queries by principal per tier at most (a tier per more trusted source, then the
#: rest; 2 * ROUNDS in all): colluders of the writer's own trust must be this many principals,
#: each with a window's worth of near copies, before an established record of their trust is
#: out of reach.
ROUNDS = 5


def nearest_by_others(view: StoreView, scope: ReadScope, record: MemoryRecord, k: int,
                      sees: Callable[[MemoryRecord], bool]) -> list[MemoryRecord]:
    """Up to ``k`` active records in ``scope`` (the writer's read scope), of the kinds the
    subject index holds, written by another than ``record``'s voice (``by_another``) and
    passing ``sees``: those of sources more trusted than ``record``'s first, then the rest,
    each group best BM25 match for ``record``'s content first, principal by principal."""
    if not view.has_text_index or scope.empty:
        return []
    base = [{Meta.STATUS.value: Status.ACTIVE.value},
            {Meta.KIND.value: {"$in": sorted(kind.value for kind in INDEXED_KINDS)}},
            _not_own(record), scope_filter(scope)]
    trusted = _more_trusted(record)

    def best(extra: list[Where]) -> list[MemoryRecord]:
        ids = [rid for rid, _ in view.lexical(record.content, k, all_of(base + extra)) if rid != record.id]
        rows = view.rows(ids)
        return [from_row(rows[rid]) for rid in ids if rid in rows]

    # The queries of all tiers together stay at 2 * ROUNDS (a tool's or external's change
    # would otherwise pay a tier per more trusted source). Tiers run most trusted first, so
    # the budget runs out only for the least trusted records.
    budget = [2 * ROUNDS]

    def by_principal(extra: list[Where]) -> list[MemoryRecord]:
        found: list[MemoryRecord] = []
        principals: set[str] = set()
        for _ in range(min(ROUNDS, budget[0])):
            budget[0] -= 1
            left_out = [{Meta.WRITER.value: {"$nin": sorted(principals)}}] if principals else []
            batch = best(extra + left_out)
            new = [r for r in batch if r.writer not in principals]
            found += new
            principals |= {r.writer for r in new}
            # Fewer than k rows: every match of the principals not left out is in.
            if not new or len(batch) < k or len(principals) >= k:
                break
        return found

    # One tier per more trusted source, most trusted first: a tool or external writer (a less
    # trusted source needs no claim) counts agents as more trusted, and five colluding agents
    # filled one shared tier's rounds before a user's record (tests/test_attack_collusion2.py).
    # The last tier is the rest (the writer's trust and less): the more trusted had theirs.
    tiers = [by_principal([{Meta.SOURCE.value: source}]) for source in trusted]
    tiers.append(by_principal([{Meta.SOURCE.value: {"$nin": trusted}}] if trusted else []))
    chosen = [r for tier in tiers for r in across_principals(tier, record_writer)]
    unique = list({r.id: r for r in chosen}.values())
    return [r for r in unique if by_another(record, r) and sees(r)][:k]


def _more_trusted(record: MemoryRecord) -> list[str]:
    """The sources more trusted than ``record``'s."""
    return [source.value for source in SOURCE_ORDER[:SOURCE_ORDER.index(record.source)]]


def _not_own(record: MemoryRecord) -> Where:
    """Rows not in ``record``'s own voice as ``by_another`` counts it: another writer, or the
    same writer from a more trusted source."""
    other: Where = {Meta.WRITER.value: {"$ne": record.writer}}
    trusted = _more_trusted(record)
    return any_of([other, {Meta.SOURCE.value: {"$in": trusted}}]) if trusted else other
