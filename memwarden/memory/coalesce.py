"""Write coalescing: the upserts of one ``Memory.batch`` reach the store as one call.

A Chroma server applies each write request to its indexes before it answers: 15-60 ms per
request here, growing with the collection, however few rows it carries, while 100 rows in one
request cost 2-3 ms each. So inside a batch, upserts are held and sent together when the batch
ends, or earlier, as soon as anything could observe them:

- a fetch by ids alone is answered for held ids from the held rows (the id, text and metadata
  the store would return) and for the other ids from the store;
- every other call (a filtered fetch, a query, a metadata update, delete, purge, count) sends
  the held rows first, so it sees every earlier write, in order.

Every operation in a batch therefore sees the state it would see had the writes before it been
stored one by one; other processes see a batch's writes when it ends.

Texts are embedded here, when they are sent, all of a batch's at once (several times faster
than one by one): so no text reaches the embedder, which may be a hosted API, before the
pipeline has decided and validated its write. Each held write's audit
entry is committed before it is sent (audit before apply; ``before_send`` below). If sending fails, every write that was not
stored gets its compensating audit entry (through the callback registered with
:meth:`CoalescingBackend.on_failure`) before the error propagates. Outside a batch, upserts go
straight through. ``before_send`` runs before held rows are sent: the pipeline commits the
audit entries of the batch there (:mod:`memwarden.memory.auditbatch`); if it fails, the held
rows are dropped unsent.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np

from memwarden.memory.backends import Backend, DelegatingBackend, StoredRow, Where, upsert_after
from memwarden.memory.codec import stored_metadata
from memwarden.memory.facets import embed_rows

# Rows per upsert when a batch is sent (well under Chroma's maximum batch size).
_CHUNK = 500

FailureCallback = Callable[[BaseException], None]


Embed = Callable[[list[str]], np.ndarray]


@dataclass(frozen=True, slots=True, eq=False)
class _Held:
    embedding: np.ndarray | None
    document: str
    metadata: dict[str, Any]
    on_failure: FailureCallback | None
    # What is embedded: the document, or the index texts given for it (the first is the row's
    # vector, the others its facets: memwarden.memory.facets)
    texts: tuple[str, ...]


class CoalescingBackend(DelegatingBackend):
    """A Backend that holds upserts while a batch runs (see the module docstring)."""

    def __init__(self, inner: Backend, embed: Embed, before_send: Callable[[], None] | None = None) -> None:
        super().__init__(inner)
        self._embed = embed
        self._before_send = before_send
        self._lock = threading.Lock()          # guards _held and _depth (short sections only)
        self._flush_lock = threading.Lock()    # one flush at a time, so rows arrive in order
        self._held: dict[str, _Held] = {}
        self._depth = 0
        self._local = threading.local()

    @contextmanager
    def holding(self) -> Iterator[None]:
        """Hold upserts until the block ends, then send everything held, if the block held
        anything: a batch of reads neither waits for nor pays for another thread's held rows
        (embedding and storing them), which that thread's batch sends when it ends."""
        outer = getattr(self._local, "held", None)
        self._local.held = False
        with self._lock:
            self._depth += 1
        try:
            yield
        finally:
            with self._lock:
                self._depth -= 1
            held = self._local.held
            self._local.held = held or outer if outer is not None else None
            if held:
                self.flush()

    @property
    def is_holding(self) -> bool:
        """True while a batch holds upserts."""
        return self._depth > 0

    @contextmanager
    def on_failure(self, callback: FailureCallback) -> Iterator[None]:
        """Upserts made by this thread inside the block call ``callback`` if they are held and
        then cannot be stored."""
        previous = getattr(self._local, "callback", None)
        self._local.callback = callback
        try:
            yield
        finally:
            self._local.callback = previous

    def flush(self) -> None:
        """Send every held row; on failure, call the callbacks of the rows not stored, then raise."""
        if not self._held:  # the common case, on every read: nothing to send, no lock to take
            return
        with self._flush_lock:
            with self._lock:
                pending = list(self._held.items())
            if not pending:
                return
            gated = False

            def gate() -> None:
                nonlocal gated
                if self._before_send is not None:
                    self._before_send()
                gated = True

            for start in range(0, len(pending), _CHUNK):
                part = pending[start:start + _CHUNK]
                try:
                    # The first part's store call waits for the gate; what the store's wrappers
                    # write first (the lexical index) may run beside it (see upsert_after).
                    upsert_after(self._inner, gate if start == 0 else lambda: None, [i for i, _ in part],
                                 lambda: self._vectors([h for _, h in part]),
                                 [h.document for _, h in part], [h.metadata for _, h in part])
                except BaseException as exc:
                    self._drop(pending[start:])
                    if not gated:
                        raise  # not audited, so never stored: nothing to compensate
                    for callback in dict.fromkeys(h.on_failure for _, h in pending[start:] if h.on_failure):
                        callback(exc)
                    raise
                # Rows leave the hold only once stored, so a fetch by id never misses them; a
                # row upserted again meanwhile stays held with its newer content.
                self._drop(part)

    def _vectors(self, held: list[_Held]) -> np.ndarray:
        """The rows' vectors, embedding those that have none; a row embedded by several texts
        gets its facets written into its metadata dict here, before the store call reads it
        (after the gate, as its vector)."""
        missing = [h for h in held if h.embedding is None]
        fresh = iter(embed_rows([h.texts for h in missing], [h.metadata for h in missing], self._embed)
                     if missing else ())
        return np.stack([h.embedding if h.embedding is not None else next(fresh) for h in held])

    def _drop(self, sent: list[tuple[str, _Held]]) -> None:
        with self._lock:
            for rid, held in sent:
                if self._held.get(rid) is held:
                    del self._held[rid]

    # -- the Backend protocol ---------------------------------------------------------------

    def upsert(self, ids: Sequence[str], embeddings: np.ndarray | None, documents: Sequence[str],
               metadatas: Sequence[dict[str, Any]], *, texts: Sequence[Sequence[str]] | None = None) -> None:
        """Insert or replace rows: held while a batch runs, else stored now. ``embeddings``
        None: the documents (or ``texts``: each document's texts, embedded apart, the first as
        its vector and the others as its facets) are embedded when they are sent."""
        vectors = [None] * len(ids) if embeddings is None else [np.asarray(v, dtype=np.float32) for v in embeddings]
        texts = [(d,) for d in documents] if texts is None else [tuple(t) for t in texts]
        with self._lock:
            if self._depth:
                self._local.held = True
                callback = getattr(self._local, "callback", None)
                for rid, vector, document, metadata, text in zip(ids, vectors, documents, metadatas, texts):
                    self._held.pop(rid, None)  # a newer write of the same id goes to the end
                    self._held[rid] = _Held(vector, document, dict(metadata), callback, text)
                return
        held = [_Held(v, d, dict(m), None, t) for v, d, m, t in zip(vectors, documents, metadatas, texts)]
        embedded = self._vectors(held)
        self._inner.upsert(ids, embedded, documents, [h.metadata for h in held])

    def _before_read(self) -> None:
        self.flush()

    def fetch(self, ids: Sequence[str] | None = None, where: Where | None = None, limit: int | None = None,
              offset: int | None = None, *, partitions: Any = None) -> list[StoredRow]:
        """Rows by id (held ones answered from the hold) or by filter (after a flush)."""
        if ids is not None and where is None and limit is None and offset is None:
            with self._lock:
                held = {rid: self._held[rid] for rid in ids if rid in self._held}
            rest = [rid for rid in ids if rid not in held]
            rows = self._inner.fetch(ids=rest, partitions=partitions) if rest else []
            return rows + [StoredRow(rid, h.document, stored_metadata(h.metadata)) for rid, h in held.items()]
        return super().fetch(ids, where, limit, offset, partitions=partitions)

    def update_metadata(self, ids: Sequence[str], metadatas: Sequence[dict[str, Any]]) -> None:
        """Replace metadata, after every earlier write is stored."""
        self.flush()
        self._inner.update_metadata(ids, metadatas)

    def delete(self, ids: Sequence[str]) -> None:
        """Remove rows, after every earlier write is stored."""
        self.flush()
        self._inner.delete(ids)

    def purge(self, ids: Sequence[str], **options: Any) -> Any:
        """Remove rows physically, after every earlier write is stored."""
        self.flush()
        return self._inner.purge(ids, **options)
