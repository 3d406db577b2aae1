"""Records in several Chroma collections, one per namespace partition (embedded or server).

Why: Chroma's local ``where`` filter costs a few microseconds per row that each clause
matches, so a query filtered down to the 30% of a 100k store that a caller may read takes
seconds, while an unfiltered query takes milliseconds whatever the size. Stored by partition
(:class:`memwarden.policies.partitions.Partition`: a namespace prefix of the configured depth
plus the namespace length), a read scope becomes a few partitions queried with no filter
(fully covered), a few with a small residual filter (partly covered), and none of the rest:
the policy is still pushed down into the store, as a choice of collections plus filters.

Layout of a store:

- ``memwarden-layout``: an empty collection whose metadata records the partition depth, the
  embedder the vectors were made with (see :mod:`memwarden.memory.embedder_identity`) and,
  while a migration runs, where it copies from;
- one collection per partition, named ``mw<depth>-<hash of the partition>``, its partition
  in its metadata;
- a store written before partitioning (the single collection ``memwarden-records``) is
  migrated on open, and so is a store opened with ``repartition=True`` at another depth.
  Migration copies with idempotent upserts, then drops the sources (and, embedded, scrubs
  their files), and is resumed on the next open if it was interrupted.

A record's partition follows from its namespace, and its id from its namespace, so a record
never changes partition. Ids are located through an in-process map filled by every write and
read (one lookup, no query); an id it does not know is looked for in every partition, since
another process may have written it. Rows stay in their partition whatever their status;
readers check visibility on the rows that come back (see :meth:`PartitionedBackend.query_targets`).

Why over 500 lines: one class implements the whole Backend protocol over many collections
(layout and migration, id location, fetches, searches, counts and the purge across
partitions), all sharing its partition map, handle cache and lock.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
import time
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any, TypeVar

import numpy as np

from memwarden.core.errors import InvalidRequest
from memwarden.core.fields import Meta, ns_label
from memwarden.memory import compaction, facets
from memwarden.memory.compaction import marker, scrub, versions
from memwarden.memory.embedder_identity import EmbedderIdentity, check_dimension, settle
from memwarden.memory.backends import (
    COLLECTION, MetaTest, RowKey, RowTest, StoredRow, Where, _rows, newest_per_writer, select_rows, subject_filter,
)
from memwarden.core.namespace import MAX_DEPTH, Namespace
from memwarden.policies.partitions import Partition, Target, partition_of
from memwarden.policies.pushdown import all_of

T = TypeVar("T")

LAYOUT = "memwarden-layout"
#: Partition depth of a new store. Measured on the hospital namespaces (ward/area/entity) of
#: benchmarks/overhead.py: depth 1 leaves a physician's wards partly covered (a residual filter
#: matching most of their rows), depth 3 makes one partition per patient; see docs/performance.md.
DEFAULT_DEPTH = 2
_KEY = "memwarden:partition"
_DEPTH = "memwarden:partition_depth"
_SOURCES = "memwarden:migrating_from"
_MARKER = "memwarden-partition-purge.json"
_COPY_BATCH = 1000
_INCLUDE = ["documents", "metadatas"]
# A search asks each partition for this many rows beyond what it needs: rows that are not
# visible (superseded, forgotten, quarantined, expired) are dropped after the query, and a
# partition that still comes up short is asked again, wider, and at last with the filter.
_SLACK = 5
_WIDEN = 4
_MAX_UNFILTERED = 200
# Chroma keeps every write in its log until the HNSW segment persists, every sync_threshold
# writes (default 1,000); a query and a write pay for the log rows of their collection. Most
# partitions take a fraction of the writes, so by default their logs stay long: measured here
# with 20 partitions of 500 rows, 100 halves query latency and cuts a write by a third.
_SYNC_THRESHOLD = 100
# Largest limit for which a filtered fetch asks every partition at once (a selective look-up,
# such as a subject's records); larger reads go partition by partition.
_SIDE_BY_SIDE = 500
# Rows per page when a listing tests visibility itself.
_PAGE, _MAX_PAGE = 100, 1000
# Seconds between checks for partitions another process (or Memory) created.
_REFRESH_EVERY = 1.0


def check_depth(depth: object) -> None:
    """Raise InvalidRequest unless ``depth`` is None or a partition depth memwarden supports."""
    if depth is not None and (isinstance(depth, bool) or not isinstance(depth, int) or not 1 <= depth <= MAX_DEPTH):
        raise InvalidRequest(f"partition_depth must be an integer from 1 to {MAX_DEPTH}, got {depth!r}")


#: Widest HNSW search breadth (``ef_search``) accepted: beyond it a query is a slow scan.
MAX_BREADTH = 10_000


def check_breadth(breadth: object) -> None:
    """Raise InvalidRequest unless ``breadth`` is None or an HNSW search breadth memwarden accepts."""
    if breadth is not None and (isinstance(breadth, bool) or not isinstance(breadth, int)
                                or not 1 <= breadth <= MAX_BREADTH):
        raise InvalidRequest(f"search_breadth must be an integer from 1 to {MAX_BREADTH} or None, got {breadth!r}")


def collection_name(depth: int, partition: Partition) -> str:
    """The Chroma collection that holds ``partition`` in a store of partition depth ``depth``."""
    key = json.dumps([list(partition.prefix), partition.length], ensure_ascii=False)
    return f"mw{depth}-" + hashlib.sha256(key.encode("utf-8")).hexdigest()[:40]


def _partition_from(metadata: dict[str, Any] | None, depth: int) -> Partition | None:
    meta = metadata or {}
    if meta.get(_DEPTH) != depth or _KEY not in meta:
        return None
    prefix, length = json.loads(meta[_KEY])
    return Partition(tuple(prefix), int(length))


def row_partition(metadata: dict[str, Any], depth: int) -> Partition:
    """The partition of a stored row, from the namespace labels in its metadata."""
    try:
        n = int(metadata[Meta.NS_DEPTH])
        namespace = tuple(str(metadata[ns_label(i)]) for i in range(n))
    except (KeyError, TypeError, ValueError):
        raise InvalidRequest("a stored row needs its namespace in ns_depth and ns_0 .. ns_<n-1>") from None
    return partition_of(namespace, depth)


class _Gate:
    """Many readers or one writer: a purge replaces the client every other call uses."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._readers = 0
        self._writer = False

    @contextmanager
    def shared(self) -> Iterator[None]:
        with self._cond:
            while self._writer:
                self._cond.wait()
            self._readers += 1
        try:
            yield
        finally:
            with self._cond:
                self._readers -= 1
                self._cond.notify_all()

    @contextmanager
    def exclusive(self) -> Iterator[None]:
        with self._cond:
            while self._writer or self._readers:
                self._cond.wait()
            self._writer = True
        try:
            yield
        finally:
            with self._cond:
                self._writer = False
                self._cond.notify_all()


