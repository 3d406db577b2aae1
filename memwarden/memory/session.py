"""``Session``: thin convenience methods over ``Memory.batch`` for one principal.

Each method hands its arguments to the operation exactly as the caller passed them: the
operation's ``canonical`` is the one place they are checked, so that a string given where a
list is expected is refused there rather than silently split into characters here.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from memwarden.core.ops import (
    EraseOp, ForgetOp, GetOp, HistoryOp, ListNamespacesOp, NamespaceLike, Op, OpRunner, RetractOp, ReviewOp,
    SearchOp, SweepOp, UpdateOp, WriteOp,
)
from memwarden.core.namespace import Namespace
from memwarden.core.records import (
    SOURCE_ORDER, Binding, ErasureReceipt, Kind, MemoryRecord, Principal, ReviewResult, SearchHit, Source,
)


class Session:
    """Acts as one principal; every method builds one operation and runs it through the pipeline."""

    def __init__(self, memory: OpRunner, principal: Principal, binding: Binding = Binding()) -> None:
        self._memory = memory
        self._principal = principal
        self._binding = binding

    @property
    def principal(self) -> Principal:
        """Who this session acts as."""
        return self._principal

    @property
    def binding(self) -> Binding:
        """Where this session's writes come from (set when it was created)."""
        return self._binding

    def bound(self, binding: Binding) -> Session:
        """This session with writes coming from ``binding`` instead, never more trusted than
        its own: the source becomes the less trusted of the two and the trust the lower (the
        memory tools hand an agent such a session)."""
        least = max(SOURCE_ORDER.index(self._binding.source), SOURCE_ORDER.index(binding.source))
        return Session(self._memory, self._principal,
                       Binding(source=SOURCE_ORDER[least], trust=min(self._binding.trust, binding.trust)))

    def batch(self, ops: Iterable[Op]) -> list[Any]:
        """Run several operations in order; see ``Memory.batch``."""
        return self._memory.batch(self._principal, ops, binding=self._binding)

    def _one(self, op: Op) -> Any:
        return self._memory.batch(self._principal, [op], binding=self._binding)[0]

    def write(self, content: str, namespace: NamespaceLike, *, kind: str | Kind = Kind.FACT,
              subjects: Sequence[str] = (), source: str | Source | None = None, parents: Sequence[str] = (),
              valid_from: datetime | None = None, valid_to: datetime | None = None, ttl: float | None = None,
              trust: float | None = None, labels: Mapping[str, str] | None = None, key: str | None = None,
              allow_reingest: bool = False) -> MemoryRecord:
        """Store a memory; raises AccessDenied, WriteRejected or InvalidRequest. A flagged write
        comes back with status ``quarantined`` and stays invisible to search until approved.
        ``source`` and ``trust`` default to the session's binding; declaring a more trusted
        source, or more trust, needs the policy action ``claim``. ``ttl`` overrides the policy's
        default; ``key`` makes an addressable item that a later write with the same key
        overwrites; ``allow_reingest`` stores content that an erasure tombstoned (it needs
        erase permission)."""
        return self._one(WriteOp(content, namespace, kind, subjects, source, parents,
                                 valid_from, valid_to, ttl, trust, labels if labels is not None else {}, key,
                                 allow_reingest))

    def search(self, query: str | None, namespace: NamespaceLike = (), *, k: int = 5,
               kinds: Sequence[str | Kind] | None = None, offset: int = 0, mode: str = "hybrid",
               as_of: datetime | None = None, time_range: tuple[datetime, datetime] | None = None,
               created_after: datetime | None = None, created_before: datetime | None = None,
               include_superseded: bool = False, budget_tokens: int | None = None,
               consensus: bool = False) -> list[SearchHit]:
        """Up to ``k`` most relevant memories at or below ``namespace`` that this principal may
        see (``query=None`` lists them instead). ``mode`` is "hybrid" (BM25 + vectors, the
        default), "dense" or "lexical"; the time conditions, ``include_superseded`` and
        ``budget_tokens`` (typed evidence within a token budget) are described in docs/retrieval.md.
        ``consensus=True`` marks results that most related memories contradict (``hit.contested``)."""
        return self._one(SearchOp(query, namespace, k, kinds, offset, mode,
                                  as_of, time_range, created_after, created_before, include_superseded,
                                  budget_tokens, consensus))

    def list_namespaces(self, prefix: NamespaceLike = (), *, max_depth: int | None = None,
                        limit: int = 100, offset: int = 0) -> list[Namespace]:
        """Namespaces at or below ``prefix`` holding records this principal may see, sorted."""
        return self._one(ListNamespacesOp(prefix, max_depth, limit, offset))

    def get(self, id: str) -> MemoryRecord | None:  # the contract's name
        """The record, or None when it does not exist or this principal may not see it."""
        return self._one(GetOp(id))

    def update(self, id: str, content: str, *, kind: str | Kind | None = None,
               subjects: Sequence[str] | None = None, labels: Mapping[str, str] | None = None) -> MemoryRecord:
        """Write a new version that supersedes ``id``; returns the new version."""
        return self._one(UpdateOp(id, content, kind, subjects, labels))

    def forget(self, id: str) -> None:
        """Logically forget a record: it is never returned again."""
        self._one(ForgetOp(id))

    def erase(self, subject: str | None = None, *, ids: Sequence[str] = ()) -> ErasureReceipt:
        """Erase every record about ``subject`` (and/or ``ids``) and all records derived from them
        that this principal may erase; the ones it may not erase are held (quarantined) until
        someone who may does, and counted in the receipt's ``held`` (docs/erasure.md).
        AccessDenied when it may erase nothing anywhere."""
        return self._one(EraseOp(subject, ids))

    def approve(self, id: str) -> ReviewResult:
        """Vote to release a quarantined record; returns its status and votes (and the record
        itself only when this principal may read it)."""
        return self._one(ReviewOp(id, True))

    def reject(self, id: str) -> ReviewResult:
        """Vote to reject a quarantined record; returns its status and votes."""
        return self._one(ReviewOp(id, False))

    def retract(self, id: str) -> list[str]:
        """Retract a record as poisoned; returns the ids of the derived records now quarantined
        that this principal may review (the others are held too, without being named)."""
        return self._one(RetractOp(id))

    def history(self, id: str) -> list[MemoryRecord]:
        """Every live version of the memory ``id`` belongs to, oldest first (needs ``history``)."""
        return self._one(HistoryOp(id))

    def sweep(self, namespace: NamespaceLike = ()) -> int:
        """Physically remove invisible records in the namespaces this principal administers;
        returns how many were removed."""
        return self._one(SweepOp(namespace))
