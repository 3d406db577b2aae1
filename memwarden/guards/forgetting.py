"""Forgetting as policy: TTL, decay by age and use, and the order in which capacity evicts.

Decay follows an Ebbinghaus-style curve: a record's retention is
``2 ** (-(now - last_access) / (half_life * (1 + uses)))`` — every read refreshes
``last_access`` and, like spaced repetition, each use stretches the half-life. A record is
forgotten once its retention falls below :data:`RETENTION_FLOOR`. Because that moment is a
single timestamp, it is stored and filtered on exactly like a TTL, so a faded record is never
returned even before the sweeper removes it.
"""

from __future__ import annotations

import math
from datetime import datetime, timedelta

from memwarden.core.records import MemoryRecord

#: Retention below which a decaying record counts as forgotten (about 4.3 half-lives).
RETENTION_FLOOR = 0.05


def forget_at(record: MemoryRecord) -> datetime | None:
    """When the record stops being returned: the earlier of its TTL and its decay deadline."""
    deadlines = [record.expires_at] if record.expires_at else []
    if record.half_life is not None:
        span = record.half_life * (1 + record.uses) * math.log2(1 / RETENTION_FLOOR)
        deadlines.append((record.last_access or record.created_at) + timedelta(seconds=span))
    return min(deadlines) if deadlines else None


def eviction_order(records: list[MemoryRecord]) -> list[MemoryRecord]:
    """Capacity evicts in this order: the record that would be forgotten soonest first (never
    forgotten counts as latest), then the least recently used, then the oldest."""
    far = datetime.max.replace(tzinfo=records[0].created_at.tzinfo) if records else None
    return sorted(records, key=lambda r: (forget_at(r) or far, r.last_access or r.created_at, r.created_at, r.id))
