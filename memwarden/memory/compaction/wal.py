"""Chroma's write-ahead log (the ``embeddings_queue`` table of chroma.sqlite3) and the edits a
purge makes to it.

The log keeps every operation, with its text, metadata and vector, until both segments of its
collection have applied it. Chroma numbers a new entry max(seq_id) + 1 over the whole log, and
a segment skips entries at or below what it has applied (``max_seq_id``); both edits here keep
that numbering ahead of every segment.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from pathlib import Path

from memwarden.memory.compaction import versions
from memwarden.memory.compaction.files import connect

#: ``embeddings_queue.operation`` of a delete (ADD=0, UPDATE=1, UPSERT=2, DELETE=3) in the
#: releases of :data:`memwarden.memory.compaction.versions.SURGERY_TESTED`.
DELETE_OP = 3
#: The id of the inert entries that keep the numbering ahead (a delete of no row).
PLACEHOLDER_ID = "memwarden:purged"
_SQL_CHUNK = 500


def purge_queue(db_path: Path, topic_like: str, remove: list[str], applied: int,
                vector_seq: tuple[str, int | None] | None = None) -> int:
    """Delete the log entries that hold erased or dead data: every entry both segments have
    applied, and every entry of an id in ``remove``. The newest entry of the whole log is made
    an inert placeholder instead of deleted: Chroma numbers the next entry max(seq_id) + 1, and
    a number at or below what the segments have applied would make them skip that write.
    ``vector_seq`` (segment, seq) records what a rewritten HNSW segment has applied."""
    removed = 0
    with connect(db_path) as db:
        db.execute("BEGIN IMMEDIATE")
        try:
            top = db.execute("SELECT seq_id, topic, id FROM embeddings_queue ORDER BY seq_id DESC LIMIT 1").fetchone()
            if top is not None and re.fullmatch(topic_like.replace("%", ".*"), top[1]) \
                    and (top[0] <= applied or top[2] in set(remove)):
                db.execute("UPDATE embeddings_queue SET id = ?, operation = ?, vector = NULL, encoding = NULL, "
                           "metadata = NULL WHERE seq_id = ?", (PLACEHOLDER_ID, DELETE_OP, top[0]))
            keep_top = top[0] if top is not None else -1
            removed += db.execute("DELETE FROM embeddings_queue WHERE topic LIKE ? AND seq_id <= ? AND seq_id != ?",
                                  (topic_like, applied, keep_top)).rowcount
            for chunk in chunks(remove, _SQL_CHUNK):
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
    silently. An inert placeholder at the highest applied number keeps them ahead. Nothing is
    written on a chromadb release the file edits are not tested on (whose callers then drop
    no collection).
    """
    db_path = Path(root) / "chroma.sqlite3"
    if not db_path.exists() or versions.files_editable() is not None:
        return False
    with connect(db_path) as db:
        db.execute("BEGIN IMMEDIATE")
        try:
            (applied,) = db.execute("SELECT COALESCE(MAX(seq_id), 0) FROM max_seq_id").fetchone()
            (top,) = db.execute("SELECT COALESCE(MAX(seq_id), 0) FROM embeddings_queue").fetchone()
            topic = db.execute("SELECT topic FROM embeddings_queue ORDER BY seq_id DESC LIMIT 1").fetchone() or \
                db.execute("SELECT 'persistent://default/default/' || id FROM collections ORDER BY name LIMIT 1").fetchone()
            behind = int(applied) > int(top) and topic is not None
            if behind:
                db.execute("INSERT INTO embeddings_queue (seq_id, operation, topic, id) VALUES (?, ?, ?, ?)",
                           (int(applied), DELETE_OP, topic[0], PLACEHOLDER_ID))
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
    return behind


def chunks(items: Sequence[str], size: int) -> Iterator[Sequence[str]]:
    """``items`` in consecutive slices of at most ``size``."""
    for start in range(0, len(items), size):
        yield items[start:start + size]
