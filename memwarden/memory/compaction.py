"""Physical erasure for Chroma: after a purge no byte of an erased row is left in the data directory.

Stock Chroma (1.5, Rust core) deletes logically. After ``collection.delete`` the text,
metadata and vector of a row survive in the data directory (measured in docs/erasure.md):

* ``embeddings_queue`` (Chroma's write-ahead log) keeps every operation, with its text,
  metadata and vector, until *both* segments have persisted past it. The HNSW segment persists
  only every ``hnsw:sync_threshold`` (default 1000) operations, so up to 999 recent writes stay
  there as live rows, deleted or not;
* SQLite free pages and the free space of live pages hold whatever was deleted from the log,
  ``embedding_metadata``, the FTS content table and the metadata indexes (Chroma does not
  enable ``secure_delete``);
* the FTS5 trigram index (``embedding_fulltext_search_data``): a delete adds a tombstone, the
  postings of the old text (trigrams with positions, enough to rebuild it) stay until a merge;
* the HNSW segment directory: ``data_level0.bin`` keeps every deleted vector (unit-normalised for
  cosine) flagged as deleted and still linked into the graph, ``length.bin`` its norm, and
  ``delete_collection`` leaves the whole directory behind;
* uninitialised memory: hnswlib writes its freshly malloc'd buffers into the HNSW files when it
  creates them, which Chroma does again at every load of an index it never persisted, so the
  files can hold anything the process had in memory, erased rows included.

:func:`purge_collection` erases from every copy, with one of two mechanisms:

``surgery`` (the fast path, O(erased rows + file size)): close the client so that no Chroma
    code holds the files, rewrite the HNSW segment without the erased (and all other
    tombstoned) elements, repairing the graph links around them, delete the log entries of
    erased and dead rows, rebuild the FTS index, VACUUM, re-open the client, and make Chroma
    persist an index it had never persisted. It edits Chroma's on-disk formats, so it first
    checks every structural invariant it relies on and falls back to ``rebuild`` when any fails
    or when another client in the process shares the store.
``rebuild`` (the safe path, O(collection size)): copy every surviving row into a fresh
    collection through Chroma's public API, swap names, drop the old collection, shred its
    orphaned segment directory, rebuild the FTS index and VACUUM.

Against a Chroma server only the logical delete is possible (mechanism ``logical``); see
:func:`compact_directory` for cleaning a stopped server's directory. Both mechanisms are
crash-safe: a marker file records the phase, and :func:`recover` (run before a client opens
the directory), or simply the next purge, finishes an interrupted purge.
"""

from __future__ import annotations

import json
import logging
import os
import pickle
import re
import shutil
import sqlite3
import struct
import time
import uuid
import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["PurgeError", "PurgeReport", "Remnants", "compact_directory", "find_remnants", "pending",
           "persist_dir", "purge_collection", "recover", "scrub_directory"]

log = logging.getLogger(__name__)

MARKER = "memwarden-purge.json"
_NEW, _OLD = ".purge-new-", ".purge-old-"
_SEG_NEW, _SEG_OLD = ".purge-new", ".purge-old"
_UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
_COPY_BATCH = 1000
_HNSW_SEGMENT = "urn:chroma:segment/vector/hnsw-local-persisted"
_DELETE_OP = 3                  # embeddings_queue.operation for a delete (ADD=0 ... DELETE=3)
_PLACEHOLDER_ID = "memwarden:purged"
_SQL_CHUNK = 500


class PurgeError(RuntimeError):
    """A physical erasure could not be completed; the rows are deleted logically.

    When the purge had closed the client, ``client`` and ``collection`` are fresh ones to use
    instead. The directory is left consistent and marked: the next purge (even of no ids) or
    :func:`recover` finishes the erasure.
    """

    def __init__(self, message: str, *, client: Any = None, collection: Any = None) -> None:
        super().__init__(message)
        self.client, self.collection = client, collection


@dataclass
class PurgeReport:
    """What one purge did, for receipts, logs and the benchmark."""

    requested: int = 0
    erased: int = 0            # requested rows that were still stored
    kept: int = 0              # rows left in the collection
    mechanism: str = ""        # "surgery", "rebuild", "logical" (server client) or "none"
    fallback_reason: str = ""  # why surgery was not used, when it was not
    scrubbed: bool = False     # files scrubbed: FTS rebuilt, VACUUM done, no free page left
    queue_rows_removed: int = 0
    hnsw_elements_removed: int = 0
    hnsw_links_repaired: int = 0
    segments_removed: list[str] = field(default_factory=list)
    sqlite_bytes_before: int = 0
    sqlite_bytes_after: int = 0
    free_pages_after: int = -1
    seconds: dict[str, float] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return asdict(self)


def persist_dir(client: Any) -> Path | None:
    """The data directory of an embedded (persistent) client; None for a server client."""
    try:
        settings = client.get_settings()
    except Exception:  # noqa: BLE001 - a client without settings is not embedded
        return None
    api = str(getattr(settings, "chroma_api_impl", "") or "")
    if getattr(settings, "is_persistent", False) and getattr(settings, "persist_directory", None) \
            and "fastapi" not in api.lower():
        return Path(settings.persist_directory)
    return None


def pending(root: str | Path) -> bool:
    """True if a purge of the directory ``root`` was interrupted; call :func:`recover`."""
    return (Path(root) / MARKER).exists()


# -- the purge -------------------------------------------------------------------------------


def purge_collection(client: Any, collection: Any, ids: Sequence[str], *, mode: str = "auto",
                     batch: int = _COPY_BATCH, compact: bool = False) -> tuple[Any, Any, PurgeReport]:
    """Erase the rows ``ids`` of ``collection`` physically.

    Returns ``(client, collection, report)``: both may be new objects (the surgery re-opens
    the client; the rebuild gives the collection a new id) and the caller must use them from
    now on. ``mode`` is "auto" (surgery when its checks pass, else rebuild), "surgery" (raise
    PurgeError instead of falling back) or "rebuild".

    Surviving rows keep their ids, documents and metadata byte for byte. Their embeddings are
    untouched by the surgery; the rebuild copies what Chroma returns, which for a cosine
    collection is Chroma's own reconstruction (unit vector times stored norm) and may differ
    from the pre-purge value in the last bit of a component.

    Besides ``ids``, the surgery also removes the remains of every row deleted earlier (HNSW
    tombstones, dead log entries). With no ``ids`` nothing is done unless ``compact`` is set.
    """
    if mode not in ("auto", "surgery", "rebuild"):
        raise ValueError(f"mode must be 'auto', 'surgery' or 'rebuild', got {mode!r}")
    ids = sorted(set(map(str, ids)))
    report = PurgeReport(requested=len(ids))
    started = time.perf_counter()
    root = persist_dir(client)
    unfinished = _read_marker(root) if root is not None else None
    if unfinished is not None:  # an earlier purge was interrupted: finish it now as well
        ids = sorted(set(ids) | set(unfinished.get("ids") or []))
        compact = True
    if not ids and not compact:
        report.mechanism = "none"
        return client, collection, report
    with _phase(report, "delete"):
        present = collection.get(ids=ids, include=[])["ids"] if ids else []
        report.erased = len(present)
        if present:
            collection.delete(ids=present)
    if root is not None:
        report.sqlite_bytes_before = _size(root / "chroma.sqlite3")

    if root is None:
        # A server's files are the server's: nothing here can scrub them (docs/erasure.md says
        # how to compact a server's directory offline). A rebuild only on request.
        if mode == "surgery":
            raise PurgeError("surgery needs an embedded (persistent) Chroma client")
        report.fallback_reason = "server client: its files are out of reach from here"
        if mode == "auto":
            report.mechanism = "logical"
            report.seconds["total"] = round(time.perf_counter() - started, 4)
            return client, collection, report
    elif mode in ("auto", "surgery"):
        client, collection, done = _try_surgery(client, collection, ids, root, report, strict=mode == "surgery")
        if done:
            report.seconds["total"] = round(time.perf_counter() - started, 4)
            return client, collection, report

    collection = _rebuild(client, collection, ids, root, batch, report)
    report.seconds["total"] = round(time.perf_counter() - started, 4)
    return client, collection, report


