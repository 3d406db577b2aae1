"""Physical erasure for Chroma: after a purge no byte of an erased row is left on disk.

Stock Chroma (1.5, Rust core) deletes logically. After ``collection.delete`` the text,
metadata and vector of a row survive in four places of the data directory (measured in
docs/erasure.md):

* SQLite free pages and the unused tail of live pages: the rows of ``embeddings_queue`` (the
  write-ahead log, purged automatically but never overwritten), ``embedding_metadata``, the
  FTS content table and the metadata indexes;
* the FTS5 trigram index (``embedding_fulltext_search_data``): a delete only adds tombstones,
  the postings of the deleted text stay until a merge;
* the HNSW segment directory: ``data_level0.bin`` keeps every deleted vector (normalised),
  only flagged as deleted; ``delete_collection`` even leaves the whole directory behind;
* the rollback journal during a transaction (deleted at commit; Chroma does not use WAL mode,
  but a WAL is checkpointed and truncated here in case it does).

:func:`purge_collection` erases from every copy:

1. delete the rows (logical, idempotent);
2. rebuild the collection: copy every surviving row (id, document, metadata, embedding) into a
   fresh collection with the same metadata and configuration, then swap names and drop the old
   collection, so the new HNSW graph has never seen an erased vector;
3. scrub: shred and remove HNSW segment directories that no segment owns any more, rebuild the
   FTS index from its content table, VACUUM the SQLite file (no free page is left) and truncate
   a WAL if there is one.

All of it goes through Chroma's public API except step 3, which works on files Chroma has
stopped using and on SQLite with its ordinary locking, so the client stays open and usable
and other clients (in this process or another) see the result at once.

A purge is crash-safe: a marker file records the phase, and :func:`recover` (run it before a
client opens the directory) finishes or undoes an interrupted purge.
"""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
import sqlite3
import time
import uuid
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["PurgeReport", "persist_dir", "purge_collection", "recover", "scrub_directory"]

log = logging.getLogger(__name__)

MARKER = "memwarden-purge.json"
_NEW, _OLD = ".purge-new-", ".purge-old-"
_UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
_COPY_BATCH = 1000


@dataclass
class PurgeReport:
    """What one purge did, for receipts, logs and the benchmark."""

    requested: int = 0
    erased: int = 0            # requested rows that were still stored
    kept: int = 0              # rows copied into the rebuilt collection
    rebuilt: bool = False      # the collection (and its HNSW index) was rebuilt
    scrubbed: bool = False     # files scrubbed: old segments shredded, FTS rebuilt, VACUUM done
    segments_removed: list[str] = field(default_factory=list)
    sqlite_bytes_before: int = 0
    sqlite_bytes_after: int = 0
    free_pages_after: int = 0
    seconds: dict[str, float] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return asdict(self)


def persist_dir(client: Any) -> Path | None:
    """The data directory of an embedded (persistent) client; None for a server client."""
    try:
        settings = client.get_settings()
    except Exception:  # noqa: BLE001 - any client without settings is not embedded
        return None
    if getattr(settings, "is_persistent", False) and getattr(settings, "persist_directory", None):
        api = getattr(settings, "chroma_api_impl", "") or ""
        if "fastapi" not in api.lower():
            return Path(settings.persist_directory)
    return None


# -- the purge -------------------------------------------------------------------------------


