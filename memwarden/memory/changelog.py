"""``ChangeLog``: the sequenced log of row changes ``(seq, id, op)`` that keeps the derived
search index of every process in step with a shared Chroma server.

It lives in the audit log's database: the SQLite file (processes on one machine sharing a
state directory) or PostgreSQL (processes anywhere). A writer appends the ids it changed after
its Chroma call has returned, and before its operation returns; a reader asks for the entries
after the last one it applied before each search (one indexed query, about 0.06 ms measured
in issue 19) and reads those rows again from Chroma. So a record forgotten or erased by any
process is never returned by a search that starts after that forget or erase returned.

Entries commit in the order of their sequence numbers (SQLite has one writer at a time;
PostgreSQL appends under an advisory lock), so a reader that has seen entry n has seen every
entry before it. The log holds ids and operation names only: no content.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Sequence
from pathlib import Path

from memwarden.databases import is_database_url, kind, libpq_url, sqlite_path

# Any constant works: it only has to be the same for every appender of this database.
_PG_APPEND_LOCK = 0x6D656D77_63686700  # "memwchg\0"
_CHUNK = 500


class ChangeLog:
    """Append and read row changes (see the module docstring). ``target``: a SQLite file path,
    a ``sqlite:///`` URL or a ``postgresql://`` URL (the audit log's database)."""

    def __init__(self, target: str | Path) -> None:
        self._lock = threading.Lock()  # one connection, used by one thread at a time
        url = str(target) if is_database_url(target) else None
        self._postgres = url is not None and kind(url) == "postgresql"
        if self._postgres:
            import psycopg

            self._url = libpq_url(url)  # type: ignore[arg-type]
            self._db = psycopg.connect(self._url, autocommit=True)
            with self._db.transaction():
                self._db.execute("SELECT pg_advisory_xact_lock(%s)", (_PG_APPEND_LOCK,))
                self._db.execute("CREATE TABLE IF NOT EXISTS memwarden_changes "
                                 "(seq BIGSERIAL PRIMARY KEY, id TEXT NOT NULL, op TEXT NOT NULL)")
        else:
            path = sqlite_path(url) if url is not None else Path(target)
            self._db = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None, timeout=30)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("CREATE TABLE IF NOT EXISTS memwarden_changes "
                             "(seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL, op TEXT NOT NULL)")

    def _connection(self):  # type: ignore[no-untyped-def]
        if self._postgres and (self._db.closed or self._db.broken):  # the server restarted
            import psycopg

            self._db = psycopg.connect(self._url, autocommit=True)
        return self._db

    def append(self, ids: Sequence[str], op: str) -> list[int]:
        """Record that rows ``ids`` changed (``op`` names how); their sequence numbers."""
        ids = list(dict.fromkeys(ids))
        if not ids:
            return []
        seqs: list[int] = []
        with self._lock:
            db = self._connection()
            if self._postgres:
                with db.transaction():
                    db.execute("SELECT pg_advisory_xact_lock(%s)", (_PG_APPEND_LOCK,))
                    for start in range(0, len(ids), _CHUNK):
                        chunk = ids[start:start + _CHUNK]
                        got = db.execute("INSERT INTO memwarden_changes(id, op) SELECT unnest(%s::text[]), %s "
                                         "RETURNING seq", (chunk, op)).fetchall()
                        seqs += [int(r[0]) for r in got]
            else:
                db.execute("BEGIN IMMEDIATE")
                try:
                    for rid in ids:
                        seqs.append(int(db.execute("INSERT INTO memwarden_changes(id, op) VALUES (?, ?)",
                                                   (rid, op)).lastrowid))
                    db.execute("COMMIT")
                except BaseException:
                    if db.in_transaction:
                        db.execute("ROLLBACK")
                    raise
        return seqs

    def head(self) -> int:
        """The newest sequence number (0 for an empty log)."""
        with self._lock:
            row = self._connection().execute("SELECT max(seq) FROM memwarden_changes").fetchone()
        return int(row[0] or 0)

    def after(self, seq: int) -> list[tuple[int, str]]:
        """Every change after ``seq``, oldest first, as (seq, id)."""
        query = "SELECT seq, id FROM memwarden_changes WHERE seq > ? ORDER BY seq"
        with self._lock:
            rows = self._connection().execute(query.replace("?", "%s") if self._postgres else query,
                                              (seq,)).fetchall()
        return [(int(s), str(i)) for s, i in rows]

    def close(self) -> None:
        """Close the connection."""
        with self._lock:
            self._db.close()