def compact_directory(root: str | Path) -> list[PurgeReport]:
    """Scrub a whole Chroma data directory offline: for every collection, remove every deleted
    row's remains (as a purge does, for all rows deleted so far); then scrub the SQLite file.

    Nothing else may have the directory open (stop a ``chroma run`` server first). This is how
    a server's data directory is cleaned, and what to run after deletes made without memwarden.
    """
    import chromadb
    from chromadb.config import Settings

    root = Path(root)
    recover(root)
    client = chromadb.PersistentClient(path=str(root), settings=Settings(anonymized_telemetry=False))
    reports = []
    try:
        for name in [c.name for c in client.list_collections()]:
            collection = client.get_collection(name, embedding_function=None)
            client, _, report = purge_collection(client, collection, [], mode="auto", compact=True)
            reports.append(report)
        scrub_directory(root)
    finally:
        client.close()
    return reports


def _try_surgery(client: Any, collection: Any, ids: list[str], root: Path, report: PurgeReport,
                 *, strict: bool) -> tuple[Any, Any, bool]:
    """Run the surgery if it is safe; returns (client, collection, done)."""
    name = collection.name
    space = _space_of(collection)
    survivors = collection.count()
    settings = client.get_settings()
    with _phase(report, "close"):
        reason = _close_exclusively(client, settings)
    if reason is None:
        try:
            _settle(root)
            plan = _plan_surgery(root, str(collection.id), ids, space, survivors)
        except _Unsupported as exc:
            reason = str(exc)
        except (sqlite3.Error, OSError, ValueError, KeyError) as exc:  # read-only so far: safe to fall back
            reason = f"{type(exc).__name__}: {exc}"
    if reason is not None:
        client = _reopen(client, settings)
        collection = client.get_collection(name, embedding_function=None)
        if strict:
            raise PurgeError(f"surgery not possible: {reason}", client=client, collection=collection)
        report.fallback_reason = reason
        log.info("memwarden purge: falling back to a rebuild (%s)", reason)
        return client, collection, False
    _write_marker(root, {"phase": "building", "mechanism": "surgery", "name": name, "ids": ids,
                         "segment": plan.segment})
    try:
        never_persisted = _surgery(root, plan, report, name)
    except Exception as exc:
        try:
            _settle(root)
        except Exception:  # the marker stays; the next purge or recover() settles
            log.warning("memwarden purge: could not settle %s now", root, exc_info=True)
        client = _reopen(client, settings)
        raise PurgeError(f"physical erasure interrupted ({type(exc).__name__}: {exc}); the rows are deleted, "
                         "the next purge or recover() finishes it", client=client,
                         collection=client.get_collection(name, embedding_function=None)) from exc
    with _phase(report, "reopen"):
        client = _reopen(client, settings)
        collection = client.get_collection(name, embedding_function=None)
        report.kept = collection.count()
        if never_persisted and report.kept:
            client, collection = _persist_index(client, collection, settings)
        _trim_segment_tails(root, collection)
    _clear_marker(root)
    report.mechanism = "surgery"
    return client, collection, True


class _Unsupported(Exception):
    """The store is not in a shape the surgery is proven on."""


def _close_exclusively(client: Any, settings: Any) -> str | None:
    """Close ``client`` so that Chroma's native code releases the files; returns why that did
    not happen, or None. Every PersistentClient of one path in one process shares a single
    native system; if another client still holds it, its in-memory HNSW index would write the
    erased vectors back, so the surgery must not run."""
    try:
        from chromadb.api.shared_system_client import SharedSystemClient
    except ImportError:  # pragma: no cover - chromadb internals moved
        return "cannot tell whether other clients share the store"
    client.close()
    systems = getattr(SharedSystemClient, "_identifier_to_system", None)
    if systems is None:  # pragma: no cover
        return "cannot tell whether other clients share the store"
    if settings.persist_directory in systems:
        return "another client in this process has the store open"
    return None


def _reopen(client: Any, settings: Any) -> Any:
    import chromadb

    if not getattr(client, "_closed", True):
        return client
    return chromadb.PersistentClient(path=settings.persist_directory, settings=settings)


@dataclass
class _Plan:
    collection: str
    topic_like: str
    segment: str
    ids: list[str]          # erased ids
    remove: list[str]       # erased ids and every id whose latest log entry is a delete
    applied: int            # log entries at or below this seq id are applied by both segments
    vector_seq: int         # what the HNSW files on disk have applied
    metadata_seq: int       # what the metadata segment has applied
    space: str
    dim: int
    survivors: int          # rows left in the collection


def _plan_surgery(root: Path, collection_id: str, ids: list[str], space: str, survivors: int) -> _Plan:
    db_path = root / "chroma.sqlite3"
    with _connect(db_path) as db:
        rows = db.execute("SELECT id, type, scope FROM segments WHERE collection = ?", (collection_id,)).fetchall()
        vector = [r for r in rows if r[2] == "VECTOR"]
        meta = [r for r in rows if r[2] == "METADATA"]
        if len(vector) != 1 or vector[0][1] != _HNSW_SEGMENT or len(meta) != 1:
            raise _Unsupported(f"unexpected segments {rows!r}")
        dim_row = db.execute("SELECT dimension FROM collections WHERE id = ?", (collection_id,)).fetchone()
        seqs = dict(db.execute("SELECT segment_id, seq_id FROM max_seq_id WHERE segment_id IN (?, ?)",
                               (vector[0][0], meta[0][0])).fetchall())
        topic_like = "%/" + collection_id
        log_rows = db.execute("SELECT id, operation, seq_id FROM embeddings_queue WHERE topic LIKE ? "
                              "ORDER BY seq_id", (topic_like,)).fetchall()
    metadata_seq = int(seqs.get(meta[0][0]) or 0)
    vector_seq = int(seqs.get(vector[0][0]) or 0)
    applied = min(vector_seq, metadata_seq)
    latest: dict[str, int] = {}
    newest: dict[str, int] = {}
    for rid, operation, seq in log_rows:
        latest[rid], newest[rid] = operation, seq
    if any(newest.get(i, 0) > metadata_seq for i in ids):
        raise _Unsupported("the metadata segment has not applied every operation on the erased rows")
    dead = {rid for rid, op in latest.items() if op == _DELETE_OP and newest[rid] <= metadata_seq}
    remove = sorted((set(ids) | dead) - {_PLACEHOLDER_ID})
    seg_dir = root / vector[0][0]
    dim = int(dim_row[0]) if dim_row and dim_row[0] else 0
    if seg_dir.exists() and dim:
        _Hnsw.load(seg_dir, dim)  # raises _Unsupported when the files are not as expected
    return _Plan(collection_id, topic_like, vector[0][0], ids, remove, applied, vector_seq, metadata_seq, space,
                 dim, survivors)


