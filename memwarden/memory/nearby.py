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
- principal by principal: every principal's best match before any principal's second, so that
  one principal's near copies, under any of its sources, take one place (colluders of the
  writer's own trust must be ``k`` principals to push out an established record of that trust);
- first among the records of sources more trusted than the writer's (a user's, for an
  agent's change): however many principals collude, their agents' near copies never come
  before it; then among all.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from itertools import chain, islice
from typing import TypeVar

from memwarden.core.fields import Meta
from memwarden.core.records import SOURCE_ORDER, MemoryRecord, Status
from memwarden.guards.validators import by_another
from memwarden.memory.caches import INDEXED_KINDS
from memwarden.memory.codec import from_row
from memwarden.memory.view import StoreView
from memwarden.memory.writers import across_principals
from memwarden.policies.engine import ReadScope
from memwarden.policies.pushdown import Where, all_of, any_of, scope_filter

T = TypeVar("T")

__all__ = ["nearest_by_others"]


def nearest_by_others(view: StoreView, scope: ReadScope, record: MemoryRecord, k: int,
                      sees: Callable[[MemoryRecord], bool]) -> list[MemoryRecord]:
    """Up to ``k`` active records in ``scope`` (the writer's read scope), of the kinds the
    subject index holds, written by another than ``record``'s voice (``by_another``) and
    passing ``sees``: those of sources more trusted than ``record``'s first, then the rest,
    each group every principal's best BM25 match for ``record``'s content before any
    principal's second, best first."""
    if not view.has_text_index or scope.empty:
        return []
    where = all_of([{Meta.STATUS.value: Status.ACTIVE.value},
                    {Meta.KIND.value: {"$in": sorted(kind.value for kind in INDEXED_KINDS)}},
                    _not_own(record), scope_filter(scope)])
    # One query ranks every match with its writer: the turns below need all of them, and
    # a query per round cost the validator chain's p99 5 ms of its 9 (jailbreak benchmark).
    ranked = [(rid, (writer, source)) for rid, _, writer, source in view.lexical_voices(record.content, where)
              if rid != record.id]
    trusted = set(_more_trusted(record))
    first = across_principals((m for m in ranked if m[1][1] in trusted), lambda m: m[1])
    rest = across_principals(ranked, lambda m: m[1])
    found: list[MemoryRecord] = []
    seen: set[str] = set()
    for chunk in _chunks((rid for rid, _ in chain(first, rest)), 2 * k):
        chunk = [rid for rid in chunk if rid not in seen]
        seen.update(chunk)
        rows = view.rows(chunk)
        found += [r for r in (from_row(rows[rid]) for rid in chunk if rid in rows) if by_another(record, r) and sees(r)]
        if len(found) >= k:
            break
    return found[:k]


def _chunks(items: Iterable[T], size: int) -> Iterator[list[T]]:
    """``items`` in lists of ``size`` (the last may be shorter)."""
    iterator = iter(items)
    while chunk := list(islice(iterator, size)):
        yield chunk


def _more_trusted(record: MemoryRecord) -> list[str]:
    """The sources more trusted than ``record``'s."""
    return [source.value for source in SOURCE_ORDER[:SOURCE_ORDER.index(record.source)]]


def _not_own(record: MemoryRecord) -> Where:
    """Rows not in ``record``'s own voice as ``by_another`` counts it: another writer, or the
    same writer from a more trusted source."""
    other: Where = {Meta.WRITER.value: {"$ne": record.writer}}
    trusted = _more_trusted(record)
    return any_of([other, {Meta.SOURCE.value: {"$in": trusted}}]) if trusted else other
