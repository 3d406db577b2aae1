"""The surgery: the fast physical erasure, O(erased rows + file size), by editing the closed
store's files.

Close the client so that no Chroma code holds the files, rewrite the HNSW segment without the
erased (and all other tombstoned) elements, repairing the graph links around them, delete the
log entries of erased and dead rows, rebuild the FTS index, VACUUM, re-open the client, make
Chroma persist an index it had never persisted, and check the survivors. It edits Chroma's
on-disk formats, so it runs only on the chromadb releases it is tested on
(:mod:`memwarden.memory.compaction.versions`), after checking every structural invariant it
relies on; otherwise, or when another client in the process shares the store, the purge
falls back to the rebuild.
"""

from __future__ import annotations

import logging
import os
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memwarden.memory.compaction import marker, verify, versions
from memwarden.memory.compaction.config import hnsw_config, set_sync_threshold, space_of
from memwarden.memory.compaction.files import connect, fsync_dir, remove_tree
from memwarden.memory.compaction.hnsw import HNSW_SEGMENT, EmptyHnsw, HnswIndex, Unsupported
from memwarden.memory.compaction.rebuild import add_rows
from memwarden.memory.compaction.repair import remove_elements
from memwarden.memory.compaction.report import PurgeError, PurgeReport, phase
from memwarden.memory.compaction.scrub import SEG_NEW, SEG_OLD, scrub_directory, trim_segment_tails
from memwarden.memory.compaction.wal import DELETE_OP, PLACEHOLDER_ID, purge_queue

log = logging.getLogger("memwarden.memory.compaction")


def try_surgery(client: Any, collection: Any, ids: list[str], root: Path, report: PurgeReport,
                *, strict: bool) -> tuple[Any, Any, bool]:
    """Run the surgery if it is safe; returns (client, collection, done). Not done: the
    client and collection are usable and nothing was changed (``report.fallback_reason`` says
    why). ``strict``: raise PurgeError instead."""
    name = collection.name
    space = space_of(collection)
    reason = versions.files_editable()
    if reason is not None:
        if strict:
            raise PurgeError(f"surgery not possible: {reason}", client=client, collection=collection)
        report.fallback_reason = reason
        log.info("memwarden purge: falling back to a rebuild (%s)", reason)
        return client, collection, False
    expected = verify.survivors(collection)
    settings = client.get_settings()
    with phase(report, "close"):
        reason = _close_exclusively(client, settings)
    if reason is None:
        try:
            settle(root)
            plan = _plan_surgery(root, str(collection.id), ids, space, len(expected.ids))
        except Unsupported as exc:
            reason = str(exc)
        except (sqlite3.Error, OSError, ValueError, KeyError) as exc:  # read-only so far: safe to fall back
            reason = f"{type(exc).__name__}: {exc}"
    if reason is not None:
        client = reopen(client, settings)
        collection = client.get_collection(name, embedding_function=None)
        if strict:
            raise PurgeError(f"surgery not possible: {reason}", client=client, collection=collection)
        report.fallback_reason = reason
        log.info("memwarden purge: falling back to a rebuild (%s)", reason)
        return client, collection, False
    marker.write(root, {"phase": "building", "mechanism": "surgery", "name": name, "ids": ids,
                        "segment": plan.segment})
    try:
        never_persisted = _surgery(root, plan, report, name)
    except Exception as exc:
        try:
            settle(root)
        except Exception:  # the marker stays; the next purge or recover() settles
            log.warning("memwarden purge: could not settle %s now", root, exc_info=True)
        client = reopen(client, settings)
        raise PurgeError(f"physical erasure interrupted ({type(exc).__name__}: {exc}); the rows are deleted, "
                         "the next purge or recover() finishes it", client=client,
                         collection=client.get_collection(name, embedding_function=None)) from exc
    with phase(report, "reopen"):
        client = reopen(client, settings)
        collection = client.get_collection(name, embedding_function=None)
        report.kept = collection.count()
        if never_persisted and report.kept:
            client, collection = _persist_index(client, collection, settings)
        trim_segment_tails(root, collection)
    with phase(report, "verify"):
        problem = verify.check(collection, expected, ids)
    if problem is not None:
        # Kept, and marked so that the next purge (or recover()) redoes it by a rebuild.
        marker.write(root, {"phase": "failed", "mechanism": "surgery", "name": name, "ids": ids, "failed": problem})
        raise PurgeError(f"the surgery's result failed its check ({problem}); the rows are deleted, the next "
                         "purge or recover() redoes the physical part by a rebuild",
                         client=client, collection=collection)
    marker.clear(root)
    report.mechanism = "surgery"
    return client, collection, True


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


def reopen(client: Any, settings: Any) -> Any:
    """``client`` if it is still open, else a new client on the same directory."""
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
    with connect(db_path) as db:
        rows = db.execute("SELECT id, type, scope FROM segments WHERE collection = ?", (collection_id,)).fetchall()
        vector = [r for r in rows if r[2] == "VECTOR"]
        meta = [r for r in rows if r[2] == "METADATA"]
        if len(vector) != 1 or vector[0][1] != HNSW_SEGMENT or len(meta) != 1:
            raise Unsupported(f"unexpected segments {rows!r}")
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
        raise Unsupported("the metadata segment has not applied every operation on the erased rows")
    dead = {rid for rid, op in latest.items() if op == DELETE_OP and newest[rid] <= metadata_seq}
    remove = sorted((set(ids) | dead) - {PLACEHOLDER_ID})
    seg_dir = root / vector[0][0]
    dim = int(dim_row[0]) if dim_row and dim_row[0] else 0
    if seg_dir.exists() and dim:
        HnswIndex.load(seg_dir, dim)  # raises Unsupported when the files are not as expected
    return _Plan(collection_id, topic_like, vector[0][0], ids, remove, applied, vector_seq, metadata_seq, space,
                 dim, survivors)


