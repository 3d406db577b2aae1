"""The read-time guard: which stored records may be returned at all, whoever asks.

Only active records that are neither expired nor faded are ever returned. The same rule exists
three times on purpose: as a ``where`` filter pushed into the store, as a check on the stored
metadata of a row (cheap enough to run on every row a search over-fetches) and as a check on
every record that comes back.
"""

from __future__ import annotations

from datetime import datetime

from memwarden.core.fields import Meta
from memwarden.guards.forgetting import forget_at
from memwarden.core.records import MemoryRecord, Status

Where = dict


def visible_filter(now: datetime) -> Where:
    """Active and not expired at ``now``."""
    return {"$and": [{Meta.STATUS.value: Status.ACTIVE.value}, {Meta.EXPIRES_AT.value: {"$gt": now.timestamp()}}]}


def hidden_filter(now: datetime) -> Where:
    """The complement of :func:`visible_filter`: rows that are not active, or expired at ``now``.
    Cheap in Chroma, whose filter cost grows with the rows a clause matches: few rows are hidden."""
    others = [s.value for s in Status if s is not Status.ACTIVE]
    return {"$or": [{Meta.STATUS.value: {"$in": others}}, {Meta.EXPIRES_AT.value: {"$lte": now.timestamp()}}]}


def visible_metadata(metadata: dict, now: float) -> bool:
    """The same rule as :func:`visible_filter`, on a stored row's metadata (``now`` in POSIX
    seconds; a row without an expiry field counts as expired: fail closed)."""
    expires = metadata.get(Meta.EXPIRES_AT)
    return (metadata.get(Meta.STATUS) == Status.ACTIVE.value and isinstance(expires, (int, float))
            and not isinstance(expires, bool) and expires > now)


def is_visible(record: MemoryRecord, now: datetime) -> bool:
    """The same rule as :func:`visible_filter`, on a rebuilt record."""
    if record.status is not Status.ACTIVE:
        return False
    deadline = forget_at(record)
    return deadline is None or deadline > now
