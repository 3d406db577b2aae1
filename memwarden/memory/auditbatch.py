"""``AuditBatcher``: the audit entries of a batch committed in one transaction.

Appending an entry alone is a transaction with a synced commit (about 2 ms here): for a
batch of 500 writes that was the largest governed cost after Chroma's own. So while a
``Memory.batch`` runs, entries of operations whose changes are held for the batch's one store
call, and of operations that change nothing (denials, rejections, replays, reads), wait here
and are committed together, still before anything they account for reaches the store:

- the write coalescer calls :meth:`AuditBatcher.commit` before it sends held rows (when the
  batch ends, or earlier when a read must see them), so no row is ever stored before its
  entry is committed;
- an entry for a change applied at once (a restatement, a purge, an erasure) commits every
  waiting entry first and is appended on its own, so the log keeps the order of the calls;
- the batch commits what is left before it returns or raises, so no result leaves the
  pipeline before its entry is in the log (an entry that cannot be committed raises
  AuditError instead: fail closed).

A process killed mid-batch therefore loses, at most, the entries of operations whose changes
had not reached the store either, and whose results were never returned. Each entry keeps
the time its operation ran; it gets its sequence number when committed (spans that report it
end then). Entries from several threads wait in one queue, in the order they were recorded.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime, timezone

from memwarden.memory.audit import AuditLog
from memwarden.memory.facts import OpFacts


class AuditBatcher:
    """Records operations' audit entries now, or with their batch (see the module docstring)."""

    def __init__(self, audit: AuditLog) -> None:
        self._audit = audit
        self._lock = threading.Lock()          # guards the queue and the depth (short sections)
        self._commit_lock = threading.Lock()   # one commit at a time, so entries stay in order
        self._waiting: list[tuple[OpFacts, dict, bool]] = []
        self._after: list[Callable[[], None]] = []
        self._depth = 0

    @contextmanager
    def deferring(self) -> Iterator[None]:
        """While the block runs, deferrable entries wait for :meth:`commit`."""
        with self._lock:
            self._depth += 1
        try:
            yield
        finally:
            with self._lock:
                self._depth -= 1

    def record(self, facts: OpFacts, *, flush: bool = True, defer: bool = True) -> None:
        """Audit ``facts`` as they stand: with the batch's other entries when ``defer`` and
        a batch runs, else now (after every waiting entry). ``flush``: see AuditLog.append."""
        entry = {"ts": datetime.now(timezone.utc).isoformat(), **facts.audit_entry()}
        with self._lock:
            if defer and self._depth:
                self._waiting.append((facts, entry, flush))
                facts.audited = True
                return
        self.commit()
        facts.audit_seq = self._audit.append(entry, flush=flush)
        facts.audited = True

    def append_now(self, entry: dict) -> int:
        """Append ``entry`` at once, after every waiting entry; its sequence number."""
        self.commit()
        return self._audit.append(entry)

    def after_commit(self, callback: Callable[[], None]) -> None:
        """Run ``callback`` once the entries waiting now are committed (or failed to be)."""
        with self._lock:
            if self._waiting:
                self._after.append(callback)
                return
        callback()

    def commit(self) -> None:
        """Append every waiting entry in one transaction; raise AuditError if it cannot (the
        entries are then dropped: nothing they account for is stored, see the module docstring)."""
        with self._commit_lock:
            with self._lock:
                waiting, self._waiting = self._waiting, []
                after, self._after = self._after, []
            try:
                if waiting:
                    seqs = self._audit.append_many([e for _, e, _ in waiting],
                                                   flush=any(flush for _, _, flush in waiting))
                    for (facts, _, _), seq in zip(waiting, seqs):
                        facts.audit_seq = seq
            finally:
                for callback in after:
                    callback()
