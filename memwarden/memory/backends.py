"""Storage backends behind the governed pipeline: Chroma embedded or Chroma server.

Nothing outside :mod:`memwarden.memory.memory` holds a backend, so there is no way to reach
stored records except through the pipeline. A backend stores rows (id, text, flat metadata,
embedding) and knows nothing about policy; it knows which namespace partition a row is in,
so that the pipeline can push a read scope down as a choice of partitions plus filters.
memwarden's backend is :class:`memwarden.memory.partitioned.PartitionedBackend`, one Chroma
collection per partition; :class:`ChromaBackend` is one collection, the unit it is made of.
"""

from __future__ import annotations

import os

from collections.abc import Callable, Collection, Hashable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from memwarden.core.fields import Meta

if TYPE_CHECKING:
    from memwarden.core.namespace import Namespace
    from memwarden.policies.partitions import Partition, Target

COLLECTION = "memwarden-records"

Where = dict[str, Any]
#: A test on a stored row's metadata (visibility, kinds: what nearly every row passes).
MetaTest = Callable[[dict[str, Any]], bool]
#: A test on a stored row's metadata and document, for what no metadata filter can see
#: (a store item's value, inside its JSON document).
RowTest = Callable[[dict[str, Any], str], bool]
#: What makes rows alike for a read that needs one row of each kind (a namespace listing);
#: None: the row is like no other.
RowKey = Callable[[dict[str, Any]], Hashable | None]


@dataclass(frozen=True, slots=True)
class StoredRow:
    """One row as a backend returns it."""

    id: str
    document: str
    metadata: dict[str, Any]


class Backend(Protocol):
    """The few calls the pipeline needs from a vector store."""

    #: True when :meth:`text_query` works (a lexical index is kept beside the vectors).
    has_text_index: bool

    def upsert(self, ids: Sequence[str], embeddings: np.ndarray, documents: Sequence[str],
               metadatas: Sequence[dict[str, Any]]) -> None:
        """Insert or replace rows."""

    def update_metadata(self, ids: Sequence[str], metadatas: Sequence[dict[str, Any]]) -> None:
        """Replace the metadata of existing rows (text and vector unchanged)."""

    def fetch(self, ids: Sequence[str] | None = None, where: Where | None = None,
              limit: int | None = None, offset: int | None = None, *,
              partitions: Sequence[Partition] | None = None) -> list[StoredRow]:
        """Rows by id and/or metadata filter (only in ``partitions`` when given)."""

    def stored_vector(self, rid: str) -> tuple[np.ndarray, dict[str, Any]] | None:
        """Row ``rid``'s own vector and its complete metadata (None when it is not stored)."""

    def text_query(self, text: str, k: int, where: Where | None) -> list[tuple[str, float]]:
        """The ids of the k rows that pass ``where`` best matching ``text`` (BM25), with scores."""

    def text_voices(self, text: str, where: Where | None, holding: Collection[str] = (),
                    only_holding: bool = False) -> list[tuple[str, float, Any, Any, bool]]:
        """Every row that passes ``where`` and matches ``text``, best BM25 first: its id, score,
        writer, source, and whether its text holds one of the procedure categories ``holding``
        (:meth:`~memwarden.guards.values.Values.held`): the windows of the contradiction check
        are chosen from all of them, in one query. ``only_holding``: only the rows that do."""

    def about(self, subject: str, limit: int) -> list[StoredRow]:
        """Up to ``limit`` rows whose subjects include ``subject``, in storage order."""

    def newest_about(self, subject: str, kinds: Collection[str], per_writer: int) -> list[StoredRow]:
        """The active rows about ``subject`` of ``kinds``: each writer's (principal and source)
        ``per_writer`` newest, whatever else is stored about it (for the subject index of the
        write path: a cache, so a row another process is writing at that moment may be missing)."""

    def delete(self, ids: Sequence[str]) -> None:
        """Remove rows."""

    def purge(self, ids: Sequence[str]) -> Any:
        """Remove rows and every physical copy of them (log, indexes, free pages); returns a
        report of what was done (see :class:`memwarden.memory.compaction.PurgeReport`)."""

    def count(self, *, where: Where | None = None, partitions: Sequence[Partition] | None = None) -> int:
        """Number of rows stored that pass ``where`` (only in ``partitions`` when given)."""

    def partitions(self, *, fresh: bool = False) -> list[Partition]:
        """The namespace partitions that hold rows, in order (``fresh``: no cached listing)."""

    def partition_of(self, namespace: Namespace) -> Partition:
        """The partition rows in ``namespace`` are stored in."""

    def query_targets(self, embedding: np.ndarray, k: int, targets: Sequence[Target], *,
                      accept: Callable[[dict[str, Any]], bool],
                      fallback: Where) -> list[tuple[StoredRow, float]]:
        """The k nearest rows over planned partitions whose metadata ``accept`` takes."""

    def fetch_targets(self, targets: Sequence[Target], where: Where | None, limit: int | None, offset: int = 0, *,
                      accept: MetaTest | None = None, matching: RowTest | None = None,
                      distinct: RowKey | None = None) -> list[StoredRow]:
        """Rows of planned partitions, partition by partition in storage order, that pass
        their filter and ``where`` (and ``accept`` on their metadata, ``matching`` on metadata
        and document); with ``distinct``, only the first such row of each key. ``offset`` and
        ``limit`` count the rows returned."""

    def fetch_ids(self, ids: Sequence[str], steps: Sequence[tuple[Partition, Where | None]]) -> list[StoredRow]:
        """Rows by id that pass the filter of one of ``steps`` (partition, filter), asking
        every one of those partitions."""

    def located(self, rid: str) -> Partition | None:
        """The partition the backend last saw ``rid`` in, if it knows (a hint)."""

    def bind_embedder(self, name: str | None, dim: int | None, *, record: bool = True) -> None:
        """Refuse (InvalidRequest) unless the stored vectors were made by embedder ``name`` of
        ``dim`` dimensions; record it in a store that has no record yet when ``record``.
        ``name`` None: no model is loaded (nothing will be embedded): check and record nothing."""

    def close(self) -> None:
        """Release resources."""


