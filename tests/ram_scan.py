"""Scan the derived search index's in-memory buffers for copies of rows (erasure tests)."""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from memwarden.memory.compaction import find_remnants
from memwarden.memory.vectorindex import VectorIndex


def ram_remnants(index: VectorIndex, texts: Sequence[str], vectors: np.ndarray,
                 exclude: Sequence[str] = ()) -> dict[str, int]:
    """How many of ``texts`` and ``vectors`` the index still holds a copy of, in any of its
    buffers: texts and float32 vectors (raw or unit) by the same byte scan the on-disk
    erasure tests use (:func:`memwarden.memory.compaction.find_remnants`), and the vectors'
    own codes (8-bit or float32) as the index would store them, at any code boundary."""
    buffers = index.buffers()
    with tempfile.TemporaryDirectory() as tmp:
        for name, data in buffers.items():
            (Path(tmp) / name).write_bytes(data)
        found = find_remnants(tmp, texts, vectors, exclude=exclude)
    codes = buffers["codes"]
    wanted = index.encode(vectors)
    size = len(wanted[0]) if wanted else 1
    held = {codes[i:i + size] for i in range(0, len(codes), size)}
    return {"texts": found.texts, "vectors": found.vectors_exact + found.vectors_near,
            "codes": sum(code in held for code in wanted)}
