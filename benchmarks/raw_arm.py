"""The raw Chroma arm of the overhead benchmarks, configured and reset like memwarden's own collections.

Why this exists. Embedded Chroma (1.x, its Rust local segments) appends every write to its
log (``embeddings_queue``) and applies it to the collection's HNSW index at once, but persists
the index, and records how far it got (``max_seq_id``), only every ``sync_threshold`` log
entries (Chroma's default 1,000). Each write re-reads the log entries its collection has not
persisted yet, so a single upsert costs more the further its collection is into that cycle:
measured on the kept 100k store, one raw upsert's CPU went from about 11-13 ms just after a
persist to 30 ms 1,000 entries later (and to 47 ms in the first cycle after a cold open).
memwarden's partitions persist every 100 entries (``hnsw:sync_threshold`` in
``memwarden.memory.partitioned``), so their cost hardly moves; a raw collection left at Chroma's
default, measured for a few hundred writes from wherever the last run left it, landed at a
different point of its 1,000-entry cycle each run, and the single-write ratio with it.

So the raw arm is raw Chroma configured as memwarden configures its collections (the same HNSW
sync threshold and batch size; a kept collection made before is reconfigured and reloaded, as
Chroma applies a new threshold only when it loads the segment), and each measured block starts
right after a persist (:func:`persist_now`), so every run measures the same stretch of the cycle.
"""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any

import chromadb
from chromadb.config import Settings as ChromaSettings

from memwarden.memory.compaction.config import hnsw_config, set_sync_threshold
from memwarden.memory.partitioned import _SYNC_THRESHOLD


#: The HNSW settings memwarden gives each partition (``PartitionedBackend``), given to the raw
#: collection too; with the distance both use.
MEMWARDEN_HNSW: dict[str, Any] = {"hnsw:space": "cosine", "hnsw:sync_threshold": _SYNC_THRESHOLD,
                                  "hnsw:batch_size": _SYNC_THRESHOLD}


def open_raw(path: Path, name: str) -> tuple[Any, Any]:
    """A client on ``path`` and its collection ``name``, created with :data:`MEMWARDEN_HNSW`.

    A collection kept from an earlier run with another sync threshold is given memwarden's and
    the client reopened: Chroma reads the threshold when it loads the segment, not when it is
    changed (a client that stays open keeps persisting at the old one)."""
    settings = ChromaSettings(anonymized_telemetry=False)
    client = chromadb.PersistentClient(path=str(path), settings=settings)
    col = client.get_or_create_collection(name, embedding_function=None, metadata=dict(MEMWARDEN_HNSW))
    if hnsw_config(col).get("sync_threshold") != _SYNC_THRESHOLD:
        set_sync_threshold(col, _SYNC_THRESHOLD)
        client.close()
        client = chromadb.PersistentClient(path=str(path), settings=settings)
        col = client.get_collection(name, embedding_function=None)
    return client, col


def sync_threshold(col: Any) -> int:
    """How many log entries the collection's HNSW index takes between persists."""
    value = hnsw_config(col).get("sync_threshold")
    if not isinstance(value, int) or value < 2:
        raise ValueError(f"collection {col.name!r} reports no usable hnsw sync_threshold ({value!r})")
    return value


def log_backlog(root: Path, col: Any) -> int:
    """Log entries of ``col`` its HNSW index has not persisted yet (read from Chroma's SQLite
    file under ``root``, read-only): where the collection is in its persist cycle."""
    db_path = Path(root) / "chroma.sqlite3"
    if not db_path.exists():
        raise FileNotFoundError(f"no Chroma database at {db_path}")
    cid = str(col.id)
    with closing(sqlite3.connect(f"file:{db_path}?mode=ro", uri=True, timeout=60)) as db:
        try:
            (count,) = db.execute(
                "SELECT COUNT(*) FROM embeddings_queue WHERE topic LIKE ? AND seq_id > COALESCE("
                "(SELECT m.seq_id FROM max_seq_id m JOIN segments s ON s.id = m.segment_id "
                " WHERE s.collection = ? AND s.scope = 'VECTOR'), 0)", ("%/" + cid, cid)).fetchone()
        except sqlite3.OperationalError as exc:
            raise RuntimeError(f"cannot read the log state of {col.name!r} in {db_path} (Chroma's schema "
                               f"changed?): {exc}") from exc
    return int(count)


def persist_now(root: Path, col: Any) -> int:
    """Make Chroma persist ``col``'s HNSW index now; returns the backlog it had.

    Chroma has no call for it, so the collection's own rows are upserted again, unchanged, in
    one call of just enough log entries to reach the threshold: content and row count stay the
    same. Raises when the log still holds unpersisted entries afterwards (the arm would then
    not start where it should)."""
    before = pending = log_backlog(root, col)
    if pending:
        rows = col.get(limit=max(sync_threshold(col) - pending, 1), include=["embeddings", "documents", "metadatas"])
        # A read that loads the segment replays the log, and persists if a threshold's worth is pending.
        pending = log_backlog(root, col)
    if pending:
        col.upsert(ids=rows["ids"], embeddings=rows["embeddings"], documents=rows["documents"],
                   metadatas=rows["metadatas"])
    after = log_backlog(root, col)
    if after:
        raise RuntimeError(f"{col.name!r} still holds {after} unpersisted log entries after a forced persist "
                           f"(backlog was {before}, threshold {sync_threshold(col)})")
    return before
