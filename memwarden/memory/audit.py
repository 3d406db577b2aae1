"""The append-only, hash-chained and keyed audit log: SQLite next to the data by default, or
PostgreSQL when several processes or machines share one memory (``audit="postgresql://..."``).

Every governed operation appends one entry. Entries never hold content or query text, only
ids, counts, decisions and verdicts.

Two layers protect the entries:

1. A hash chain. Each entry's hash covers its fields (including its sequence number) and the
   previous entry's hash, so editing, deleting, inserting or reordering entries breaks the
   chain at a place :meth:`AuditLog.verify` reports.
2. A MAC. Each entry's hash is also signed with HMAC-SHA256 under a secret key kept in a
   separate file (``audit.key`` beside the database, mode 0600, created on the first append).
   Anyone can recompute a plain hash chain after tampering; without the key nobody can
   recompute the MACs. The log's authenticated head (the sequence number and hash of the last
   entry, MAC'd too) is updated with every append, so cutting entries off the end is seen too.

Threat model. Detected: an attacker who can write the database but cannot read the key file
edits an entry (even one byte), deletes one (anywhere, the last included), swaps or reorders
entries, inserts one, or appends one by hand, whether or not they recompute the hashes; and
deleting or replacing the key file. Not detected: an attacker who can read the key file can
forge anything, so keep it where the process that writes the log can read it and those who
administer the database cannot (``key_path=`` or ``MEMWARDEN_AUDIT_KEY_FILE`` put it
elsewhere); an attacker who restores an older copy of both the database and its head (a
rollback to a state that was once genuine) is not detected by the log alone: export the
head now and then (:meth:`AuditLog.head`) to somewhere they cannot write.

Entries written before the key existed (logs from memwarden before MACs) stay verifiable by
their hash chain; every entry from the first keyed one on must carry a valid MAC.

Many writers, one chain. An append reads the head and inserts the next entry in one
transaction that excludes every other appender: ``BEGIN IMMEDIATE`` in SQLite (the database
write lock), a transaction-scoped advisory lock in PostgreSQL (``pg_advisory_xact_lock``, held
until commit or rollback, so a writer that dies mid-append releases it). Two processes can
therefore never chain onto the same entry, and the sequence number's primary key rejects a
duplicate even if they tried. The chain logic below is the same for both stores; a store only
says how to connect, lock and spell a query. Every writer of one log must read the same key
file (distribute it before starting them: a writer with another key refuses to append).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from memwarden.databases import is_database_url, kind, libpq_url, redacted, sqlite_path
from memwarden.core.errors import AuditError
from memwarden.memory.keyfile import create_key, read_key

GENESIS = "0" * 64
KEY_FILE = "audit.key"
KEY_ENV = "MEMWARDEN_AUDIT_KEY_FILE"
_MAC_DOMAIN = b"memwarden-audit-v1\n"

# Queries name the tables {log} and {meta} and take ? parameters; each store spells them.
_SCHEMA = ("CREATE TABLE IF NOT EXISTS {log} (seq {seq} PRIMARY KEY, body TEXT NOT NULL, prev TEXT NOT NULL, "
           "hash TEXT NOT NULL, mac TEXT)",
           "CREATE TABLE IF NOT EXISTS {meta} (name TEXT PRIMARY KEY, value TEXT NOT NULL)")
_SET_META = "INSERT INTO {meta}(name, value) VALUES (?, ?) ON CONFLICT (name) DO UPDATE SET value = excluded.value"
# Any constant works: it only has to be the same for every appender of this database.
_PG_APPEND_LOCK = 0x6D656D77_61726400  # "memward\0"


def _digest(prev: str, body: str) -> str:
    return hashlib.sha256((prev + "\n" + body).encode("utf-8")).hexdigest()


def _mac(key: bytes, text: str) -> str:
    return hmac.new(key, _MAC_DOMAIN + text.encode("utf-8"), hashlib.sha256).hexdigest()


def _entries(first: int, last: int) -> str:
    return f"entry {first}" if first == last else f"entries {first}-{last}"


def _key_id(key: bytes) -> str:
    return hashlib.sha256(b"memwarden-audit-key-id\n" + key).hexdigest()[:16]


@dataclass(frozen=True, slots=True)
class VerifyReport:
    """The outcome of checking the whole log.

    ``problems`` are sentences, each naming the entry (``entry N``) or the part of the log it
    is about; ``bad_entries`` lists the sequence numbers named; ``authenticated`` counts the
    entries whose MAC was checked (the rest predate the key).
    """

    ok: bool
    entries: int
    problems: list[str] = field(default_factory=list)
    bad_entries: list[int] = field(default_factory=list)
    authenticated: int = 0


class _SQLiteStore:
    """The log in a SQLite file (WAL; a flushed commit is synced to disk before it returns)."""

    errors: tuple[type[BaseException], ...] = (sqlite3.Error,)

    def __init__(self, path: Path) -> None:
        self.where = str(path)
        self._db = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None, timeout=30)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=FULL")
        self._flushing = True
        for statement in _SCHEMA:
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


class _PostgresStore:
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
                for statement in _SCHEMA:
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


class AuditLog:
    """Hash-chained, MAC'd entries in SQLite or PostgreSQL; safe across threads and processes.

    ``target`` is a SQLite file path (or ``sqlite:///path``) or a ``postgresql://`` URL. The key
    file is ``key_path``, else ``$MEMWARDEN_AUDIT_KEY_FILE``, else ``audit.key`` beside a SQLite
    file; a PostgreSQL log has no "beside", so it needs one of the first two.
    """

    def __init__(self, target: str | Path, *, key_path: str | Path | None = None) -> None:
        env_key = os.environ.get(KEY_ENV)
        url = str(target) if is_database_url(target) else None
        postgres = url is not None and kind(url) == "postgresql"
        if key_path is None and not env_key and postgres:
            raise AuditError(f"the PostgreSQL audit log {redacted(url)} needs a key file: pass key_path= "
                             f"or set {KEY_ENV} (every writer of the log must read the same key)")
        sqlite_file = None if postgres else sqlite_path(url) if url is not None else Path(target)
        self.path: Path | None = sqlite_file
        self.key_path = Path(key_path) if key_path is not None else Path(env_key) if env_key else sqlite_file.parent / KEY_FILE
        self._lock = threading.Lock()
        self._key: bytes | None = None
        self._checked = False
        where = redacted(url) if postgres else str(sqlite_file)
        try:
            self._store: _SQLiteStore | _PostgresStore = _PostgresStore(url) if postgres else _SQLiteStore(sqlite_file)
        except Exception as exc:  # sqlite3.Error, psycopg.Error: the driver's own error types
            raise AuditError(f"cannot open the audit log at {where}: {exc}") from exc

    @property
    def where(self) -> str:
        """The log's file path or (password-free) database URL, for messages."""
        return self._store.where

    # -- the key ----------------------------------------------------------------------------

    def _read_key(self) -> bytes | None:
        return read_key(self.key_path, what="audit key", error=AuditError)

    def _create_key(self) -> bytes:
        """Write a fresh key atomically (mode 0600); if another process won the race, use its."""
        return create_key(self.key_path, what="audit key", error=AuditError)

    def _meta(self) -> dict[str, str]:
        return dict(self._store.rows("SELECT name, value FROM {meta}"))

    def _any_signed(self) -> bool:
        return bool(self._store.rows("SELECT 1 FROM {log} WHERE mac IS NOT NULL LIMIT 1"))

    def _keyed_meta(self, meta: dict[str, str], key: bytes) -> bool:
        """Whether the meta rows are authentic under ``key``."""
        claimed = meta.get("meta_mac", "")
        return (meta.get("key_id") == _key_id(key)
                and hmac.compare_digest(claimed, _mac(key, f"meta:hmac_from={meta.get('hmac_from')}")))

    def _ensure_key(self) -> bytes:
        """The key to sign with; creates it (and the log's key record) on first use. Called
        inside the append transaction; checked once per AuditLog (verify re-checks it all)."""
        if self._key is not None and self._checked:
            return self._key
        if self._key is None:
            key = self._read_key()
            meta = self._meta()
            if key is None:
                if "key_id" in meta or self._any_signed():
                    raise AuditError(f"the audit key {self.key_path} is missing but this log was signed with one; "
                                     "refusing to append (restore the key file)")
                key = self._create_key()
            self._key = key
        meta = self._meta()
        if "key_id" not in meta:
            if self._any_signed():
                raise AuditError("this audit log's signing record is missing although its entries are signed "
                                 "(removed?); refusing to append: run `memwarden audit verify`")
            start = (self._store.rows("SELECT MAX(seq) FROM {log}")[0][0] or 0) + 1
            rows = [("hmac_from", str(start)), ("key_id", _key_id(self._key)),
                    ("meta_mac", _mac(self._key, f"meta:hmac_from={start}"))]
            self._store.run_many("INSERT INTO {meta}(name, value) VALUES (?, ?)", rows)
        elif not self._keyed_meta(meta, self._key):
            raise AuditError(f"the audit key {self.key_path} does not match this log (replaced?); refusing to append")
        return self._key

    # -- writing and reading ------------------------------------------------------------------

    def append(self, fields: dict[str, Any], *, flush: bool = True) -> int:
        """Append one entry and return its sequence number; raise AuditError if it cannot.

        ``flush=False`` (memwarden's reads) commits without waiting for the disk: the entry
        survives a killed process at once, and a power cut or OS crash only until the next
        flushed entry, which syncs every entry before it (the log is one sequential WAL).
        The chain stays whole either way."""
        fields = {"ts": datetime.now(timezone.utc).isoformat(), **fields}
        with self._lock:
            try:
                # Reading the head inside the appending transaction means two writers can never
                # chain onto the same previous entry (see the module docstring).
                with self._store.appending(flush):
                    key = self._ensure_key()
                    row = self._store.rows("SELECT seq, hash FROM {log} ORDER BY seq DESC LIMIT 1")
                    seq, prev = (row[0][0] + 1, row[0][1]) if row else (1, GENESIS)
                    body = json.dumps({"seq": seq, **fields}, sort_keys=True, separators=(",", ":"), default=str)
                    digest = _digest(prev, body)
                    self._store.run_many("INSERT INTO {log}(seq, body, prev, hash, mac) VALUES (?, ?, ?, ?, ?)",
                                         [(seq, body, prev, digest, _mac(key, f"entry:{seq}:{digest}"))])
                    head = f"{seq}:{digest}"
                    self._store.run_many(_SET_META, [("head", head), ("head_mac", _mac(key, f"head:{head}"))])
                self._checked = True  # the key record is committed and matches the key
            except self._store.errors as exc:
                raise AuditError(f"cannot append to the audit log at {self.where}: {exc}") from exc
        return seq

    def _read(self, query: str) -> list[tuple]:
        with self._lock:
            try:
                return self._store.rows(query)
            except self._store.errors as exc:
                raise AuditError(f"cannot read the audit log at {self.where}: {exc}") from exc

    def entries(self) -> Iterator[dict[str, Any]]:
        """Every entry's fields, in order."""
        for (body,) in self._read("SELECT body FROM {log} ORDER BY seq"):
            yield json.loads(body)

    def head(self) -> tuple[int, str] | None:
        """(sequence number, hash) of the last entry, to keep somewhere the log's writers
        cannot reach; None for an empty log."""
        row = self._read("SELECT seq, hash FROM {log} ORDER BY seq DESC LIMIT 1")
        return (row[0][0], row[0][1]) if row else None

    # -- verification -------------------------------------------------------------------------

    def verify(self) -> VerifyReport:
        """Check the chain, the MACs and the head; report every place where they do not hold."""
        problems: list[str] = []
        bad: set[int] = set()

        def problem(text: str, *seqs: int) -> None:
            problems.append(text)
            bad.update(seqs)

        with self._lock:
            try:
                # One snapshot: an append by another process between the two reads would
                # otherwise look like an entry appended by hand.
                with self._store.snapshot():
                    rows = self._store.rows("SELECT seq, body, prev, hash, mac FROM {log} ORDER BY seq")
                    meta = self._meta()
            except self._store.errors as exc:
                raise AuditError(f"cannot read the audit log at {self.where}: {exc}") from exc
        try:
            key = self._read_key()
        except AuditError as exc:
            key = None
            problem(f"key: {exc}")

        # -- the key and the log's key record
        keyed = key is not None and "key_id" in meta
        hmac_from: int | None = None
        if "key_id" in meta:
            if key is None:
                problem(f"key: the key file {self.key_path} is missing; this log was signed with one, "
                        "so its entries cannot be authenticated (deleted or moved?)")
            elif meta.get("key_id") != _key_id(key):
                problem(f"key: the key file {self.key_path} is not the key this log was signed with (replaced?)")
                keyed = False
            elif not self._keyed_meta(meta, key):
                problem("key record: its MAC does not verify (the record of when signing began was edited)")
                keyed = False
            try:
                hmac_from = int(meta.get("hmac_from", "1"))
            except ValueError:
                hmac_from = 1
        elif key is not None and rows:
            problem(f"key record: missing although the key file {self.key_path} exists "
                    "(the log's signing record was removed, or a crash cut its first signed append short)")
            hmac_from = 1
        elif any(mac is not None for *_, mac in rows):
            problem("key record: missing although entries carry MACs (the signing record was removed)")
            hmac_from = 1

        # -- the entries
        claimed_seqs: dict[int, Any] = {}
        for seq, body, *_ in rows:
            try:
                claimed_seqs[seq] = json.loads(body).get("seq")
            except (json.JSONDecodeError, AttributeError):
                claimed_seqs[seq] = None
        reported_swaps: set[int] = set()
        prev_hash, expected_seq, authenticated = GENESIS, 1, 0
        for seq, body, prev, digest, mac in rows:
            claimed = claimed_seqs[seq]
            if seq != expected_seq:
                if seq > expected_seq:
                    problem(f"entry {seq}: expected sequence number {expected_seq}: "
                            f"{_entries(expected_seq, seq - 1)} missing (deleted)",
                            *range(expected_seq, seq + 1))
                else:
                    problem(f"entry {seq}: expected sequence number {expected_seq} (inserted)", seq)
            if claimed != seq:
                other = claimed if isinstance(claimed, int) else None
                if other is not None and claimed_seqs.get(other) == seq:
                    if min(seq, other) not in reported_swaps:
                        reported_swaps.add(min(seq, other))
                        lo, hi = sorted((seq, other))
                        problem(f"entries {lo} and {hi}: swapped (each holds the other's body)", lo, hi)
                else:
                    problem(f"entry {seq}: its body says sequence {claimed} (moved or edited)", seq)
            if prev != prev_hash:
                problem(f"entry {seq}: does not chain onto the entry before it (deleted, inserted or reordered)", seq)
            if _digest(prev, body) != digest:
                problem(f"entry {seq}: content does not match its hash (edited)", seq)
            if hmac_from is not None and seq >= hmac_from:
                if mac is None:
                    problem(f"entry {seq}: has no MAC (appended or rewritten by hand, without the key)", seq)
                elif keyed:
                    authenticated += 1
                    if not hmac.compare_digest(mac, _mac(key, f"entry:{seq}:{digest}")):  # type: ignore[arg-type]
                        problem(f"entry {seq}: MAC does not verify (edited, or forged without the key)", seq)
            prev_hash, expected_seq = digest, seq + 1

        # -- the head: the last entry the key holder wrote
        if keyed and hmac_from is not None and (rows or "head" in meta):
            head = meta.get("head")
            last = rows[-1] if rows else None
            if head is None or not hmac.compare_digest(meta.get("head_mac", ""), _mac(key, f"head:{head}")):  # type: ignore[arg-type]
                if last is not None and last[0] >= hmac_from:
                    problem("head: missing or its MAC does not verify (edited)", last[0])
            else:
                head_seq = int(head.split(":", 1)[0])
                if last is None or head.split(":", 1)[1] != last[3] or head_seq != last[0]:
                    last_seq = last[0] if last else 0
                    if last_seq > head_seq:
                        problem(f"head: the log ends at entry {last_seq} but the last signed append was entry "
                                f"{head_seq} ({_entries(head_seq + 1, last_seq)} appended by hand)",
                                *range(head_seq + 1, last_seq + 1))
                    elif last_seq < head_seq:
                        problem(f"head: the log ends at entry {last_seq} but the last signed append was entry "
                                f"{head_seq} ({_entries(last_seq + 1, head_seq)} deleted from the end)",
                                *range(last_seq + 1, head_seq + 1))
                    else:
                        problem(f"head: entry {head_seq} is not the entry that was signed last (replaced)", head_seq)
        return VerifyReport(not problems, len(rows), problems, sorted(bad), authenticated)

    def close(self) -> None:
        """Close the database connection."""
        with self._lock:
            self._store.close()


def open_audit(audit: str | Path | None, state: Path) -> AuditLog:
    """The audit log for the ``audit=`` argument of ``Memory.open`` and ``Memory.connect``.

    None is ``audit.sqlite3`` in the memory's local ``state`` directory; a path or
    ``sqlite:///`` URL is that SQLite file (its key beside it); a ``postgresql://`` URL is a log
    shared by every process that names it, its key in ``state`` (or ``$MEMWARDEN_AUDIT_KEY_FILE``).
    """
    if audit is None:
        return AuditLog(state / "audit.sqlite3")
    postgres = is_database_url(audit) and kind(str(audit)) == "postgresql"
    return AuditLog(audit, key_path=state / KEY_FILE if postgres and not os.environ.get(KEY_ENV) else None)
