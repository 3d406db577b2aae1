"""``VectorIndex``: the derived in-RAM copy of the store that a search scans.

Chroma stays the system of record. This index holds, for each row, its vector (faiss 8-bit
scalar-quantised codes, or float32), its id, its partition, and a copy of its document and
flat metadata (from which the policy's residual filters, conditions included, are evaluated).
A read scope (its planned targets) becomes a bitmap over the rows, cached and kept current
row by row as rows change; a search is an exact scan of the rows the bitmap sets
(``IDSelectorBitmap``), so nothing outside the scope is ever a candidate. A listing (a
filter-only search, a namespace listing, a sweep) walks the same bitmap in Chroma's storage
order, which the index keeps for each row (:meth:`VectorIndex.listed`). Measured in issue
19: 0.45x a raw unfiltered Chroma query at 10k rows, where the partition path costs 3x.

Rows are labelled by slot numbers that are never reused (faiss ``IndexIDMap``): a removed row's
codes are compacted away by ``remove_ids`` and its document and metadata dropped, so an
erased row leaves no copy here. Nothing of it is ever written to disk.

A row embedded by several texts (:mod:`memwarden.memory.facets`) has a slot for each of its
facets too: a facet slot holds only a vector, mapped back to its row's slot, set in every
bitmap exactly when the row's slot is, and removed with the row. A search scores a row by its
nearest slot (max-pooling, as LangGraph's stores score an item by its best text).

The index decides nothing: it is fed by the backend wrapper every row change passes through
(:mod:`memwarden.memory.derived`), and everything it returns is re-checked by the pipeline.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import faiss
import numpy as np
from threadpoolctl import ThreadpoolController

from memwarden.memory.backends import MetaTest, RowKey, RowTest, StoredRow, select_rows
from memwarden.memory.facets import decoded, without_facets
from memwarden.memory.settings import DEFAULT_SEARCH_INDEX
from memwarden.policies.metafilter import Predicate, compile_predicate
from memwarden.policies.partitions import Coverage, Partition, Target

#: The vector encodings an index may use (``Settings.search_index``; "off" keeps none).
ENCODINGS = ("sq8", "float32")
# Scope bitmaps kept at once (each is one bit per slot, updated on every row change).
_MAX_SCOPES = 64
# Nearest candidates asked for beyond k: rows a search refuses after the scan (not visible at
# this moment, another kind) are replaced by the next ones, widening by _WIDEN until k pass.
_SLACK, _WIDEN = 5, 4
#: Rows the 8-bit quantiser's per-dimension ranges are trained on. Until an "sq8" index holds
#: this many it keeps exact float32 vectors (at most 6 MiB of 384-d ones); when it reaches
#: them, it trains on them and re-encodes them as codes. A fixed [-1, 1] range instead (what a
#: store opened nearly empty used to keep until reopened) measured recall@10 0.93 at 100k
#: random rows, against 0.98 with trained ranges (benchmarks/README.md, issue 19).
TRAIN_ROWS = 4096
# Each trained range is widened by this fraction on both sides, for rows written later
# (0.05 to 0.2 measured alike, within 0.005 of recall, on 100k random rows).
_RANGE_MARGIN = 0.1

# Scanning one query is fastest on one thread: measured in issue 19, a second BLAS/OpenMP
# thread did not speed up a 30k-row scan and its spinning workers made the next Chroma call
# twice as slow (a 10k SQ8 scan here: 19 ms with faiss's default threads, 1.3 ms with one).
_THREADS = ThreadpoolController()


def _normalised(vectors: np.ndarray) -> np.ndarray:
    """Unit vectors (cosine distance is 1 - inner product); a zero vector stays zero."""
    x = np.ascontiguousarray(vectors, dtype=np.float32).reshape(len(vectors), -1)
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    return x / np.where(norms > 0, norms, 1.0)


def _zero(codes: Any, start: int, stop: int) -> None:
    """Clear bytes ``start:stop`` of a faiss byte vector (``stop`` within its allocation)."""
    if stop > start:
        faiss.rev_swig_ptr(codes.data(), stop)[start:] = 0


def scope_key(targets: Sequence[Target]) -> tuple[tuple[Partition, str, str], ...]:
    """What identifies a scope's bitmap: its searched partitions and their filters."""
    return tuple(sorted((t.partition, t.coverage.value, json.dumps(t.where or {}, sort_keys=True))
                        for t in targets if t.searched))