def _hnsw_config(collection: Any) -> dict[str, Any]:
    """The collection's HNSW configuration (Chroma warns about the absent embedding function
    of a collection that has none; memwarden never gives Chroma one)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        config = getattr(collection, "configuration", None) or {}
    return dict(config.get("hnsw") or {})


def _set_sync_threshold(collection: Any, value: int) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        collection.modify(configuration={"hnsw": {"sync_threshold": value}})


def _space_of(collection: Any) -> str:
    space = _hnsw_config(collection).get("space") or (collection.metadata or {}).get("hnsw:space")
    return str(space or "l2")


def _surgery(root: Path, plan: _Plan, report: PurgeReport, name: str) -> bool:
    """Edit the closed store; returns True if the HNSW index was never persisted (then its
    vectors live only in the log, and the caller has Chroma persist it; see _EmptyHnsw)."""
    seg_dir = root / plan.segment
    new_dir = root / (plan.segment + _SEG_NEW)
    never_persisted, vector_seq = False, None
    with _phase(report, "hnsw"):
        if seg_dir.exists() and plan.dim:
            index = _Hnsw.load(seg_dir, plan.dim)
            never_persisted = isinstance(index, _EmptyHnsw)
            if never_persisted and plan.survivors == 0:
                # Nothing left to index: store a persisted empty index that has applied the
                # whole log, so that Chroma loads it instead of re-creating the files.
                index.persisted = True
                vector_seq, never_persisted = plan.metadata_seq, False
            removed, repaired = index.without(plan.remove, plan.space)
            report.hnsw_elements_removed, report.hnsw_links_repaired = removed, repaired
            _remove_tree(new_dir)
            index.save(new_dir)
    _write_marker(root, {"phase": "built", "mechanism": "surgery", "name": name, "ids": plan.ids,
                         "segment": plan.segment, "collection": plan.collection, "remove": plan.remove,
                         "applied": plan.applied, "vector_seq": plan.vector_seq,
                         "set_vector_seq": vector_seq})
    with _phase(report, "queue"):
        report.queue_rows_removed = _purge_queue(root / "chroma.sqlite3", plan.topic_like, plan.remove,
                                                 plan.applied, (plan.segment, vector_seq))
    with _phase(report, "swap"):
        _swap_segment(root, plan.segment)
    _write_marker(root, {"phase": "scrubbing", "mechanism": "surgery", "name": name, "ids": plan.ids})
    with _phase(report, "scrub"):
        scrub_directory(root, report)
    return never_persisted


def _persist_index(client: Any, collection: Any, settings: Any) -> tuple[Any, Any]:
    """Have Chroma persist a collection's HNSW index now (see _EmptyHnsw): reload it with a
    sync threshold of 2, which makes Chroma persist while it replays the log, then restore the
    threshold and reload again. A single row is written twice to reach the threshold."""
    name, original = collection.name, _hnsw_config(collection).get("sync_threshold")
    if not original or original <= 2:
        return client, collection
    _set_sync_threshold(collection, 2)
    try:
        if _close_exclusively(client, settings) is None:
            client = _reopen(client, settings)
            collection = client.get_collection(name, embedding_function=None)
            collection.get(limit=1, include=["embeddings"])  # load: replay and persist
            if collection.count() == 1:
                _add_rows(collection, collection.get(include=["embeddings", "documents", "metadatas"]),
                          upsert=True)
        else:
            client = _reopen(client, settings)
            collection = client.get_collection(name, embedding_function=None)
    finally:
        _set_sync_threshold(collection, original)
    _close_exclusively(client, settings)  # reload so that the restored threshold is in force
    client = _reopen(client, settings)
    return client, client.get_collection(name, embedding_function=None)


def _purge_queue(db_path: Path, topic_like: str, remove: list[str], applied: int,
                 vector_seq: tuple[str, int | None] | None = None) -> int:
    """Delete the log entries that hold erased or dead data: every entry both segments have
    applied, and every entry of an id in ``remove``. The newest entry of the whole log is made
    an inert placeholder instead of deleted: Chroma numbers the next entry max(seq_id) + 1, and
    a number at or below what the segments have applied would make them skip that write.
    ``vector_seq`` (segment, seq) records what a rewritten HNSW segment has applied."""
    removed = 0
    with _connect(db_path) as db:
        db.execute("BEGIN IMMEDIATE")
        try:
            top = db.execute("SELECT seq_id, topic, id FROM embeddings_queue ORDER BY seq_id DESC LIMIT 1").fetchone()
            if top is not None and re.fullmatch(topic_like.replace("%", ".*"), top[1]) \
                    and (top[0] <= applied or top[2] in set(remove)):
                db.execute("UPDATE embeddings_queue SET id = ?, operation = ?, vector = NULL, encoding = NULL, "
                           "metadata = NULL WHERE seq_id = ?", (_PLACEHOLDER_ID, _DELETE_OP, top[0]))
            keep_top = top[0] if top is not None else -1
            removed += db.execute("DELETE FROM embeddings_queue WHERE topic LIKE ? AND seq_id <= ? AND seq_id != ?",
                                  (topic_like, applied, keep_top)).rowcount
            for chunk in _chunks(remove, _SQL_CHUNK):
                marks = ",".join("?" * len(chunk))
                removed += db.execute(f"DELETE FROM embeddings_queue WHERE topic LIKE ? AND seq_id != ? "
                                      f"AND id IN ({marks})", (topic_like, keep_top, *chunk)).rowcount
            if vector_seq is not None and vector_seq[1] is not None:
                db.execute("INSERT OR REPLACE INTO max_seq_id (segment_id, seq_id) VALUES (?, ?)", vector_seq)
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
    return removed


def keep_log_ahead(root: str | Path) -> bool:
    """Keep the log's numbering ahead of what every segment has applied; True if it had to.

    Chroma numbers a new log entry max(seq_id) + 1 over the whole log, and a segment skips
    entries at or below what it has applied. Deleting entries (a purge's, or Chroma's own when
    a purge drops an emptied collection) can leave the highest remaining number below what
    some other segment has applied: its collection's next writes would then be skipped, lost
    silently. An inert placeholder at the highest applied number keeps them ahead.
    """
    db_path = Path(root) / "chroma.sqlite3"
    if not db_path.exists():
        return False
    with _connect(db_path) as db:
        db.execute("BEGIN IMMEDIATE")
        try:
            (applied,) = db.execute("SELECT COALESCE(MAX(seq_id), 0) FROM max_seq_id").fetchone()
            (top,) = db.execute("SELECT COALESCE(MAX(seq_id), 0) FROM embeddings_queue").fetchone()
            topic = db.execute("SELECT topic FROM embeddings_queue ORDER BY seq_id DESC LIMIT 1").fetchone() or \
                db.execute("SELECT 'persistent://default/default/' || id FROM collections ORDER BY name LIMIT 1").fetchone()
            behind = int(applied) > int(top) and topic is not None
            if behind:
                db.execute("INSERT INTO embeddings_queue (seq_id, operation, topic, id) VALUES (?, ?, ?, ?)",
                           (int(applied), _DELETE_OP, topic[0], _PLACEHOLDER_ID))
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
    return behind


def _swap_segment(root: Path, segment: str) -> None:
    seg_dir, new_dir, old_dir = root / segment, root / (segment + _SEG_NEW), root / (segment + _SEG_OLD)
    if not new_dir.exists():
        return
    _remove_tree(old_dir)
    if seg_dir.exists():
        os.replace(seg_dir, old_dir)
    try:
        os.replace(new_dir, seg_dir)
    except BaseException:
        if old_dir.exists() and not seg_dir.exists():
            os.replace(old_dir, seg_dir)
        raise
    _fsync_dir(root)
    _remove_tree(old_dir)


# -- the HNSW files (hnswlib's persisted layout as Chroma writes it) --------------------------

_HEADER = struct.Struct("<iQQQQQQiiQQQdQ")
_HEADER_FIELDS = ("version", "offset_level0", "max_elements", "count", "size_per_element", "label_offset",
                  "offset_data", "max_level", "entry_point", "max_m", "max_m0", "m", "mult", "ef_construction")
_DELETED = 0x01


class _Hnsw:
    """A persisted hnswlib index: header.bin, data_level0.bin, length.bin, link_lists.bin and
    Chroma's id map (index_metadata.pickle). Loads only if every size and cross-reference is
    consistent, so a format change in a future Chroma makes the purge fall back to a rebuild."""

    def __init__(self, header: dict[str, Any], level0: np.ndarray, lengths: np.ndarray,
                 upper: list[np.ndarray], id_map: dict[str, Any], dim: int) -> None:
        self.header, self.level0, self.lengths, self.upper, self.id_map, self.dim = \
            header, level0, lengths, upper, id_map, dim

    # - loading and checking -

    @classmethod
    def load(cls, folder: Path, dim: int) -> _Hnsw | _EmptyHnsw:
        try:
            raw = (folder / "header.bin").read_bytes()
            level0_raw = (folder / "data_level0.bin").read_bytes()
            lengths = np.frombuffer((folder / "length.bin").read_bytes(), dtype="<f4").copy()
            links_raw = (folder / "link_lists.bin").read_bytes()
            if (folder / "index_metadata.pickle").exists():
                with open(folder / "index_metadata.pickle", "rb") as fh:
                    id_map = pickle.load(fh)  # Chroma's own file in the user's data dir
            else:
                id_map = None
        except (OSError, pickle.UnpicklingError, EOFError) as exc:
            raise _Unsupported(f"cannot read the HNSW segment: {exc}") from exc
        if len(raw) != _HEADER.size:
            raise _Unsupported(f"HNSW header is {len(raw)} bytes, expected {_HEADER.size}")
        h = dict(zip(_HEADER_FIELDS, _HEADER.unpack(raw)))
        if id_map is None:
            # Never persisted: every vector is still in the log (see _EmptyHnsw).
            if h["count"] != 0 or links_raw:
                raise _Unsupported("an HNSW segment with elements but no id map")
            return _EmptyHnsw(h)
        n, size = h["count"], h["size_per_element"]
        expect = {"version": 1, "offset_level0": 0, "offset_data": 4 + 4 * h["max_m0"],
                  "label_offset": 4 + 4 * h["max_m0"] + 4 * dim, "size_per_element": 4 + 4 * h["max_m0"] + 4 * dim + 8}
        bad = {k: (h[k], v) for k, v in expect.items() if h[k] != v}
        if bad or h["max_m0"] > 0xFFFF or h["max_m"] > 0xFFFF or n > h["max_elements"]:
            raise _Unsupported(f"unexpected HNSW header {bad or h}")
        # hnswlib writes the files at their preallocated size when it creates them and then
        # only the elements it changes, so they can be longer than ``count`` elements; the
        # rest is uninitialised memory and is dropped here.
        if len(level0_raw) < n * size or len(lengths) < n:
            raise _Unsupported("HNSW files are shorter than the element count")
        level0 = np.frombuffer(level0_raw, dtype=np.uint8, count=n * size).reshape(n, size).copy()
        lengths = lengths[:n].copy()
        upper, off, per_level = [], 0, 4 + 4 * h["max_m"]
        for _ in range(n):
            if off + 4 > len(links_raw):
                raise _Unsupported("link_lists.bin is truncated")
            (nbytes,) = struct.unpack_from("<I", links_raw, off)
            off += 4
            if nbytes % per_level or off + nbytes > len(links_raw):
                raise _Unsupported("link_lists.bin has an unexpected record")
            upper.append(np.frombuffer(links_raw, dtype="<u4", count=nbytes // 4, offset=off)
                         .reshape(nbytes // per_level, per_level // 4).copy())
            off += nbytes
        if off != len(links_raw):
            raise _Unsupported("link_lists.bin has trailing bytes")
        keys = {"id_to_label", "label_to_id", "total_elements_added"}
        if not isinstance(id_map, dict) or not keys <= set(id_map):
            raise _Unsupported("unexpected index_metadata.pickle")
        index = cls(h, level0, lengths, upper, id_map, dim)
        index._check()
        return index

    def _check(self) -> None:
        n, h = self.header["count"], self.header
        counts, flags, links = self._level0_lists()
        if np.any(counts > h["max_m0"]) or np.any(flags & (0xFF ^ _DELETED)):
            raise _Unsupported("unexpected level-0 link list header")
        mask = np.arange(h["max_m0"])[None, :] < counts[:, None]
        if n and np.any(links[mask] >= n):
            raise _Unsupported("level-0 link out of range")
        for lists in self.upper:
            if len(lists) and (np.any((lists[:, 0] & 0xFFFF) > h["max_m"]) or np.any(lists[:, 1:] >= max(n, 1))):
                raise _Unsupported("upper-level link out of range")
        live = set(self.labels[(flags & _DELETED) == 0].tolist())
        if set(self.id_map["label_to_id"]) != live or len(self.id_map["id_to_label"]) != len(live):
            raise _Unsupported("the id map does not match the live HNSW elements")
        if n and not (0 <= h["entry_point"] < n and len(self.upper[h["entry_point"]]) == h["max_level"]):
            raise _Unsupported("unexpected HNSW entry point")

    # - views -

    @property
    def labels(self) -> np.ndarray:
        off = self.header["label_offset"]
        return self.level0[:, off:off + 8].copy().view("<u8")[:, 0]

    @property
    def vectors(self) -> np.ndarray:
        off = self.header["offset_data"]
        return self.level0[:, off:off + 4 * self.dim].copy().view("<f4")

    def _level0_lists(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        head = self.level0[:, :4].copy().view("<u4")[:, 0]
        links = self.level0[:, 4:self.header["offset_data"]].copy().view("<u4")
        return (head & 0xFFFF).astype(np.int64), (head >> 16) & 0xFF, links.astype(np.int64)

    # - the edit -

    def without(self, ids: Sequence[str], space: str) -> tuple[int, int]:
        """Remove the elements of ``ids`` and every tombstoned element; repair the links that
        pointed to them. Returns (elements removed, link lists repaired)."""
        h, n = self.header, self.header["count"]
        counts, flags, links0 = self._level0_lists()
        drop_labels = {self.id_map["id_to_label"][i] for i in ids if i in self.id_map["id_to_label"]}
        keep = ((flags & _DELETED) == 0) & ~np.isin(self.labels, np.fromiter(drop_labels, dtype=np.uint64,
                                                                              count=len(drop_labels)))
        removed = int(n - keep.sum())
        for i in ids:
            label = self.id_map["id_to_label"].pop(i, None)
            if label is not None:
                self.id_map["label_to_id"].pop(label, None)
            if isinstance(self.id_map.get("id_to_seq_id"), dict):
                self.id_map["id_to_seq_id"].pop(i, None)
        if removed == 0:
            return 0, 0
        vectors = self.vectors
        dist = _distance(space)
        levels = np.array([len(u) for u in self.upper], dtype=np.int64)
        repaired = 0
        # Level 0, then every upper level: each kept node drops its links to removed nodes and
        # replaces them with the nearest kept nodes reachable through those removed ones.
        graphs = [(links0, counts)]
        for level in range(1, int(levels.max(initial=0)) + 1):
            lv = np.zeros((n, h["max_m"]), dtype=np.int64)
            cn = np.zeros(n, dtype=np.int64)
            for node in np.nonzero(levels >= level)[0]:
                row = self.upper[node][level - 1]
                cn[node] = row[0] & 0xFFFF
                lv[node] = row[1:]
            graphs.append((lv, cn))
        new_graphs = []
        entry = int(h["entry_point"])
        for level, (lv, cn) in enumerate(graphs):
            member = keep & (levels >= level)
            lv, cn, fixed = _repair(lv, cn, member, keep, vectors, dist)
            repaired += fixed
            if level == 0:
                start = entry if keep[entry] else int(np.argmax(np.where(keep, levels, -1)))
                _ensure_reachable(lv, cn, member, start, vectors, dist)
            new_graphs.append((lv, cn))
        # Compact: kept elements get new internal ids 0..k-1 in their old order.
        order = np.nonzero(keep)[0]
        remap = np.full(n, -1, dtype=np.int64)
        remap[order] = np.arange(len(order))
        k = len(order)
        level0 = np.zeros((k, h["size_per_element"]), dtype=np.uint8)
        level0[:, h["offset_data"]:] = self.level0[order, h["offset_data"]:]
        heads = np.zeros(k, dtype="<u4")
        table = np.zeros((k, h["max_m0"]), dtype="<u4")
        l0, c0 = new_graphs[0]
        for new, old in enumerate(order):
            nbrs = remap[l0[old, :c0[old]]]
            heads[new] = len(nbrs)
            table[new, :len(nbrs)] = nbrs
        level0[:, :4] = heads.view(np.uint8).reshape(k, 4)
        level0[:, 4:h["offset_data"]] = table.view(np.uint8).reshape(k, 4 * h["max_m0"])
        upper = []
        for old in order:
            lists = np.zeros((levels[old], 1 + h["max_m"]), dtype="<u4")
            for level in range(1, levels[old] + 1):
                ll, cc = new_graphs[level]
                nbrs = remap[ll[old, :cc[old]]]
                lists[level - 1, 0] = len(nbrs)
                lists[level - 1, 1:1 + len(nbrs)] = nbrs
            upper.append(lists)
        self.level0, self.lengths, self.upper = level0, self.lengths[order].copy(), upper
        if k:
            top = levels[order]
            entry = int(remap[h["entry_point"]]) if keep[h["entry_point"]] else int(np.argmax(top))
            h.update(count=k, entry_point=entry, max_level=int(top[entry]))
        else:
            h.update(count=0, entry_point=-1, max_level=-1)
        return removed, repaired

    # - writing -

    def save(self, folder: Path) -> None:
        folder.mkdir(parents=True)
        h = self.header
        parts = {
            "header.bin": _HEADER.pack(*(h[f] for f in _HEADER_FIELDS)),
            "data_level0.bin": self.level0.tobytes(),
            "length.bin": self.lengths.astype("<f4").tobytes(),
            "link_lists.bin": b"".join(struct.pack("<I", u.nbytes) + u.astype("<u4").tobytes() for u in self.upper),
            # Chroma reads this with serde_pickle, which handles protocols up to 5; 3 is what it writes.
            "index_metadata.pickle": pickle.dumps(self.id_map, protocol=3),
        }
        for name, data in parts.items():
            with open(folder / name, "wb") as fh:
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
        _fsync_dir(folder)


class _EmptyHnsw:
    """A segment Chroma has never persisted: its vectors are only in the log, which Chroma
    replays into a new index every time it loads the segment, and each time it re-creates the
    files from uninitialised memory (see _trim_segment_tails). Saved as the same empty index
    without the garbage; or, with ``persisted`` (nothing left to index), as a persisted empty
    index with an empty id map, which Chroma loads instead of re-creating."""

    def __init__(self, header: dict[str, Any]) -> None:
        self.header = header
        self.persisted = False

    def without(self, ids: Sequence[str], space: str) -> tuple[int, int]:
        return 0, 0

    def save(self, folder: Path) -> None:
        folder.mkdir(parents=True)
        h = dict(self.header, count=0, entry_point=-1, max_level=-1)
        parts = {"header.bin": _HEADER.pack(*(h[f] for f in _HEADER_FIELDS)), "data_level0.bin": b"",
                 "length.bin": b"", "link_lists.bin": b""}
        if self.persisted:
            parts["index_metadata.pickle"] = pickle.dumps(
                {"dimensionality": None, "total_elements_added": 0, "max_seq_id": None, "id_to_label": {},
                 "label_to_id": {}, "id_to_seq_id": {}}, protocol=3)
        for name, data in parts.items():
            with open(folder / name, "wb") as fh:
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
        _fsync_dir(folder)


def _distance(space: str):
    """hnswlib's distance for ``space``: rows of ``a`` against one vector ``b``."""
    # Rows of ``a`` against ``b``: one vector, or as many rows as ``a``.
    if space == "l2":
        return lambda a, b: np.einsum("ij,ij->i", a - b, a - b)
    # "ip" and "cosine" (hnswlib stores cosine vectors unit-length and uses inner product)
    return lambda a, b: 1.0 - (a @ b if b.ndim == 1 else np.einsum("ij,ij->i", a, b))


