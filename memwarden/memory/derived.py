"""``DerivedIndexBackend``: the store with its derived in-RAM index (:mod:`memwarden.memory.vectorindex`).

It wraps the partitioned Chroma store, so every row change on its way to Chroma (the
pipeline's effects: Store, Restate, Touch, Purge, Erase, all applied through the backend)
passes here too: there is one place where rows change, and the index cannot diverge from it.
Each change is made in Chroma first and then in the index, under one lock that orders
changes; if Chroma fails, the rows it concerns are read back from Chroma (whatever it holds
now) and, should that fail too, the index is given up for the partition path.

Dense searches (``query_targets``) and listings (``fetch_targets``: filter-only searches,
namespace listings, sweeps) are answered from the index once it is loaded, so they
reach it only through the pipeline's StoreView, like every other read; the pipeline re-checks
every row it returns. The index loads in a background thread when the store opens, and until
it is ready searches take the partition path (one Chroma query per partition). A change made
while it loads drops the row from the index and marks it; when the load ends, with changes
held off, the marked rows are read again from Chroma. An erased row therefore never waits in
the index for the load to finish.

Embedded (``Memory.open``), one process changes the store (the directory is locked). Against
a Chroma server (``Memory.connect``) other processes write too: every change is then also
appended to the change log (:mod:`memwarden.memory.changelog`) after its Chroma call, and
before each search the rows other processes changed since the last search are read again
from Chroma. If the log cannot be read, that search takes the partition path.
"""

from __future__ import annotations

import logging
import sys
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import numpy as np

from memwarden.memory.backends import Backend, DelegatingBackend, MetaTest, RowKey, RowTest, StoredRow, Where
from memwarden.memory.changelog import ChangeLog
from memwarden.memory.codec import stored_metadata
from memwarden.memory.partitioned import row_partition
from memwarden.memory.settings import DEFAULT_SEARCH_INDEX
from memwarden.memory.vectorindex import TRAIN_ROWS, VectorIndex
from memwarden.policies.metafilter import compile_predicate
from memwarden.policies.partitions import Partition, Target

T = TypeVar("T")

_log = logging.getLogger("memwarden")
# Rows per Chroma read while loading: a read of rows with their vectors costs more per row in
# larger pages (measured at 10k rows: 250 a page 1.9 s, 1,000 a page 4.1 s).
_LOAD_PAGE = 250


