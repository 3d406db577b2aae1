"""The append-only, hash-chained, keyed and anchored audit log: SQLite next to the data by
default, or PostgreSQL when several processes or machines share one memory
(``audit="postgresql://..."``).

Every governed operation appends one entry. Entries never hold content or query text, only
ids, counts, decisions and verdicts.

Four layers protect the entries:

1. A hash chain (:mod:`memwarden.memory.chain`). Each entry's hash covers its fields (its
   sequence number included) and the previous entry's hash, so editing, deleting, inserting
   or reordering entries breaks the chain at a place :meth:`AuditLog.verify` reports.
2. A MAC. Each entry's hash is also signed with HMAC-SHA256 under a secret key kept in a
   separate file (``audit.key`` beside the database, mode 0600, created on the first append).
   Anyone can recompute a plain hash chain after tampering; without the key nobody can
   recompute the MACs. The log's head (sequence number and hash of the last entry, MAC'd) is
   kept in the database and updated with every append.
3. An anchor outside the database (:mod:`memwarden.memory.anchor`): every append also writes
   the head, signed, to ``audit.head`` beside the key, only ever forward. A log shorter than
   its anchor, down to zero entries and with its head rows deleted too, fails verification,
   and appends to it are refused instead of starting a fresh chain.
4. An Ed25519 key (:mod:`memwarden.memory.signing`, ``audit.signing.key`` beside the key)
   signs the anchored head, exported heads (:meth:`AuditLog.export`) and erasure receipts,
   so that anyone with the public key can check an exported log, its length included,
   without the HMAC key (which would let them forge).

Threat model. Detected: an attacker who can write the database but cannot read the key files
or write their directory edits an entry (even one byte), deletes any entries (anywhere, from
the end, or all of them, with or without the head rows), swaps or reorders entries, inserts
one, or appends one by hand, whether or not they recompute the hashes; deleting the database
while its key exists; deleting or replacing a key file. Not detected: an attacker who can read
the key files can forge anything, so keep them where the process that writes the log can
read them and those who administer the database cannot (``key_path=`` or
``MEMWARDEN_AUDIT_KEY_FILE`` put them elsewhere). An attacker who can also write the key
directory can roll back the database and the head file together to a state that was once
genuine: heads exported and handed to someone else (``memwarden audit export``) are the
defence against that. In PostgreSQL mode each process's head file is that process's anchor
(one state directory per process is fine): it holds the head as of that process's last
append, so the log can be cut back no further than the newest of them; a process with a fresh
state directory anchors from its first append on.

Entries written before the key existed (logs from memwarden before MACs) stay verifiable by
their hash chain; every entry from the first keyed one on must carry a valid MAC. A log from
before the anchor is anchored from its next append.

Many writers, one chain. An append reads the head and inserts the next entry in one
transaction that excludes every other appender: ``BEGIN IMMEDIATE`` in SQLite (the database
write lock), a transaction-scoped advisory lock in PostgreSQL (``pg_advisory_xact_lock``, held
until commit or rollback, so a writer that dies mid-append releases it). Two processes can
therefore never chain onto the same entry, and the sequence number's primary key rejects a
duplicate even if they tried. Every writer of one log must read the same key files (distribute
``audit.key`` and ``audit.signing.key`` before starting them: a writer with another key
refuses to append), and every log needs its own keys.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from memwarden.databases import is_database_url, kind, redacted, sqlite_path
from memwarden.core.errors import AuditError, InvalidRequest, ProofError
from memwarden.core.namespace import canonical_label
from memwarden.memory.anchor import HeadFile, head_path, sign_head, verify_head
from memwarden.memory.audit_checks import (SUBJECT_TAGS_FIELD, SUBJECTS_FIELD, Evidence, check_log, entry_mac, key_id,
                                           keyed_meta, subject_tag)
from memwarden.memory.audit_stores import SET_META, PostgresStore, SQLiteStore
from memwarden.memory.keyfile import create_key, read_key
from memwarden.memory.chain import GENESIS, Findings, Row, VerifyReport, _digest
from memwarden.memory.signing import SigningKeys, signing_key_path

__all__ = ["GENESIS", "KEY_FILE", "KEY_ENV", "AuditLog", "VerifyReport", "open_audit"]

KEY_FILE = "audit.key"
KEY_ENV = "MEMWARDEN_AUDIT_KEY_FILE"
class AuditLog:
    """Hash-chained, MAC'd, anchored entries in SQLite or PostgreSQL; safe across threads and
    processes.

    ``target`` is a SQLite file path (or ``sqlite:///path``) or a ``postgresql://`` URL. The key
    file is ``key_path``, else ``$MEMWARDEN_AUDIT_KEY_FILE``, else ``audit.key`` beside a SQLite
    file; a PostgreSQL log has no "beside", so it needs one of the first two. The signing key
    and the anchored head live beside the key file (see the module docstring).
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
        self.signing_key_path = signing_key_path(self.key_path)
        self._head_file = HeadFile(head_path(self.key_path), self.key_path)
        self._lock = threading.Lock()
        self._key: bytes | None = None
        self._checked = False
        self._signer: SigningKeys | None = None
        self._signer_stamp: tuple[int, int] | None = None
        # The head this object last knew to be anchored: (count, last hash).
        self._anchor: tuple[int, str] | None = None
        where = redacted(url) if postgres else str(sqlite_file)
        try:
            self._store: SQLiteStore | PostgresStore = PostgresStore(url) if postgres else SQLiteStore(sqlite_file)
        except Exception as exc:  # sqlite3.Error, psycopg.Error: the driver's own error types
            raise AuditError(f"cannot open the audit log at {where}: {exc}") from exc

    @property
    def where(self) -> str:
        """The log's file path or (password-free) database URL, for messages."""
        return self._store.where

    @property
    def head_path(self) -> Path:
        """The anchored head file."""
        return self._head_file.path

    # -- the keys ---------------------------------------------------------------------------

    def _read_key(self) -> bytes | None:
        return read_key(self.key_path, what="audit key", error=AuditError)

    def _create_key(self) -> bytes:
        """Write a fresh key (mode 0600); if another process won the race, use its."""
        return create_key(self.key_path, what="audit key", error=AuditError)

    def _load_signer(self) -> SigningKeys | None:
        """The signing keys, read again whenever the file changed (a rotation elsewhere)."""
        try:
            st = os.stat(self.signing_key_path)
        except FileNotFoundError:
            self._signer = self._signer_stamp = None
            return None
        stamp = (st.st_ino, st.st_mtime_ns)
        if self._signer is None or stamp != self._signer_stamp:
            try:
                self._signer = SigningKeys.load(self.signing_key_path)
            except ProofError as exc:
                raise AuditError(str(exc)) from exc
            self._signer_stamp = stamp
        return self._signer

    def signing_keys(self) -> SigningKeys:
        """The store's Ed25519 keys (created with the audit key on the first append)."""
        with self._lock:
            signer = self._load_signer()
        if signer is None:
            raise AuditError(f"there is no signing key {self.signing_key_path} yet: it is created with the "
                             "log's first append")
        return signer

    def _meta(self) -> dict[str, str]:
        return dict(self._store.rows("SELECT name, value FROM {meta}"))

    def _any_signed(self) -> bool:
        return bool(self._store.rows("SELECT 1 FROM {log} WHERE mac IS NOT NULL LIMIT 1"))

    def _ensure_keys(self) -> tuple[bytes, SigningKeys, set[str]]:
        """The MAC key and the signing keys, created (with the log's key record) on first use,
        and which of them this call created ("key", "signing"). Called inside the append
        transaction; the MAC key is checked once per AuditLog (verify re-checks it all)."""
        created: set[str] = set()
        if self._key is None:
            key = self._read_key()
            if key is None:
                meta = self._meta()
                if "key_id" in meta or self._any_signed():
                    raise AuditError(f"the audit key {self.key_path} is missing but this log was signed with one; "
                                     "refusing to append (restore the key file)")
                created.add("key")
        signer = self._load_signer()
        if signer is None:
            if self._head_file.path.exists():
                raise AuditError(f"the signing key {self.signing_key_path} is missing but the head file "
                                 f"{self._head_file.path} was signed with it; refusing to append (restore it)")
            signer = self._signer = SigningKeys.create(self.signing_key_path)
            created.add("signing")
        if self._key is None:
            self._key = key if key is not None else self._create_key()
        if self._checked:
            return self._key, signer, created
        meta = self._meta()
        if "key_id" not in meta:
            if self._any_signed():
                raise AuditError("this audit log's signing record is missing although its entries are signed "
                                 "(removed?); refusing to append: run `memwarden audit verify`")
            start = (self._store.rows("SELECT MAX(seq) FROM {log}")[0][0] or 0) + 1
            rows = [("hmac_from", str(start)), ("key_id", key_id(self._key)),
                    ("meta_mac", entry_mac(self._key, f"meta:hmac_from={start}"))]
            self._store.run_many("INSERT INTO {meta}(name, value) VALUES (?, ?)", rows)
        elif not keyed_meta(meta, self._key):
            raise AuditError(f"the audit key {self.key_path} does not match this log (replaced?); refusing to append")
        return self._key, signer, created

    # -- the anchor -------------------------------------------------------------------------

    def _hash_at(self, seq: int, last: tuple[int, str]) -> str | None:
        if seq == 0:
            return GENESIS
        if seq == last[0]:
            return last[1]
        row = self._store.rows("SELECT hash FROM {log} WHERE seq = ?", (seq,))
        return row[0][0] if row else None

    def _check_anchor(self, last: tuple[int, str], signer: SigningKeys, created: set[str]) -> None:
        """Inside the append transaction, before the entry after ``last`` (seq, hash) goes in:
        refuse to extend a log that is shorter than its anchor, or that lost its anchor."""
        if self._anchor is None:
            try:
                doc = self._head_file.read()
                if doc is not None:
                    self._anchor = verify_head(doc, signer.public, f"the head file {self._head_file.path}")
            except ProofError as exc:
                raise AuditError(f"{exc}; refusing to append: run `memwarden audit verify`") from exc
            if doc is None:
                if last[0] == 0 and created != {"key", "signing"}:
                    raise AuditError(f"the audit log at {self.where} is empty but its keys ({self.key_path}) exist and "
                                     f"no head file anchors it: the log was wiped, or these keys belong to another "
                                     "log; refusing to start a new chain (move the keys away to start a new log)")
                if self.path is not None and "signing" not in created:
                    raise AuditError(f"the head file {self._head_file.path} is missing (deleted?); refusing to append: "
                                     "run `memwarden audit verify`")
                # A log from before the anchor, or a fresh state directory of a shared log:
                # anchor what is committed now, before anything is added to it.
                self._head_file.advance(last[0], lambda: sign_head(signer, *last), flush=True)
                self._anchor = last
        count, digest = self._anchor
        if last[0] < count or self._hash_at(count, last) != digest:
            raise AuditError(f"the audit log at {self.where} ends at entry {last[0]} but its anchored head "
                             f"{self._head_file.path} names entry {count}: entries were deleted or replaced; "
                             "refusing to append: run `memwarden audit verify`")

    # -- writing and reading ------------------------------------------------------------------

    def _insert(self, entries: Sequence[dict[str, Any]]) -> tuple[int, str]:
        """Inside the append transaction: check keys and anchor, insert the next entries;
        returns the last one's (seq, hash)."""
        key, signer, created = self._ensure_keys()
        entries = [self._tagged(key, fields) for fields in entries]
        row = self._store.rows("SELECT seq, hash FROM {log} ORDER BY seq DESC LIMIT 1")
        last = (row[0][0], row[0][1]) if row else (0, GENESIS)
        self._check_anchor(last, signer, created)
        seq, digest = last
        inserted = []
        for fields in entries:
            seq, prev = seq + 1, digest
            body = json.dumps({"seq": seq, **fields}, sort_keys=True, separators=(",", ":"), default=str)
            digest = _digest(prev, body)
            inserted.append((seq, body, prev, digest, entry_mac(key, f"entry:{seq}:{digest}")))
        self._store.run_many("INSERT INTO {log}(seq, body, prev, hash, mac) VALUES (?, ?, ?, ?, ?)", inserted)
        head = f"{seq}:{digest}"
        self._store.run_many(SET_META, [("head", head), ("head_mac", entry_mac(key, f"head:{head}"))])
        return seq, digest

    @staticmethod
    def _tagged(key: bytes, fields: dict[str, Any]) -> dict[str, Any]:
        """``fields`` with any subject ids replaced by their keyed hashes (see :meth:`append`)."""
        if SUBJECTS_FIELD not in fields:
            return fields
        fields = dict(fields)
        fields[SUBJECT_TAGS_FIELD] = [subject_tag(key, str(s)) for s in fields.pop(SUBJECTS_FIELD)]
        return fields

    def _appended(self, seq: int, digest: str) -> None:
        """After the commit: the anchor moves forward."""
        self._checked = True  # the key record is committed and matches the key
        self._anchor = (seq, digest)
        signer = self._signer
        assert signer is not None
        try:
            # Not synced per entry: against someone who cuts the log, the file as the OS holds
            # it is what counts (and it is synced when the log closes); syncing it each time
            # cost every write 0.5-0.7 ms. A power cut can leave it a few entries behind.
            self._head_file.advance(seq, lambda: sign_head(signer, seq, digest), flush=False)
        except OSError as exc:
            raise AuditError(f"entry {seq} is in the audit log but its head file {self._head_file.path} "
                             f"could not be written: {exc}") from exc

    def append(self, fields: dict[str, Any], *, flush: bool = True) -> int:
        """Append one entry and return its sequence number; raise AuditError if it cannot.

        ``flush=False`` (memwarden's reads) commits without waiting for the disk: the entry
        survives a killed process at once, and a power cut or OS crash only until the next
        flushed entry, which syncs every entry before it (the log is one sequential WAL).
        The chain stays whole either way.

        A ``subjects`` field (subject ids) is never stored as given: the entry holds their keyed
        hashes under ``subject_tags`` instead (HMAC with the log's key, see :meth:`subject_tag`),
        so an erased subject's id does not outlive its erasure here."""
        return self.append_many([fields], flush=flush)[0]

    def append_many(self, entries: Sequence[dict[str, Any]], *, flush: bool = True) -> list[int]:
        """Append entries in order, all in one transaction (all or none), and return their
        sequence numbers; see :meth:`append`. Each is chained, MAC'd and numbered exactly
        as if appended alone; the head (in the database and the anchor) moves once."""
        if not entries:
            return []
        ts = datetime.now(timezone.utc).isoformat()
        stamped = [{"ts": ts, **fields} for fields in entries]
        with self._lock:
            try:
                # Reading the head inside the appending transaction means two writers can never
                # chain onto the same previous entry (see the module docstring).
                with self._store.appending(flush):
                    seq, digest = self._insert(stamped)
            except self._store.errors as exc:
                raise AuditError(f"cannot append to the audit log at {self.where}: {exc}") from exc
            self._appended(seq, digest)
        return list(range(seq - len(stamped) + 1, seq + 1))

    def subject_tag(self, subject: str) -> str:
        """The keyed hash this log's entries hold for ``subject`` (as canonicalised for a
        record: NFKC, checked like a label), to look its entries up. AuditError without a key."""
        key = self._key or self._read_key()
        if key is None:
            raise AuditError(f"there is no audit key {self.key_path}: a subject can only be looked up with the key "
                             "its entries were hashed with")
        return subject_tag(key, canonical_label(subject, what="subject"))

    def rotate_signing_key(self, principal: str) -> tuple[str, str, int]:
        """Replace the signing key with a new one the old one endorses, and audit it; returns
        (old key id, new key id, the audit entry). What the old key signed stays verifiable
        with the exported public keys, which list both."""
        self.signing_keys()  # there must be a key to rotate
        with self._lock:
            try:
                with self._store.appending(True):
                    old = self._load_signer()
                    assert old is not None
                    new = old.rotate()
                    self._signer, self._signer_stamp = new, None
                    seq, digest = self._insert([{"ts": datetime.now(timezone.utc).isoformat(), "op": "rotate_key",
                                                 "principal": principal, "old_key_id": old.key_id,
                                                 "new_key_id": new.key_id, "outcome": "ok"}])
            except self._store.errors as exc:
                raise AuditError(f"cannot append to the audit log at {self.where}: {exc}") from exc
            self._appended(seq, digest)
        return old.key_id, new.key_id, seq

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

    def entries_after(self, seq: int) -> Iterator[dict[str, Any]]:
        """The fields of every entry after sequence number ``seq``, in order."""
        for (body,) in self._read("SELECT body FROM {log} WHERE seq > " + str(int(seq)) + " ORDER BY seq"):
            yield json.loads(body)

    def head(self) -> tuple[int, str] | None:
        """(sequence number, hash) of the last entry; None for an empty log."""
        row = self._read("SELECT seq, hash FROM {log} ORDER BY seq DESC LIMIT 1")
        return (row[0][0], row[0][1]) if row else None

    # -- verification and export ----------------------------------------------------------------

    def _snapshot(self) -> tuple[dict[str, Any] | None, str | None, list[Row], dict[str, str]]:
        """(head file document, why it could not be read, rows, meta), the head file read
        first: it is written after each commit, so the rows read after it contain its entry."""
        head_doc, head_error = None, None
        try:
            head_doc = self._head_file.read()
        except ProofError as exc:
            head_error = str(exc)
        with self._lock:
            try:
                # One snapshot: an append by another process between the two reads would
                # otherwise look like an entry appended by hand.
                with self._store.snapshot():
                    rows = self._store.rows("SELECT seq, body, prev, hash, mac FROM {log} ORDER BY seq")
                    meta = self._meta()
            except self._store.errors as exc:
                raise AuditError(f"cannot read the audit log at {self.where}: {exc}") from exc
        return head_doc, head_error, rows, meta

    def verify(self) -> VerifyReport:
        """Check the chain, the MACs, the head and the anchor; report every place where they do
        not hold."""
        return self._check(*self._snapshot())[0]

    def export(self) -> tuple[VerifyReport, list[Row], dict[str, Any] | None]:
        """(report, rows, signed head) of one snapshot of the log. The head is signed only when
        the log verifies (None otherwise): a fresh signature over a cut log would launder it."""
        snapshot = self._snapshot()
        report, signer = self._check(*snapshot)
        rows = snapshot[2]
        if not report.ok or signer is None:
            return report, rows, None
        return report, rows, sign_head(signer, len(rows), rows[-1][3] if rows else GENESIS)

    def _check(self, head_doc: dict[str, Any] | None, head_error: str | None, rows: list[Row],
               meta: dict[str, str]) -> tuple[VerifyReport, SigningKeys | None]:
        problem = Findings()
        try:
            key = self._read_key()
        except AuditError as exc:
            key = None
            problem(f"key: {exc}")
        try:
            with self._lock:
                signer = self._load_signer()
        except AuditError as exc:
            signer = None
            problem(f"signing key: {exc}")
        evidence = Evidence(rows=rows, meta=meta, head_doc=head_doc, head_error=head_error, key=key, signer=signer,
                            key_path=self.key_path, signing_key_path=self.signing_key_path,
                            head_path=self._head_file.path, local=self.path is not None)
        return check_log(evidence, problem), signer

    def close(self) -> None:
        """Sync the head file and close the database connection."""
        with self._lock:
            self._head_file.sync()
            self._store.close()


def open_audit(audit: str | Path | None, state: Path, *, create: bool = True) -> AuditLog:
    """The audit log for the ``audit=`` argument of ``Memory.open`` and ``Memory.connect``.

    None is ``audit.sqlite3`` in the memory's local ``state`` directory; a path or
    ``sqlite:///`` URL is that SQLite file (its key beside it); a ``postgresql://`` URL is a log
    shared by every process that names it, its key in ``state`` (or ``$MEMWARDEN_AUDIT_KEY_FILE``).
    Unless ``create``, a SQLite log that does not exist is refused (InvalidRequest): a mistyped
    path would otherwise start a new, empty log, and the operations would be audited there,
    where nobody looks, instead of in the store's own.
    """
    postgres = audit is not None and is_database_url(audit) and kind(str(audit)) == "postgresql"
    if not postgres:
        path = state / "audit.sqlite3" if audit is None else sqlite_path(str(audit)) if is_database_url(audit) \
            else Path(audit)
        if not create and not path.is_file():
            raise InvalidRequest(f"there is no audit log at {str(path)!r}: check the path; an open that may not "
                                 "create a store never creates its audit log")
    if audit is None:
        return AuditLog(state / "audit.sqlite3")
    return AuditLog(audit, key_path=state / KEY_FILE if postgres and not os.environ.get(KEY_ENV) else None)