def _repair(links: np.ndarray, counts: np.ndarray, member: np.ndarray, keep: np.ndarray,
            vectors: np.ndarray, dist) -> tuple[np.ndarray, np.ndarray, int]:
    """One level's link lists without removed nodes. A kept node keeps its kept links (the ones
    hnswlib chose) and replaces each lost one with the nearest candidate among the kept
    neighbours of its removed neighbours (further through chains of removed nodes only when
    that gives too few). The work is proportional to the links into removed nodes."""
    cap = links.shape[1]
    valid = np.arange(cap)[None, :] < counts[:, None]
    lost = valid & ~keep[links]
    affected = np.nonzero(member & lost.any(axis=1))[0]
    links, counts = links.copy(), counts.copy()
    seen = np.zeros(len(keep), dtype=bool)
    for node in affected.tolist():
        row = links[node, :counts[node]]
        ok = keep[row]
        good, gone = row[ok], row[~ok]
        need = min(len(gone), cap - len(good))
        seen[good] = True
        seen[node] = True
        cand = np.empty(0, dtype=links.dtype)
        frontier = gone
        for _ in range(4):
            hop = links[frontier][valid[frontier]]
            fresh = np.unique(hop[member[hop] & ~seen[hop]])
            seen[fresh] = True
            cand = np.concatenate([cand, fresh])
            if len(cand) >= need or not len(hop):
                break
            frontier = np.unique(hop[~keep[hop]])[:256]
        seen[good] = False
        seen[node] = False
        seen[cand] = False
        if need > 0 and len(cand):
            if len(cand) > need:
                d = dist(vectors[cand], vectors[node])
                cand = cand[np.argpartition(d, need - 1)[:need]]
            good = np.concatenate([good, cand])
        links[node, :len(good)] = good
        links[node, len(good):] = 0
        counts[node] = len(good)
    return links, counts, len(affected)