def purge_collection(client: Any, collection: Any, ids: Sequence[str], *,
                     batch: int = _COPY_BATCH) -> tuple[Any, PurgeReport]:
    """Erase ``ids`` from ``collection`` physically; returns the live collection and a report.

    The returned collection replaces ``collection`` (same name, metadata and configuration,
    new id): the caller must use it from now on. Surviving rows keep their ids, documents and
    metadata byte for byte; their embeddings are copied from what Chroma returns, which for a
    cosine collection is Chroma's own reconstruction (unit vector times stored norm) and may
    differ from the pre-purge value by at most one float32 ulp per component.
    """
    report = PurgeReport(requested=len(set(ids)))
    clock = _Clock(report)
    root = persist_dir(client)
    name = collection.name
    ids = sorted(set(map(str, ids)))

    with clock("delete"):
        if ids:
            report.erased = len(collection.get(ids=ids, include=[])["ids"])
            collection.delete(ids=ids)
    if root is not None:
        report.sqlite_bytes_before = _size(root / "chroma.sqlite3")

    tag = uuid.uuid4().hex[:8]
    new_name, old_name = f"{name}{_NEW}{tag}", f"{name}{_OLD}{tag}"
    _write_marker(root, {"phase": "copying", "name": name, "new": new_name, "old": old_name})
    with clock("copy"):
        fresh = _copy_rows(client, collection, new_name, batch, report)
    with clock("swap"):
        _write_marker(root, {"phase": "swapping", "name": name, "new": new_name, "old": old_name})
        collection.modify(name=old_name)
        fresh.modify(name=name)
        _write_marker(root, {"phase": "scrubbing", "name": name})
        client.delete_collection(old_name)
        fresh = client.get_collection(name, embedding_function=None)
        report.rebuilt = True
    if root is not None:
        with clock("scrub"):
            scrub_directory(root, report)
        _clear_marker(root)
    report.seconds["total"] = round(sum(report.seconds.values()), 4)
    return fresh, report


def _copy_rows(client: Any, source: Any, new_name: str, batch: int, report: PurgeReport) -> Any:
    config = getattr(source, "configuration", None) or {}
    extra = {"configuration": {"hnsw": config["hnsw"]}} if config.get("hnsw") else {}
    fresh = client.create_collection(new_name, embedding_function=None, metadata=source.metadata, **extra)
    keep = source.get(include=[])["ids"]
    for start in range(0, len(keep), batch):
        got = source.get(ids=keep[start:start + batch], include=["embeddings", "documents", "metadatas"])
        _add_rows(fresh, got)
    report.kept = fresh.count()
    if report.kept != len(keep):
        client.delete_collection(new_name)
        raise RuntimeError(f"purge aborted: copied {report.kept} of {len(keep)} rows; nothing was swapped")
    return fresh


def _add_rows(target: Any, got: dict[str, Any]) -> None:
    """Add rows as ``get`` returned them; rows without a document or metadata go in their own
    groups because Chroma's ``add`` takes those fields for all rows of a call or for none."""
    docs = got.get("documents") or [None] * len(got["ids"])
    metas = got.get("metadatas") or [None] * len(got["ids"])
    vectors = np.asarray(got["embeddings"], dtype=np.float32)
    groups: dict[tuple[bool, bool], list[int]] = {}
    for i in range(len(got["ids"])):
        groups.setdefault((docs[i] is not None, bool(metas[i])), []).append(i)
    for (has_doc, has_meta), rows in groups.items():
        target.add(ids=[got["ids"][i] for i in rows], embeddings=vectors[rows],
                   documents=[docs[i] for i in rows] if has_doc else None,
                   metadatas=[metas[i] for i in rows] if has_meta else None)


# -- scrubbing the files ---------------------------------------------------------------------


def scrub_directory(root: str | Path, report: PurgeReport | None = None) -> PurgeReport:
    """Remove every copy of deleted data that Chroma leaves in ``root``.

    Safe while a Chroma client has the directory open: only segment directories that no
    segment row refers to are touched, and SQLite work goes through SQLite's locks.
    """
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
        raise RuntimeError(f"VACUUM left {report.free_pages_after} free pages in {db_path}")
    return report


def _connect(db_path: Path) -> _Closing:
    db = sqlite3.connect(db_path, timeout=60, isolation_level=None)
    # Anything freed from now on is zeroed, not merely unlinked from the b-tree.
    db.execute("PRAGMA secure_delete = ON")
    db.execute("PRAGMA busy_timeout = 60000")
    return _Closing(db)


