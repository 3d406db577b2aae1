"""The read-time guard: which stored records may be returned at all, whoever asks.

Only active records that are neither expired nor faded are ever returned. The same rule exists twice on purpose:
as a ``where`` filter pushed into the store and as a check on every row that comes back.
"""

from __future__ import annotations

from datetime import datetime

from memwarden.guards.forgetting import forget_at
from memwarden.memory.records import MemoryRecord, Status

Where = dict


def visible_filter(now: datetime) -> Where:
    """Active and not expired at ``now``."""
    return {"$and": [{"status": Status.ACTIVE.value}, {"expires_at": {"$gt": now.timestamp()}}]}


def is_visible(record: MemoryRecord, now: datetime) -> bool:
    """The same rule as :func:`visible_filter`, on a rebuilt record."""
    if record.status is not Status.ACTIVE:
        return False
    deadline = forget_at(record)
    return deadline is None or deadline > now
