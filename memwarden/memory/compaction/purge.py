"""A purge: erase rows of a Chroma collection physically (:func:`purge_collection`), clean a
whole directory offline (:func:`compact_directory`), and finish an interrupted purge
(:func:`recover`)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from memwarden.memory.compaction import marker
from memwarden.memory.compaction.rebuild import NEW, OLD, rebuild
from memwarden.memory.compaction.report import PurgeError, PurgeReport, file_size, phase
from memwarden.memory.compaction.scrub import drop_collection, scrub_directory
from memwarden.memory.compaction.surgery import settle, try_surgery

_COPY_BATCH = 1000


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


def purge_collection(client: Any, collection: Any, ids: Sequence[str], *, mode: str = "auto",
                     batch: int = _COPY_BATCH, compact: bool = False) -> tuple[Any, Any, PurgeReport]:
    """Erase the rows ``ids`` of ``collection`` physically.

    Returns ``(client, collection, report)``: both may be new objects (the surgery re-opens
    the client; the rebuild gives the collection a new id) and the caller must use them from
    now on. ``mode`` is "auto" (surgery when its checks pass, else rebuild), "surgery" (raise
    PurgeError instead of falling back) or "rebuild".

    Surviving rows keep their ids, documents and metadata byte for byte, which is checked
    before the purge is complete. Their embeddings are untouched by the surgery; the rebuild
    copies what Chroma returns, which for a cosine collection is Chroma's own reconstruction
    (unit vector times stored norm) and may differ from the pre-purge value in the last bit of
    a component.

    Besides ``ids``, the surgery also removes the remains of every row deleted earlier (HNSW
    tombstones, dead log entries). With no ``ids`` nothing is done unless ``compact`` is set.
    """
    if mode not in ("auto", "surgery", "rebuild"):
        raise ValueError(f"mode must be 'auto', 'surgery' or 'rebuild', got {mode!r}")
    ids = sorted(set(map(str, ids)))
    report = PurgeReport(requested=len(ids))
    started = time.perf_counter()
    root = persist_dir(client)
    unfinished = marker.read(root) if root is not None else None
    if unfinished is not None:  # an earlier purge was interrupted: finish it now as well
        ids = sorted(set(ids) | set(unfinished.get("ids") or []))
        compact = True
        if unfinished.get("failed") and mode == "auto":
            mode = "rebuild"  # the surgery's result failed its check: redo it the safe way
            report.fallback_reason = f"an earlier surgery failed its check: {unfinished['failed']}"
    if not ids and not compact:
        report.mechanism = "none"
        return client, collection, report
    with phase(report, "delete"):
        present = collection.get(ids=ids, include=[])["ids"] if ids else []
        report.erased = len(present)
        if present:
            collection.delete(ids=present)
    if root is not None:
        report.sqlite_bytes_before = file_size(root / "chroma.sqlite3")

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
        client, collection, done = try_surgery(client, collection, ids, root, report, strict=mode == "surgery")
        if done:
            report.seconds["total"] = round(time.perf_counter() - started, 4)
            return client, collection, report

    collection = rebuild(client, collection, ids, root, batch, report)
    report.seconds["total"] = round(time.perf_counter() - started, 4)
    return client, collection, report


def compact_directory(root: str | Path) -> list[PurgeReport]:
    """Scrub a whole Chroma data directory offline: for every collection, remove every deleted
    row's remains (as a purge does, for all rows deleted so far); then scrub the SQLite file.

    Nothing else may have the directory open (stop a ``chroma run`` server first). This is how
    a server's data directory is cleaned, and what to run after deletes made without memwarden.
    Segment folders that no segment owns and that memwarden did not drop are left in place and
    listed in each report's ``segments_unowned``.
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


def recover(root: str | Path) -> bool:
    """Finish an interrupted purge of the directory ``root``; returns True if there was one.

    Call it before a client opens ``root`` (``Memory.open`` does, when ``pending``). First the
    directory is made consistent: a surgery whose new HNSW segment was complete gets it swapped
    in (after removing the log entries it no longer matches); an incomplete one is discarded.
    A rebuild that lost the live collection name gives it back to the complete copy (or else
    to the original); leftover copies are dropped. Then the purge runs again for the same ids,
    which finishes whatever was left, and the directory is scrubbed.
    """
    root = Path(root)
    state = settle(root)
    if state is None:
        return False
    import chromadb
    from chromadb.config import Settings

    client = chromadb.PersistentClient(path=str(root), settings=Settings(anonymized_telemetry=False))
    try:
        name = state.get("name")
        names = {c.name for c in client.list_collections()}
        if state.get("mechanism") == "rebuild" and name and name not in names:
            new, old = state.get("new"), state.get("old")
            if state.get("phase") in ("swapping", "scrubbing") and new in names:
                client.get_collection(new, embedding_function=None).modify(name=name)
            elif old in names:
                client.get_collection(old, embedding_function=None).modify(name=name)
            names = {c.name for c in client.list_collections()}
        for leftover in sorted(names):
            if name and leftover.startswith((name + NEW, name + OLD)):
                drop_collection(client, root, leftover)
        if name and name in names:
            client, _, _ = purge_collection(client, client.get_collection(name, embedding_function=None),
                                            state.get("ids") or [], compact=True)
        scrub_directory(root)
    finally:
        client.close()
    marker.clear(root)
    return True