def _surgery(root: Path, plan: _Plan, report: PurgeReport, name: str) -> bool:
    """Edit the closed store; returns True if the HNSW index was never persisted (then its
    vectors live only in the log, and the caller has Chroma persist it; see EmptyHnsw)."""
    seg_dir = root / plan.segment
    new_dir = root / (plan.segment + SEG_NEW)
    never_persisted, vector_seq = False, None
    with phase(report, "hnsw"):
        if seg_dir.exists() and plan.dim:
            index = HnswIndex.load(seg_dir, plan.dim)
            never_persisted = isinstance(index, EmptyHnsw)
            if never_persisted and plan.survivors == 0:
                # Nothing left to index: store a persisted empty index that has applied the
                # whole log, so that Chroma loads it instead of re-creating the files.
                index.persisted = True
                vector_seq, never_persisted = plan.metadata_seq, False
            removed, repaired = remove_elements(index, plan.remove, plan.space)
            report.hnsw_elements_removed, report.hnsw_links_repaired = removed, repaired
            remove_tree(new_dir)
            index.save(new_dir)
    marker.write(root, {"phase": "built", "mechanism": "surgery", "name": name, "ids": plan.ids,
                        "segment": plan.segment, "collection": plan.collection, "remove": plan.remove,
                        "applied": plan.applied, "vector_seq": plan.vector_seq, "set_vector_seq": vector_seq})
    with phase(report, "queue"):
        report.queue_rows_removed = purge_queue(root / "chroma.sqlite3", plan.topic_like, plan.remove,
                                                plan.applied, (plan.segment, vector_seq))
    with phase(report, "swap"):
        swap_segment(root, plan.segment)
    marker.write(root, {"phase": "scrubbing", "mechanism": "surgery", "name": name, "ids": plan.ids})
    with phase(report, "scrub"):
        scrub_directory(root, report)
    return never_persisted


def _persist_index(client: Any, collection: Any, settings: Any) -> tuple[Any, Any]:
    """Have Chroma persist a collection's HNSW index now (see EmptyHnsw): reload it with a
    sync threshold of 2, which makes Chroma persist while it replays the log, then restore the
    threshold and reload again. A single row is written twice to reach the threshold."""
    name, original = collection.name, hnsw_config(collection).get("sync_threshold")
    if not original or original <= 2:
        return client, collection
    set_sync_threshold(collection, 2)
    try:
        if _close_exclusively(client, settings) is None:
            client = reopen(client, settings)
            collection = client.get_collection(name, embedding_function=None)
            collection.get(limit=1, include=["embeddings"])  # load: replay and persist
            if collection.count() == 1:
                add_rows(collection, collection.get(include=["embeddings", "documents", "metadatas"]),
                         upsert=True)
        else:
            client = reopen(client, settings)
            collection = client.get_collection(name, embedding_function=None)
    finally:
        set_sync_threshold(collection, original)
    _close_exclusively(client, settings)  # reload so that the restored threshold is in force
    client = reopen(client, settings)
    return client, client.get_collection(name, embedding_function=None)


def swap_segment(root: Path, segment: str) -> None:
    """Put the rebuilt segment folder (``<segment>.purge-new``) in place of ``segment``."""
    seg_dir, new_dir, old_dir = root / segment, root / (segment + SEG_NEW), root / (segment + SEG_OLD)
    if not new_dir.exists():
        return
    remove_tree(old_dir)
    if seg_dir.exists():
        os.replace(seg_dir, old_dir)
    try:
        os.replace(new_dir, seg_dir)
    except BaseException:
        if old_dir.exists() and not seg_dir.exists():
            os.replace(old_dir, seg_dir)
        raise
    fsync_dir(root)
    remove_tree(old_dir)


def settle(root: Path) -> dict[str, Any] | None:
    """Make the files of an interrupted surgery consistent (no client may have them open): a
    complete new HNSW segment is swapped in, after the log entries it no longer matches are
    removed, unless Chroma has persisted the old segment since (then it is stale); anything
    else is discarded. Returns the marker, which stays."""
    state = marker.read(root)
    segment = (state or {}).get("segment")
    if state and state.get("mechanism") == "surgery" and segment:
        new_dir = root / (segment + SEG_NEW)
        if state.get("phase") == "built" and new_dir.exists():
            with connect(root / "chroma.sqlite3") as db:
                row = db.execute("SELECT seq_id FROM max_seq_id WHERE segment_id = ?", (segment,)).fetchone()
            if int(row[0] if row else 0) == int(state.get("vector_seq", -1)):
                purge_queue(root / "chroma.sqlite3", "%/" + state["collection"], state.get("remove", []),
                            int(state.get("applied", 0)), (segment, state.get("set_vector_seq")))
                swap_segment(root, segment)
        remove_tree(new_dir)
        remove_tree(root / (segment + SEG_OLD))
    return state
