"""Tombstones: content-free marks that keep erased content from being silently re-ingested.

An erasure leaves, for every subject of every erased record, a hash of (subject, namespace,
normalised content). A later write of the same content about the same subject in the same
namespace is refused unless the writer explicitly asks to re-ingest it and may erase there.
The pipeline consults the marks only for writers who may read in that namespace, so a mark
never confirms an erasure outside the writer's scope. Only hashes are kept.
"""

from __future__ import annotations

import hashlib
import sqlite3
import threading
import unicodedata
from collections.abc import Iterable
from pathlib import Path

from memwarden.core.namespace import Namespace, namespace_text

_SCHEMA = "CREATE TABLE IF NOT EXISTS tombstones (mark TEXT PRIMARY KEY, audit_seq INTEGER)"


def tombstone_mark(subject: str, namespace: Namespace, content: str) -> str:
    """The hash a tombstone stores; case, width and spacing do not change it."""
    normal = " ".join(unicodedata.normalize("NFKC", content).casefold().split())
    return hashlib.sha256(f"{subject}\x00{namespace_text(namespace)}\x00{normal}".encode()).hexdigest()


class Tombstones:
    """A small SQLite table of tombstone marks next to the data."""

    def __init__(self, path: str | Path) -> None:
        self._lock = threading.Lock()
        self._db = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None, timeout=30)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute(_SCHEMA)

    def add(self, marks: Iterable[str], audit_seq: int | None) -> None:
        """Record marks (idempotent)."""
        with self._lock:
            self._db.executemany("INSERT OR IGNORE INTO tombstones(mark, audit_seq) VALUES (?, ?)",
                                 [(m, audit_seq) for m in marks])

    def hit(self, subjects: Iterable[str], namespace: Namespace, content: str) -> str | None:
        """The first subject whose tombstone in ``namespace`` matches this content, if any."""
        with self._lock:
            for subject in subjects:
                row = self._db.execute("SELECT 1 FROM tombstones WHERE mark = ?",
                                       (tombstone_mark(subject, namespace, content),)).fetchone()
                if row:
                    return subject
        return None

    def close(self) -> None:
        """Close the database."""
        with self._lock:
            self._db.close()
