"""What one raw Chroma upsert costs against where its collection is in its persist cycle.

Opens the raw collection of a store kept by ``overhead.py --data-dir DIR`` (``DIR/raw``) and
makes ``--writes`` single upserts of fresh rows, one at a time; before each, it reads from
Chroma's SQLite file how many log entries the collection's HNSW index has not persisted yet
(``benchmarks/raw_arm.py``), then times the call (wall and process CPU). Binned by that
backlog, the p50s show the cost the overhead benchmark's raw arm used to depend on.

It WRITES to the store (``--writes`` new rows in the raw collection, ids ``cycle-...``): run it
on a copy. ``--threshold N`` first sets the collection's ``hnsw:sync_threshold`` to N (and
reopens it, so that Chroma applies it); without it the collection keeps what it has.

Usage: python benchmarks/raw_log_cycle.py --data-dir DIR [--writes 1200] [--threshold N] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

import chromadb  # noqa: E402
from chromadb.config import Settings as ChromaSettings  # noqa: E402

from benchmarks import raw_arm  # noqa: E402
from memwarden.memory.compaction.config import set_sync_threshold  # noqa: E402

COLLECTION = "raw-records"
BIN = 100


def open_collection(root: Path, threshold: int | None) -> tuple[Any, Any]:
    """The kept raw collection, at ``threshold`` when given (reopened so that it applies)."""
    settings = ChromaSettings(anonymized_telemetry=False)
    client = chromadb.PersistentClient(path=str(root), settings=settings)
    col = client.get_collection(COLLECTION, embedding_function=None)
    if threshold is not None and raw_arm.sync_threshold(col) != threshold:
        set_sync_threshold(col, threshold)
        client.close()
        client = chromadb.PersistentClient(path=str(root), settings=settings)
        col = client.get_collection(COLLECTION, embedding_function=None)
    return client, col


def binned(samples: list[tuple[int, float, float]]) -> list[dict[str, Any]]:
    """p50 wall and CPU ms per bin of ``BIN`` backlog entries."""
    arr = np.asarray(samples, dtype=np.float64)
    out = []
    for lo in range(0, int(arr[:, 0].max()) + 1, BIN):
        inside = arr[(arr[:, 0] >= lo) & (arr[:, 0] < lo + BIN)]
        if len(inside):
            out.append({"backlog": [lo, lo + BIN - 1], "n": len(inside), "wall_p50_ms": round(float(np.median(inside[:, 1])), 2),
                        "cpu_p50_ms": round(float(np.median(inside[:, 2])), 2)})
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", type=Path, required=True, help="a store kept by overhead.py --data-dir (a copy)")
    parser.add_argument("--writes", type=int, default=1200)
    parser.add_argument("--threshold", type=int, default=None, help="set hnsw:sync_threshold first")
    parser.add_argument("--out", type=Path, default=None, help="JSON of every sample and the bins")
    args = parser.parse_args(argv)
    root = args.data_dir / "raw"
    client, col = open_collection(root, args.threshold)
    rng = np.random.default_rng(time.time_ns())
    vecs = rng.standard_normal((args.writes, 384), dtype=np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    tag = time.time_ns()
    samples: list[tuple[int, float, float]] = []
    for i in range(args.writes):
        backlog = raw_arm.log_backlog(root, col)
        c0, t0 = time.process_time_ns(), time.perf_counter_ns()
        col.upsert(ids=[f"cycle-{tag}-{i}"], embeddings=vecs[i:i + 1], documents=[f"cycle probe {tag} {i}"],
                   metadatas=[{"ns": "cycle/probe", "i": i}])
        t1, c1 = time.perf_counter_ns(), time.process_time_ns()
        samples.append((backlog, (t1 - t0) / 1e6, (c1 - c0) / 1e6))
    result = {"rows": col.count(), "sync_threshold": raw_arm.sync_threshold(col), "writes": args.writes,
              "bins": binned(samples), "samples": [[b, round(w, 3), round(c, 3)] for b, w, c in samples]}
    client.close()
    for row in result["bins"]:
        print(f"backlog {row['backlog'][0]:5d}-{row['backlog'][1]:5d}: n={row['n']:4d} "
              f"wall p50 {row['wall_p50_ms']:6.1f} ms, CPU p50 {row['cpu_p50_ms']:6.1f} ms")
    if args.out:
        args.out.write_text(json.dumps(result, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
