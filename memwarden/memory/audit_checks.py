"""Verification of the audit log (:mod:`memwarden.memory.audit`): its key record, the MAC of
every entry from the first keyed one, the head row, and the anchored head file outside the
database. It judges one snapshot of the log, read by :meth:`AuditLog.verify`; it reads nothing
itself.
"""

from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memwarden.core.errors import ProofError
from memwarden.memory.anchor import check_head, verify_head
from memwarden.memory.chain import Findings, Row, VerifyReport, check_chain, entries_text
from memwarden.memory.signing import SigningKeys

__all__ = ["ANCHOR", "SUBJECTS_FIELD", "SUBJECT_TAGS_FIELD", "Evidence", "check_log", "entry_mac", "key_id",
           "keyed_meta", "subject_tag"]

_MAC_DOMAIN = b"memwarden-audit-v1\n"
ANCHOR = "anchored head"


def entry_mac(key: bytes, text: str) -> str:
    """The audit log's MAC of ``text`` (an entry, the head or the key record) under ``key``."""
    return hmac.new(key, _MAC_DOMAIN + text.encode("utf-8"), hashlib.sha256).hexdigest()


#: An entry field given to AuditLog.append with subject ids in clear; never stored as given.
SUBJECTS_FIELD = "subjects"
#: What is stored instead: the subjects' keyed hashes, in the same order.
SUBJECT_TAGS_FIELD = "subject_tags"


def subject_tag(key: bytes, subject: str) -> str:
    """The keyed hash an audit entry holds for a subject id. Without the key it cannot be
    reversed, nor a guessed id confirmed; with the key, a guessed id can be confirmed."""
    return entry_mac(key, f"subject:{subject}")  # its own prefix: never equal to an entry's MAC


def key_id(key: bytes) -> str:
    """The public name of an audit key, recorded in the log it signs."""
    return hashlib.sha256(b"memwarden-audit-key-id\n" + key).hexdigest()[:16]


def keyed_meta(meta: dict[str, str], key: bytes) -> bool:
    """Whether the log's key record (its meta rows) is authentic under ``key``."""
    claimed = meta.get("meta_mac", "")
    return (meta.get("key_id") == key_id(key)
            and hmac.compare_digest(claimed, entry_mac(key, f"meta:hmac_from={meta.get('hmac_from')}")))


@dataclass(frozen=True)
class Evidence:
    """One snapshot of a log and its keys: what verification judges.

    ``head_doc`` is the head file read before the rows (``head_error``: why it could not be);
    ``key`` and ``signer`` are None when their files are missing or unreadable; ``local``:
    the log is a SQLite file, whose head file must exist once it has entries.
    """

    rows: list[Row]
    meta: dict[str, str]
    head_doc: dict[str, Any] | None
    head_error: str | None
    key: bytes | None
    signer: SigningKeys | None
    key_path: Path
    signing_key_path: Path
    head_path: Path
    local: bool


def check_log(e: Evidence, problem: Findings) -> VerifyReport:
    """Every place where the chain, the MACs, the head or the anchor do not hold, added to
    ``problem`` (which may already hold what reading the keys found), as a report."""
    rows, meta, key = e.rows, e.meta, e.key
    # -- the key and the log's key record
    keyed = key is not None and "key_id" in meta
    hmac_from: int | None = None
    if "key_id" in meta:
        if key is None:
            problem(f"key: the key file {e.key_path} is missing; this log was signed with one, "
                    "so its entries cannot be authenticated (deleted or moved?)")
        elif meta.get("key_id") != key_id(key):
            problem(f"key: the key file {e.key_path} is not the key this log was signed with (replaced?)")
            keyed = False
        elif not keyed_meta(meta, key):
            problem("key record: its MAC does not verify (the record of when signing began was edited)")
            keyed = False
        try:
            hmac_from = int(meta.get("hmac_from", "1"))
        except ValueError:
            hmac_from = 1
    elif key is not None and rows:
        problem(f"key record: missing although the key file {e.key_path} exists "
                "(the log's signing record was removed, or a crash cut its first signed append short)")
        hmac_from = 1
    elif any(mac is not None for *_, mac in rows):
        problem("key record: missing although entries carry MACs (the signing record was removed)")
        hmac_from = 1

    # -- the entries
    def mac_check(seq: int, digest: str, mac: Any) -> bool | None:
        if hmac_from is None or seq < hmac_from:
            return None
        if mac is None:
            problem(f"entry {seq}: has no MAC (appended or rewritten by hand, without the key)", seq)
            return False
        if not keyed:
            return None
        if not hmac.compare_digest(mac, entry_mac(key, f"entry:{seq}:{digest}")):  # type: ignore[arg-type]
            problem(f"entry {seq}: MAC does not verify (edited, or forged without the key)", seq)
        return True

    authenticated = check_chain(rows, problem, mac_check)
    if keyed and hmac_from is not None and (rows or "head" in meta):
        _check_head_row(meta, rows, hmac_from, key, problem)  # type: ignore[arg-type]
    _check_anchor_file(e, problem)
    return problem.report(len(rows), authenticated)


def _check_head_row(meta: dict[str, str], rows: list[Row], hmac_from: int, key: bytes, problem: Findings) -> None:
    """The head row in the database: the last entry the key holder wrote."""
    head = meta.get("head")
    last = rows[-1] if rows else None
    if head is None or not hmac.compare_digest(meta.get("head_mac", ""), entry_mac(key, f"head:{head}")):
        if last is not None and last[0] >= hmac_from:
            problem("head: missing or its MAC does not verify (edited)", last[0])
        return
    head_seq = int(head.split(":", 1)[0])
    if last is None or head.split(":", 1)[1] != last[3] or head_seq != last[0]:
        last_seq = last[0] if last else 0
        if last_seq > head_seq:
            problem(f"head: the log ends at entry {last_seq} but the last signed append was entry "
                    f"{head_seq} ({entries_text(head_seq + 1, last_seq)} appended by hand)",
                    *range(head_seq + 1, last_seq + 1))
        elif last_seq < head_seq:
            problem(f"head: the log ends at entry {last_seq} but the last signed append was entry "
                    f"{head_seq} ({entries_text(last_seq + 1, head_seq)} deleted from the end)",
                    *range(last_seq + 1, head_seq + 1))
        else:
            problem(f"head: entry {head_seq} is not the entry that was signed last (replaced)", head_seq)


def _check_anchor_file(e: Evidence, problem: Findings) -> None:
    """The head outside the database: the log is at least as long as it says."""
    where, doc, error, rows, signer = e.head_path, e.head_doc, e.head_error, e.rows, e.signer
    if error is not None:
        problem(f"{ANCHOR}: {error}")
    elif doc is not None:
        if signer is None:
            problem(f"{ANCHOR}: the head file {where} cannot be checked: the signing key "
                    f"{e.signing_key_path} is missing")
            return
        try:
            count, digest = verify_head(doc, signer.public, f"the head file {where}")
        except ProofError as exc:
            problem(f"{ANCHOR}: {exc}")
            return
        check_head(count, digest, rows, problem, ANCHOR, exact=False)
    elif not rows and (e.key is not None or signer is not None):
        problem(f"{ANCHOR}: the log is empty but its key {e.key_path} exists and no head file ({where}) "
                "anchors it: the log was wiped or its database deleted")
    elif rows and e.local and signer is not None:
        problem(f"{ANCHOR}: the head file {where} is missing (deleted?)")
