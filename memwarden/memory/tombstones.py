"""Tombstones: content-free marks that keep erased content from being silently re-ingested.

An erasure leaves, for every subject of every erased record, a hash of (subject, namespace,
normalised content). A later write of the same content about the same subject in the same
namespace is refused unless the writer explicitly asks to re-ingest it and may erase there.
Beside each mark, the attributes of the erased record that the policy's conditions can tell
apart (kind, source, writer roles, labels the conditions name; no content) are kept, and the
pipeline consults a mark only for writers who could have read that record, so a mark never
confirms an erasure outside the writer's scope. Of the content, only hashes are kept.
"""

from __future__ import annotations

import hashlib
import sqlite3
import threading
import unicodedata
from collections.abc import Iterable
from pathlib import Path

from memwarden.core.namespace import Namespace, namespace_text

_SCHEMA = "CREATE TABLE IF NOT EXISTS tombstones (mark TEXT PRIMARY KEY, audit_seq INTEGER, attrs TEXT)"

#: A mark and what the policy's conditions could tell of the erased record (JSON; see
#: PolicyEngine.reduced), so that the mark is consulted only for writers who could have read it.
Mark = tuple[str, str | None]


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
        if "attrs" not in {row[1] for row in self._db.execute("PRAGMA table_info(tombstones)")}:
            # Marks from before attributes were kept: consulted fail-closed (attributes unknown).
            self._db.execute("ALTER TABLE tombstones ADD COLUMN attrs TEXT")

    def add(self, marks: Iterable[Mark], audit_seq: int | None) -> None:
        """Record marks with the erased records' attributes (idempotent)."""
        with self._lock:
            self._db.executemany("INSERT OR IGNORE INTO tombstones(mark, audit_seq, attrs) VALUES (?, ?, ?)",
                                 [(m, audit_seq, attrs) for m, attrs in marks])

    def hits(self, subjects: Iterable[str], namespace: Namespace, content: str) -> list[tuple[str, str | None]]:
        """Every subject whose tombstone in ``namespace`` matches this content, with the
        erased record's attributes (JSON, None when they were not kept)."""
        found = []
        with self._lock:
            for subject in subjects:
                row = self._db.execute("SELECT attrs FROM tombstones WHERE mark = ?",
                                       (tombstone_mark(subject, namespace, content),)).fetchone()
                if row:
                    found.append((subject, row[0]))
        return found

    def close(self) -> None:
        """Close the database."""
        with self._lock:
            self._db.close()
