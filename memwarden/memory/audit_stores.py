"""Where the audit log is kept: a SQLite file (the default, beside the data) or PostgreSQL tables
shared by every process that names them. A store only says how to connect, lock and spell a
query; the chain logic in :mod:`memwarden.memory.audit` is the same for both."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from memwarden.databases import libpq_url, redacted

# Queries name the tables {log} and {meta} and take ? parameters; each store spells them.
SCHEMA = ("CREATE TABLE IF NOT EXISTS {log} (seq {seq} PRIMARY KEY, body TEXT NOT NULL, prev TEXT NOT NULL, "
           "hash TEXT NOT NULL, mac TEXT)",
           "CREATE TABLE IF NOT EXISTS {meta} (name TEXT PRIMARY KEY, value TEXT NOT NULL)")
SET_META = "INSERT INTO {meta}(name, value) VALUES (?, ?) ON CONFLICT (name) DO UPDATE SET value = excluded.value"
# Any constant works: it only has to be the same for every appender of this database.
_PG_APPEND_LOCK = 0x6D656D77_61726400  # "memward\0"


class SQLiteStore:
    """The log in a SQLite file (WAL; a flushed commit is synced to disk before it returns)."""

    errors: tuple[type[BaseException], ...] = (sqlite3.Error,)

    def __init__(self, path: Path) -> None:
        self.where = str(path)
        self._db = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None, timeout=30)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=FULL")
        self._flushing = True
        for statement in SCHEMA:
            self._db.execute(self._sql(statement).replace("{seq}", "INTEGER"))
        columns = {row[1] for row in self._db.execute("PRAGMA table_info(audit)")}
        if "mac" not in columns:  # a log from before MACs: add the column, keep its entries
            try:
                self._db.execute("ALTER TABLE audit ADD COLUMN mac TEXT")
            except sqlite3.OperationalError as exc:  # another process just did it
                if "duplicate column" not in str(exc):
                    raise

    @staticmethod
    def _sql(query: str) -> str:
        return query.replace("{log}", "audit").replace("{meta}", "audit_meta")

    def rows(self, query: str, params: Sequence[Any] = ()) -> list[tuple]:
        """Run a query written with {log}, {meta} and ? parameters; its rows."""
        return self._db.execute(self._sql(query), params).fetchall()

    def run_many(self, query: str, rows: Sequence[Sequence[Any]]) -> None:
        """Run a statement once per parameter row."""
        self._db.executemany(self._sql(query), rows)

    @contextmanager
    def _transaction(self, begin: str) -> Iterator[None]:
        self._db.execute(begin)
        try:
            yield
            self._db.execute("COMMIT")
        except BaseException:
            if self._db.in_transaction:
                self._db.execute("ROLLBACK")
            raise

    def appending(self, flush: bool = True) -> Any:
        """A transaction no other appender can run beside: IMMEDIATE takes the write lock
        before the head is read. Unflushed, its commit is in the WAL (safe from a killed
        process) and reaches the disk with the next flushed commit or checkpoint."""
        if flush != self._flushing:
            self._db.execute(f"PRAGMA synchronous={'FULL' if flush else 'NORMAL'}")
            self._flushing = flush
        return self._transaction("BEGIN IMMEDIATE")

    def snapshot(self) -> Any:
        """A read transaction: every query in it sees the same state of the log."""
        return self._transaction("BEGIN")

    def close(self) -> None:
        """Close the connection."""
        self._db.close()


class PostgresStore:
    """The log in PostgreSQL tables ``memwarden_audit`` and ``memwarden_audit_meta`` (psycopg 3)."""

    def __init__(self, url: str) -> None:
        import psycopg

        self.errors: tuple[type[BaseException], ...] = (psycopg.Error,)
        self.where = redacted(url)
        self._url = libpq_url(url)
        self._db = psycopg.connect(self._url, autocommit=True)
        try:
            # Concurrent CREATE TABLE IF NOT EXISTS can collide in PostgreSQL's catalog; the
            # append lock makes the first process create the tables and the others find them.
            with self.appending():
                for statement in SCHEMA:
                    self._db.execute(self._sql(statement).replace("{seq}", "BIGINT"))
        except BaseException:
            self._db.close()
            raise

    @staticmethod
    def _sql(query: str) -> str:
        return query.replace("{log}", "memwarden_audit").replace("{meta}", "memwarden_audit_meta").replace("?", "%s")

    def _connection(self) -> Any:
        if self._db.closed or self._db.broken:  # the server restarted: the next call reconnects
            import psycopg

            self._db = psycopg.connect(self._url, autocommit=True)
        return self._db

    def rows(self, query: str, params: Sequence[Any] = ()) -> list[tuple]:
        """Run a query written with {log}, {meta} and ? parameters; its rows."""
        return self._connection().execute(self._sql(query), params).fetchall()

    def run_many(self, query: str, rows: Sequence[Sequence[Any]]) -> None:
        """Run a statement once per parameter row."""
        self._connection().cursor().executemany(self._sql(query), rows)

    @contextmanager
    def appending(self, flush: bool = True) -> Iterator[None]:
        """A transaction holding the log's advisory lock until it commits or rolls back.
        Unflushed, its commit does not wait for the server's WAL flush (which follows within
        ``wal_writer_delay``; a server crash before that loses it, never the chain)."""
        db = self._connection()
        with db.transaction():
            if not flush:
                db.execute("SET LOCAL synchronous_commit TO OFF")
            db.execute("SELECT pg_advisory_xact_lock(%s)", (_PG_APPEND_LOCK,))
            yield

    @contextmanager
    def snapshot(self) -> Iterator[None]:
        """A read-only REPEATABLE READ transaction: one state of the log for every query."""
        db = self._connection()
        with db.transaction():
            db.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
            yield

    def close(self) -> None:
        """Close the connection."""
        self._db.close()
