"""The append-only, hash-chained audit log (SQLite, next to the data by default).

Every governed operation appends one entry. Entries never hold content or query text, only
ids, counts, decisions and verdicts. Each entry's hash covers its fields and the previous
entry's hash, so editing, deleting, inserting or reordering entries breaks the chain at a
place :meth:`AuditLog.verify` reports.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from memwarden.errors import AuditError

GENESIS = "0" * 64

_SCHEMA = """
CREATE TABLE IF NOT EXISTS audit (
    seq   INTEGER PRIMARY KEY,
    body  TEXT NOT NULL,
    prev  TEXT NOT NULL,
    hash  TEXT NOT NULL
)
"""


def _digest(prev: str, body: str) -> str:
    return hashlib.sha256((prev + "\n" + body).encode("utf-8")).hexdigest()


@dataclass(frozen=True, slots=True)
class VerifyReport:
    """The outcome of checking the whole chain."""

    ok: bool
    entries: int
    problems: list[str] = field(default_factory=list)


class AuditLog:
    """Hash-chained entries in one SQLite table; safe across threads and processes."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        try:
            self._db = sqlite3.connect(str(self.path), check_same_thread=False, isolation_level=None, timeout=30)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=FULL")
            self._db.execute(_SCHEMA)
        except sqlite3.Error as exc:
            raise AuditError(f"cannot open the audit log at {self.path}: {exc}") from exc

    def append(self, fields: dict[str, Any]) -> int:
        """Append one entry and return its sequence number; raise AuditError if it cannot."""
        fields = {"ts": datetime.now(timezone.utc).isoformat(), **fields}
        with self._lock:
            try:
                # IMMEDIATE takes the write lock before reading the head, so two processes can
                # never chain onto the same previous entry.
                self._db.execute("BEGIN IMMEDIATE")
                try:
                    row = self._db.execute("SELECT seq, hash FROM audit ORDER BY seq DESC LIMIT 1").fetchone()
                    seq, prev = (row[0] + 1, row[1]) if row else (1, GENESIS)
                    body = json.dumps({"seq": seq, **fields}, sort_keys=True, separators=(",", ":"), default=str)
                    self._db.execute("INSERT INTO audit(seq, body, prev, hash) VALUES (?, ?, ?, ?)",
                                     (seq, body, prev, _digest(prev, body)))
                    self._db.execute("COMMIT")
                except BaseException:
                    self._db.execute("ROLLBACK")
                    raise
            except sqlite3.Error as exc:
                raise AuditError(f"cannot append to the audit log at {self.path}: {exc}") from exc
        return seq

    def entries(self) -> Iterator[dict[str, Any]]:
        """Every entry's fields, in order."""
        with self._lock:
            rows = self._db.execute("SELECT body FROM audit ORDER BY seq").fetchall()
        for (body,) in rows:
            yield json.loads(body)

    def verify(self) -> VerifyReport:
        """Walk the chain and report every place where it does not hold."""
        problems: list[str] = []
        with self._lock:
            rows = self._db.execute("SELECT seq, body, prev, hash FROM audit ORDER BY seq").fetchall()
        prev_hash, expected_seq = GENESIS, 1
        for seq, body, prev, digest in rows:
            try:
                claimed = json.loads(body).get("seq")
            except json.JSONDecodeError:
                claimed = None
            if seq != expected_seq:
                problems.append(f"entry {seq}: expected sequence number {expected_seq} (an entry is missing or was inserted)")
            if claimed != seq:
                problems.append(f"entry {seq}: its body says sequence {claimed} (moved or edited)")
            if prev != prev_hash:
                problems.append(f"entry {seq}: does not chain onto the entry before it (deleted, inserted or reordered)")
            if _digest(prev, body) != digest:
                problems.append(f"entry {seq}: content does not match its hash (edited)")
            prev_hash, expected_seq = digest, seq + 1
        return VerifyReport(not problems, len(rows), problems)

    def close(self) -> None:
        """Close the database connection."""
        with self._lock:
            self._db.close()
