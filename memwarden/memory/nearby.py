"""The established records nearest to a write by its words, whatever its subjects.

A writer declares its own subjects, so the contradiction check also compares an untrusted
procedure change with the records of other writers that share the most words with it
(:meth:`~memwarden.memory.pipeline.Pipeline.nearby`, BM25 over the lexical index). That
window is what an attacker fills first: with records of its own, with near copies under
another of its sources, with records the writer cannot read, or by writing one namespace over
(tests/test_attack_contradiction2.py). So the window is chosen in the query itself: every
namespace under the write's top-level one that the writer may read (a reader's search of a
common prefix returns both records), never the writer's own voice, and each further query
leaves out the voices already found. Not the whole store: the jailbreak benchmark's benign
writes are spread over four top-level scenarios, and comparing across them held 16.8% of
them instead of 13.6% (benchmarks/results/poisoning_corpus_quick_s28_attack18e.json).
"""

from __future__ import annotations

from collections.abc import Callable

from memwarden.core.fields import Meta
from memwarden.core.records import SOURCE_ORDER, MemoryRecord, Status
from memwarden.guards.validators import by_another
from memwarden.memory.caches import INDEXED_KINDS
from memwarden.memory.codec import from_row
from memwarden.memory.view import StoreView
from memwarden.memory.writers import across_writers, record_writer
from memwarden.policies.engine import ReadScope
from memwarden.policies.pushdown import Where, all_of, any_of, scope_filter

__all__ = ["ROUNDS", "nearest_by_others"]

#: Lexical queries per look-up at most: an attacker must write as this many voices, each
#: with a window's worth of near copies, before an established record is out of reach.
ROUNDS = 5


def nearest_by_others(view: StoreView, scope: ReadScope, record: MemoryRecord, k: int,
                      sees: Callable[[MemoryRecord], bool]) -> list[MemoryRecord]:
    """Up to ``k`` active records in ``scope`` (the writer's read scope), of the kinds the
    subject index holds, written by another than ``record``'s voice (``by_another``) and
    passing ``sees``, best BM25 match for ``record``'s content first, writer by writer.

    Each round asks for the ``k`` best of the voices not found yet, so that one voice's many
    near copies take one round, not the window; at most ``ROUNDS`` rounds."""
    if not view.has_text_index or scope.empty:
        return []
    base = [{Meta.STATUS.value: Status.ACTIVE.value},
            {Meta.KIND.value: {"$in": sorted(kind.value for kind in INDEXED_KINDS)}},
            _not_own(record), scope_filter(scope)]
    found: list[MemoryRecord] = []
    voices: set[tuple[str, str]] = set()
    for _ in range(ROUNDS):
        where = all_of(base + [_not_voice(*voice) for voice in sorted(voices)])
        ids = [rid for rid, _ in view.lexical(record.content, k, where) if rid != record.id]
        rows = view.rows(ids)
        new = [r for r in (from_row(rows[rid]) for rid in ids if rid in rows) if record_writer(r) not in voices]
        if not new:
            break
        found += new
        voices |= {record_writer(r) for r in new}
        if len(voices) >= k:
            break
    return [r for r in across_writers(found, record_writer) if by_another(record, r) and sees(r)][:k]


def _not_own(record: MemoryRecord) -> Where:
    """Rows not in ``record``'s own voice as ``by_another`` counts it: another writer, or the
    same writer from a more trusted source."""
    other: Where = {Meta.WRITER.value: {"$ne": record.writer}}
    trusted = [source.value for source in SOURCE_ORDER[:SOURCE_ORDER.index(record.source)]]
    return any_of([other, {Meta.SOURCE.value: {"$in": trusted}}]) if trusted else other


def _not_voice(writer: str, source: str) -> Where:
    """Rows not written by ``writer`` from ``source``."""
    return any_of([{Meta.WRITER.value: {"$ne": writer}}, {Meta.SOURCE.value: {"$ne": source}}])