def _ensure_reachable(links: np.ndarray, counts: np.ndarray, member: np.ndarray, start: int,
                      vectors: np.ndarray, dist) -> None:
    """Make every kept level-0 node reachable from ``start`` (where searches enter level 0 in the
    worst case): an unreachable node gets a link from its nearest reachable neighbour, in a free
    slot or in place of that neighbour's farthest link to a node with other incoming links."""
    cap = links.shape[1]
    for _ in range(8):
        reached = _reachable(links, counts, start)
        missing = np.nonzero(member & ~reached)[0]
        if not len(missing):
            return
        valid = np.arange(cap)[None, :] < counts[:, None]
        indegree = np.bincount(links[valid & member[:, None]], minlength=len(member))
        progress = False
        for node in missing.tolist():
            row = links[node, :counts[node]]
            hosts = row[reached[row]]
            if not len(hosts):
                hosts = np.nonzero(reached & member)[0]
            d = dist(vectors[hosts], vectors[node])
            for host in hosts[np.argsort(d, kind="stable")][:8].tolist():
                if counts[host] < cap:
                    links[host, counts[host]] = node
                    counts[host] += 1
                else:
                    lst = links[host, :counts[host]]
                    far = lst[np.argsort(-dist(vectors[lst], vectors[host]), kind="stable")]
                    victim = next((v for v in far.tolist() if indegree[v] > 1), None)
                    if victim is None:
                        continue
                    links[host, :counts[host]] = np.where(lst == victim, node, lst)
                    indegree[victim] -= 1
                indegree[node] += 1
                progress = True
                break
        if not progress:
            return