def select_rows(rows: Iterable[StoredRow], limit: int | None, offset: int = 0, *, accept: MetaTest | None = None,
                matching: RowTest | None = None, distinct: RowKey | None = None) -> list[StoredRow]:
    """The rows of ``rows`` (in their order) that ``accept`` and ``matching`` take, the first
    of each ``distinct`` key only, after ``offset`` of them, at most ``limit``. ``rows`` is
    consumed no further than needed, so a lazy one reads no page it does not use."""
    out: list[StoredRow] = []
    seen: set[Hashable] = set()
    for row in rows:
        if limit is not None and len(out) >= limit:
            break
        key = distinct(row.metadata) if distinct is not None else None
        if key is not None and key in seen:
            continue  # before the tests: a namespace already listed costs no more
        if accept is not None and not accept(row.metadata):
            continue
        if matching is not None and not matching(row.metadata, row.document):
            continue
        if key is not None:
            seen.add(key)
        if offset:
            offset -= 1
        else:
            out.append(row)
    return out


def subject_filter(subject: str) -> Where:
    """The filter of the rows about ``subject``."""
    return {Meta.SUBJECTS.value: {"$contains": subject}}


def newest_per_writer(rows: Iterable[StoredRow], per_writer: int, kinds: Collection[str] | None = None,
                      subject: str | None = None) -> list[StoredRow]:
    """Each writer's (principal and source) ``per_writer`` newest active rows of ``rows``
    (only of ``kinds``, only about ``subject``, when given). Rows of other kinds or states are
    left out before any is counted: a flood of them took the places of the rows a bounded
    read was for. Tested here, not in Chroma's filter: that costs by the rows each clause
    matches, and ``status == active`` matches nearly every row of a partition."""
    by_writer: dict[tuple[Any, Any], list[StoredRow]] = {}
    for row in rows:
        meta = row.metadata
        if (meta.get(Meta.STATUS) != "active" or (kinds is not None and meta.get(Meta.KIND) not in kinds)
                or (subject is not None and subject not in (meta.get(Meta.SUBJECTS) or ()))):
            continue
        by_writer.setdefault((meta.get(Meta.WRITER), meta.get(Meta.SOURCE)), []).append(row)
    return [row for group in by_writer.values()
            for row in sorted(group, key=lambda r: float(r.metadata.get(Meta.CREATED_AT) or 0.0),
                              reverse=True)[:per_writer]]


