"""The audit log's signed head, and its copy outside the database.

A signed head says how long the log is and how it ends:

    {"format": "memwarden-audit-head-v1", "count": N, "last_hash": "<hash of entry N>",
     "signed_at": "<ISO time>", "key_id": "...", "signature": "..."}

(``count`` 0 has ``last_hash`` GENESIS), signed with the store's Ed25519 key
(:mod:`memwarden.memory.signing`). Anyone with the public key can check it; with it, an
exported log's length is as well protected as its entries.

The anchor. Every append also writes the head of the log as it stands after that append to a
file outside the database, ``<audit key stem>.head`` beside the audit key (``audit.head``
beside ``audit.key``), under a lock on the key file, and only forward: a head file never goes
back to a shorter log. Someone who can write the database but not that directory cannot make
the log shorter than the file says, to zero entries included. The file is written after the
append commits, so it never names an entry that does not exist; a process killed between the
commit and the file leaves it one append behind (still a valid lower bound).
"""

from __future__ import annotations

import fcntl
import json
import os
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from memwarden.core.errors import ProofError
from memwarden.memory.chain import GENESIS, Findings, Row, entries_text
from memwarden.memory.signing import PublicKeys, SigningKeys

HEAD_FORMAT = "memwarden-audit-head-v1"
HEAD_SUFFIX = ".head"
_HEAD_FIELDS = {"format", "count", "last_hash", "signed_at", "key_id", "signature"}
_HASH = re.compile(r"[0-9a-f]{64}")


def head_path(audit_key: Path) -> Path:
    """The anchored head file that belongs with the audit key ``audit_key``."""
    return audit_key.with_name(audit_key.stem + HEAD_SUFFIX)


def sign_head(keys: SigningKeys, count: int, last_hash: str) -> dict[str, Any]:
    """A signed head for a log of ``count`` entries whose last hash is ``last_hash``."""
    return keys.sign({"format": HEAD_FORMAT, "count": count, "last_hash": last_hash,
                      "signed_at": datetime.now(timezone.utc).isoformat()})


def parse_head(doc: object, where: str) -> tuple[int, str]:
    """(count, last hash) of a head document whose shape is right; ProofError otherwise."""
    if not isinstance(doc, Mapping) or doc.get("format") != HEAD_FORMAT or set(doc) != _HEAD_FIELDS:
        raise ProofError(f"{where} is not a memwarden audit head (format {HEAD_FORMAT!r} with the fields "
                         f"{sorted(_HEAD_FIELDS)})")
    count, last = doc["count"], doc["last_hash"]
    if isinstance(count, bool) or not isinstance(count, int) or count < 0:
        raise ProofError(f"{where}: count must be a whole number >= 0, got {count!r}")
    if not isinstance(last, str) or not _HASH.fullmatch(last) or (count == 0) != (last == GENESIS):
        raise ProofError(f"{where}: last_hash must be 64 lowercase hex digits (GENESIS exactly when count is 0)")
    return count, last


def verify_head(doc: object, public: PublicKeys, where: str) -> tuple[int, str]:
    """(count, last hash) of a head whose shape and signature hold; ProofError otherwise."""
    count, last = parse_head(doc, where)
    public.verify(doc, where)  # type: ignore[arg-type]
    return count, last


def check_head(count: int, last_hash: str, rows: Sequence[Row], problem: Findings, label: str, *,
               exact: bool) -> None:
    """Report where ``rows`` disagree with a head of ``count`` entries ending in ``last_hash``.
    ``exact``: the head is of this very log (an export); otherwise it is a lower bound (the
    anchor: the log may have grown since)."""
    hashes = {row[0]: row[3] for row in rows}
    last_seq = rows[-1][0] if rows else 0
    if count and count not in hashes:
        if last_seq < count:
            gone = "every entry deleted" if not rows else f"{entries_text(last_seq + 1, count)} deleted from the end"
            problem(f"{label}: the log ends at entry {last_seq} but the {label} says it had {count} ({gone})",
                    *range(last_seq + 1, count + 1))
        # else a gap in the middle, which the chain check reports
    elif count and hashes[count] != last_hash:
        problem(f"{label}: entry {count} is not the entry the {label} names (replaced or rewritten)", count)
    if exact and last_seq > count:
        problem(f"{label}: the log goes on to entry {last_seq} but the {label} covers {count} "
                f"({entries_text(count + 1, last_seq)} added after it was signed)", *range(count + 1, last_seq + 1))


class HeadFile:
    """The anchored head file: one JSON document padded to a fixed ``SLOT`` of bytes and
    rewritten in place (a rename per append would cost a data flush each time on ext4).
    Readers and writers lock ``lock``, a file that is never replaced (the audit key), so a
    reader never sees half a write; a write of one slot is one sector, whole after a crash."""

    SLOT = 512

    def __init__(self, path: Path, lock: Path) -> None:
        self.path = path
        self._lock = lock

    @contextmanager
    def _locked(self, mode: int) -> Iterator[None]:
        try:
            fd = os.open(self._lock, os.O_RDONLY)
        except FileNotFoundError:  # no key to lock: nothing can be appending either
            yield
            return
        try:
            fcntl.flock(fd, mode)
            yield
        finally:
            os.close(fd)  # releases the lock

    def _text(self) -> str | None:
        try:
            return self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return None
        except (OSError, UnicodeDecodeError) as exc:
            raise ProofError(f"cannot read the head file {self.path}: {exc}") from None

    def read(self) -> dict[str, Any] | None:
        """The head document in the file; None when there is none. ProofError if garbled."""
        with self._locked(fcntl.LOCK_SH):
            text = self._text()
        if text is None:
            return None
        try:
            doc = json.loads(text)
        except json.JSONDecodeError:
            raise ProofError(f"the head file {self.path} is not JSON (garbled)") from None
        parse_head(doc, f"the head file {self.path}")
        return doc

    def sync(self) -> None:
        """Put the head file's last write on disk (when there is a file)."""
        try:
            fd = os.open(self.path, os.O_WRONLY)
        except FileNotFoundError:
            return
        try:
            os.fdatasync(fd)
        finally:
            os.close(fd)

    def advance(self, count: int, make: Callable[[], dict[str, Any]], *, flush: bool) -> None:
        """Write ``make()`` (the head at ``count``) unless the file already holds a head at
        least that long (another process appended after us). ``flush``: sync it to disk."""
        with self._locked(fcntl.LOCK_EX):
            try:
                held = json.loads(self._text() or "null").get("count")
            except (ProofError, ValueError, AttributeError):
                held = None
            if isinstance(held, int) and held >= count:
                return
            data = json.dumps(make()).encode("utf-8")
            if len(data) >= self.SLOT:
                raise ValueError(f"a signed head of {len(data)} bytes does not fit the head file's slot")
            fd = os.open(self.path, os.O_WRONLY | os.O_CREAT, 0o600)
            try:
                os.pwrite(fd, data.ljust(self.SLOT - 1) + b"\n", 0)
                if flush:
                    os.fdatasync(fd)
            finally:
                os.close(fd)