def _reachable(links: np.ndarray, counts: np.ndarray, start: int) -> np.ndarray:
    reached = np.zeros(len(counts), dtype=bool)
    if not 0 <= start < len(counts):
        return reached
    valid = np.arange(links.shape[1])[None, :] < counts[:, None]
    reached[start] = True
    frontier = np.array([start])
    while len(frontier):
        nxt = links[frontier][valid[frontier]]
        nxt = np.unique(nxt[~reached[nxt]])
        reached[nxt] = True
        frontier = nxt
    return reached


# -- mechanism 2: rebuild through the public API ---------------------------------------------


def _rebuild(client: Any, collection: Any, ids: list[str], root: Path | None, batch: int,
             report: PurgeReport) -> Any:
    name = collection.name
    tag = uuid.uuid4().hex[:8]
    new_name, old_name = f"{name}{_NEW}{tag}", f"{name}{_OLD}{tag}"
    state = {"mechanism": "rebuild", "name": name, "ids": ids, "new": new_name, "old": old_name}
    _write_marker(root, {"phase": "copying", **state})
    with _phase(report, "copy"):
        fresh = _copy_rows(client, collection, new_name, batch, report)
    with _phase(report, "swap"):
        _write_marker(root, {"phase": "swapping", **state})
        collection.modify(name=old_name)
        try:
            fresh.modify(name=name)
        except BaseException:
            collection.modify(name=name)  # the original keeps serving; the copy is dropped later
            raise
        _write_marker(root, {"phase": "scrubbing", **state})
        client.delete_collection(old_name)
        fresh = client.get_collection(name, embedding_function=None)
    report.mechanism = "rebuild"
    if root is not None:
        with _phase(report, "scrub"):
            _trim_segment_tails(root, fresh)
            scrub_directory(root, report)
        _clear_marker(root)
    return fresh


def _copy_rows(client: Any, source: Any, new_name: str, batch: int, report: PurgeReport) -> Any:
    """Copy every row of ``source`` into a new collection with the same metadata and
    configuration. The copy's HNSW index persists as it fills (sync threshold lowered during
    the copy, then restored), so that Chroma does not re-create its files from uninitialised
    memory when it next loads it (see _EmptyHnsw)."""
    hnsw = _hnsw_config(source)
    keep = source.get(include=[])["ids"]
    original = hnsw.get("sync_threshold")
    extra = {}
    if hnsw:
        if original:
            hnsw["sync_threshold"] = max(2, min(int(original), batch, len(keep) or 2))
        extra = {"configuration": {"hnsw": hnsw}}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        fresh = client.create_collection(new_name, embedding_function=None, metadata=source.metadata, **extra)
    for chunk in _chunks(keep, batch):
        _add_rows(fresh, source.get(ids=list(chunk), include=["embeddings", "documents", "metadatas"]))
    if len(keep) == 1 and original:  # below any threshold Chroma accepts: write it once more
        _add_rows(fresh, source.get(ids=keep, include=["embeddings", "documents", "metadatas"]), upsert=True)
    if original:
        _set_sync_threshold(fresh, original)
    report.kept = fresh.count()
    if report.kept != len(keep):
        client.delete_collection(new_name)
        raise PurgeError(f"purge aborted: copied {report.kept} of {len(keep)} rows; nothing was swapped")
    return fresh


def _add_rows(target: Any, got: dict[str, Any], *, upsert: bool = False) -> None:
    """Add rows as ``get`` returned them; rows without a document or metadata go in their own
    groups because Chroma's ``add`` takes those fields for all rows of a call or for none."""
    n = len(got["ids"])
    docs = got.get("documents")
    metas = got.get("metadatas")
    docs = list(docs) if docs is not None else [None] * n
    metas = list(metas) if metas is not None else [None] * n
    vectors = np.asarray(got["embeddings"], dtype=np.float32)
    groups: dict[tuple[bool, bool], list[int]] = {}
    for i in range(n):
        groups.setdefault((docs[i] is not None, bool(metas[i])), []).append(i)
    write = target.upsert if upsert else target.add
    for (has_doc, has_meta), rows in groups.items():
        write(ids=[got["ids"][i] for i in rows], embeddings=vectors[rows],
                   documents=[docs[i] for i in rows] if has_doc else None,
                   metadatas=[metas[i] for i in rows] if has_meta else None)


# -- scrubbing the files ---------------------------------------------------------------------


def _trim_segment_tails(root: Path, collection: Any) -> None:
    """Zero and cut what lies past the stored elements of a collection's HNSW files.

    hnswlib (Chroma's fork) creates ``data_level0.bin`` and ``length.bin`` by writing its
    freshly malloc'd, uninitialised buffers at their full preallocated size, and afterwards
    writes only changed elements in place. Until elements overwrite them, the bytes past the
    last element are whatever the process heap held: in a process that has just handled
    erased rows, possibly those rows. Chroma creates the files when a collection gets its
    first vector and again each time it loads an index it never persisted; it never reads
    past the element count it keeps in the header, so cutting there is safe with the client
    open. The collection is read once first so that Chroma has loaded (and re-created) them."""
    collection.get(limit=1, include=["embeddings"])
    with _connect(root / "chroma.sqlite3") as db:
        rows = db.execute("SELECT id FROM segments WHERE collection = ? AND scope = 'VECTOR'",
                          (str(collection.id),)).fetchall()
    for (segment,) in rows:
        folder = root / segment
        try:
            h = dict(zip(_HEADER_FIELDS, _HEADER.unpack((folder / "header.bin").read_bytes())))
        except (OSError, struct.error):
            continue
        for name, size in (("data_level0.bin", h["count"] * h["size_per_element"]), ("length.bin", h["count"] * 4)):
            _cut(folder / name, size)


def _cut(path: Path, size: int) -> None:
    try:
        total = path.stat().st_size
    except OSError:
        return
    if total <= size:
        return
    with open(path, "r+b", buffering=0) as fh:
        fh.seek(size)
        left = total - size
        zeros = b"\0" * (1 << 20)
        while left > 0:
            left -= fh.write(zeros[:min(left, len(zeros))])
        fh.truncate(size)
        os.fsync(fh.fileno())


def scrub_directory(root: str | Path, report: PurgeReport | None = None) -> PurgeReport:
    """Remove what Chroma leaves behind of deleted data in ``root``: shred segment directories
    no segment owns, rebuild FTS indexes from their content tables, VACUUM (no free page left)
    and truncate a WAL. Safe with a client open: it touches only unowned directories, and
    SQLite's locks order it with Chroma's own connections."""
    report = report or PurgeReport()
    root = Path(root)
    db_path = root / "chroma.sqlite3"
    if not db_path.exists():
        return report
    with _connect(db_path) as db:
        owned = {row[0] for row in db.execute("SELECT id FROM segments")}
        report.segments_removed = _remove_orphan_segments(root, owned)
        _rebuild_fts(db)
        db.execute("VACUUM")
        if db.execute("PRAGMA journal_mode").fetchone()[0].lower() == "wal":
            db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        report.free_pages_after = db.execute("PRAGMA freelist_count").fetchone()[0]
    report.sqlite_bytes_after = _size(db_path)
    report.scrubbed = report.free_pages_after == 0
    if not report.scrubbed:
        raise PurgeError(f"VACUUM left {report.free_pages_after} free pages in {db_path}")
    return report


