"""The time memwarden reads, under a test's control.

memwarden reads the time in one function, ``memwarden.core.records.utcnow``, which the modules
that need it import by name. :func:`patched_clock` points every such import at a test's clock,
so that a TTL or a review timeout runs out when the test says, not after a real wait. Shared by
the reference-model harness (tests/model_harness.py) and the store conformance TTL tests.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

from memwarden import MemoryRecord

# The module that holds memwarden's records, and so its clock (utcnow), wherever it lives.
mw_records = sys.modules[MemoryRecord.__module__]


@dataclass
class Clock:
    """A clock that stands still until the test advances it."""

    now: datetime

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> None:
        """Move the time ``seconds`` on."""
        self.now += timedelta(seconds=seconds)


class RealClock:
    """The system's clock; :meth:`advance` waits. The first advance waits ``seconds`` from its
    call; each later one until ``seconds`` past the previous one's target moment (not past its
    return), so the time a test spends between advances never adds up: as on the fake clock,
    the moments a test names are exact offsets from its first advance."""

    def __init__(self) -> None:
        self._target: float | None = None

    def __call__(self) -> datetime:
        return datetime.now(timezone.utc)

    def advance(self, seconds: float) -> None:
        """Wait ``seconds`` past the previous target moment (the first time: past now)."""
        self._target = (time.monotonic() if self._target is None else self._target) + seconds
        time.sleep(max(0.0, self._target - time.monotonic()))


@contextmanager
def patched_clock(clock: Clock) -> Iterator[Clock]:
    """Make every memwarden module that reads ``utcnow`` read ``clock`` instead."""
    original = mw_records.utcnow
    patched = [m for name, m in list(sys.modules.items())
               if name.startswith("memwarden") and getattr(m, "utcnow", None) is original]
    for module in patched:
        module.utcnow = clock
    try:
        yield clock
    finally:
        for module in patched:
            module.utcnow = original