class _Closing:
    """sqlite3.Connection as a context manager that closes (the stdlib one only commits)."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self._db = db

    def __enter__(self) -> sqlite3.Connection:
        return self._db

    def __exit__(self, *exc: object) -> None:
        self._db.close()


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
        if entry.is_dir() and _UUID.match(entry.name) and entry.name not in owned:
            for path in sorted(entry.rglob("*")):
                if path.is_file():
                    _shred(path)
            shutil.rmtree(entry)
            removed.append(entry.name)
    if removed:
        _fsync_dir(root)
    return removed


def _shred(path: Path) -> None:
    """Overwrite a file with zeros before it is unlinked (best effort against remanence on
    filesystems that overwrite in place; see docs/erasure.md for what this cannot promise)."""
    try:
        size = path.stat().st_size
        with open(path, "r+b", buffering=0) as fh:
            chunk = b"\0" * (1 << 20)
            left = size
            while left > 0:
                left -= fh.write(chunk[:min(left, len(chunk))])
            os.fsync(fh.fileno())
    except OSError as exc:  # pragma: no cover - unlink below still removes it from the directory
        log.warning("could not overwrite %s before removing it: %s", path, exc)


def _fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:  # pragma: no cover - e.g. Windows
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


# -- crash recovery --------------------------------------------------------------------------


def recover(root: str | Path, collection: str | None = None) -> bool:
    """Finish or undo a purge that a crash interrupted; returns True if there was one.

    Call it before opening ``root`` with a client (``Memory.open`` does). It opens and closes
    its own client. Rules: if the live name is missing, the complete copy takes it (or, when
    the copy was not complete, the original gets its name back); every leftover
    ``.purge-new-``/``.purge-old-`` collection is dropped; the directory is scrubbed.
    """
    root = Path(root)
    marker = _read_marker(root)
    if marker is None:
        return False
    import chromadb
    from chromadb.config import Settings

    name = marker.get("name") or collection
    client = chromadb.PersistentClient(path=str(root), settings=Settings(anonymized_telemetry=False))
    try:
        names = {c.name for c in client.list_collections()}
        if name and name not in names:
            new, old = marker.get("new"), marker.get("old")
            if marker.get("phase") == "swapping" and new in names:
                client.get_collection(new, embedding_function=None).modify(name=name)
            elif old in names:
                client.get_collection(old, embedding_function=None).modify(name=name)
            names = {c.name for c in client.list_collections()}
        for leftover in sorted(names):
            if name and leftover.startswith((name + _NEW, name + _OLD)):
                client.delete_collection(leftover)
        scrub_directory(root)
    finally:
        client.close()
    _clear_marker(root)
    return True


def _write_marker(root: Path | None, state: dict[str, Any]) -> None:
    if root is None:
        return
    tmp = root / (MARKER + ".tmp")
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump(state, fh)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, root / MARKER)
    _fsync_dir(root)


def _read_marker(root: Path) -> dict[str, Any] | None:
    try:
        return json.loads((root / MARKER).read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError):
        return {"phase": "unknown"}


def _clear_marker(root: Path) -> None:
    try:
        (root / MARKER).unlink()
    except FileNotFoundError:
        pass
    _fsync_dir(root)


# -- small helpers ---------------------------------------------------------------------------


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


class _Clock:
    def __init__(self, report: PurgeReport) -> None:
        self._report = report

    def __call__(self, phase: str) -> _Phase:
        return _Phase(self._report, phase)


class _Phase:
    def __init__(self, report: PurgeReport, phase: str) -> None:
        self._report, self._phase = report, phase

    def __enter__(self) -> None:
        self._t = time.perf_counter()

    def __exit__(self, *exc: object) -> None:
        took = time.perf_counter() - self._t
        self._report.seconds[self._phase] = round(self._report.seconds.get(self._phase, 0.0) + took, 4)