@contextmanager
def _connect(db_path: Path) -> Iterator[sqlite3.Connection]:
    db = sqlite3.connect(db_path, timeout=60, isolation_level=None)
    try:
        # Whatever is freed from now on is zeroed, not merely unlinked from its b-tree.
        db.execute("PRAGMA secure_delete = ON")
        yield db
    finally:
        db.close()


def _rebuild_fts(db: sqlite3.Connection) -> None:
    """FTS5 deletes only add tombstones; the postings (trigrams with positions, enough to
    rebuild the text) stay until a merge. 'rebuild' regenerates the index from the content
    table, which holds only live documents."""
    tables = [r[0] for r in db.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND sql LIKE 'CREATE VIRTUAL TABLE%USING fts5%'")]
    for table in tables:
        quoted = '"' + table.replace('"', '""') + '"'
        db.execute(f"INSERT INTO {quoted}({quoted}) VALUES ('rebuild')")


def _remove_orphan_segments(root: Path, owned: set[str]) -> list[str]:
    removed = []
    for entry in sorted(root.iterdir()):
        base = entry.name.split(".", 1)[0]
        leftover = entry.name != base and entry.name in (base + _SEG_NEW, base + _SEG_OLD)
        if entry.is_dir() and _UUID.match(base) and (leftover or entry.name not in owned):
            _remove_tree(entry)
            removed.append(entry.name)
    if removed:
        _fsync_dir(root)
    return removed


def _remove_tree(folder: Path) -> None:
    if not folder.exists():
        return
    for path in sorted(folder.rglob("*")):
        if path.is_file():
            _shred(path)
    shutil.rmtree(folder)


def _shred(path: Path) -> None:
    """Overwrite a file with zeros before it is unlinked (best effort against remanence on
    filesystems that overwrite in place; docs/erasure.md says what this cannot promise)."""
    try:
        size = path.stat().st_size
        with open(path, "r+b", buffering=0) as fh:
            zeros = b"\0" * (1 << 20)
            left = size
            while left > 0:
                left -= fh.write(zeros[:min(left, len(zeros))])
            os.fsync(fh.fileno())
    except OSError as exc:  # pragma: no cover - the unlink still removes it from the directory
        log.warning("could not overwrite %s before removing it: %s", path, exc)


def _fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:  # pragma: no cover - e.g. Windows
        return
    try:
        os.fsync(fd)
    except OSError:  # pragma: no cover
        pass
    finally:
        os.close(fd)


# -- crash recovery --------------------------------------------------------------------------


def recover(root: str | Path) -> bool:
    """Finish an interrupted purge of the directory ``root``; returns True if there was one.

    Call it before a client opens ``root`` (``Memory.open`` should, when :func:`pending`).
    First the directory is made consistent: a surgery whose new HNSW segment was complete gets
    it swapped in (after removing the log entries it no longer matches); an incomplete one is
    discarded. A rebuild that lost the live collection name gives it back to the complete copy
    (or else to the original); leftover copies are dropped. Then the purge runs again for the
    same ids, which finishes whatever was left, and the directory is scrubbed.
    """
    root = Path(root)
    marker = _settle(root)
    if marker is None:
        return False
    import chromadb
    from chromadb.config import Settings

    client = chromadb.PersistentClient(path=str(root), settings=Settings(anonymized_telemetry=False))
    try:
        name = marker.get("name")
        names = {c.name for c in client.list_collections()}
        if marker.get("mechanism") == "rebuild" and name and name not in names:
            new, old = marker.get("new"), marker.get("old")
            if marker.get("phase") in ("swapping", "scrubbing") and new in names:
                client.get_collection(new, embedding_function=None).modify(name=name)
            elif old in names:
                client.get_collection(old, embedding_function=None).modify(name=name)
            names = {c.name for c in client.list_collections()}
        for leftover in sorted(names):
            if name and leftover.startswith((name + _NEW, name + _OLD)):
                client.delete_collection(leftover)
        if name and name in names:
            client, _, _ = purge_collection(client, client.get_collection(name, embedding_function=None),
                                            marker.get("ids") or [], compact=True)
        scrub_directory(root)
    finally:
        client.close()
    _clear_marker(root)
    return True


def _settle(root: Path) -> dict[str, Any] | None:
    """Make the files of an interrupted surgery consistent (no client may have them open): a
    complete new HNSW segment is swapped in, after the log entries it no longer matches are
    removed, unless Chroma has persisted the old segment since (then it is stale); anything
    else is discarded. Returns the marker, which stays."""
    marker = _read_marker(root)
    segment = (marker or {}).get("segment")
    if marker and marker.get("mechanism") == "surgery" and segment:
        new_dir = root / (segment + _SEG_NEW)
        if marker.get("phase") == "built" and new_dir.exists():
            with _connect(root / "chroma.sqlite3") as db:
                row = db.execute("SELECT seq_id FROM max_seq_id WHERE segment_id = ?", (segment,)).fetchone()
            if int(row[0] if row else 0) == int(marker.get("vector_seq", -1)):
                _purge_queue(root / "chroma.sqlite3", "%/" + marker["collection"], marker.get("remove", []),
                             int(marker.get("applied", 0)), (segment, marker.get("set_vector_seq")))
                _swap_segment(root, segment)
        _remove_tree(new_dir)
        _remove_tree(root / (segment + _SEG_OLD))
    return marker


def _write_marker(root: Path | None, state: dict[str, Any], name: str = MARKER) -> None:
    """Replace the marker file ``name`` in ``root`` durably (the partitioned backend keeps its
    own, with the same guarantees)."""
    if root is None:
        return
    tmp = root / (name + ".tmp")
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump(state, fh)
        fh.flush()
        os.fsync(fh.fileno())
    old = root / name
    if old.exists():
        _shred(old)  # it may hold the erased ids
    os.replace(tmp, old)
    _fsync_dir(root)


def _read_marker(root: Path, name: str = MARKER) -> dict[str, Any] | None:
    try:
        return json.loads((root / name).read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError):
        return {"phase": "unknown"}


def _clear_marker(root: Path, name: str = MARKER) -> None:
    """Shred and remove the marker file ``name`` (it may hold erased ids)."""
    path = root / name
    if path.exists():
        _shred(path)
        path.unlink()
        _fsync_dir(root)


# -- evidence: scanning a directory for remnants ---------------------------------------------


@dataclass
class Remnants:
    """What :func:`find_remnants` found. ``texts``/``vectors_*`` count distinct needles found
    anywhere; ``files`` maps each file (relative path) to its own counts."""

    texts: int = 0
    vectors_exact: int = 0
    vectors_near: int = 0
    files_scanned: int = 0
    bytes_scanned: int = 0
    files: dict[str, dict[str, int]] = field(default_factory=dict)

    @property
    def clean(self) -> bool:
        """True when nothing was found."""
        return not (self.texts or self.vectors_exact or self.vectors_near)


_FRAGMENT = 16


def find_remnants(root: str | Path, texts: Sequence[str] = (), vectors: Any = None, *,
                  exclude: Sequence[str] = (), ulps: int = 64) -> Remnants:
    """Byte-scan every file under ``root`` for copies of ``texts`` and ``vectors``.

    Texts (UTF-8, at least 16 bytes each) are found by any 16-byte fragment (taken every 8
    bytes), so a text that SQLite split across overflow pages is still found; fragments that
    also occur in one of the ``exclude`` texts (rows that legitimately remain) are not
    searched, and a text left with no fragment of its own raises ValueError. Vectors are
    found by up to four windows of 64 floats, each around one of the vector's largest
    components, as float32 in any byte alignment: ``vectors_exact`` counts bit-identical
    copies of the vectors as given, ``vectors_near`` copies within ``ulps`` units in the last
    place of the vectors or of their unit-normalised form (HNSW stores cosine vectors
    normalised). It is the evidence behind docs/erasure.md and the erasure tests; it does not
    decode the FTS5 index, whose postings are checked by rebuilding it (see the tests).
    """
    root = Path(root)
    frags = _text_fragments(texts, exclude)
    given, unit, offsets = _vector_windows(vectors)
    windows = np.concatenate([given, unit])  # given forms first, then unit forms
    offsets = np.concatenate([offsets, offsets])
    count = len(given)
    found = Remnants()
    seen_t: set[int] = set()
    seen_e: set[int] = set()
    seen_n: set[int] = set()
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        data = path.read_bytes()
        found.files_scanned += 1
        found.bytes_scanned += len(data)
        t = _scan_texts(data, frags)
        best = _scan_vectors(data, windows, offsets, ulps)
        e = {j for j, gap in best.items() if gap == 0 and j < count}
        n = {j % count for j in best}
        if t or e or n:
            found.files[str(path.relative_to(root))] = {"texts": len(t), "vectors_exact": len(e),
                                                        "vectors_near": len(n)}
        seen_t |= t
        seen_e |= e
        seen_n |= n
    found.texts, found.vectors_exact, found.vectors_near = len(seen_t), len(seen_e), len(seen_n)
    return found


def _text_fragments(texts: Sequence[str], exclude: Sequence[str] = ()) -> dict[int, list[tuple[bytes, int]]]:
    shared = b"\n".join(t.encode("utf-8") for t in exclude)
    frags: dict[int, list[tuple[bytes, int]]] = {}
    for i, text in enumerate(texts):
        raw = text.encode("utf-8")
        if len(raw) < _FRAGMENT:
            raise ValueError(f"texts to scan for must be at least {_FRAGMENT} bytes of UTF-8: {text!r}")
        starts = sorted(set(range(0, len(raw) - _FRAGMENT + 1, _FRAGMENT // 2)) | {len(raw) - _FRAGMENT})
        own = [raw[s:s + _FRAGMENT] for s in starts if raw[s:s + _FRAGMENT] not in shared]
        if not own:
            raise ValueError(f"every fragment of {text!r} also occurs in an excluded text")
        for frag in own:
            frags.setdefault(int.from_bytes(frag[:8], "little"), []).append((frag, i))
    return frags


def _scan_texts(data: bytes, frags: dict[int, list[tuple[bytes, int]]]) -> set[int]:
    hits: set[int] = set()
    if not frags or len(data) < _FRAGMENT:
        return hits
    keys = np.sort(np.fromiter(frags, dtype=np.uint64, count=len(frags)))
    for o in range(8):
        words = np.frombuffer(data, dtype="<u8", count=(len(data) - o) // 8, offset=o)
        idx = np.minimum(np.searchsorted(keys, words), len(keys) - 1)
        for pos in (np.nonzero(keys[idx] == words)[0] * 8 + o).tolist():
            for frag, i in frags[int.from_bytes(data[pos:pos + 8], "little")]:
                if data[pos:pos + _FRAGMENT] == frag:
                    hits.add(i)
    return hits


_WINDOW = 64  # floats compared around each key


def _vector_windows(vectors: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Up to four windows of 64 consecutive floats per vector (the whole vector if shorter),
    as int32 bits, in the given and the unit-normalised form, and where each window's key sits
    in it. A key is one of the vector's largest components, so it is distinctive even in
    sparse vectors; the window around it makes a match specific to that vector."""
    if vectors is None or len(vectors) == 0:
        empty = np.empty((0, 4, 0), dtype=np.int32)
        return empty, empty, np.empty((0, 4), dtype=np.int64)
    v = np.asarray(vectors, dtype=np.float32)
    n, d = v.shape
    w = min(d, _WINDOW)
    norms = np.linalg.norm(v, axis=1, keepdims=True)
    unit = (v / np.where(norms == 0, 1, norms)).astype(np.float32)
    keys = np.zeros((n, 4), dtype=np.int64)
    for i in range(n):
        order = np.argsort(-np.abs(v[i]), kind="stable")
        chosen = [p for p in order[:d].tolist() if v[i, p] != 0][:4] or [0]
        keys[i] = (chosen * 4)[:4]
    starts = np.clip(keys - w // 2, 0, d - w)
    idx = starts[:, :, None] + np.arange(w)[None, None, :]

    def windows(a: np.ndarray) -> np.ndarray:
        return np.take_along_axis(a[:, None, :], idx, axis=2).copy().view(np.int32)

    return windows(v), windows(unit), keys - starts


def _scan_vectors(data: bytes, windows: np.ndarray, offsets: np.ndarray, ulps: int) -> dict[int, int]:
    """For each vector with a window found in ``data`` (every float within ``ulps``): the
    smallest distance in units in the last place seen (0 means a bit-identical copy)."""
    best: dict[int, int] = {}
    if windows.size == 0 or len(data) < 4 * windows.shape[2]:
        return best
    n, per, w = windows.shape
    flat = windows.reshape(n * per, w).astype(np.int64)
    key_at = offsets.reshape(-1)
    first = flat[np.arange(n * per), key_at]
    order = np.argsort(first, kind="stable")
    sorted_first = first[order]
    top = len(sorted_first) - 1
    for o in range(4):
        count = (len(data) - o) // 4
        vals = np.frombuffer(data, dtype="<i4", count=count, offset=o).astype(np.int64)
        idx = np.searchsorted(sorted_first, vals)
        near = np.abs(sorted_first[np.minimum(idx, top)] - vals) <= ulps
        near |= (idx > 0) & (np.abs(vals - sorted_first[np.maximum(idx - 1, 0)]) <= ulps)
        for pos in np.nonzero(near)[0].tolist():
            lo = np.searchsorted(sorted_first, vals[pos] - ulps, side="left")
            hi = np.searchsorted(sorted_first, vals[pos] + ulps, side="right")
            for j in order[lo:hi].tolist():
                start = pos - int(key_at[j])
                if start < 0 or start + w > count:
                    continue
                gap = int(np.abs(vals[start:start + w] - flat[j]).max())
                if gap <= ulps:
                    best[j // per] = min(gap, best.get(j // per, gap))
    return best


# -- small helpers ---------------------------------------------------------------------------


def _chunks(items: Sequence[str], size: int) -> Iterator[Sequence[str]]:
    for start in range(0, len(items), size):
        yield items[start:start + size]


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


@contextmanager
def _phase(report: PurgeReport, name: str) -> Iterator[None]:
    start = time.perf_counter()
    try:
        yield
    finally:
        took = time.perf_counter() - start
        report.seconds[name] = round(report.seconds.get(name, 0.0) + took, 4)


def fts_is_clean(db_path: Path, scratch: Path) -> bool:
    """True when the FTS index equals one rebuilt from the live documents."""
    copy = scratch / "fts-check.sqlite3"
    shutil.copyfile(db_path, copy)
    db = sqlite3.connect(copy)
    try:
        before = db.execute("SELECT id, block FROM embedding_fulltext_search_data ORDER BY id").fetchall()
        db.execute("INSERT INTO embedding_fulltext_search(embedding_fulltext_search) VALUES ('rebuild')")
        db.commit()
        after = db.execute("SELECT id, block FROM embedding_fulltext_search_data ORDER BY id").fetchall()
    finally:
        db.close()
        copy.unlink()
    return before == after
