"""Benchmark of physical erasure on the embedded Chroma store.

For each scenario a fresh store gets N rows (precomputed random 384-d float32 vectors, a
unique text and a unique metadata secret per row); E of them, interleaved, are then erased:

  stock    ``collection.delete`` only, as stock Chroma does it (the baseline: what survives);
  surgery  ``ChromaBackend.purge(mode="surgery")``, memwarden's default mechanism;
  rebuild  ``ChromaBackend.purge(mode="rebuild")``, the fallback mechanism.

Measured: erasure time (wall and CPU of this process, all threads); a byte scan of every file
of the data directory for the erased texts and secrets (any 16-byte fragment) and vectors
(bit-exact, and within 64 ulps of the unit-normalised form that HNSW stores), with the SQLite
hits attributed to the table that owns the page or to free pages; whether the FTS index equals
one rebuilt from the live documents; whether any erased row can still be retrieved (by id,
metadata filter, document filter, nearest-neighbour query at k = collection size, and from a
second process); and for the rows that stay: retrieval by id, bit-identical embeddings,
self-recall@1 and recall@10 against exact search.

Usage: python benchmarks/erasure.py [--rows 10000] [--erase 1000] [--out PATH] [--quick]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

HERE = Path(__file__).resolve().parent
# Benchmark the working tree, not whatever memwarden happens to be installed.
sys.path.insert(0, str(HERE.parent))

from memwarden.memory.backends import ChromaBackend  # noqa: E402
from memwarden.memory.compaction.remnants import _scan_texts, _text_fragments, find_remnants, fts_is_clean  # noqa: E402

DEFAULT_OUT = HERE / "results" / "erasure.json"
DIM = 384
BATCH = 1000
SCENARIOS = ("stock", "surgery", "rebuild")

_SECOND_PROCESS = r"""
import json, sys
import numpy as np
import chromadb
from chromadb.config import Settings
path, ids, vectors = sys.argv[1], json.load(open(sys.argv[2])), np.load(sys.argv[3])
col = chromadb.PersistentClient(path=path, settings=Settings(anonymized_telemetry=False)).get_collection("memwarden-records")
n = col.count()
got = col.get(ids=ids)["ids"]
near = col.query(query_embeddings=vectors, n_results=n, include=[])["ids"]
print(json.dumps({"count": n, "by_id": len(got), "by_query": len({i for r in near for i in r} & set(ids))}))
"""


class Data:
    """The rows: ids, documents, metadata, vectors, and which of them get erased."""

    def __init__(self, rows: int, erase: int, seed: int = 0) -> None:
        rng = np.random.default_rng(seed)
        secrets = [rng.bytes(16).hex() for _ in range(rows)]
        step = rows // erase
        self.erased_mask = np.zeros(rows, dtype=bool)
        self.erased_mask[::step][:erase] = True
        self.ids = [f"rec-{i:06d}-{s[:8]}" for i, s in enumerate(secrets)]
        self.docs = [f"{'erased' if e else 'kept'} record {s} of the benchmark"
                     for s, e in zip(secrets, self.erased_mask)]
        self.metas = [{"secret": f"secret {s[::-1]}", "i": i} for i, s in enumerate(secrets)]
        self.vectors = rng.standard_normal((rows, DIM)).astype(np.float32)
        self.erased = np.nonzero(self.erased_mask)[0]
        self.kept = np.nonzero(~self.erased_mask)[0]

    def texts(self, rows: np.ndarray) -> list[str]:
        return [self.docs[i] for i in rows] + [self.metas[i]["secret"] for i in rows]


def load(path: Path, data: Data, progress: Progress, task: Any) -> ChromaBackend:
    backend = ChromaBackend.embedded(str(path))
    for start in range(0, len(data.ids), BATCH):
        end = start + BATCH
        backend.upsert(data.ids[start:end], data.vectors[start:end], data.docs[start:end], data.metas[start:end])
        progress.advance(task, min(BATCH, len(data.ids) - start))
    return backend


def sqlite_attribution(db_path: Path, data: Data) -> dict[str, int]:
    """(erased text, page) pairs found in chroma.sqlite3, per owner of the page: a table or
    index (the copy sits in the page's free space), or "free pages". One text can be on
    several pages: SQLite leaves stale copies of cells behind when it rebalances b-trees."""
    try:
        db = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)
        owner = dict(db.execute("SELECT pageno, name FROM dbstat"))
        size = db.execute("PRAGMA page_size").fetchone()[0]
        db.close()
    except sqlite3.Error:
        return {}
    raw = db_path.read_bytes()
    fragments = _text_fragments(data.texts(data.erased), data.texts(data.kept))
    counts: Counter[str] = Counter()
    for page in range(len(raw) // size):
        hits = len(_scan_texts(raw[page * size:(page + 1) * size], fragments))
        if hits:
            counts[owner.get(page + 1, "free pages")] += hits
    return dict(counts)


def dir_bytes(path: Path) -> dict[str, int]:
    files = [p for p in path.rglob("*") if p.is_file()]
    return {"sqlite": sum(p.stat().st_size for p in files if p.name.startswith("chroma.sqlite3")),
            "hnsw": sum(p.stat().st_size for p in files if not p.name.startswith("chroma.sqlite3")),
            "files": len(files)}


def retrievable(col: Any, data: Data, sample: np.ndarray) -> dict[str, int]:
    """Erased rows Chroma still returns, asked every way it can be asked."""
    ids = [data.ids[i] for i in data.erased]
    count = col.count()
    near = col.query(query_embeddings=data.vectors[sample], n_results=count, include=[])["ids"]
    return {
        "by_id": len(col.get(ids=ids)["ids"]),
        "by_metadata": sum(len(col.get(where={"secret": data.metas[i]["secret"]})["ids"]) for i in sample),
        "by_document": sum(len(col.get(where_document={"$contains": data.docs[i].split()[2]})["ids"]) for i in sample),
        "by_query_k_all": len({i for r in near for i in r} & set(ids)),
    }


def survivors(col: Any, data: Data, before: dict[str, np.ndarray], rng: np.random.Generator) -> dict[str, Any]:
    ids = [data.ids[i] for i in data.kept]
    got = col.get(ids=ids, include=["embeddings", "documents", "metadatas"])
    by_id = dict(zip(got["ids"], zip(got["documents"], got["metadatas"], got["embeddings"])))
    same_rows = sum(1 for i in data.kept if data.ids[i] in by_id
                    and by_id[data.ids[i]][0] == data.docs[i] and by_id[data.ids[i]][1] == data.metas[i])
    identical = sum(1 for k, (_, _, e) in by_id.items()
                    if np.array_equal(np.asarray(e, np.float32).view(np.int32), before[k].view(np.int32)))
    picks = rng.choice(data.kept, size=min(500, len(data.kept)), replace=False)
    top1 = col.query(query_embeddings=data.vectors[picks], n_results=1, include=[])["ids"]
    self_hits = sum(r[0] == data.ids[i] for r, i in zip(top1, picks))
    # recall@10 against exact cosine search over the rows that stay
    kept_vectors = data.vectors[data.kept]
    unit = kept_vectors / np.linalg.norm(kept_vectors, axis=1, keepdims=True)
    queries = data.vectors[rng.choice(data.kept, size=200)] + 0.5 * rng.standard_normal((200, DIM)).astype(np.float32)
    q = queries / np.linalg.norm(queries, axis=1, keepdims=True)
    truth = np.argsort(-(q @ unit.T), axis=1)[:, :10]
    found = col.query(query_embeddings=queries, n_results=10, include=[])["ids"]
    hits = sum(len(set(f) & {data.ids[data.kept[t]] for t in row}) for f, row in zip(found, truth))
    return {"by_id": len(by_id) / len(ids), "rows_identical": same_rows / len(ids),
            "embeddings_bit_identical": identical / len(ids), "self_recall_at_1": self_hits / len(picks),
            "recall_at_10": hits / (10 * len(queries))}


def second_process(path: Path, data: Data, scratch: Path) -> dict[str, int]:
    ids_file, vec_file = scratch / "ids.json", scratch / "vectors.npy"
    ids_file.write_text(json.dumps([data.ids[i] for i in data.erased]))
    np.save(vec_file, data.vectors[data.erased[:50]])
    out = subprocess.run([sys.executable, "-c", _SECOND_PROCESS, str(path), str(ids_file), str(vec_file)],
                         capture_output=True, text=True, timeout=600, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def run_scenario(name: str, data: Data, scratch: Path, progress: Progress) -> dict[str, Any]:
    path = scratch / name / "chroma"
    task = progress.add_task(f"{name}: load", total=len(data.ids))
    started = time.perf_counter()
    backend = load(path, data, progress, task)
    load_s = time.perf_counter() - started
    before = dict(zip(*(lambda g: (g["ids"], [np.asarray(e, np.float32) for e in g["embeddings"]]))(
        backend._col.get(include=["embeddings"]))))  # the benchmark inspects the store
    erased_ids = [data.ids[i] for i in data.erased]
    steps = progress.add_task(f"{name}: erase and check", total=5)
    wall, cpu = time.perf_counter(), time.process_time()
    report = None
    if name == "stock":
        backend.delete(erased_ids)
    else:
        report = backend.purge(erased_ids, mode=name)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    if name == "stock":
        backend._client.close()  # let Chroma write what it writes at shutdown
        backend = ChromaBackend.embedded(str(path))
    progress.advance(steps)
    remnants = find_remnants(path, data.texts(data.erased), data.vectors[data.erased],
                             exclude=data.texts(data.kept))
    progress.advance(steps)
    rng = np.random.default_rng(1)
    sample = rng.choice(data.erased, size=min(50, len(data.erased)), replace=False)
    col = backend._col
    result: dict[str, Any] = {
        "load_s": round(load_s, 2),
        "erase_wall_s": round(wall, 3),
        "erase_cpu_s": round(cpu, 3),
        "report": report.as_dict() if report else None,
        "remnants": {"texts": remnants.texts, "vectors_exact": remnants.vectors_exact,
                     "vectors_near": remnants.vectors_near, "files": remnants.files,
                     "bytes_scanned": remnants.bytes_scanned},
        "sqlite_text_hits_by_page_owner": sqlite_attribution(path / "chroma.sqlite3", data),
        "fts_index_clean": fts_is_clean(path / "chroma.sqlite3", scratch),
        "bytes": dir_bytes(path),
    }
    progress.advance(steps)
    result["erased_retrievable"] = retrievable(col, data, sample)
    result["survivors"] = survivors(col, data, before, rng)
    progress.advance(steps)
    result["second_process"] = second_process(path, data, scratch)
    progress.advance(steps)
    backend._client.close()
    return result


def print_tables(console: Console, results: dict[str, dict[str, Any]], rows: int, erase: int) -> None:
    erased = Table(title=f"Erasing {erase:,} of {rows:,} rows ({DIM}-d random vectors): what is left")
    for col in ("scenario", "wall s", "CPU s", "texts", "vectors exact/near", "FTS clean", "retrievable"):
        erased.add_column(col, justify="left" if col == "scenario" else "right")
    kept = Table(title="The rows that stay")
    for col in ("scenario", "by id", "rows same", "vectors same", "self@1", "recall@10", "sqlite B", "HNSW B"):
        kept.add_column(col, justify="left" if col == "scenario" else "right")
    for name, r in results.items():
        left, s = r["remnants"], r["survivors"]
        found = sum(r["erased_retrievable"].values()) + r["second_process"]["by_id"] + r["second_process"]["by_query"]
        erased.add_row(name, f"{r['erase_wall_s']:.2f}", f"{r['erase_cpu_s']:.2f}", str(left["texts"]),
                       f"{left['vectors_exact']}/{left['vectors_near']}", "yes" if r["fts_index_clean"] else "NO",
                       str(found))
        kept.add_row(name, f"{s['by_id']:.1%}", f"{s['rows_identical']:.1%}", f"{s['embeddings_bit_identical']:.1%}",
                     f"{s['self_recall_at_1']:.1%}", f"{s['recall_at_10']:.3f}", f"{r['bytes']['sqlite']:,}",
                     f"{r['bytes']['hnsw']:,}")
    console.print(erased)
    console.print(kept)
    if "stock" in results:
        where = Table(title="Stock Chroma after collection.delete: where the erased rows survive")
        where.add_column("location")
        where.add_column("texts", justify="right")
        where.add_column("vectors exact/near", justify="right")
        for f, c in results["stock"]["remnants"]["files"].items():
            where.add_row(f.split("/")[-1] if "/" in f else f, str(c["texts"]), f"{c['vectors_exact']}/{c['vectors_near']}")
        for owner, n in results["stock"]["sqlite_text_hits_by_page_owner"].items():
            where.add_row(f"  pages of {owner}", f"{n} text×page", "")
        where.add_row("  FTS index = rebuild?", "yes" if results["stock"]["fts_index_clean"] else "no", "")
        console.print(where)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the scenarios, print the tables and write the JSON results."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=10_000)
    parser.add_argument("--erase", type=int, default=1_000)
    parser.add_argument("--scenarios", default=",".join(SCENARIOS))
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--quick", action="store_true", help="2,000 rows, 200 erased")
    args = parser.parse_args(argv)
    if args.quick:
        args.rows, args.erase = 2_000, 200
    names = [s for s in args.scenarios.split(",") if s]
    console = Console()
    data = Data(args.rows, args.erase)
    load_before = os.getloadavg()
    results: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="memwarden-erasure-") as tmp:
        scratch = Path(tmp)
        with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                      console=console) as progress:
            for name in names:
                results[name] = run_scenario(name, data, scratch, progress)
    import chromadb

    out = {
        "rows": args.rows, "erased": args.erase, "dim": DIM,
        "environment": {"python": platform.python_version(), "chromadb": chromadb.__version__,
                        "platform": platform.platform(), "cpus": os.cpu_count(),
                        "load_average_before": [round(x, 2) for x in load_before],
                        "load_average_after": [round(x, 2) for x in os.getloadavg()]},
        "scenarios": results,
    }
    print_tables(console, results, args.rows, args.erase)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(out, indent=2) + "\n", encoding="utf-8")
    console.print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