class DerivedIndexBackend(DelegatingBackend):
    """A partitioned store whose dense searches scan a derived RAM index (see the module docstring).

    ``inner`` must be a :class:`~memwarden.memory.partitioned.PartitionedBackend` (it provides
    ``vectors`` and ``depth``). ``encoding``: "sq8" or "float32". ``changes``: the change log
    shared with the other processes of a Chroma server (None: no other process writes).
    ``progress``: show a
    progress bar while loading (None: when standard error is a terminal).
    """

    def __init__(self, inner: Backend, encoding: str = DEFAULT_SEARCH_INDEX, *, changes: ChangeLog | None = None,
                 progress: bool | None = None) -> None:
        super().__init__(inner)
        self.index = VectorIndex(encoding)
        self._changes = changes
        self._seen = 0                       # the last change log entry applied
        self._own: set[int] = set()          # entries this process appended (already applied)
        self._order = threading.RLock()      # one change at a time: Chroma, then the index
        self._loading: set[str] | None = set()  # ids changed while loading; None once loaded
        self._ready = threading.Event()
        self._stop = threading.Event()
        self._failed: str | None = None
        self.load_seconds: float | None = None
        self._progress = sys.stderr.isatty() if progress is None else progress
        self._thread = threading.Thread(target=self._load, name="memwarden-index-load", daemon=True)
        self._thread.start()

    # -- loading ------------------------------------------------------------------------------

    @property
    def ready(self) -> bool:
        """True once searches are answered from the index."""
        return self._ready.is_set() and self._failed is None

    def wait_ready(self, timeout: float | None = None) -> bool:
        """Wait until the index is loaded (or has failed); True when it serves searches."""
        self._thread.join(timeout)
        return self.ready

    def _load(self) -> None:
        started = time.perf_counter()
        try:
            # Other processes' changes from here on are read again when the load ends.
            self._seen = self._changes.head() if self._changes is not None else 0
            total = self._inner.count()
            _log.info("memwarden: loading the search index (%d rows) in the background; "
                      "searches use the partition path until it is ready", total)
            held: list[tuple[Partition, StoredRow, np.ndarray]] = []
            with _progress(self._progress, total) as advance:
                for part, rows, vectors in self._inner.vectors(page=_LOAD_PAGE):  # type: ignore[attr-defined]
                    if self._stop.is_set():
                        return
                    held += [(part, row, vector) for row, vector in zip(rows, vectors)]
                    # The first rows are added together: the 8-bit ranges are trained on them.
                    if len(self.index) or len(held) >= TRAIN_ROWS:
                        self._add_loaded(held)
                        held = []
                    advance(len(rows))
                self._add_loaded(held)
            with self._order:  # no change runs now: read the rows changed meanwhile once more
                with self.index.lock:
                    assert self._loading is not None
                    changed = sorted(self._loading)
                self._reload(changed)
                with self.index.lock:
                    self._loading = None
                self._catch_up()
            self.load_seconds = time.perf_counter() - started
            self._ready.set()
            _log.info("memwarden: search index ready: %d rows in %.2f s", len(self.index), self.load_seconds)
        except Exception as exc:  # noqa: BLE001 - the partition path still serves every search
            self._give_up(f"loading failed: {type(exc).__name__}: {exc}")

    def _add_loaded(self, held: list[tuple[Partition, StoredRow, np.ndarray]]) -> None:
        """Add rows the load read, but none changed since it began (read again at its end)."""
        with self.index.lock:
            assert self._loading is not None
            # Every row read takes its place in storage order now, those held back too.
            self.index.reserve(h[1].id for h in held)
            keep = [h for h in held if h[1].id not in self._loading]
            if keep:
                self.index.put([h[1] for h in keep], np.stack([h[2] for h in keep]), [h[0] for h in keep])

    def _reload(self, ids: Sequence[str]) -> None:
        """Make the index hold exactly what Chroma holds now of ``ids``."""
        if not ids:
            return
        with self.index.lock:
            self.index.remove(ids, keep_place=True)
            for part, rows, vectors in self._inner.vectors(ids):  # type: ignore[attr-defined]
                self.index.put(rows, vectors, [part] * len(rows))
            self.index.unplace(ids)

    def _give_up(self, why: str) -> None:
        """Stop answering from the index (the partition path serves) and drop what it holds."""
        self._failed = why
        self._ready.set()
        self.index.clear()
        _log.warning("memwarden: the search index is off until the store is opened again (%s)", why)

    # -- changes ------------------------------------------------------------------------------

    def _change(self, op: str, ids: Sequence[str], call: Callable[[], T], apply: Callable[[], None]) -> T:
        """Make a change in Chroma, then in the index, then in the change log (see the module
        docstring). A change the log cannot record raises: the operation has not returned,
        and other processes may not know of it yet."""
        with self._order:
            try:
                result = call()
            except BaseException:
                self._follow(ids, None)
                self._logged(op, ids, best_effort=True)  # Chroma may have made it
                raise
            self._follow(ids, apply)
            self._logged(op, ids)
            return result

    def _logged(self, op: str, ids: Sequence[str], *, best_effort: bool = False) -> None:
        if self._changes is None:
            return
        try:
            self._own.update(self._changes.append(ids, op))
        except Exception:
            if not best_effort:
                raise

    def _catch_up(self) -> None:
        """Read again from Chroma every row another process changed since the last call."""
        if self._changes is None:
            return
        with self._order:
            entries = self._changes.after(self._seen)
            if not entries:
                return
            theirs = [rid for seq, rid in entries if seq not in self._own]
            self._reload(list(dict.fromkeys(theirs)))
            self._seen = entries[-1][0]
            self._own = {seq for seq in self._own if seq > self._seen}

    def _follow(self, ids: Sequence[str], apply: Callable[[], None] | None) -> None:
        if self._failed is not None:
            return
        with self.index.lock:
            if self._loading is not None:  # loading: the row is read again when it ends
                self._loading.update(ids)
                self.index.remove(ids, keep_place=True)
                return
            if apply is not None:
                apply()
                return
        try:  # Chroma failed: it may or may not have made the change
            self._reload(list(ids))
        except Exception as exc:  # noqa: BLE001 - fail closed: the index cannot say what is stored
            self._give_up(f"could not re-read rows after a failed change: {type(exc).__name__}")

    def upsert(self, ids: Sequence[str], embeddings: np.ndarray, documents: Sequence[str],
               metadatas: Sequence[dict[str, Any]]) -> None:
        """See :meth:`Backend.upsert`; the index merges metadata as Chroma's upsert does."""
        def apply() -> None:
            rows, parts = [], []
            for rid, document, metadata in zip(ids, documents, metadatas):
                merged = dict(self.index.metadata(rid) or {})
                merged.update(metadata)
                meta = stored_metadata(merged)
                rows.append(StoredRow(rid, document, meta))
                parts.append(row_partition(meta, self._inner.depth))  # type: ignore[attr-defined]
            self.index.put(rows, np.asarray(embeddings, dtype=np.float32), parts)

        self._change("upsert", ids, lambda: self._inner.upsert(ids, embeddings, documents, metadatas), apply)

    def update_metadata(self, ids: Sequence[str], metadatas: Sequence[dict[str, Any]]) -> None:
        """See :meth:`Backend.update_metadata` (ids not stored are skipped, as in Chroma)."""
        def apply() -> None:
            for rid, metadata in zip(ids, metadatas):
                self.index.merge(rid, metadata)

        self._change("update", ids, lambda: self._inner.update_metadata(ids, metadatas), apply)

    def delete(self, ids: Sequence[str]) -> None:
        """See :meth:`Backend.delete`."""
        self._change("delete", ids, lambda: self._inner.delete(ids), lambda: self.index.remove(ids))

    def purge(self, ids: Sequence[str], **options: Any) -> Any:
        """See :meth:`Backend.purge`: the rows leave the index (codes compacted, copies
        dropped) before Chroma's files are rewritten, and whatever happens to that."""
        with self.index.lock:
            self.index.remove(ids)
        return self._change("purge", ids, lambda: self._inner.purge(ids, **options), lambda: self.index.remove(ids))

    # -- reads ----------------------------------------------------------------------------------

    def fetch(self, ids: Sequence[str] | None = None, where: Where | None = None, limit: int | None = None,
              offset: int | None = None, *, partitions: Sequence[Partition] | None = None) -> list[StoredRow]:
        """See :meth:`Backend.fetch`. Rows by ids alone are copied from the index when it holds
        exactly what Chroma holds: loaded, and no other process writes (no change log). That
        is the look-up every write makes of its own id (idempotence, keyed versions), a
        Chroma ``get`` of 3-4 ms each, most of a batched write's cost."""
        if ids is not None and where is None and limit is None and not offset and self.ready \
                and self._changes is None:
            with self._order:  # no change is half made (in Chroma, not yet here) while it reads
                if self.ready:
                    return self.index.rows(ids, partitions)
        return super().fetch(ids, where, limit, offset, partitions=partitions)

    def _serving(self) -> bool:
        """Whether this read is answered from the index: it is loaded, and it has caught up
        with the changes other processes logged (else Chroma itself answers)."""
        if not self.ready:
            return False
        try:
            self._catch_up()
        except Exception as exc:  # noqa: BLE001 - Chroma itself answers this one
            _log.warning("memwarden: the change log could not be read (%s); reading Chroma directly",
                         type(exc).__name__)
            return False
        return True

    def query_targets(self, embedding: np.ndarray, k: int, targets: Sequence[Target], *,
                      accept: Callable[[dict[str, Any]], bool],
                      fallback: Where) -> list[tuple[StoredRow, float]]:
        """The k nearest accepted rows of the planned targets: a scan of the scope's rows in
        the index once it is loaded, else the partition path."""
        if self._serving():
            return self.index.nearest(embedding, k, targets, accept)
        return super().query_targets(embedding, k, targets, accept=accept, fallback=fallback)

    def fetch_targets(self, targets: Sequence[Target], where: Where | None, limit: int | None, offset: int = 0, *,
                      accept: MetaTest | None = None, matching: RowTest | None = None,
                      distinct: RowKey | None = None) -> list[StoredRow]:
        """Rows of the planned targets in storage order (see :meth:`Backend.fetch_targets`):
        from the index once it is loaded, ``where`` evaluated on its copies of the metadata with
        Chroma's semantics (:mod:`memwarden.policies.metafilter`), else the partition path."""
        if self._serving():
            try:
                test = compile_predicate(where)
            except ValueError:  # outside the dialect the index evaluates: Chroma's own filter
                pass
            else:
                both = test if accept is None else (lambda meta: test(meta) and accept(meta))
                return self.index.listed(targets, limit, offset, accept=both if where else accept,
                                         matching=matching, distinct=distinct)
        return super().fetch_targets(targets, where, limit, offset, accept=accept, matching=matching,
                                     distinct=distinct)

    def close(self) -> None:
        """Stop loading, drop the index, release the store."""
        self._stop.set()
        self._thread.join()
        self.index.clear()
        try:
            super().close()
        finally:
            if self._changes is not None:
                self._changes.close()


