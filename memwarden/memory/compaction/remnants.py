"""Evidence of an erasure: byte scans of a data directory for copies of erased texts and
vectors (:func:`find_remnants`), and the check that an FTS5 index holds nothing but the live
documents (:func:`fts_is_clean`). The tests, docs/erasure.md and benchmarks/erasure.py rest on
them."""

from __future__ import annotations

import shutil
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np


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