def _rows(ids: list[str], documents: list[str] | None, metadatas: list[dict] | None) -> list[StoredRow]:
    documents = documents or [""] * len(ids)
    metadatas = metadatas or [{}] * len(ids)
    return [StoredRow(i, d or "", dict(m or {})) for i, d, m in zip(ids, documents, metadatas)]


class ChromaBackend:
    """One Chroma collection (embedded PersistentClient or HttpClient) with cosine distance:
    the unit physical erasure works on (see :meth:`purge`).

    It has no lexical index of its own (see :mod:`memwarden.memory.lexical` for why, and for
    the wrapper that adds one to an embedded store).
    """

    has_text_index = False

    def __init__(self, client: Any, collection: str = COLLECTION) -> None:
        self._client = client
        # embedding_function=None: memwarden always passes vectors itself, so Chroma's default
        # embedder (which downloads a model at first use) is never constructed.
        self._col = client.get_or_create_collection(
            collection, embedding_function=None, metadata={"hnsw:space": "cosine"}
        )

    @classmethod
    def embedded(cls, path: str, collection: str = COLLECTION) -> ChromaBackend:
        """Open (or create) a local persistent Chroma database at ``path``, telemetry off."""
        import chromadb
        from chromadb.config import Settings

        client = chromadb.PersistentClient(path=os.path.abspath(path), settings=Settings(anonymized_telemetry=False))
        return cls(client, collection)

    def upsert(self, ids, embeddings, documents, metadatas) -> None:  # see Backend
        self._col.upsert(ids=list(ids), embeddings=np.asarray(embeddings, dtype=np.float32),
                         documents=list(documents), metadatas=list(metadatas))

    def update_metadata(self, ids, metadatas) -> None:
        self._col.update(ids=list(ids), metadatas=list(metadatas))

    def stored_vector(self, rid: str) -> tuple[np.ndarray, dict[str, Any]] | None:  # see Backend
        got = self._col.get(ids=[rid], include=["embeddings", "metadatas"])
        if not got["ids"]:
            return None
        return np.asarray(got["embeddings"][0], dtype=np.float32), dict(got["metadatas"][0] or {})

    def fetch(self, ids=None, where=None, limit=None, offset=None, *, partitions=None) -> list[StoredRow]:
        """See :meth:`Backend.fetch` (one collection holds every partition)."""
        got = self._col.get(ids=list(ids) if ids is not None else None, where=where or None,
                            limit=limit, offset=offset, include=["documents", "metadatas"])
        return _rows(got["ids"], got["documents"], got["metadatas"])

    def query(self, embedding, k, where) -> list[tuple[StoredRow, float]]:
        """The k nearest rows of this collection that pass ``where``, with cosine distances
        (the partitioned store queries its collections itself: see query_targets)."""
        got = self._col.query(query_embeddings=[np.asarray(embedding, dtype=np.float32)], n_results=k,
                              where=where or None, include=["documents", "metadatas", "distances"])
        rows = _rows(got["ids"][0], got["documents"][0], got["metadatas"][0])
        return list(zip(rows, got["distances"][0]))

    def text_query(self, text, k, where) -> list[tuple[str, float]]:
        raise NotImplementedError("a bare Chroma collection has no lexical index; check has_text_index")

    def text_voices(self, text, where, holding=(), only_holding=False) -> list[tuple[str, float, Any, Any, bool]]:
        raise NotImplementedError("a bare Chroma collection has no lexical index; check has_text_index")

    def about(self, subject: str, limit: int) -> list[StoredRow]:
        """See :meth:`Backend.about`."""
        return self.fetch(where=subject_filter(subject), limit=limit)

    def newest_about(self, subject: str, kinds: Collection[str], per_writer: int) -> list[StoredRow]:
        """See :meth:`Backend.newest_about` (every row about the subject is read, and the newest kept)."""
        return newest_per_writer(self.fetch(where=subject_filter(subject)), per_writer, kinds)

    def delete(self, ids) -> None:
        if ids:
            self._col.delete(ids=list(ids))

    def purge(self, ids, *, mode: str = "auto") -> Any:
        """Erase rows physically: after it returns, no copy of their text, metadata or vector
        is left anywhere in an embedded store's data directory (write-ahead log, FTS index,
        HNSW files, SQLite free pages, WAL). Other rows are unchanged. Returns a PurgeReport.

        ``mode``: "auto" edits the HNSW files in place when that is proven safe and otherwise
        rebuilds the collection; "surgery" or "rebuild" force one mechanism (see
        docs/erasure.md). The client and collection may be replaced by fresh ones. Against a
        server the rows are only deleted (mechanism "logical"): its files are out of reach.
        Raises PurgeError when the physical part fails; the rows are then deleted and the next
        purge (of any ids, even none) finishes the job.
        """
        from memwarden.memory.compaction import PurgeError, purge_collection

        try:
            self._client, self._col, report = purge_collection(self._client, self._col, list(ids), mode=mode)
        except PurgeError as exc:
            if exc.client is not None:  # the purge had closed the client: use the fresh one
                self._client, self._col = exc.client, exc.collection
            raise
        return report

    def count(self, *, where=None, partitions=None) -> int:
        """See :meth:`Backend.count` (one collection holds every partition)."""
        if not where:
            return self._col.count()
        return len(self._col.get(where=where, include=[])["ids"])

    def close(self) -> None:
        # Closing the client releases its shared system, so a later open in the same process
        # owns the store alone (which lets an erasure rewrite the files in place).
        client, self._col, self._client = self._client, None, None
        if client is not None and hasattr(client, "close"):
            client.close()