def derived_index(backend: object) -> DerivedIndexBackend | None:
    """The derived index under a stack of backend wrappers, if there is one (for tests and
    benchmarks that wait for it to load or inspect it)."""
    while backend is not None:
        if isinstance(backend, DerivedIndexBackend):
            return backend
        backend = getattr(backend, "_inner", None)
    return None


class _progress:
    """A progress bar on a terminal (rich), nothing otherwise (the log lines say it)."""

    def __init__(self, shown: bool, total: int) -> None:
        self._shown, self._total, self._bar = shown, total, None

    def __enter__(self) -> Callable[[int], None]:
        if not self._shown:
            return lambda n: None
        from rich.progress import Progress

        self._bar = Progress(transient=True)
        self._bar.start()
        task = self._bar.add_task("memwarden search index", total=self._total)
        return lambda n: self._bar.advance(task, n)  # type: ignore[union-attr]

    def __exit__(self, *exc: object) -> None:
        if self._bar is not None:
            self._bar.stop()


def with_search_index(inner: Backend, search_index: str, changes: Callable[[], ChangeLog] | None = None) -> Backend:
    """``inner`` with a derived index of encoding ``search_index``, or as it is for "off";
    ``changes`` opens the change log shared with other processes (a Chroma server)."""
    if search_index == "off":
        return inner
    return DerivedIndexBackend(inner, search_index, changes=changes() if changes is not None else None)

