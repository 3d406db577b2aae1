"""The check a purge makes before it clears its marker: the collection holds exactly the rows
it held before, less the erased ones, and a sample of them reads back unchanged.

It reads through Chroma's public API, after the client was re-opened on the edited files, so
it sees what any later reader will: a row lost or changed by the surgery (or a copy the
rebuild got wrong), or an erased row back, fails the purge instead of completing it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

#: Rows read back in full (document, metadata, vector), spread over the collection.
SAMPLE = 64


@dataclass(frozen=True)
class Survivors:
    """The rows a purge must leave: every id, and a sample read in full."""

    ids: frozenset[str]
    sample: dict[str, tuple[Any, Any, np.ndarray]]


def survivors(collection: Any) -> Survivors:
    """What ``collection`` holds now (after the logical delete, before the files change)."""
    ids = sorted(collection.get(include=[])["ids"])
    picks = ids[::max(1, len(ids) // SAMPLE)][:SAMPLE]
    return Survivors(frozenset(ids), _read(collection, picks))


def check(collection: Any, expected: Survivors, erased: Sequence[str]) -> str | None:
    """None when ``collection`` holds exactly ``expected`` and no row of ``erased``; otherwise
    what differs. Vectors may differ in their last bits: Chroma returns a cosine vector as the
    stored unit vector times its norm once the index has it, and as written while it is only
    in the log, so a row's vector can read back a rounding apart after any reload."""
    ids = set(collection.get(include=[])["ids"])
    lost, extra = expected.ids - ids, ids - expected.ids
    if lost or extra:
        return f"{len(lost)} surviving row(s) missing and {len(extra)} unexpected row(s) after the purge"
    back = collection.get(ids=list(erased), include=[])["ids"] if erased else []
    if back:
        return f"{len(back)} erased row(s) readable after the purge"
    now = _read(collection, sorted(expected.sample))
    for rid, (document, metadata, vector) in expected.sample.items():
        got = now.get(rid)
        if got is None or got[0] != document or got[1] != metadata:
            return f"row {rid!r} changed by the purge"
        if not np.allclose(got[2], vector, rtol=1e-5, atol=1e-6 * float(np.abs(vector).max(initial=1.0))):
            return f"the vector of row {rid!r} changed by the purge"
    return None


def _read(collection: Any, ids: list[str]) -> dict[str, tuple[Any, Any, np.ndarray]]:
    if not ids:
        return {}
    got = collection.get(ids=ids, include=["documents", "metadatas", "embeddings"])
    return {rid: (doc, meta, np.asarray(vec, dtype=np.float32))
            for rid, doc, meta, vec in zip(got["ids"], got["documents"], got["metadatas"], got["embeddings"])}
