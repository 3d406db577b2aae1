"""Scrubbing a Chroma data directory of what deleted data leaves behind: the folders of
dropped segments, FTS5 postings, SQLite free pages and WAL, and the uninitialised tails of
HNSW files.

Folders: a segment folder is removed only when memwarden made it (a surgery's
``<segment>.purge-new`` / ``.purge-old``) or dropped the collection it belonged to
(:func:`drop_collection` lists its segments in a ledger, ``memwarden-dropped.json``, before
Chroma drops it). Any other folder that no segment owns is left in place and reported in
``PurgeReport.segments_unowned``: it may be another program's, or a segment of a collection
another process is creating at this moment.
"""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path
from typing import Any

from memwarden.memory.compaction import marker, versions
from memwarden.memory.compaction.files import connect, cut, fsync_dir, remove_tree
from memwarden.memory.compaction.hnsw import read_header
from memwarden.memory.compaction.report import PurgeError, PurgeReport, file_size

#: Suffixes of the segment folders a surgery builds and replaces.
SEG_NEW, SEG_OLD = ".purge-new", ".purge-old"
#: The ledger of segments whose collections memwarden dropped, until their folders are gone.
DROPPED = "memwarden-dropped.json"
_UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")


def segment_ids(root: Path, collection_id: str) -> list[str]:
    """The segments of the collection ``collection_id``, from chroma.sqlite3."""
    with connect(root / "chroma.sqlite3") as db:
        return [row[0] for row in db.execute("SELECT id FROM segments WHERE collection = ?", (collection_id,))]


def drop_collection(client: Any, root: Path | None, name: str) -> None:
    """Drop the collection ``name``. Embedded (``root`` given), its segments are first added to
    the ledger, so that the next scrub removes the folders Chroma leaves behind."""
    if root is not None:
        collection = client.get_collection(name, embedding_function=None)
        note_dropped(root, segment_ids(root, str(collection.id)))
    client.delete_collection(name)


def note_dropped(root: Path, segments: list[str]) -> None:
    """Add ``segments`` to the ledger of dropped segments (durably, before the drop)."""
    ledger = marker.read(root, DROPPED) or {}
    known = set(ledger.get("segments") or []) | set(segments)
    marker.write(root, {"segments": sorted(known)}, DROPPED)


def trim_segment_tails(root: Path, collection: Any) -> None:
    """Zero and cut what lies past the stored elements of a collection's HNSW files.

    hnswlib (Chroma's fork) creates ``data_level0.bin`` and ``length.bin`` by writing its
    freshly malloc'd, uninitialised buffers at their full preallocated size, and afterwards
    writes only changed elements in place. Until elements overwrite them, the bytes past the
    last element are whatever the process heap held: in a process that has just handled
    erased rows, possibly those rows. Chroma creates the files when a collection gets its
    first vector and again each time it loads an index it never persisted; it never reads
    past the element count it keeps in the header, so cutting there is safe with the client
    open. The collection is read once first so that Chroma has loaded (and re-created) them.
    Nothing is cut on a chromadb release the file edits are not tested on."""
    if versions.files_editable() is not None:
        return
    collection.get(limit=1, include=["embeddings"])
    with connect(root / "chroma.sqlite3") as db:
        rows = db.execute("SELECT id FROM segments WHERE collection = ? AND scope = 'VECTOR'",
                          (str(collection.id),)).fetchall()
    for (segment,) in rows:
        folder = root / segment
        h = read_header(folder)
        if h is None:
            continue
        for name, size in (("data_level0.bin", h["count"] * h["size_per_element"]), ("length.bin", h["count"] * 4)):
            cut(folder / name, size)


def scrub_directory(root: str | Path, report: PurgeReport | None = None) -> PurgeReport:
    """Remove what Chroma leaves behind of deleted data in ``root``: shred the segment folders
    memwarden made or dropped (see the module docstring), rebuild FTS indexes from their
    content tables, VACUUM (no free page left) and truncate a WAL. Safe with a client open: it
    touches only folders no segment owns, and SQLite's locks order it with Chroma's own
    connections."""
    report = report or PurgeReport()
    root = Path(root)
    db_path = root / "chroma.sqlite3"
    if not db_path.exists():
        return report
    with connect(db_path) as db:
        owned = {row[0] for row in db.execute("SELECT id FROM segments")}
        report.segments_removed, report.segments_unowned = _remove_dropped_segments(root, owned)
        _rebuild_fts(db)
        db.execute("VACUUM")
        if db.execute("PRAGMA journal_mode").fetchone()[0].lower() == "wal":
            db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        report.free_pages_after = db.execute("PRAGMA freelist_count").fetchone()[0]
    report.sqlite_bytes_after = file_size(db_path)
    report.scrubbed = report.free_pages_after == 0
    if not report.scrubbed:
        raise PurgeError(f"VACUUM left {report.free_pages_after} free pages in {db_path}")
    return report


def _rebuild_fts(db: sqlite3.Connection) -> None:
    """FTS5 deletes only add tombstones; the postings (trigrams with positions, enough to
    rebuild the text) stay until a merge. 'rebuild' regenerates the index from the content
    table, which holds only live documents."""
    tables = [r[0] for r in db.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND sql LIKE 'CREATE VIRTUAL TABLE%USING fts5%'")]
    for table in tables:
        quoted = '"' + table.replace('"', '""') + '"'
        db.execute(f"INSERT INTO {quoted}({quoted}) VALUES ('rebuild')")


def _remove_dropped_segments(root: Path, owned: set[str]) -> tuple[list[str], list[str]]:
    """Remove the folders memwarden made or dropped that no segment owns; returns (removed,
    unowned folders left in place). A ledger entry whose segment is still owned stays."""
    dropped = set((marker.read(root, DROPPED) or {}).get("segments") or [])
    removed, unowned = [], []
    for entry in sorted(root.iterdir()):
        base = entry.name.split(".", 1)[0]
        if not entry.is_dir() or not _UUID.match(base):
            continue
        if entry.name in (base + SEG_NEW, base + SEG_OLD) or (entry.name in dropped and entry.name not in owned):
            remove_tree(entry)
            removed.append(entry.name)
        elif entry.name not in owned:
            unowned.append(entry.name)
    if removed:
        fsync_dir(root)
    left = sorted(dropped & owned)
    if left:
        marker.write(root, {"segments": left}, DROPPED)
    elif dropped:
        marker.clear(root, DROPPED)
    return removed, unowned
