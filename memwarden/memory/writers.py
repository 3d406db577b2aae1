"""One writer is one voice: choosing among records so that no writer crowds out another.

What the write and read checks compare a record with is a bounded window: the records the
subject index keeps per subject, the nearest k related records, the records a consensus
counts. Filled by record count, the window belongs to whoever writes the most: one agent's
flood of harmless records evicted the established record a contradiction is compared with
(tests/test_attack_flooding.py). Each window is filled writer by writer instead.

A writer is a principal. Its source orders its own records, not its share: any session may
declare a less trusted source than its binding without a claim, so counted as voices of
their own, one principal's "user", "agent" and "tool" records were three voices, and three
copies of a poison made a true record contested (tests/test_attack_flooding2.py). Within a
principal's share its sources take turns, so that its agent's flood never pushes out what
the principal itself established.

Trust comes before turns where a write is compared with what others established: the records
of sources more trusted than the writer's are served first (:func:`trusted_first`), so that
colluding agents, however many principals they are, never push a user's record out of the
window an agent's change is compared with (tests/test_attack_collusion.py).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Iterator
from typing import TYPE_CHECKING, Any, TypeVar

from memwarden.core.fields import Meta
from memwarden.core.records import SOURCE_ORDER, Source

if TYPE_CHECKING:
    from memwarden.core.records import MemoryRecord
    from memwarden.memory.backends import StoredRow

T = TypeVar("T")


def across_principals(items: Iterable[T], writer: Callable[[T], tuple[Hashable, Hashable]]) -> Iterator[T]:
    """``items`` (best first) reordered so that each principal's best comes before any
    principal's second best, its second before any third, and so on, where ``writer`` gives an
    item's (principal, source); within a principal's turns its sources take turns; within a
    round, in the items' order. Any prefix is a fair share: a window of n holds the best of up
    to n principals however many records one of them wrote, and each one's own order is kept.
    Lazy: a caller that wants the first few (the k related records) pays for grouping the
    items, not for ordering all of them."""
    grouped: dict[Hashable, dict[Hashable, list[tuple[int, T]]]] = {}
    for position, item in enumerate(items):
        principal, source = writer(item)
        grouped.setdefault(principal, {}).setdefault(source, []).append((position, item))
    turns = [_in_rounds(list(sources.values())) for sources in grouped.values()]
    while turns:
        heads = [(next(turn, None), turn) for turn in turns]
        turns = [turn for head, turn in heads if head is not None]
        for position, item in sorted((head for head, _ in heads if head is not None), key=lambda h: h[0]):
            yield item


def _in_rounds(queues: list[list[tuple[int, T]]]) -> Iterator[tuple[int, T]]:
    """The (position, item) pairs of ``queues`` (each in order): every queue's first, by
    position, then every queue's second, and so on."""
    for turn in range(max(map(len, queues), default=0)):
        yield from sorted((queue[turn] for queue in queues if len(queue) > turn), key=lambda h: h[0])


def trusted_first(items: Iterable[T], source: Callable[[T], Any], than: Source) -> list[T]:
    """``items`` with those whose ``source`` is more trusted than ``than`` first, the most
    trusted first, each group in its own order (see the module docstring)."""
    rank = SOURCE_ORDER.index(than)
    # Ranked by source, not only more or less trusted than ``than``: for a tool or external
    # writer agents are more trusted too, and colluding agents' records sorted beside a user's
    # pushed it out (tests/test_attack_collusion2.py).
    return sorted(items, key=lambda item: min(SOURCE_ORDER.index(Source(source(item))), rank))


def record_writer(record: MemoryRecord) -> tuple[str, str]:
    """A record's principal and source (the principal is the voice; see the module docstring)."""
    return record.writer, record.source.value


def row_writer(row: StoredRow) -> tuple[Any, Any]:
    """:func:`record_writer` of a stored row, from its metadata."""
    return row.metadata.get(Meta.WRITER), row.metadata.get(Meta.SOURCE)


def newest_across_writers(rows: Iterable[StoredRow], limit: int, per_principal: int) -> list[StoredRow]:
    """Up to ``limit`` of ``rows``, at most ``per_principal`` of each principal's: each
    principal's newest first, in turn (:func:`across_principals`)."""
    newest = sorted(rows, key=lambda row: float(row.metadata.get(Meta.CREATED_AT) or 0.0), reverse=True)
    taken: dict[Any, int] = {}
    chosen = []
    for row in across_principals(newest, row_writer):
        principal = row_writer(row)[0]
        if taken.get(principal, 0) < per_principal:
            taken[principal] = taken.get(principal, 0) + 1
            chosen.append(row)
            if len(chosen) == limit:
                break
    return chosen


def voice_of(records: Iterable[MemoryRecord]) -> list[MemoryRecord]:
    """What one principal says, of ``records`` all written by it: those from its most trusted
    source (an agent acting for a user does not outvote what she wrote herself)."""
    records = list(records)
    best = min((SOURCE_ORDER.index(r.source) for r in records), default=0)
    return [r for r in records if SOURCE_ORDER.index(r.source) == best]
