"""One writer is one voice: choosing among records so that no writer crowds out another.

What the write and read checks compare a record with is a bounded window: the records the
subject index keeps per subject, the nearest k related records, the records a consensus
counts. Filled by record count, the window belongs to whoever writes the most: one agent's
flood of harmless records evicted the established record a contradiction is compared with
(tests/test_attack_flooding.py). Each window is filled writer by writer instead.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable
from typing import TYPE_CHECKING, Any, TypeVar

from memwarden.core.fields import Meta

if TYPE_CHECKING:
    from memwarden.core.records import MemoryRecord
    from memwarden.memory.backends import StoredRow

T = TypeVar("T")

#: The most rows about one subject the subject index reads to choose from (a subject with
#: more is read in storage order, oldest first: what is established stays in view).
SUBJECT_SCAN = 4096


def across_writers(items: Iterable[T], writer: Callable[[T], Hashable]) -> list[T]:
    """``items`` (best first) reordered so that each writer's best comes before any writer's
    second best, its second before any third, and so on; within a round, in the items' order.

    Any prefix of the result is a fair share: a writer with records left is never more than
    one behind another, so a window of n holds the best of up to n writers however many
    records one of them wrote. Each writer's own order is kept.
    """
    counts: dict[Hashable, int] = {}
    ranked = []
    for position, item in enumerate(items):
        key = writer(item)
        turn = counts.get(key, 0)
        counts[key] = turn + 1
        ranked.append((turn, position, item))
    ranked.sort(key=lambda entry: (entry[0], entry[1]))
    return [item for _, _, item in ranked]


def record_writer(record: MemoryRecord) -> tuple[str, str]:
    """Whose voice a record is: its writer and source (a user's own record and her agent's
    are two voices, as :func:`~memwarden.guards.validators.by_another` counts them)."""
    return record.writer, record.source.value


def row_writer(row: StoredRow) -> tuple[Any, Any]:
    """:func:`record_writer` of a stored row, from its metadata."""
    return row.metadata.get(Meta.WRITER), row.metadata.get(Meta.SOURCE)


def newest_across_writers(rows: Iterable[StoredRow], limit: int) -> list[StoredRow]:
    """Up to ``limit`` of ``rows``: each writer's newest first, in turn (:func:`across_writers`)."""
    newest = sorted(rows, key=lambda row: float(row.metadata.get(Meta.CREATED_AT) or 0.0), reverse=True)
    return across_writers(newest, row_writer)[:limit]
