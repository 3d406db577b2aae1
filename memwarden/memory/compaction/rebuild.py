"""The rebuild: the safe physical erasure, O(collection size), through Chroma's public API
alone.

Copy every surviving row into a fresh collection, check the copy against the original, swap
names, drop the old collection, shred its segment folder, rebuild the FTS index and VACUUM.
It is what a purge does whenever the surgery may not run (see
:mod:`memwarden.memory.compaction.surgery`), and the only mechanism against a server on
request.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import numpy as np

from memwarden.memory.compaction import marker, verify
from memwarden.memory.compaction.config import hnsw_config, set_sync_threshold
from memwarden.memory.compaction.report import PurgeError, PurgeReport, phase
from memwarden.memory.compaction.scrub import drop_collection, scrub_directory, trim_segment_tails
from memwarden.memory.compaction.wal import chunks

#: Infixes of the two collections a rebuild works with, after the live name.
NEW, OLD = ".purge-new-", ".purge-old-"


def rebuild(client: Any, collection: Any, ids: list[str], root: Path | None, batch: int,
            report: PurgeReport) -> Any:
    """Replace ``collection`` by a copy of its rows (the ``ids`` are already deleted); returns
    the new collection, under the same name."""
    name = collection.name
    tag = uuid.uuid4().hex[:8]
    new_name, old_name = f"{name}{NEW}{tag}", f"{name}{OLD}{tag}"
    state = {"mechanism": "rebuild", "name": name, "ids": ids, "new": new_name, "old": old_name}
    marker.write(root, {"phase": "copying", **state})
    with phase(report, "copy"):
        expected = verify.survivors(collection)
        fresh = _copy_rows(client, collection, sorted(expected.ids), new_name, batch, report)
    with phase(report, "verify"):
        problem = verify.check(fresh, expected, ids)
    if problem is not None:
        drop_collection(client, root, new_name)
        raise PurgeError(f"purge aborted: the copy failed its check ({problem}); nothing was swapped")
    with phase(report, "swap"):
        marker.write(root, {"phase": "swapping", **state})
        collection.modify(name=old_name)
        try:
            fresh.modify(name=name)
        except BaseException:
            collection.modify(name=name)  # the original keeps serving; the copy is dropped later
            raise
        marker.write(root, {"phase": "scrubbing", **state})
        drop_collection(client, root, old_name)
        fresh = client.get_collection(name, embedding_function=None)
    report.mechanism = "rebuild"
    if root is not None:
        with phase(report, "scrub"):
            trim_segment_tails(root, fresh)
            scrub_directory(root, report)
        marker.clear(root)
    return fresh


def _copy_rows(client: Any, source: Any, keep: list[str], new_name: str, batch: int, report: PurgeReport) -> Any:
    """Copy the rows ``keep`` (all of them) of ``source`` into a new collection with the same
    metadata and configuration. The copy's HNSW index persists as it fills (sync threshold
    lowered during the copy, then restored), so that Chroma does not re-create its files from
    uninitialised memory when it next loads it (see
    :class:`memwarden.memory.compaction.hnsw.EmptyHnsw`)."""
    hnsw = hnsw_config(source)
    original = hnsw.get("sync_threshold")
    extra = {}
    if hnsw:
        if original:
            hnsw["sync_threshold"] = max(2, min(int(original), batch, len(keep) or 2))
        extra = {"configuration": {"hnsw": hnsw}}
    fresh = client.create_collection(new_name, embedding_function=None, metadata=source.metadata, **extra)
    for chunk in chunks(keep, batch):
        add_rows(fresh, source.get(ids=list(chunk), include=["embeddings", "documents", "metadatas"]))
    if len(keep) == 1 and original:  # below any threshold Chroma accepts: write it once more
        add_rows(fresh, source.get(ids=keep, include=["embeddings", "documents", "metadatas"]), upsert=True)
    if original:
        set_sync_threshold(fresh, original)
    report.kept = fresh.count()
    return fresh


def add_rows(target: Any, got: dict[str, Any], *, upsert: bool = False) -> None:
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