class PartitionedBackend:
    """memwarden's store: one Chroma collection per namespace partition, cosine distance.

    ``depth``: the partition depth for a new store (None: :data:`DEFAULT_DEPTH`); opening an
    existing store at another depth raises InvalidRequest unless ``repartition`` is set, which
    migrates it. ``workers``: threads that query partitions side by side. ``breadth``: the
    HNSW ``ef_search`` of every partition (None: leave Chroma's); a partition created at
    another breadth is changed the first time this backend opens it, which Chroma applies
    when a process next loads its index.

    It has no lexical index of its own (see :mod:`memwarden.memory.lexical`, whose wrapper adds
    one to an embedded store).
    """

    has_text_index = False

    def __init__(self, client: Any, *, depth: int | None = None, repartition: bool = False,
                 workers: int = 4, breadth: int | None = None) -> None:
        check_depth(depth)
        check_breadth(breadth)
        self._breadth = breadth
        self._client = client
        self._root = compaction.persist_dir(client)
        self._gate = _Gate()
        self._lock = threading.RLock()
        self._handles: dict[str, Any] = {}
        self._parts: dict[Partition, str] = {}
        self._known = -1                          # collections seen at the last refresh
        self._checked = 0.0                       # when that was (time.monotonic)
        self._located: dict[str, Partition] = {}  # record id -> partition (ids never move)
        self._identity: EmbedderIdentity | None = None  # the store's embedder, once bound
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="memwarden-partition") \
            if workers > 1 else None
        #: What opening did to the store, one sentence each (audited by the memory).
        self.maintenance: list[str] = []
        self._depth = self._open_layout(depth, repartition)
        if self._root is not None and marker.read(self._root, _MARKER) is not None:
            self.purge([])  # an erasure across partitions was interrupted: finish it
            self.maintenance.append("finished the physical purge of an erasure an interrupt left across partitions")
        self._trim_tails()

    def _trim_tails(self) -> None:
        """Load every partition and cut what lies past its elements in its vector files.

        Chroma re-creates the vector files of an index it never persisted each time a process
        loads it, from uninitialised memory (see compaction.scrub.trim_segment_tails), and a process
        that held rows before another erased them may write them out so. Every purge trims
        them; an open and a close do too, so a store closed (or opened again after a crash)
        holds no bytes of an erased row in any partition's files."""
        if self._root is None:
            return
        for name in sorted(self._parts.values()):
            scrub.trim_segment_tails(self._root, self._handle(name))

    @classmethod
    def embedded(cls, path: str, **options: Any) -> PartitionedBackend:
        """Open (or create) a local persistent Chroma database at ``path``, telemetry off."""
        import chromadb
        from chromadb.config import Settings

        return cls(chromadb.PersistentClient(path=os.path.abspath(path), settings=Settings(anonymized_telemetry=False)), **options)

    @property
    def depth(self) -> int:
        """The partition depth of this store."""
        return self._depth

    def _call(self, fn: Callable[[], T]) -> T:
        """Run one Chroma call (the server backend retries transient failures here)."""
        return fn()

    # -- layout and migration ---------------------------------------------------------------

    def _collections(self) -> dict[str, dict[str, Any]]:
        return {c.name: dict(c.metadata or {}) for c in self._call(self._client.list_collections)}

    def _open_layout(self, depth: int | None, repartition: bool) -> int:
        existing = self._collections()
        layout = existing.get(LAYOUT)
        if layout is None:
            chosen = depth or DEFAULT_DEPTH
            sources = [COLLECTION] if COLLECTION in existing else []
            self._set_layout(chosen, sources, create=True)
        else:
            stored = int(layout[_DEPTH])
            sources = json.loads(layout.get(_SOURCES) or "[]")
            chosen = stored
            if depth is not None and depth != stored and not sources:
                if not repartition:
                    raise InvalidRequest(
                        f"this store is partitioned at depth {stored}, not {depth}: open it with partition_depth="
                        f"{stored} (or without one), or with repartition=True to migrate every record to depth "
                        f"{depth} (a copy of the whole store)")
                chosen = depth
                sources = sorted(n for n, m in existing.items() if _partition_from(m, stored) is not None)
                self._set_layout(chosen, sources)
        self._depth = chosen
        if sources:
            self._migrate(sources)
            self.maintenance.append(f"migrated {len(sources)} collection(s) to partition depth {chosen}")
        self._refresh(now=True)
        return chosen

    def _set_layout(self, depth: int, sources: list[str], *, create: bool = False) -> None:
        meta = {_DEPTH: depth, _SOURCES: json.dumps(sources)}
        if create:
            self._call(lambda: self._client.get_or_create_collection(LAYOUT, embedding_function=None, metadata=meta))
        else:
            self._modify_layout(meta)

    def _modify_layout(self, changes: dict[str, Any]) -> None:
        # Chroma's modify replaces the whole metadata: keep what this change does not touch.
        col = self._call(lambda: self._client.get_collection(LAYOUT, embedding_function=None))
        self._call(lambda: col.modify(metadata={**dict(col.metadata or {}), **changes}))

    def bind_embedder(self, name: str | None, dim: int | None, *, record: bool = True) -> None:
        """Check that this store's vectors were made by embedder ``name`` of ``dim`` dimensions
        (None: not declared); raise InvalidRequest naming both embedders if not. ``name`` None:
        no model is loaded, so nothing is checked or recorded (nothing will be embedded).

        A store without a record (written before they were kept) is taken to be this
        embedder's unless its rows have another dimension, and, when ``record``, the record is
        written now; a read-only open passes ``record=False`` and changes nothing.
        """
        where = self._where()
        listed = self._call(self._client.list_collections)
        layout = next((c for c in listed if c.name == LAYOUT), None)
        recorded = EmbedderIdentity.from_metadata(dict(layout.metadata or {}) if layout is not None else None)
        # Chroma fixes a collection's dimension at its first row; empty ones have none yet. Only
        # this store's partitions count: a server's database may hold other applications' too.
        dims = [d for c in listed if _partition_from(c.metadata, self._depth) is not None
                if (d := getattr(getattr(c, "_model", None), "dimension", None)) is not None]
        if name is None:
            self._identity = recorded
            return
        settled = settle(recorded, dims, EmbedderIdentity(name=name, dim=dim), where)
        if settled is not None and record:
            self._modify_layout(settled.as_metadata())
        self._identity = settled or recorded

    def _where(self) -> str:
        """This store, as an error message names it."""
        return f"at {str(self._root)!r}" if self._root is not None else "on this Chroma server"

    def _migrate(self, sources: list[str]) -> None:
        """Copy every row of ``sources`` into this depth's partitions, then drop the sources.
        Idempotent: an interrupted migration is simply run again."""
        present = self._collections()
        for name in sources:
            if name not in present:
                continue
            col = self._call(lambda: self._client.get_collection(name, embedding_function=None))
            ids = self._call(lambda: col.get(include=[]))["ids"]
            for start in range(0, len(ids), _COPY_BATCH):
                chunk = ids[start:start + _COPY_BATCH]
                got = self._call(lambda: col.get(ids=chunk, include=["embeddings", "documents", "metadatas"]))
                self._upsert(got["ids"], np.asarray(got["embeddings"], dtype=np.float32),
                             [d or "" for d in got["documents"]], [dict(m or {}) for m in got["metadatas"]])
            self._call(lambda: scrub.drop_collection(self._client, self._root, name))
        if self._root is not None:
            # Chroma leaves a dropped collection's vector files behind, and freed pages hold its
            # rows: without this, a record erased later would survive in the old copy.
            compaction.scrub_directory(self._root)
        self._set_layout(self._depth, [])

    def _refresh(self, *, now: bool = False) -> None:
        """Learn about partitions created elsewhere (another process, or another Memory on the
        same store): at most every :data:`_REFRESH_EVERY` seconds unless ``now``, and cheaply
        when nothing changed. Partitions this backend creates are known at once."""
        started = time.monotonic()
        if not now and started - self._checked < _REFRESH_EVERY:
            return
        self._checked = started
        count = self._call(self._client.count_collections)
        if count == self._known:
            return
        # Listed and installed under the lock: a partition _ensure adds meanwhile is then
        # either in the listing or added after it, never overwritten by an older listing.
        with self._lock:
            found = {}
            for name, meta in self._collections().items():
                part = _partition_from(meta, self._depth)
                if part is not None:
                    found[part] = name
            self._parts = found
            self._known = count

    def _handle(self, name: str) -> Any:
        col = self._handles.get(name)
        if col is None:
            col = self._tuned(self._call(lambda: self._client.get_collection(name, embedding_function=None)))
            with self._lock:
                self._handles[name] = col
        return col

    def _tuned(self, col: Any) -> Any:
        """``col`` with this backend's search breadth, when it has one."""
        if self._breadth is not None and compaction.hnsw_config(col).get("ef_search") != self._breadth:
            self._call(lambda: col.modify(configuration={"hnsw": {"ef_search": self._breadth}}))
        return col

    def _ensure(self, partition: Partition) -> Any:
        name = self._parts.get(partition)
        if name is not None:
            return self._handle(name)
        name = collection_name(self._depth, partition)
        key = json.dumps([list(partition.prefix), partition.length], ensure_ascii=False)
        meta = {"hnsw:space": "cosine", "hnsw:sync_threshold": _SYNC_THRESHOLD, "hnsw:batch_size": _SYNC_THRESHOLD,
                _KEY: key, _DEPTH: self._depth}
        if self._breadth is not None:
            meta["hnsw:search_ef"] = self._breadth
        # (Another process may have created it first, at another breadth.)
        col = self._tuned(self._call(lambda: self._client.get_or_create_collection(name, embedding_function=None,
                                                                                   metadata=meta)))
        with self._lock:
            # Replaced, never changed in place: other threads iterate it without the lock.
            self._parts = {**self._parts, partition: name}
            self._handles[name] = col
            self._known = -1  # the next refresh re-reads the list
        return col

    # -- what the planner needs ---------------------------------------------------------------

    def partitions(self, *, fresh: bool = False) -> list[Partition]:
        """The partitions that exist now, in order; ``fresh`` asks the store rather than
        trusting a listing up to a second old (for look-ups that must not miss a partition
        another process has just created)."""
        with self._gate.shared():
            self._refresh(now=fresh)
            return sorted(self._parts)

    def partition_of(self, namespace: Namespace) -> Partition:
        """The partition records in ``namespace`` are stored in."""
        return partition_of(namespace, self._depth)

    # -- locating ids ---------------------------------------------------------------------------

    def _remember(self, rows: Iterable[StoredRow], partition: Partition) -> None:
        with self._lock:
            for row in rows:
                self._located[row.id] = partition

    def _locate(self, ids: Sequence[str], within: Partition | None = None) -> dict[Partition, list[str]]:
        """Group ids by the partition that holds them; ids found nowhere are left out."""
        groups: dict[Partition, list[str]] = {}
        unknown = []
        for rid in dict.fromkeys(ids):
            part = within or self._located.get(rid)
            # A partition not known here yet (created by another process in the last second)
            # is looked for like an unknown id: a forget or erase must never skip a record.
            if part is None or part not in self._parts:
                unknown.append(rid)
            else:
                groups.setdefault(part, []).append(rid)
        if unknown:
            self._refresh(now=True)  # an id written elsewhere may be in a partition new to us
            parts = sorted(self._parts)

            def probe(part: Partition) -> tuple[Partition, list[str]]:
                col = self._handle(self._parts[part])
                return part, self._call(lambda: col.get(ids=unknown, include=[]))["ids"]

            for part, found in self._map(probe, parts):
                with self._lock:
                    for rid in found:
                        self._located[rid] = part
                if found:
                    groups.setdefault(part, []).extend(found)
        return groups

    def _map(self, fn: Callable[[Any], T], items: Sequence[Any]) -> list[T]:
        if self._pool is None or len(items) < 2:
            return [fn(i) for i in items]
        return list(self._pool.map(fn, items))

    # -- writes -----------------------------------------------------------------------------------

    def upsert(self, ids: Sequence[str], embeddings: np.ndarray, documents: Sequence[str],
               metadatas: Sequence[dict[str, Any]]) -> None:
        """Insert or replace rows, each in its namespace's partition (one call per partition)."""
        # Here, not left to Chroma: a new partition would take vectors of any dimension.
        if len(ids):
            check_dimension(self._identity, int(np.shape(embeddings)[-1]), self._where())
        with self._gate.shared():
            self._upsert(ids, embeddings, documents, metadatas)

    def _upsert(self, ids: Sequence[str], embeddings: np.ndarray, documents: Sequence[str],
                metadatas: Sequence[dict[str, Any]]) -> None:
        vectors = np.asarray(embeddings, dtype=np.float32)
        groups: dict[Partition, list[int]] = {}
        for j, meta in enumerate(metadatas):
            groups.setdefault(row_partition(meta, self._depth), []).append(j)
        for part, rows in groups.items():
            col = self._ensure(part)
            self._call(lambda: col.upsert(ids=[ids[j] for j in rows], embeddings=vectors[rows],
                                          documents=[documents[j] for j in rows],
                                          metadatas=[metadatas[j] for j in rows]))
            with self._lock:
                for j in rows:
                    self._located[ids[j]] = part

    def update_metadata(self, ids: Sequence[str], metadatas: Sequence[dict[str, Any]]) -> None:
        """Merge metadata into existing rows (text and vector unchanged); unknown ids are skipped."""
        with self._gate.shared():
            meta_of = dict(zip(ids, metadatas))
            for part, found in self._locate(list(ids)).items():
                col = self._handle(self._parts[part])
                self._call(lambda: col.update(ids=found, metadatas=[meta_of[i] for i in found]))

    def delete(self, ids: Sequence[str]) -> None:
        """Remove rows (logically; see :meth:`purge`)."""
        with self._gate.shared():
            for part, found in self._locate(list(ids)).items():
                col = self._handle(self._parts[part])
                self._call(lambda: col.delete(ids=found))
            self._forget_ids(ids)

    def _forget_ids(self, ids: Iterable[str]) -> None:
        ids = set(ids)
        with self._lock:
            for rid in ids:
                self._located.pop(rid, None)

    # -- reads ------------------------------------------------------------------------------------

    def _get(self, part: Partition, **kwargs: Any) -> list[StoredRow]:
        col = self._handle(self._parts[part])
        got = self._call(lambda: col.get(include=_INCLUDE, **kwargs))
        rows = _rows(got["ids"], got["documents"], got["metadatas"])
        self._remember(rows, part)
        return rows

    def fetch(self, ids: Sequence[str] | None = None, where: Where | None = None, limit: int | None = None,
              offset: int | None = None, *, partitions: Sequence[Partition] | None = None) -> list[StoredRow]:
        """Rows by id and/or metadata filter: with ids, in the order given; without, partition
        by partition in storage order, ``offset`` and ``limit`` counted across partitions.

        ``partitions`` restricts the look-up (for ids: a hint that they are all stored there,
        which saves locating them)."""
        with self._gate.shared():
            if ids is not None:
                within = partitions[0] if partitions is not None and len(partitions) == 1 else None
                groups = self._locate(list(ids), within)
                if partitions is not None:
                    groups = {p: g for p, g in groups.items() if p in partitions}
                found = {r.id: r for part, group in groups.items()
                         for r in self._get(part, ids=group, where=where or None)}
                rows = [found[i] for i in dict.fromkeys(ids) if i in found]
                return rows[offset or 0:][:limit] if limit is not None else rows[offset or 0:]
            self._refresh()
            parts = [p for p in sorted(self._parts) if partitions is None or p in partitions]
            if not offset and (limit is None or limit <= _SIDE_BY_SIDE):
                # Everything that matches, or the first few: ask the partitions side by side,
                # each for at most ``limit``; in partition order the first ``limit`` of those
                # are the rows a partition-by-partition read would return.
                found = self._map(lambda p: self._get(p, where=where or None, limit=limit), parts)
                rows = [row for group in found for row in group]
                return rows if limit is None else rows[:limit]
            return self._paged([(p, where) for p in parts], limit, offset or 0)

    def vectors(self, ids: Sequence[str] | None = None, *,
                page: int = _COPY_BATCH) -> Iterator[tuple[Partition, list[StoredRow], np.ndarray]]:
        """Rows with their stored vectors, a page at a time, with their partition: every row,
        or the rows ``ids`` that exist (to load and repair a derived index beside this store).

        Every partition's ids are listed first and its rows read by id, so a row deleted
        meanwhile shifts no page past a row that stays."""
        if ids is not None:
            with self._gate.shared():
                groups = self._locate(list(ids))
            steps = list(groups.items())
        else:
            steps = [(part, None) for part in self.partitions(fresh=True)]
        for part, group in steps:
            if group is None:
                with self._gate.shared():
                    if part not in self._parts:
                        continue
                    col = self._handle(self._parts[part])
                    group = self._call(lambda: col.get(include=[]))["ids"]
            for start in range(0, len(group), page):
                chunk = group[start:start + page]
                with self._gate.shared():
                    if part not in self._parts:
                        break
                    col = self._handle(self._parts[part])
                    got = self._call(lambda: col.get(ids=chunk, include=["embeddings", "documents", "metadatas"]))
                if got["ids"]:
                    yield (part, _rows(got["ids"], got["documents"], got["metadatas"]),
                           np.asarray(got["embeddings"], dtype=np.float32))

    def stored_vector(self, rid: str) -> tuple[np.ndarray, dict[str, Any]] | None:
        """See :meth:`Backend.stored_vector`."""
        for _, rows, vectors in self.vectors([rid]):
            return vectors[0], dict(rows[0].metadata)
        return None

    def located(self, rid: str) -> Partition | None:
        """The partition this backend last saw ``rid`` in, if any (a hint, never an answer)."""
        return self._located.get(rid)

    def fetch_ids(self, ids: Sequence[str], steps: Sequence[tuple[Partition, Where | None]]) -> list[StoredRow]:
        """Rows by id that pass the filter of one of ``steps`` (partition, filter), asking
        every one of those partitions side by side, whether or not this backend has seen the
        ids before (so what it happens to know never changes what the look-up costs)."""
        with self._gate.shared():
            present = [(part, where) for part, where in steps if part in self._parts]
            found = self._map(lambda step: self._get(step[0], ids=list(ids), where=step[1] or None), present)
            rows = {row.id: row for group in found for row in group}
            return [rows[i] for i in dict.fromkeys(ids) if i in rows]

    def fetch_targets(self, targets: Sequence[Target], where: Where | None, limit: int | None, offset: int = 0, *,
                      accept: MetaTest | None = None, matching: RowTest | None = None,
                      distinct: RowKey | None = None) -> list[StoredRow]:
        """Rows of the searched targets that pass their own filter and ``where`` (and the
        tests of :meth:`Backend.fetch_targets`), partition by partition in storage order,
        ``offset`` and ``limit`` counted across them.

        ``accept`` is for tests nearly every row passes (visibility), which cost a Chroma filter
        as much as a scan, and ``matching`` for what no filter sees: the rows are then read in
        pages and tested here instead."""
        with self._gate.shared():
            present = [t for t in targets if t.searched and t.partition in self._parts]
            steps = [(t.partition, all_of([t.where or {}, where or {}])) for t in present]
            if accept is None and matching is None and distinct is None:
                return self._paged(steps, limit, offset)
            page = min(max((limit or 0) + offset, _PAGE), _MAX_PAGE)
            return select_rows(self._pages(steps, page), limit, offset, accept=accept, matching=matching,
                               distinct=distinct)

    def _pages(self, steps: Sequence[tuple[Partition, Where | None]], page: int) -> Iterator[StoredRow]:
        """The rows of ``steps``, read ``page`` at a time, only as far as they are consumed."""
        for part, step_where in steps:
            pos = 0
            while True:
                rows = self._get(part, where=step_where or None, limit=page, offset=pos)
                pos += len(rows)
                yield from rows
                if len(rows) < page:
                    break

    def _paged(self, steps: Sequence[tuple[Partition, Where | None]], limit: int | None, skip: int) -> list[StoredRow]:
        out: list[StoredRow] = []
        for part, where in steps:
            if limit is not None and len(out) >= limit:
                break
            want = None if limit is None else skip + limit - len(out)
            rows = self._get(part, where=where or None, limit=want)
            if len(rows) <= skip:
                skip -= len(rows)
                continue
            out += rows[skip:]
            skip = 0
        return out if limit is None else out[:limit]

    def _query(self, part: Partition, embedding: np.ndarray, n: int,
               where: Where | None) -> list[tuple[StoredRow, float]]:
        col = self._handle(self._parts[part])
        got = self._call(lambda: col.query(query_embeddings=[np.asarray(embedding, dtype=np.float32)], n_results=n,
                                           where=where or None, include=["documents", "metadatas", "distances"]))
        rows = _rows(got["ids"][0], got["documents"][0], got["metadatas"][0])
        self._remember(rows, part)
        return list(zip(rows, got["distances"][0]))

    def query_targets(self, embedding: np.ndarray, k: int, targets: Sequence[Target], *,
                      accept: Callable[[dict[str, Any]], bool],
                      fallback: Where) -> list[tuple[StoredRow, float]]:
        """The k nearest rows over the searched targets whose metadata ``accept`` takes.

        The policy is in the targets, always pushed down: each partition is queried with its
        target's filter only (none when covered). ``accept`` (visibility, kinds: tests nearly
        every row would pass, the costly case for Chroma's filter) runs on what comes back, and
        ``fallback`` is the same test as a filter, for a partition whose nearest rows it refuses
        too often.

        Two steps, because Chroma returns ids and distances several times faster than it
        returns metadata: first every partition's nearest ids, merged by distance; then the
        rows of the best of them, fetched by id until k are accepted. That is exact unless a
        partition had more refused rows among its nearest than the slack; such a partition
        (its farthest candidate nearer than the k-th accepted row) is searched again, deeper.
        """
        check_dimension(self._identity, int(np.shape(embedding)[-1]), self._where())
        with self._gate.shared():
            present = [t for t in targets if t.searched and t.partition in self._parts]
            n = k + _SLACK
            # Each partition's nearest ids, and its rows with facets (memwarden.memory.facets),
            # read side by side.
            reads = self._map(lambda job: job(), [*(lambda t=t: self._nearest_ids(t, embedding, n) for t in present),
                                                  *(lambda t=t: self._faceted(t) for t in present)])
            lists, faceted = reads[:len(present)], [h for rows in reads[len(present):] for h in rows]
            candidates = sorted(((d, i, t) for t, ids in zip(present, lists) for i, d in ids), key=lambda c: c[0])
            # Each hit with the partition it came from (a concurrent delete may already have
            # dropped its id from the shared map).
            kept: list[tuple[StoredRow, float, Partition]] = []
            pos = 0
            while len(kept) < k and pos < len(candidates):
                chunk = candidates[pos:pos + k - len(kept)]
                pos += len(chunk)
                rows = self._rows_by_id([(i, t.partition) for _, i, t in chunk])
                kept += [(rows[i], d, t.partition) for d, i, t in chunk if i in rows and accept(rows[i].metadata)]
            kth = kept[k - 1][1] if len(kept) >= k else float("inf")
            deeper = [t for t, ids in zip(present, lists) if len(ids) == n and ids[-1][1] < kth]
            if deeper:
                again = {t.partition for t in deeper}
                kept = [h for h in kept if h[2] not in again]
                for t, hits in zip(deeper, self._map(lambda t: self._deep(t, embedding, k, accept, fallback), deeper)):
                    kept += [(row, d, t.partition) for row, d in hits]
            # Rows embedded by several texts are scored by their best vector.
            return facets.pooled([(row, d) for row, d, _ in kept], embedding, k, faceted, accept)

    def _faceted(self, target: Target) -> list[tuple[StoredRow, np.ndarray]]:
        col = self._handle(self._parts[target.partition])
        found = facets.faceted_rows(lambda **get: self._call(lambda: col.get(**get)), target.where)
        self._remember((row for row, _ in found), target.partition)
        return found

    def _nearest_ids(self, target: Target, embedding: np.ndarray, n: int) -> list[tuple[str, float]]:
        col = self._handle(self._parts[target.partition])
        got = self._call(lambda: col.query(query_embeddings=[np.asarray(embedding, dtype=np.float32)], n_results=n,
                                           where=target.where or None, include=["distances"]))
        return list(zip(got["ids"][0], got["distances"][0]))

    def _rows_by_id(self, located: Sequence[tuple[str, Partition]]) -> dict[str, StoredRow]:
        groups: dict[Partition, list[str]] = {}
        for rid, part in located:
            groups.setdefault(part, []).append(rid)
        found = self._map(lambda item: self._get(item[0], ids=item[1]), list(groups.items()))
        return {row.id: row for rows in found for row in rows}

    def _deep(self, target: Target, embedding: np.ndarray, k: int, accept: Callable[[dict[str, Any]], bool],
              fallback: Where) -> list[tuple[StoredRow, float]]:
        """One partition's k nearest accepted rows, when its nearest ones were refused too often:
        wider unfiltered queries, and at last the query filtered with ``fallback``."""
        n = (k + _SLACK) * _WIDEN
        while n <= _MAX_UNFILTERED:
            hits = self._query(target.partition, embedding, n, target.where)
            kept = [h for h in hits if accept(h[0].metadata)]
            if len(kept) >= k or len(hits) < n:
                return kept[:k]
            n *= _WIDEN
        hits = self._query(target.partition, embedding, k, all_of([target.where or {}, fallback]))
        return [h for h in hits if accept(h[0].metadata)]

    def text_query(self, text: str, k: int, where: Where | None) -> list[tuple[str, float]]:
        """Not available: see :attr:`has_text_index`."""
        raise NotImplementedError("the partitioned Chroma store has no lexical index; check has_text_index")

    def text_voices(self, text: str, where: Where | None, holding: Collection[str] = (),
                    only_holding: bool = False) -> list[tuple[str, float, Any, Any, bool]]:
        """Not available: see :attr:`has_text_index`."""
        raise NotImplementedError("the partitioned Chroma store has no lexical index; check has_text_index")

    def about(self, subject: str, limit: int) -> list[StoredRow]:
        """Rows about ``subject``: a filtered read of every partition (side by side)."""
        return self.fetch(where=subject_filter(subject), limit=limit)

    def newest_about(self, subject: str, kinds: Collection[str], per_writer: int) -> list[StoredRow]:
        """See :meth:`Backend.newest_about`: every row about the subject in every partition is
        read (side by side), and each writer's newest kept; a read bounded in partition order
        let a flood in a partition that sorts first hide every other."""
        return newest_per_writer(self.fetch(where=subject_filter(subject)), per_writer, kinds)

    def count(self, *, where: Where | None = None, partitions: Sequence[Partition] | None = None) -> int:
        """Rows stored that pass ``where`` (in ``partitions``, or in all); ids only."""
        with self._gate.shared():
            self._refresh()
            parts = [p for p in self._parts if partitions is None or p in partitions]

            def one(part: Partition) -> int:
                col = self._handle(self._parts[part])
                if not where:
                    return self._call(col.count)
                return len(self._call(lambda: col.get(where=where, include=[]))["ids"])

            return sum(self._map(one, parts))

    # -- erasure ------------------------------------------------------------------------------------

    def purge(self, ids: Sequence[str], *, mode: str = "auto") -> compaction.PurgeReport:
        """Erase rows physically from every partition that holds them (see
        :meth:`memwarden.memory.backends.ChromaBackend.purge`). All of them are deleted first, so
        none stays visible whatever happens next; a marker lists the partitions whose files
        still need the physical part, and the next purge or open finishes an interrupted one."""
        with self._gate.exclusive():
            self._refresh()
            todo: dict[str, list[str]] = {}
            pending = marker.read(self._root, _MARKER) if self._root is not None else None
            for name, old in ((pending or {}).get("partitions") or {}).items():
                todo.setdefault(name, []).extend(old)
            for part, group in self._locate(list(ids)).items():
                todo.setdefault(self._parts[part], []).extend(group)
            todo = {name: sorted(set(group)) for name, group in todo.items() if name in self._parts.values()}
            report = compaction.PurgeReport(requested=len(set(ids)))
            if not todo:
                report.mechanism = "none"
                if self._root is not None and pending is not None:
                    compaction.scrub_directory(self._root)  # dropped partitions may be left unscrubbed
                    marker.clear(self._root, _MARKER)
                return report
            marker.write(self._root, {"partitions": todo}, _MARKER)
            for name, group in todo.items():
                col = self._handle(name)
                self._call(lambda: col.delete(ids=group))
            self._forget_ids(i for group in todo.values() for i in group)
            mechanisms = []
            for name, group in sorted(todo.items()):
                col = self._handle(name)
                try:
                    client, _, done = compaction.purge_collection(self._client, col, group, mode=mode)
                except compaction.PurgeError as exc:
                    if exc.client is not None:
                        self._swap_client(exc.client)
                    raise
                self._swap_client(client)
                report.erased += done.erased
                report.kept += done.kept
                report.queue_rows_removed += done.queue_rows_removed
                report.hnsw_elements_removed += done.hnsw_elements_removed
                report.hnsw_links_repaired += done.hnsw_links_repaired
                report.segments_removed += done.segments_removed
                report.fallback_reason = report.fallback_reason or done.fallback_reason
                report.scrubbed = done.scrubbed if not mechanisms else report.scrubbed and done.scrubbed
                report.free_pages_after = done.free_pages_after
                for phase, seconds in done.seconds.items():
                    report.seconds[phase] = round(report.seconds.get(phase, 0.0) + seconds, 4)
                mechanisms.append(done.mechanism)
            report.mechanism = "+".join(dict.fromkeys(mechanisms))
            if self._root is not None:
                self._drop_emptied(todo)
                # Dropping an emptied partition deletes its log entries, which may have been
                # the newest ones: see compaction.keep_log_ahead.
                compaction.keep_log_ahead(self._root)
                marker.clear(self._root, _MARKER)
            return report

    def _drop_emptied(self, names: Iterable[str]) -> None:
        """Drop the partitions a purge left empty, scrub what Chroma leaves of them, and trim
        the vector files of the others.

        An empty collection is worse than none: Chroma re-creates the vector files of an index
        it has not persisted each time it loads one, from uninitialised memory, which in this
        process may have held the erased rows (see compaction.scrub.trim_segment_tails)."""
        emptied = [n for n in names if n in self._parts.values() and self._call(self._handle(n).count) == 0]
        if versions.files_editable() is not None:
            # Dropping one needs the log edit that keeps Chroma's numbering ahead, which runs
            # only on tested chromadb releases: an untested one keeps its empty partitions.
            emptied = []
        for name in emptied:
            self._call(lambda: scrub.drop_collection(self._client, self._root, name))
            with self._lock:
                self._parts = {p: n for p, n in self._parts.items() if n != name}
                self._handles.pop(name, None)
                self._known = -1
        compaction.scrub_directory(self._root)
        # The purge re-opened the client, so every other partition whose index Chroma never
        # persisted is re-created from uninitialised memory at its next load: load each now
        # and cut what lies past its elements, as the purge did for its own collections.
        self._trim_tails()

    def _swap_client(self, client: Any) -> None:
        """A purge may re-open the client: every collection handle then belongs to the old one."""
        if client is not self._client:
            with self._lock:
                self._client = client
                self._handles.clear()

    def close(self) -> None:
        """Release the client and the query threads (after trimming the vector files)."""
        if self._client is not None:
            self._trim_tails()
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None
        with self._lock:
            client, self._client = self._client, None
            self._handles.clear()
        # Closing the client releases its shared system, so a later open in the same process
        # owns the store alone (which lets an erasure rewrite the files in place).
        if client is not None and hasattr(client, "close"):
            client.close()
