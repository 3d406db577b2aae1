"""Storage backends behind the governed pipeline: Chroma embedded or Chroma server.

Nothing outside :mod:`memwarden.memory.memory` holds a backend, so there is no way to reach
stored records except through the pipeline. A backend stores rows (id, text, flat metadata,
embedding) and knows nothing about policy; it knows which namespace partition a row is in,
so that the pipeline can push a read scope down as a choice of partitions plus filters.
memwarden's backend is :class:`memwarden.memory.partitioned.PartitionedBackend`, one Chroma
collection per partition; :class:`ChromaBackend` is one collection, the unit it is made of.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

if TYPE_CHECKING:
    from collections.abc import Callable

    from memwarden.policies.namespace import Namespace
    from memwarden.policies.partitions import Partition, Target

COLLECTION = "memwarden-records"

Where = dict[str, Any]


@dataclass(frozen=True, slots=True)
class StoredRow:
    """One row as a backend returns it."""

    id: str
    document: str
    metadata: dict[str, Any]


class Backend(Protocol):
    """The few calls the pipeline needs from a vector store."""

    def upsert(self, ids: Sequence[str], embeddings: np.ndarray, documents: Sequence[str],
               metadatas: Sequence[dict[str, Any]]) -> None:
        """Insert or replace rows."""

    def update_metadata(self, ids: Sequence[str], metadatas: Sequence[dict[str, Any]]) -> None:
        """Replace the metadata of existing rows (text and vector unchanged)."""

    def fetch(self, ids: Sequence[str] | None = None, where: Where | None = None,
              limit: int | None = None, offset: int | None = None, *,
              partitions: Sequence[Partition] | None = None) -> list[StoredRow]:
        """Rows by id and/or metadata filter (only in ``partitions`` when given)."""

    def query(self, embedding: np.ndarray, k: int, where: Where | None) -> list[tuple[StoredRow, float]]:
        """The k nearest rows that pass ``where``, with cosine distances."""

    def delete(self, ids: Sequence[str]) -> None:
        """Remove rows."""

    def purge(self, ids: Sequence[str]) -> Any:
        """Remove rows and every physical copy of them (log, indexes, free pages); returns a
        report of what was done (see :class:`memwarden.memory.compaction.PurgeReport`)."""

    def count(self, *, where: Where | None = None, partitions: Sequence[Partition] | None = None) -> int:
        """Number of rows stored that pass ``where`` (only in ``partitions`` when given)."""

    def partitions(self) -> list[Partition]:
        """The namespace partitions that hold rows, in order."""

    def partition_of(self, namespace: Namespace) -> Partition:
        """The partition rows in ``namespace`` are stored in."""

    def query_targets(self, embedding: np.ndarray, k: int, targets: Sequence[Target], *,
                      accept: Callable[[dict[str, Any]], bool],
                      fallback: Where | None) -> list[tuple[StoredRow, float]]:
        """The k nearest rows over planned partitions whose metadata ``accept`` takes."""

    def fetch_targets(self, targets: Sequence[Target], where: Where | None, limit: int | None, offset: int = 0, *,
                      accept: Callable[[dict[str, Any]], bool] | None = None) -> list[StoredRow]:
        """Rows of planned partitions that pass their filter and ``where`` (and ``accept``)."""

    def fetch_cached(self, key: str, value: str, max_age: float) -> list[StoredRow]:
        """Rows whose metadata ``key`` equals ``value``, from a copy at most ``max_age`` seconds old."""

    def close(self) -> None:
        """Release resources."""


def _rows(ids: list[str], documents: list[str] | None, metadatas: list[dict] | None) -> list[StoredRow]:
    documents = documents or [""] * len(ids)
    metadatas = metadatas or [{}] * len(ids)
    return [StoredRow(i, d or "", dict(m or {})) for i, d, m in zip(ids, documents, metadatas)]


class ChromaBackend:
    """One Chroma collection (embedded PersistentClient or HttpClient) with cosine distance:
    the unit physical erasure works on (see :meth:`purge`)."""

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

        client = chromadb.PersistentClient(path=path, settings=Settings(anonymized_telemetry=False))
        return cls(client, collection)

    def upsert(self, ids, embeddings, documents, metadatas) -> None:  # noqa: D102 - see Backend
        self._col.upsert(ids=list(ids), embeddings=np.asarray(embeddings, dtype=np.float32),
                         documents=list(documents), metadatas=list(metadatas))

    def update_metadata(self, ids, metadatas) -> None:  # noqa: D102
        self._col.update(ids=list(ids), metadatas=list(metadatas))

    def fetch(self, ids=None, where=None, limit=None, offset=None) -> list[StoredRow]:  # noqa: D102
        got = self._col.get(ids=list(ids) if ids is not None else None, where=where or None,
                            limit=limit, offset=offset, include=["documents", "metadatas"])
        return _rows(got["ids"], got["documents"], got["metadatas"])

    def query(self, embedding, k, where) -> list[tuple[StoredRow, float]]:  # noqa: D102
        got = self._col.query(query_embeddings=[np.asarray(embedding, dtype=np.float32)], n_results=k,
                              where=where or None, include=["documents", "metadatas", "distances"])
        rows = _rows(got["ids"][0], got["documents"][0], got["metadatas"][0])
        return list(zip(rows, got["distances"][0]))

    def delete(self, ids) -> None:  # noqa: D102
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

    def count(self) -> int:  # noqa: D102
        return self._col.count()

    def close(self) -> None:  # noqa: D102
        # Closing the client releases its shared system, so a later open in the same process
        # owns the store alone (which lets an erasure rewrite the files in place).
        client, self._col, self._client = self._client, None, None
        if client is not None and hasattr(client, "close"):
            client.close()