def upsert_after(backend: Backend, gate: Callable[[], None], ids: Sequence[str],
                 embeddings: Callable[[], np.ndarray], documents: Sequence[str],
                 metadatas: Sequence[dict[str, Any]]) -> None:
    """Upsert rows into ``backend`` once ``gate()`` has returned; if it raises, nothing of
    them reaches the store. ``embeddings`` is called after the gate, for the rows' vectors.

    A store wrapper that writes something of its own before the store call may do it while
    the gate runs (``upsert_after`` method: the lexical index's synced transaction beside the
    audit commit, two fsyncs of two files at once); any other store runs the gate first."""
    beside = getattr(backend, "upsert_after", None)
    if beside is not None:
        beside(gate, ids, embeddings, documents, metadatas)
        return
    gate()
    backend.upsert(ids, embeddings(), documents, metadatas)


class DelegatingBackend:
    """A Backend that passes every call to ``inner``; the wrappers around the store
    (:class:`~memwarden.memory.lexical.IndexedBackend`,
    :class:`~memwarden.memory.coalesce.CoalescingBackend`) override the calls they change.

    Every read first calls :meth:`_before_read`, so a wrapper that holds writes back can
    make them visible before anything could observe the store.
    """

    def __init__(self, inner: Backend) -> None:
        self._inner = inner

    def _before_read(self) -> None:
        """Run before every read (nothing by default)."""

    @property
    def maintenance(self) -> list[str]:
        """What opening the store did to it, one sentence each (the wrapped store's first)."""
        return list(getattr(self._inner, "maintenance", ())) + list(getattr(self, "_maintenance", ()))

    @property
    def has_text_index(self) -> bool:
        """Whether the store beneath keeps a lexical index (see Backend.has_text_index)."""
        return self._inner.has_text_index

    def upsert(self, ids: Sequence[str], embeddings: np.ndarray, documents: Sequence[str],
               metadatas: Sequence[dict[str, Any]]) -> None:
        """See :meth:`Backend.upsert`."""
        self._inner.upsert(ids, embeddings, documents, metadatas)

    def update_metadata(self, ids: Sequence[str], metadatas: Sequence[dict[str, Any]]) -> None:
        """See :meth:`Backend.update_metadata`."""
        self._inner.update_metadata(ids, metadatas)

    def fetch(self, ids: Sequence[str] | None = None, where: Where | None = None, limit: int | None = None,
              offset: int | None = None, *, partitions: Sequence[Partition] | None = None) -> list[StoredRow]:
        """See :meth:`Backend.fetch`."""
        self._before_read()
        return self._inner.fetch(ids, where, limit, offset, partitions=partitions)

    def stored_vector(self, rid: str) -> tuple[np.ndarray, dict[str, Any]] | None:
        """See :meth:`Backend.stored_vector`."""
        self._before_read()
        return self._inner.stored_vector(rid)

    def text_query(self, text: str, k: int, where: Where | None) -> list[tuple[str, float]]:
        """See :meth:`Backend.text_query`."""
        self._before_read()
        return self._inner.text_query(text, k, where)

    def text_voices(self, text: str, where: Where | None, holding: Collection[str] = (),
                    only_holding: bool = False) -> list[tuple[str, float, Any, Any, bool]]:
        """See :meth:`Backend.text_voices`."""
        self._before_read()
        return self._inner.text_voices(text, where, holding, only_holding)

    def about(self, subject: str, limit: int) -> list[StoredRow]:
        """See :meth:`Backend.about`."""
        self._before_read()
        return self._inner.about(subject, limit)

    def newest_about(self, subject: str, kinds: Collection[str], per_writer: int) -> list[StoredRow]:
        """See :meth:`Backend.newest_about`."""
        self._before_read()
        return self._inner.newest_about(subject, kinds, per_writer)

    def query_targets(self, embedding: np.ndarray, k: int, targets: Sequence[Target], *,
                      accept: Callable[[dict[str, Any]], bool],
                      fallback: Where) -> list[tuple[StoredRow, float]]:
        """See :meth:`Backend.query_targets`."""
        self._before_read()
        return self._inner.query_targets(embedding, k, targets, accept=accept, fallback=fallback)

    def fetch_targets(self, targets: Sequence[Target], where: Where | None, limit: int | None, offset: int = 0, *,
                      accept: MetaTest | None = None, matching: RowTest | None = None,
                      distinct: RowKey | None = None) -> list[StoredRow]:
        """See :meth:`Backend.fetch_targets`."""
        self._before_read()
        return self._inner.fetch_targets(targets, where, limit, offset, accept=accept, matching=matching,
                                         distinct=distinct)

    def count(self, *, where: Where | None = None, partitions: Sequence[Partition] | None = None) -> int:
        """See :meth:`Backend.count`."""
        self._before_read()
        return self._inner.count(where=where, partitions=partitions)

    def partitions(self, *, fresh: bool = False) -> list[Partition]:
        """See :meth:`Backend.partitions` (a held write may create a partition: a read)."""
        self._before_read()
        return self._inner.partitions(fresh=fresh)

    def fetch_ids(self, ids: Sequence[str], steps: Sequence[tuple[Partition, Where | None]]) -> list[StoredRow]:
        """See :meth:`Backend.fetch_ids`."""
        self._before_read()
        return self._inner.fetch_ids(ids, steps)

    def located(self, rid: str) -> Partition | None:
        """See :meth:`Backend.located` (pure: no read)."""
        return self._inner.located(rid)

    def partition_of(self, namespace: Namespace) -> Partition:
        """See :meth:`Backend.partition_of` (pure: no read)."""
        return self._inner.partition_of(namespace)

    def bind_embedder(self, name: str | None, dim: int | None, *, record: bool = True) -> None:
        """See :meth:`Backend.bind_embedder`."""
        self._inner.bind_embedder(name, dim, record=record)

    def delete(self, ids: Sequence[str]) -> None:
        """See :meth:`Backend.delete`."""
        self._inner.delete(ids)

    def purge(self, ids: Sequence[str], **options: Any) -> Any:
        """See :meth:`Backend.purge`."""
        return self._inner.purge(ids, **options)

    def close(self) -> None:
        """See :meth:`Backend.close`."""
        self._inner.close()