@dataclass(slots=True)
class _Scope:
    """One cached scope: what selects a row, and the bitmap of the rows it selects."""

    covered: frozenset[Partition]
    partial: dict[Partition, Predicate]
    bits: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.uint8))

    def selects(self, partition: Partition, meta: dict[str, Any]) -> bool:
        if partition in self.covered:
            return True
        test = self.partial.get(partition)
        return test is not None and test(meta)


class VectorIndex:
    """Rows in RAM and their vectors, searched within a scope bitmap (see the module docstring).

    ``encoding``: "sq8" (faiss ``IndexScalarQuantizer``, 8 bits per dimension) or "float32"
    (``IndexFlatIP``, exact). Thread-safe: one lock orders changes and scans.
    """

    def __init__(self, encoding: str = DEFAULT_SEARCH_INDEX) -> None:
        if encoding not in ENCODINGS:
            raise ValueError(f"search_index encoding must be one of {', '.join(ENCODINGS)}, got {encoding!r}")
        self.encoding = encoding
        #: Orders changes and scans (the derived backend also holds it to apply a build page
        #: atomically with respect to concurrent writes).
        self.lock = threading.RLock()
        self._faiss: Any = None            # built at the first add, when the dimension is known
        self._inner: Any = None            # the codes inside it (IndexIDMap does not own them)
        self._trained = encoding == "float32"  # sq8: False while exact vectors wait for TRAIN_ROWS
        self._dim = 0
        self._slot: dict[str, int] = {}    # row id -> its slot (label in faiss)
        self._ids: list[str | None] = []   # by slot; None once removed
        self._docs: list[str | None] = []
        self._metas: list[dict[str, Any] | None] = []
        self._parts: list[Partition | None] = []
        # By slot, the row slot a vector belongs to: itself for a row's own vector, its row's
        # for a facet (whose id, document, metadata and partition above are None).
        self._owner: list[int] = []
        self._facets: dict[int, list[int]] = {}  # a row's slot -> its facets' slots
        self._members: dict[Partition, set[int]] = {}
        # Each row's place in storage order: Chroma lists a partition's rows in the order they
        # were first stored, and an upsert of a row it holds keeps its place (a row deleted and
        # stored again goes last), so a listing from here is the listing Chroma would give.
        self._rank: dict[str, int] = {}
        self._next_rank = 0
        self._scopes: OrderedDict[tuple, _Scope] = OrderedDict()

    # -- size -------------------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self._slot)

    def __contains__(self, rid: object) -> bool:
        return rid in self._slot

    def rows(self, ids: Sequence[str], partitions: Sequence[Partition] | None = None) -> list[StoredRow]:
        """Copies of the rows held of ``ids``, in the order given (each once), only those in
        ``partitions`` when they are named."""
        within = None if partitions is None else set(partitions)
        with self.lock:
            found = []
            for rid in dict.fromkeys(ids):
                slot = self._slot.get(rid)
                if slot is None or (within is not None and self._parts[slot] not in within):
                    continue
                document, meta = self._docs[slot], self._metas[slot]
                assert document is not None and meta is not None
                found.append(StoredRow(rid, document, dict(meta)))
            return found

    def metadata(self, rid: str) -> dict[str, Any] | None:
        """A copy of the metadata held for ``rid`` (None when it is not held)."""
        with self.lock:
            slot = self._slot.get(rid)
            meta = self._metas[slot] if slot is not None else None
            return dict(meta) if meta is not None else None

    # -- changes ------------------------------------------------------------------------------

    def _ensure(self, vectors: np.ndarray) -> None:
        if self._faiss is not None:
            if vectors.shape[1] != self._dim:
                raise ValueError(f"vectors of dimension {vectors.shape[1]} in an index of dimension {self._dim}")
            return
        self._dim = vectors.shape[1]
        self._inner = faiss.IndexFlatIP(self._dim)  # sq8: exact until trained (see TRAIN_ROWS)
        self._faiss = faiss.IndexIDMap(self._inner)

    def _train(self) -> None:
        """Train the 8-bit ranges on the rows held (exact vectors so far) and re-encode them:
        the exact copies go with the index that held them."""
        labels = faiss.vector_to_array(self._faiss.id_map).astype(np.int64)
        floats = self._inner.reconstruct_n(0, self._inner.ntotal)
        inner = faiss.IndexScalarQuantizer(self._dim, faiss.ScalarQuantizer.QT_8bit, faiss.METRIC_INNER_PRODUCT)
        inner.sq.rangestat = faiss.ScalarQuantizer.RS_minmax
        inner.sq.rangestat_arg = _RANGE_MARGIN
        inner.train(floats)
        coded = faiss.IndexIDMap(inner)
        coded.add_with_ids(floats, labels)
        floats[:] = 0  # the copy made here, and the exact vectors, are cleared before they are freed
        _zero(self._inner.codes, 0, self._inner.codes.size())
        self._faiss.reset()
        self._inner, self._faiss, self._trained = inner, coded, True

    def put(self, rows: Sequence[StoredRow], vectors: np.ndarray, partitions: Sequence[Partition]) -> None:
        """Insert rows, or replace the document, metadata and vectors of rows held (new slots,
        the same place in storage order). A row's facets are read from its metadata, whose
        copy here keeps their count, not the vectors."""
        if not rows:
            return
        x = _normalised(vectors)
        with self.lock:
            self._ensure(x)
            self.remove((r.id for r in rows if r.id in self._slot), keep_place=True)
            self.reserve(r.id for r in rows)
            start = len(self._ids)
            extra: list[np.ndarray] = []
            for row, part in zip(rows, partitions):
                slot = len(self._ids)
                self._slot[row.id] = slot
                self._ids.append(row.id)
                self._docs.append(row.document)
                self._metas.append(without_facets(row.metadata))
                self._parts.append(part)
                self._owner.append(slot)
                self._members.setdefault(part, set()).add(slot)
            for slot, row in zip(range(start, start + len(rows)), rows):
                facets = decoded(row.metadata)
                if facets is None or facets.shape[1] != self._dim:
                    continue
                first = len(self._ids)
                self._facets[slot] = list(range(first, first + len(facets)))
                for _ in facets:
                    self._ids.append(None)
                    self._docs.append(None)
                    self._metas.append(None)
                    self._parts.append(None)
                    self._owner.append(slot)
                extra.append(_normalised(facets))
            every = np.vstack([x, *extra]) if extra else x
            self._faiss.add_with_ids(every, np.arange(start, start + len(every), dtype=np.int64))
            for slot in range(start, start + len(rows)):
                self._restate(slot)
            if not self._trained and len(self._slot) >= TRAIN_ROWS:
                self._train()

    def merge(self, rid: str, metadata: dict[str, Any], document: str | None = None) -> bool:
        """Merge ``metadata`` into a held row as Chroma does (a None value removes the key), and
        replace its document when given; False when the row is not held."""
        with self.lock:
            slot = self._slot.get(rid)
            if slot is None:
                return False
            meta = self._metas[slot]
            assert meta is not None
            for key, value in without_facets(metadata).items():
                if value is None:
                    meta.pop(key, None)
                else:
                    meta[key] = value
            if document is not None:
                self._docs[slot] = document
            self._restate(slot)
            return True

    def reserve(self, ids: Iterable[str]) -> None:
        """Give rows not placed yet the next places in storage order (the order a load reads
        them from Chroma in, also for rows it holds back to read again)."""
        with self.lock:
            for rid in ids:
                if rid not in self._rank:
                    self._rank[rid] = self._next_rank
                    self._next_rank += 1

    def unplace(self, ids: Iterable[str]) -> None:
        """Forget the storage places of rows that are not held (gone from Chroma too)."""
        with self.lock:
            for rid in ids:
                if rid not in self._slot:
                    self._rank.pop(rid, None)

    def remove(self, ids: Iterable[str], *, keep_place: bool = False) -> None:
        """Drop rows: their codes (compacted away), document, metadata and bits; with
        ``keep_place``, their place in storage order stays for their next version."""
        with self.lock:
            ids = list(dict.fromkeys(ids))
            if not keep_place:
                for rid in ids:
                    self._rank.pop(rid, None)
            slots = [self._slot.pop(rid) for rid in ids if rid in self._slot]
            if not slots:
                return
            facets = [f for slot in slots for f in self._facets.pop(slot, ())]
            held = self._inner.codes.size()
            self._faiss.remove_ids(np.asarray(slots + facets, dtype=np.int64))
            # remove_ids compacts the codes and shrinks their vector without freeing it: the
            # codes that were last stay in its spare capacity (an erased row's among them).
            _zero(self._inner.codes, self._inner.codes.size(), held)
            for slot in slots:
                part = self._parts[slot]
                assert part is not None
                self._members[part].discard(slot)
                if not self._members[part]:
                    del self._members[part]
                self._ids[slot] = self._docs[slot] = self._metas[slot] = self._parts[slot] = None
                for scope in self._scopes.values():
                    self._set(scope, slot, False)
            for slot in facets:
                for scope in self._scopes.values():
                    self._set(scope, slot, False)

    def clear(self) -> None:
        """Drop every row (the index is being rebuilt, or given up)."""
        with self.lock:
            self.remove(list(self._slot))
            self._rank.clear()

    # -- scope bitmaps --------------------------------------------------------------------------

    @staticmethod
    def _set(scope: _Scope, slot: int, on: bool) -> None:
        byte, bit = divmod(slot, 8)
        if byte >= len(scope.bits):
            if not on:
                return
            grown = np.zeros(max(2 * len(scope.bits), byte + 1, 64), dtype=np.uint8)
            grown[:len(scope.bits)] = scope.bits
            scope.bits = grown
        if on:
            scope.bits[byte] |= np.uint8(1 << bit)
        else:
            scope.bits[byte] &= np.uint8(~(1 << bit) & 0xFF)

    def _restate(self, slot: int) -> None:
        """Bring every cached bitmap up to date for one row (its facets' slots too)."""
        part, meta = self._parts[slot], self._metas[slot]
        assert part is not None and meta is not None
        facets = self._facets.get(slot, ())
        for scope in self._scopes.values():
            on = scope.selects(part, meta)
            self._set(scope, slot, on)
            for facet in facets:
                self._set(scope, facet, on)

    def _scope(self, targets: Sequence[Target]) -> _Scope:
        key = scope_key(targets)
        scope = self._scopes.get(key)
        if scope is not None:
            self._scopes.move_to_end(key)
            return scope
        searched = [t for t in targets if t.searched]
        scope = _Scope(frozenset(t.partition for t in searched if t.coverage is Coverage.COVERED),
                       {t.partition: compile_predicate(t.where) for t in searched if t.coverage is Coverage.PARTIAL})
        mask = np.zeros(len(self._ids), dtype=bool)
        for part in scope.covered:
            mask[list(self._members.get(part, ()))] = True
        for part, test in scope.partial.items():
            for slot in self._members.get(part, ()):
                meta = self._metas[slot]
                mask[slot] = meta is not None and test(meta)
        for slot, facets in self._facets.items():
            mask[facets] = mask[slot]
        scope.bits = np.packbits(mask, bitorder="little")
        self._scopes[key] = scope
        if len(self._scopes) > _MAX_SCOPES:
            self._scopes.popitem(last=False)
        return scope

    # -- search ---------------------------------------------------------------------------------

    def nearest(self, vector: np.ndarray, k: int, targets: Sequence[Target],
                accept: Callable[[dict[str, Any]], bool]) -> list[tuple[StoredRow, float]]:
        """The k rows of the scope ``targets`` plan that are nearest ``vector`` and whose
        metadata ``accept`` takes, with cosine distances (a row's nearest vector's: its own or
        a facet's), nearest first."""
        if k <= 0:
            return []
        q = _normalised(np.asarray(vector, dtype=np.float32).reshape(1, -1))
        with self.lock:
            if self._faiss is None or not self._slot:
                return []
            if q.shape[1] != self._dim:
                raise ValueError(f"a query vector of dimension {q.shape[1]} for an index of dimension {self._dim}")
            scope = self._scope(targets)
            visible = int(np.bitwise_count(scope.bits).sum())
            if not visible:
                return []
            selector = faiss.IDSelectorBitmap(len(scope.bits), faiss.swig_ptr(scope.bits))
            params = faiss.SearchParameters(sel=selector)
            n = min(k + _SLACK, visible)
            while True:
                with _THREADS.limit(limits=1):
                    scores, labels = self._faiss.search(q, n, params=params)
                kept = []
                seen: set[int] = set()
                for score, label in zip(scores[0], labels[0]):
                    if label < 0:
                        break
                    row = self._owner[label]
                    if row in seen:  # a nearer vector of the same row came first
                        continue
                    seen.add(row)
                    meta = self._metas[row]
                    if meta is not None and accept(meta):
                        kept.append((float(1.0 - score), row))
                if len(kept) >= k or n >= visible:
                    # Ties in the order rows were stored, whatever order the scan found them in.
                    return [(StoredRow(self._ids[label], self._docs[label], dict(self._metas[label])), distance)
                            for distance, label in sorted(kept)[:k]]
                n = min(n * _WIDEN, visible)

    def listed(self, targets: Sequence[Target], limit: int | None, offset: int = 0, *,
               accept: MetaTest | None = None, matching: RowTest | None = None,
               distinct: RowKey | None = None) -> list[StoredRow]:
        """The rows of the scope ``targets`` plan, target by target in storage order, selected
        as :meth:`memwarden.memory.backends.Backend.fetch_targets` selects them. The tests run on
        the rows held here (under the lock: they are pure); only the rows returned are copied."""
        with self.lock:
            if not self._slot:
                return []
            scope = self._scope(targets)
            selected = np.unpackbits(scope.bits, bitorder="little").tobytes()  # one 0/1 byte per slot
            rank = self._rank

            def rows() -> Iterator[StoredRow]:
                # Partition by partition, as far as the selection reads: a short page of a
                # broad scope sorts the rows of the first partitions only.
                for part in dict.fromkeys(t.partition for t in targets if t.searched):
                    slots = [s for s in self._members.get(part, ()) if s < len(selected) and selected[s]]
                    for slot in sorted(slots, key=lambda s: rank.get(self._ids[s], -1)):  # type: ignore[arg-type]
                        yield StoredRow(self._ids[slot], self._docs[slot] or "", self._metas[slot])  # type: ignore[arg-type]

            chosen = select_rows(rows(), limit, offset, accept=accept, matching=matching, distinct=distinct)
            return [StoredRow(r.id, r.document, dict(r.metadata)) for r in chosen]

    # -- inspection (erasure tests) -------------------------------------------------------------

    def buffers(self) -> dict[str, bytes]:
        """Every buffer this index holds row data in: the faiss codes, and the copies of the
        documents and metadata (for tests that prove an erased row left nothing here)."""
        with self.lock:
            codes = faiss.vector_to_array(self._inner.codes).tobytes() if self._inner is not None else b""
            docs = "\n".join(d for d in self._docs if d is not None)
            metas = "\n".join(json.dumps(m, ensure_ascii=False) for m in self._metas if m is not None)
            return {"codes": codes, "documents": docs.encode("utf-8"), "metadata": metas.encode("utf-8")}

    def encode(self, vectors: np.ndarray) -> list[bytes]:
        """The codes this index would hold for ``vectors`` (one ``bytes`` each)."""
        with self.lock:
            if self._inner is None:
                return []
            return [bytes(c) for c in self._inner.sa_encode(_normalised(vectors))]
