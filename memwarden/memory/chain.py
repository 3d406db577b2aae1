"""The audit log's hash chain, checked the same way wherever the entries come from: the live
database (``AuditLog.verify``, which also checks MACs) or an exported file that anyone can
verify with the store's public key (``memwarden.memory.audit_export``).

An entry is ``(seq, body, prev, hash)``: ``body`` is the entry's JSON text (it holds ``seq``
too), ``prev`` the hash of the entry before it (``GENESIS`` for the first), and ``hash`` is
``sha256(prev + "\\n" + body)`` in lowercase hex.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

GENESIS = "0" * 64


def _digest(prev: str, body: str) -> str:
    return hashlib.sha256((prev + "\n" + body).encode("utf-8")).hexdigest()


def entries_text(first: int, last: int) -> str:
    """``entry 3`` or ``entries 3-7``, for messages."""
    return f"entry {first}" if first == last else f"entries {first}-{last}"


@dataclass(frozen=True, slots=True)
class VerifyReport:
    """The outcome of checking the whole log.

    ``problems`` are sentences, each naming the entry (``entry N``) or the part of the log it
    is about; ``bad_entries`` lists the sequence numbers named; ``authenticated`` counts the
    entries whose MAC (or, for an exported log, the signed head) was checked.
    """

    ok: bool
    entries: int
    problems: list[str] = field(default_factory=list)
    bad_entries: list[int] = field(default_factory=list)
    authenticated: int = 0


class Findings:
    """Problems gathered while checking, with the entries they name."""

    def __init__(self) -> None:
        self.problems: list[str] = []
        self.bad: set[int] = set()

    def __call__(self, text: str, *seqs: int) -> None:
        self.problems.append(text)
        self.bad.update(seqs)

    def report(self, entries: int, authenticated: int) -> VerifyReport:
        """The report of everything found."""
        return VerifyReport(not self.problems, entries, self.problems, sorted(self.bad), authenticated)


# (seq, body, prev, hash, mac); a check of the MAC that says whether it holds, or None for none.
Row = tuple[int, str, str, str, Any]
MacCheck = Callable[[int, str, Any], bool | None]


def check_chain(rows: Sequence[Row], problem: Findings, mac_check: MacCheck | None = None) -> int:
    """Check sequence numbers, bodies and links of ``rows`` (in stored order) from GENESIS;
    ``mac_check(seq, hash, mac)`` is asked about every entry and returns True (authentic),
    False (its MAC is wrong or missing; it reports that itself) or None (not checked).
    Returns how many entries were authenticated."""
    claimed_seqs: dict[int, Any] = {}
    for seq, body, *_ in rows:
        try:
            claimed_seqs[seq] = json.loads(body).get("seq")
        except (json.JSONDecodeError, AttributeError, TypeError):
            claimed_seqs[seq] = None
    reported_swaps: set[int] = set()
    prev_hash, expected_seq, authenticated = GENESIS, 1, 0
    for seq, body, prev, digest, mac in rows:
        claimed = claimed_seqs[seq]
        if seq != expected_seq:
            if seq > expected_seq:
                problem(f"entry {seq}: expected sequence number {expected_seq}: "
                        f"{entries_text(expected_seq, seq - 1)} missing (deleted)", *range(expected_seq, seq + 1))
            else:
                problem(f"entry {seq}: expected sequence number {expected_seq} (inserted or reordered)", seq)
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
        if mac_check is not None and mac_check(seq, digest, mac):
            authenticated += 1
        prev_hash, expected_seq = digest, seq + 1
    return authenticated
