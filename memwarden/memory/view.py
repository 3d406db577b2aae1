"""``StoreView``: every read the pipeline makes of the store, and nothing else.

The pipeline is the only holder of a backend. It reads through this view, which turns the
questions the pipeline asks (a record by id within a scope, the versions of a memory, what
derives from a record, what is about a subject) into backend calls. The view decides
nothing: scopes and targets come in already decided, and every row it returns is decided
again by the pipeline before anything leaves it.

A look-up by id within a scope asks every partition the scope reaches, side by side, and
never uses what the backend happens to know about where an id lives: a hidden id and a
missing one then cost the same calls (an id located outside the scope would otherwise be
answered at once, and a missing one only after probing every partition).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Sequence
from typing import Any

import numpy as np

from memwarden.core.fields import Meta, label_field
from memwarden.core.namespace import Namespace
from memwarden.core.records import Kind, MemoryRecord, utcnow
from memwarden.guards.visibility import visible_metadata
from memwarden.memory.backends import MetaTest, RowKey, RowTest, StoredRow, Where, subject_filter
from memwarden.memory.codec import from_row
from memwarden.memory.coalesce import CoalescingBackend
from memwarden.policies.engine import ReadScope
from memwarden.policies.partitions import Coverage, Partition, Target, plan
from memwarden.policies.pushdown import any_of

# Largest number of ids in one provenance look-up (Chroma's filter depth limit is 1,000).
LINK_CHUNK = 400


class StoreView:
    """The pipeline's reads of the store (see the module docstring)."""

    def __init__(self, backend: CoalescingBackend) -> None:
        self._backend = backend

    @property
    def has_text_index(self) -> bool:
        """Whether lexical (BM25) queries are possible."""
        return self._backend.has_text_index

    # -- planning ---------------------------------------------------------------------------

    def targets(self, scope: ReadScope) -> list[Target]:
        """The partitions a read within ``scope`` must query, with their residual filters."""
        return plan(scope, self._backend.partitions())

    def partition_of(self, namespace: Namespace) -> Partition:
        """The partition records in ``namespace`` live in."""
        return self._backend.partition_of(namespace)

    # -- by id --------------------------------------------------------------------------------

    def within(self, rid: str, scopes: Iterable[ReadScope],
               known: Callable[[MemoryRecord], bool]) -> MemoryRecord | None:
        """The record ``rid`` if some scope's pushed-down filter lets it through and ``known``
        takes it, else None.

        Whatever the answer, a look-up that finds nothing the caller knows asks every partition
        the scopes reach (so a hidden id costs what a missing one costs); one that does is
        answered from the partition the backend last saw the id in, when that is one of them."""
        first = self._backend.located(rid)
        if first is not None:
            steps = self._steps(scopes, self._backend.partitions())
            if first in steps:
                rows = self._backend.fetch_ids([rid], [(first, steps[first])])
                if rows and known(record := from_row(rows[0])):
                    return record
        # A fresh listing: an id in a partition another process created a moment ago is found.
        rest = [(part, where) for part, where in self._steps(scopes, self._backend.partitions(fresh=True)).items()
                if part != first]
        rows = self._backend.fetch_ids([rid], rest) if rest else []
        record = from_row(rows[0]) if rows else None
        return record if record is not None and known(record) else None

    @staticmethod
    def _steps(scopes: Iterable[ReadScope], partitions: list[Partition]) -> dict[Partition, Where]:
        """Each partition the scopes reach, with the filter that is any of theirs there."""
        steps: dict[Partition, list[Where]] = {}
        for scope in scopes:
            if scope.empty:
                continue
            for target in plan(scope, partitions):
                if target.searched:
                    steps.setdefault(target.partition, []).append(
                        {} if target.coverage is Coverage.COVERED else (target.where or {}))
        return {part: {} if any(not w for w in wheres) else any_of(wheres) for part, wheres in steps.items()}

    def stored(self, rid: str, namespace: Namespace) -> MemoryRecord | None:
        """The stored row ``rid`` in the partition of ``namespace``, whatever its state: a
        system read (ids follow from the namespace, so there is one place to look)."""
        rows = self._backend.fetch(ids=[rid], partitions=[self._backend.partition_of(namespace)])
        return from_row(rows[0]) if rows else None

    def rows(self, ids: Sequence[str]) -> dict[str, StoredRow]:
        """Stored rows by id (a system read, for ids a search has already found)."""
        return {row.id: row for row in self._backend.fetch(ids=list(ids))} if ids else {}

    def records(self, ids: Sequence[str]) -> list[MemoryRecord]:
        """Stored records by id, any state (a system read)."""
        return [from_row(r) for r in self._backend.fetch(ids=list(ids))] if ids else []

    # -- relations ------------------------------------------------------------------------------

    def lineage(self, record: MemoryRecord) -> list[MemoryRecord]:
        """Every version of the memory ``record`` belongs to, oldest first (by version, then
        write time).

        Versions form a tree, not a chain: two updates of one version may wait for review side
        by side, and both may be released. So every version superseding any version found is
        found, not only the first, or a forget of the memory would leave a version of it."""
        # Every version keeps the namespace, so all of them are in one partition.
        within = [self._backend.partition_of(record.namespace)]
        root = record
        while root.supersedes and (older := self.stored(root.supersedes, record.namespace)) is not None:
            root = older
        found = {root.id: root}
        frontier = [root.id]
        while frontier:
            newer: list[MemoryRecord] = []
            for start in range(0, len(frontier), LINK_CHUNK):
                chunk = frontier[start:start + LINK_CHUNK]
                newer += [from_row(r) for r in self._backend.fetch(where={Meta.SUPERSEDES.value: {"$in": chunk}},
                                                                   partitions=within)]
            fresh = [r for r in newer if r.id not in found]
            found.update((r.id, r) for r in fresh)
            frontier = [r.id for r in fresh]
        return sorted(found.values(), key=lambda r: (r.version, r.created_at, r.id))

    def children(self, ids: Sequence[str], *, versions: bool = False) -> list[MemoryRecord]:
        """Records with a parent in ``ids`` (and, with ``versions``, those superseding one)."""
        found: list[MemoryRecord] = []
        for start in range(0, len(ids), LINK_CHUNK):
            chunk = list(ids[start:start + LINK_CHUNK])
            linked = [{Meta.PARENTS.value: {"$contains": i}} for i in chunk]
            if versions:
                linked.append({Meta.SUPERSEDES.value: {"$in": chunk}})
            found += [from_row(r) for r in self._backend.fetch(where=any_of(linked))]
        return found

    def descendants(self, ids: Sequence[str]) -> list[MemoryRecord]:
        """Every record derived from ``ids`` through provenance, transitively."""
        found: dict[str, MemoryRecord] = {}
        frontier = list(ids)
        while frontier:
            fresh = [r for r in self.children(frontier) if r.id not in found and r.id not in ids]
            found.update((r.id, r) for r in fresh)
            frontier = [r.id for r in fresh]
        return list(found.values())

    def about(self, subject: str) -> list[MemoryRecord]:
        """Every stored record about ``subject``, any state, anywhere (a system read)."""
        return [from_row(r) for r in self._backend.fetch(where=subject_filter(subject))]

    def labelled(self, label: str, value: str) -> list[MemoryRecord]:
        """Every stored record whose label ``label`` is ``value``, anywhere (a system read)."""
        return [from_row(r) for r in self._backend.fetch(where={label_field(label): value})]

    def subject_rows(self, subject: str, kinds: Collection[str], per_writer: int) -> list[StoredRow]:
        """Each writer's ``per_writer`` newest active rows of ``kinds`` about ``subject`` (for
        the subject index: a cache)."""
        return self._backend.newest_about(subject, kinds, per_writer)

    def in_namespace(self, namespace: Namespace) -> list[MemoryRecord]:
        """The visible records of exactly ``namespace`` (for capacity eviction)."""
        now = utcnow().timestamp()
        rows = self._backend.fetch(where={Meta.NS.value: "/".join(namespace)},
                                   partitions=[self._backend.partition_of(namespace)])
        return [from_row(r) for r in rows if visible_metadata(r.metadata, now)]

    def kind_in(self, kind: Kind, namespace: Namespace) -> list[MemoryRecord]:
        """Every record of ``kind`` in the partition of ``namespace`` (lessons)."""
        rows = self._backend.fetch(where={Meta.KIND.value: kind.value}, partitions=[self._backend.partition_of(namespace)])
        return [from_row(r) for r in rows]

    # -- scoped reads (searches, listings, sweeps) ---------------------------------------------

    def listed(self, targets: Sequence[Target], where: Where | None, limit: int | None, offset: int = 0, *,
               accept: MetaTest | None = None, matching: RowTest | None = None,
               distinct: RowKey | None = None) -> list[StoredRow]:
        """Rows of planned partitions that pass their filter and ``where`` (and ``accept``,
        ``matching``; the first of each ``distinct`` key only): see Backend.fetch_targets."""
        return self._backend.fetch_targets(targets, where, limit, offset, accept=accept, matching=matching,
                                           distinct=distinct)

    def nearest(self, vector: np.ndarray, k: int, targets: Sequence[Target], *,
                accept: Callable[[dict[str, Any]], bool], fallback: Where) -> list[tuple[StoredRow, float]]:
        """The k nearest rows of planned partitions that ``accept`` takes."""
        return self._backend.query_targets(vector, k, targets, accept=accept, fallback=fallback)

    def lexical(self, text: str, k: int, where: Where) -> list[tuple[str, float]]:
        """The k best BM25 matches that pass ``where`` (the whole scope filter)."""
        return self._backend.text_query(text, k, where)

    def lexical_voices(self, text: str, where: Where, holding: Collection[str] = (),
                       only_holding: bool = False) -> list[tuple[str, float, Any, Any, bool]]:
        """Every BM25 match that passes ``where``, best first, with its writer, its source and
        whether it holds one of the procedure categories ``holding`` (``only_holding``: only
        those that do)."""
        return self._backend.text_voices(text, where, holding, only_holding)

    def count(self, where: Where, partition: Partition) -> int:
        """Rows of ``partition`` that pass ``where``."""
        return self._backend.count(where=where, partitions=[partition])

