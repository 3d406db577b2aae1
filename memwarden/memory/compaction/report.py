"""What a purge reports (:class:`PurgeReport`), and the error it raises (:class:`PurgeError`)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any


class PurgeError(RuntimeError):
    """A physical erasure could not be completed; the rows are deleted logically.

    When the purge had closed the client, ``client`` and ``collection`` are fresh ones to use
    instead. The directory is left consistent and marked: the next purge (even of no ids) or
    :func:`memwarden.memory.compaction.recover` finishes the erasure.
    """

    def __init__(self, message: str, *, client: Any = None, collection: Any = None) -> None:
        super().__init__(message)
        self.client, self.collection = client, collection


@dataclass
class PurgeReport:
    """What one purge did, for receipts, logs and the benchmark."""

    requested: int = 0
    erased: int = 0            # requested rows that were still stored
    kept: int = 0              # rows left in the collection
    mechanism: str = ""        # "surgery", "rebuild", "logical" (server client) or "none"
    fallback_reason: str = ""  # why surgery was not used, when it was not
    scrubbed: bool = False     # files scrubbed: FTS rebuilt, VACUUM done, no free page left
    queue_rows_removed: int = 0
    hnsw_elements_removed: int = 0
    hnsw_links_repaired: int = 0
    segments_removed: list[str] = field(default_factory=list)
    #: Folders that look like segment folders, belong to no segment, and were not made or
    #: dropped by memwarden: left in place (see docs/erasure.md, "Folders").
    segments_unowned: list[str] = field(default_factory=list)
    sqlite_bytes_before: int = 0
    sqlite_bytes_after: int = 0
    free_pages_after: int = -1
    seconds: dict[str, float] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return asdict(self)


@contextmanager
def phase(report: PurgeReport, name: str) -> Iterator[None]:
    """Add the time spent in the block to ``report.seconds[name]``."""
    start = time.perf_counter()
    try:
        yield
    finally:
        took = time.perf_counter() - start
        report.seconds[name] = round(report.seconds.get(name, 0.0) + took, 4)


def file_size(path: Path) -> int:
    """The size of ``path`` in bytes; 0 when it does not exist."""
    try:
        return path.stat().st_size
    except OSError:
        return 0
