"""The erasure journal: an erasure's intent, written durably before anything is deleted.

An erasure removes many rows in several steps (tombstones, holds, the physical purge). An
interrupt (a crash, kill -9, Ctrl-C) between two steps must never leave an erasure that reads
as done, nor records the erasure meant to remove: the journal holds the intent (the ids to
purge and to hold, the tombstone marks) from before the first step until the last one has
finished, and an open finds and finishes what an interrupt left (see ``Pipeline.recover``).

The intent names record ids, which follow from their content; it is deleted once the erasure
is complete, with SQLite's secure delete and a truncated write-ahead log, so the journal
keeps nothing of an erasure that has finished.
"""

from __future__ import annotations

import json
import secrets
import sqlite3
import threading
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

JOURNAL_FILE = "erasures.sqlite3"
_SCHEMA = "CREATE TABLE IF NOT EXISTS intents (n INTEGER PRIMARY KEY AUTOINCREMENT, body TEXT NOT NULL)"


@dataclass(frozen=True, slots=True)
class Intent:
    """What one erasure is to do. ``n`` is its journal number; ``token`` names it in its
    "pending" audit entry, which comes after entry ``after_seq``; ``audit_seq`` is that
    entry's sequence number once known."""

    n: int
    principal: str
    subject: str | None
    purge: tuple[str, ...]
    hold: tuple[str, ...]
    #: Tombstone marks, each with the erased record's kept attributes (see tombstones.py).
    marks: tuple[tuple[str, str | None], ...]
    token: str
    after_seq: int
    audit_seq: int | None = None
    rules: tuple[str, ...] = field(default_factory=tuple)

    def body(self) -> str:
        """The intent as stored (JSON)."""
        return json.dumps({"principal": self.principal, "subject": self.subject, "purge": list(self.purge),
                           "hold": list(self.hold), "marks": list(self.marks), "token": self.token,
                           "after_seq": self.after_seq, "audit_seq": self.audit_seq, "rules": list(self.rules)})


def _intent(n: int, body: str) -> Intent:
    data: dict[str, Any] = json.loads(body)
    return Intent(n, data["principal"], data["subject"], tuple(data["purge"]), tuple(data["hold"]),
                  tuple((m[0], m[1]) if isinstance(m, list) else (m, None) for m in data["marks"]), data["token"], data["after_seq"], data.get("audit_seq"),
                  tuple(data.get("rules", ())))


class ErasureJournal:
    """Intents of erasures under way, in a small SQLite file of the state directory."""

    def __init__(self, path: str | Path) -> None:
        self._lock = threading.Lock()
        self._db = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None, timeout=30)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=FULL")  # an intent is on disk before any deletion
        self._db.execute("PRAGMA secure_delete=ON")
        self._db.execute(_SCHEMA)

    def begin(self, principal: str, subject: str | None, purge: list[str], hold: list[str], marks: list[tuple[str, str | None]],
              rules: list[str], after_seq: int) -> Intent:
        """Record an intent durably; returns it with its journal number."""
        draft = Intent(0, principal, subject, tuple(purge), tuple(hold), tuple(marks), secrets.token_hex(16),
                       after_seq, None, tuple(rules))
        with self._lock:
            n = self._db.execute("INSERT INTO intents(body) VALUES (?)", (draft.body(),)).lastrowid
        return replace(draft, n=int(n))

    def audited(self, intent: Intent, seq: int | None) -> Intent:
        """Note the sequence number of the intent's "pending" audit entry."""
        noted = replace(intent, audit_seq=seq)
        with self._lock:
            self._db.execute("UPDATE intents SET body = ? WHERE n = ?", (noted.body(), intent.n))
        return noted

    def pending(self) -> list[Intent]:
        """Every intent not yet finished, oldest first."""
        with self._lock:
            rows = self._db.execute("SELECT n, body FROM intents ORDER BY n").fetchall()
        return [_intent(n, body) for n, body in rows]

    def finish(self, intent: Intent) -> None:
        """The erasure is complete: forget its intent, leaving no copy in the file."""
        with self._lock:
            self._db.execute("DELETE FROM intents WHERE n = ?", (intent.n,))
            self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    def close(self) -> None:
        """Close the database."""
        with self._lock:
            self._db.close()
