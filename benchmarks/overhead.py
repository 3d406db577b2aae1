"""Benchmark: what governance costs. Governed memwarden against raw Chroma, side by side.

Everything runs in one process and one run, on the SAME stored rows and the SAME precomputed
embeddings (seeded random unit 384-d float32 vectors), with the same k:

- **governed**: a ``Memory`` (embedded Chroma, partitioned by namespace as memwarden stores
  it, with the lexical index of hybrid search beside it as ``Memory.open`` assembles it,
  hospital-like policy over 10 wards, the default validator chain when
  ``memwarden.guards.defaults.default_validators`` exists) used through a ``Session``, exactly
  as an application would; its searches are dense (``mode="dense"``), the leg raw Chroma
  compares with;
- **raw**: one plain Chroma collection holding the same rows (same ids, texts, metadata and
  vectors; its own directory), called directly, ``where`` filter or not. That is the store an
  application without memwarden would have, and what memwarden itself used before partitions.
  It is configured as memwarden configures its partitions (the same ``hnsw:sync_threshold``
  and ``hnsw:batch_size``; a kept collection made before is reconfigured), and every block of
  writes or batches starts right after a persist of every collection it writes to, raw and
  governed alike (``benchmarks/raw_arm.py``): Chroma re-reads a collection's unpersisted log
  on each write, so a write's cost grows with the entries since the last persist, and a raw
  collection left at Chroma's default (a persist every 1,000 entries), measured for a few
  hundred writes from wherever the last run left it, cost 14 ms or 42 ms of CPU a write
  depending on the run.

Embedding time is excluded: memwarden gets an embedder that looks the precomputed vectors up
in a dict (``embed_documents_array`` / ``embed_query``), and raw Chroma gets the same vectors.
The principal ("alice", physician in wards 0-2 of 10) may read about 30% of the rows, spread
over thousands of namespaces. Rows are seeded in bulk through memwarden's backend (and into
the raw collection) with exactly the metadata memwarden writes (``codec.to_metadata``); every
measured write, search and get goes through the public API.

Measured at each size (default 1k and 10k; ``--full`` adds 100k), interleaving the arms query
by query and rotating their order so machine noise falls on all of them alike:

- write: governed (default validators), governed (no validators), raw ``upsert``;
- search: governed, raw WITH the equivalent filter (the policy scope and visibility as one
  ``where``: ``scope_filter`` + ``visible_filter``), raw UNFILTERED, and raw making the SAME
  PARTITION CALLS as the governed search with no governance around them (governed over it is
  memwarden's own share, it over raw unfiltered is the partitioned layout's); before timing,
  governed and raw filtered hits are compared with the exact top k (brute force over the
  visible rows);
- get by id: governed, raw ``get``;
- batched import: a governed ``Session.batch`` of ``--batch-size`` writes (500; no validators)
  against raw Chroma ``collection.add`` of as many fresh rows in one call, same vectors
  (``--batches`` calls per arm and repeat; ms per call, so the ratio is per record too);

plus, for reference: LangGraph's ``InMemoryStore`` with a vector index at 10k rows, RSS growth
per 10k rows stored, and the cost of a policy decision (pycasbin ``enforce`` uncached against
memwarden's cached ``decide``) with 1,000 policy rules.

Reported: p50 and p95 (wall clock, and process CPU) of every arm, the ratios of the p50s
(pooled, per repeat, and the median of paired per-iteration ratios) in wall and in CPU time,
the log backlog of each written collection when each block started, the targets from the
issues, met or not. Slow arms are budget-limited (``--budget`` seconds per op and size, at least
10 iterations per repeat). Output: a rich table, JSON (``overhead.json``, with every sample) and
a PNG plot (``overhead.png``, when matplotlib is installed); ``--profile`` adds cProfile dumps of
governed search, get, write and batched import (``overhead_profile_{search,get,write,batch}.txt``). RSS uses psutil when
installed, else ``resource.getrusage`` (peak RSS, so growth is an upper bound).

Usage: python benchmarks/overhead.py [--sizes 1000,10000] [--full] [--queries 200] [--repeats 3]
                                     [--writes N] [--k 10] [--budget 180] [--out DIR]
                                     [--depth D] [--threads N] [--search-breadth EF] [--no-raw-filter]
                                     [--data-dir DIR] [--profile] [--skip-reference]
                                     [--batches N] [--batch-size 500] [--only search,get,write,batch]
"""

from __future__ import annotations

import argparse
import cProfile
import dataclasses
import gc
import io
import json
import os
import platform
import pstats
import random
import shutil
import statistics
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from collections.abc import Callable, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

HERE = Path(__file__).resolve().parent
# Benchmark the working tree, not whatever memwarden happens to be installed.
sys.path.insert(0, str(HERE.parent))

import chromadb  # noqa: E402
from chromadb.config import Settings as ChromaSettings  # noqa: E402

from memwarden import Memory, Principal, WriteOp  # noqa: E402
from memwarden.guards.visibility import visible_filter  # noqa: E402
from memwarden.memory.audit import AuditLog  # noqa: E402
from memwarden.memory.journal import JOURNAL_FILE, ErasureJournal  # noqa: E402
from memwarden.memory.settings import DEFAULT_SEARCH_INDEX, SEARCH_INDEX, Settings  # noqa: E402
from memwarden.memory.partitioned import DEFAULT_DEPTH, PartitionedBackend, collection_name  # noqa: E402
from memwarden.memory.codec import stored_metadata, to_metadata  # noqa: E402
from memwarden.memory.lexical import INDEX_FILE, IndexedBackend  # noqa: E402
from memwarden.memory.derived import DerivedIndexBackend  # noqa: E402
from memwarden.memory.vectorindex import VectorIndex  # noqa: E402
from memwarden.memory.backends import StoredRow  # noqa: E402
from memwarden.core.records import Kind, MemoryRecord, Source, record_id, utcnow  # noqa: E402
from memwarden.memory.tombstones import Tombstones  # noqa: E402
from memwarden.policies.conditions import UNKNOWN, RecordAttributes, parse_condition  # noqa: E402
from memwarden.policies.engine import EnforceRequest, PolicyEngine, new_enforcer  # noqa: E402
from memwarden.policies.loading import PolicyData, bundled_policy_path, parse_policy_text  # noqa: E402
from memwarden.policies.partitions import Coverage, Partition, plan  # noqa: E402
from memwarden.policies.pushdown import all_of, scope_filter  # noqa: E402
from memwarden.memory.compaction.config import hnsw_config  # noqa: E402
from benchmarks import raw_arm  # noqa: E402

try:
    from memwarden.guards.defaults import default_validators
except ImportError:  # another engineer's module; the benchmark runs without it
    default_validators = None

try:
    import psutil
except ImportError:
    psutil = None

DIM = 384
WARDS = 10
ALLOWED_WARDS = (0, 1, 2)          # alice reads 3 of 10 wards: ~30% of the rows
PATIENT_SHARE = 0.7                 # the rest are ward notes; both readable by a physician
SEED = 20240611
SEED_CHUNK = 1000
SEED_MARKER = "seeded.json"
DEFAULT_SIZES = (1_000, 10_000)
FULL_SIZE = 100_000
DECISION_RULES = 1_000
INMEMORY_SIZE = 10_000
# Ops whose blocks start right after a persist of every collection they write to (Bench.settle).
SETTLED_OPS = ("write", "batch")

TARGETS = {
    "search_vs_filtered_p50": 1.10,     # governed search p50 <= 1.10x raw with the same filter (10k)
    "search_vs_unfiltered_p50": 1.00,   # governed search p50 <= 1.0x raw unfiltered (10k; issue 19)
    "search_vs_unfiltered_p50_100k": 1.25,  # ... and <= 1.25x at 100k (issue 19)
    "recall_in_scope": 0.98,            # governed recall@k in scope vs an exact scan (issue 19)
    "write_p50": 1.25,                  # governed write p50 <= 1.25x raw (embedding excluded)
    "search_p95_100k_ms": 15.0,         # governed search p95 at 100k < 15 ms (issue 19)
    "batch_import_p50": 1.5,            # a batched governed import <= 1.5x raw batched adds (issue 19)
}


# -- data ------------------------------------------------------------------------------------

def unit_vectors(rng: np.random.Generator, n: int) -> np.ndarray:
    v = rng.standard_normal((n, DIM), dtype=np.float32)
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    return v


class FixedEmbedding:
    """An embedder that returns precomputed vectors: embedding time is excluded from timing.

    ``embed_documents_array`` is memwarden's fast path; ``embed_query`` follows LangChain's
    contract (a list of floats), precomputed too so the lookup is all it costs.
    """

    name = "bench-fixed-384"
    dim = DIM

    def __init__(self) -> None:
        self._arrays: dict[str, np.ndarray] = {}
        self._lists: dict[str, list[float]] = {}

    def add(self, texts: Sequence[str], vectors: np.ndarray, *, as_list: bool = False) -> None:
        for text, vec in zip(texts, vectors):
            self._arrays[text] = vec
            if as_list:
                self._lists[text] = vec.tolist()

    def embed_documents_array(self, texts: Sequence[str]) -> np.ndarray:
        if len(texts) == 1:
            return self._arrays[texts[0]][None, :]
        return np.stack([self._arrays[t] for t in texts])

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        return [self._lists.get(t) or self._arrays[t].tolist() for t in texts]

    def embed_query(self, text: str) -> list[float]:
        found = self._lists.get(text)
        return found if found is not None else self._arrays[text].tolist()


def hospital_policy(wards: int, *, alice_wards: Sequence[int] = ALLOWED_WARDS, writers: bool = True) -> str:
    """The bundled hospital policy, instantiated once per ward with per-ward roles.

    Every ``ward3`` becomes ``wardN`` and every role ``R`` becomes ``R_wN``; alice is a
    physician in ``alice_wards``, so she reads the patients and notes of those wards only.
    """
    template = [line.split("#", 1)[0].strip() for line in bundled_policy_path("hospital").read_text().splitlines()]
    # Namespace-only: the rules with an attribute condition (a sixth field) are left out.
    p_lines = [line for line in template if line.startswith("p,") and line.count(",") <= 4]
    out = ["# generated by benchmarks/overhead.py from the bundled hospital policy"]
    for w in range(wards):
        for line in p_lines:
            fields = [f.strip() for f in line.split(",")]
            fields[1] = f"{fields[1]}_w{w}"
            fields[2] = fields[2].replace("ward3", f"ward{w}")
            out.append(", ".join(fields))
    out += [f"g, alice, physician_w{w}" for w in alice_wards]
    if writers:
        out += [f"g, writer{w}, nurse_w{w}" for w in range(wards)]
        out += [f"g, writer{w}, physician_w{w}" for w in range(wards)]
    out += ["g, dpo, privacy_officer_w0"]
    return "\n".join(out) + "\n"


class Dataset:
    """Deterministic rows: row i has the same namespace, text and vector in every run."""

    def __init__(self, seed: int) -> None:
        self.seed = seed
        self.now = utcnow()

    def rows(self, start: int, stop: int) -> tuple[list[str], np.ndarray, list[str], list[dict[str, Any]], list[bool]]:
        rng = np.random.default_rng([self.seed, start, stop])
        vecs = unit_vectors(rng, stop - start)
        wards = rng.integers(0, WARDS, stop - start)
        kinds = rng.random(stop - start)
        patients = rng.integers(0, 500, stop - start)
        days = rng.integers(0, 365, stop - start)
        ids, docs, metas, visible = [], [], [], []
        for j, i in enumerate(range(start, stop)):
            w = int(wards[j])
            if kinds[j] < PATIENT_SHARE:
                p = f"p{int(patients[j])}"
                ns = (f"ward{w}", "patients", p)
                text = f"Patient {p} on ward {w}: observation #{i}, vitals recorded and stable."
                subjects: tuple[str, ...] = (f"w{w}{p}",)
            else:
                ns = (f"ward{w}", "notes", f"day{int(days[j])}")
                text = f"Ward {w} shift note #{i}: handover completed, no incidents."
                subjects = ()
            writer = f"writer{w}"
            rec = MemoryRecord(id=record_id(writer, ns, text), namespace=ns, content=text, kind=Kind.FACT,
                               subjects=subjects, writer=writer, writer_roles=(f"nurse_w{w}", f"physician_w{w}"),
                               source=Source.AGENT, created_at=self.now)
            ids.append(rec.id)
            docs.append(text)
            metas.append(stored_metadata(to_metadata(rec)))
            visible.append(w in ALLOWED_WARDS)
        return ids, vecs, docs, metas, visible


# -- measurement -----------------------------------------------------------------------------

def rss_mb() -> float:
    if psutil is not None:
        return psutil.Process().memory_info().rss / 2**20
    import resource

    # ru_maxrss is the peak (KiB on Linux), not the current RSS: growth is then an upper bound.
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def pct(values: Sequence[float], q: float) -> float:
    return float(np.percentile(np.asarray(values, dtype=np.float64), q)) if values else float("nan")


def interleaved(arms: dict[str, Callable[[int], Any]], queries: int, repeats: int, warmup: int, *,
                budget: float = float("inf"), floor: int = 10, progress: Progress | None = None,
                task: Any = None, before_block: Callable[[], Any] | None = None,
                ) -> tuple[dict[str, list[list[float]]], dict[str, list[list[float]]]]:
    """Run every arm once per iteration, in an order rotated each iteration; ms per call.

    Returns wall-clock and process-CPU latencies: per arm, one list per repeat. CPU time
    (all threads of this process, Chroma's included) is what a loaded machine disturbs least,
    but it misses time spent waiting on the disk (fsync), so wall-clock stays the headline.
    Call index ``i`` is shared by all arms in an iteration (the same query, the same record)
    and is unique across the run. The warm-up also times an iteration: when ``queries``
    iterations per repeat would take longer than ``budget`` seconds in all, fewer are run
    (never fewer than ``floor`` per repeat). ``before_block``, untimed, runs before the
    warm-up and before each repeat (to put the stores in the same state each time).
    """
    names = list(arms)
    if before_block is not None:
        before_block()
    t0 = time.perf_counter()
    for i in range(warmup):
        for name in names:
            arms[name](i)
    per_iteration = (time.perf_counter() - t0) / max(warmup, 1)
    affordable = budget / max(per_iteration * repeats, 1e-9)
    n = queries if affordable >= queries else max(int(affordable), min(floor, queries))
    if progress is not None:
        progress.update(task, total=n * repeats)
    samples: dict[str, list[list[float]]] = {name: [] for name in names}
    cpu: dict[str, list[list[float]]] = {name: [] for name in names}
    clock, cpu_clock = time.perf_counter_ns, time.process_time_ns
    for r in range(repeats):
        if before_block is not None:
            before_block()
        gc.collect()
        for name in names:
            samples[name].append([])
            cpu[name].append([])
        for q in range(n):
            i = warmup + r * n + q
            shift = i % len(names)
            for name in names[shift:] + names[:shift]:
                c0 = cpu_clock()
                start = clock()
                arms[name](i)
                end = clock()
                samples[name][r].append((end - start) / 1e6)
                cpu[name][r].append((cpu_clock() - c0) / 1e6)
            if progress is not None:
                progress.advance(task)
    return samples, cpu


def _rounded(samples: dict[str, list[list[float]]]) -> dict[str, list[list[float]]]:
    return {arm: [[round(x, 4) for x in block] for block in blocks] for arm, blocks in samples.items()}


def summary(samples: list[list[float]], cpu: list[list[float]]) -> dict[str, Any]:
    pooled = [x for block in samples for x in block]
    cpu_pooled = [x for block in cpu for x in block]
    return {"n": len(pooled), "p50_ms": pct(pooled, 50), "p95_ms": pct(pooled, 95), "mean_ms": statistics.fmean(pooled),
            "cpu_p50_ms": pct(cpu_pooled, 50), "cpu_p95_ms": pct(cpu_pooled, 95),
            "p50_ms_per_repeat": [pct(b, 50) for b in samples], "p95_ms_per_repeat": [pct(b, 95) for b in samples]}


def ratio(governed: list[list[float]], raw: list[list[float]]) -> dict[str, Any]:
    """Governed over raw: pooled p50 and p95 ratios, per-repeat p50 ratios, paired median."""
    per_repeat = [pct(g, 50) / pct(r, 50) for g, r in zip(governed, raw)]
    paired = [a / b for g, r in zip(governed, raw) for a, b in zip(g, r) if b > 0]
    pooled_g = [x for b in governed for x in b]
    pooled_r = [x for b in raw for x in b]
    return {
        "p50": pct(pooled_g, 50) / pct(pooled_r, 50),
        "p95": pct(pooled_g, 95) / pct(pooled_r, 95),
        "p50_per_repeat": per_repeat,
        "p50_median_of_repeats": statistics.median(per_repeat),
        "p50_min_max_of_repeats": [min(per_repeat), max(per_repeat)],
        "paired_median": statistics.median(paired) if paired else float("nan"),
    }


# -- the bench -------------------------------------------------------------------------------

class Bench:
    """One governed memory (partitioned store) and one raw Chroma collection with the same
    rows, grown size by size."""

    def __init__(self, root: Path, args: argparse.Namespace, console: Console) -> None:
        self.root = root
        self.args = args
        self.console = console
        self.data = Dataset(SEED)
        self.embedder = FixedEmbedding()
        policy_path = root / "policy.csv"
        policy_path.write_text(hospital_policy(WARDS), encoding="utf-8")
        self.engine = PolicyEngine(policy_path)
        self.client = chromadb.PersistentClient(path=str(root / "chroma"),
                                                settings=ChromaSettings(anonymized_telemetry=False))
        settings = Settings(partition_depth=args.depth, search_threads=args.threads, search_breadth=args.search_breadth)
        self.backend = PartitionedBackend(self.client, **settings.backend_options())
        # As Memory.open assembles it: the lexical index of hybrid search is kept beside the
        # partitions, so every write (seeded or measured) pays for it; searches are dense
        # (mode="dense"), the leg raw Chroma can be compared with.
        self.store = IndexedBackend.open(self.backend, root / INDEX_FILE)
        # The derived search index (issue 19) sits between the lexical wrapper and the
        # partitions, as Memory.open assembles it; it is reloaded after each size is seeded
        # (see reload_index), which is the open time measured. "off": the partition path only.
        self.derived: DerivedIndexBackend | None = None
        self.index_points: list[dict[str, Any]] = []
        if args.search_index != "off":
            self.derived = DerivedIndexBackend(self.backend, args.search_index, progress=False)
            self.derived.wait_ready()
            self.store._inner = self.derived
        # The same partitions and lexical index without the derived index: the partition path.
        self.partition_store = IndexedBackend(self.backend, self.store._index)
        # Raw Chroma: one collection with the same rows, in its own directory, with the HNSW
        # settings memwarden gives its partitions (see benchmarks/raw_arm.py).
        self.raw_client, self.col = raw_arm.open_raw(root / "raw", "raw-records")
        self.block_starts: dict[str, list[dict[str, int]]] = {}
        audit = AuditLog(root / "audit.sqlite3")
        tombstones = Tombstones(root / "tombstones.sqlite3")
        self.validators_name = "default_validators()" if default_validators is not None else "none"
        chain = default_validators() if default_validators is not None else []
        self.validator_names = [getattr(v, "name", type(v).__name__) for v in chain]
        # Two Memories over one backend, policy, audit log and tombstones: identical but for
        # the write validators, so writes can be measured with and without the chain.
        journal = ErasureJournal(root / JOURNAL_FILE)
        self.mem = Memory(self.store, self.engine, audit, tombstones, journal=journal, embedding=self.embedder,
                          validators=chain, settings=settings)
        self.mem_noval = Memory(self.store, self.engine, audit, tombstones, journal=journal, embedding=self.embedder,
                                validators=(), settings=settings)
        self.mem_partitions = Memory(self.partition_store, self.engine, audit, tombstones, journal=journal,
                                     embedding=self.embedder, validators=(), settings=settings)
        self.alice = self.mem.session(Principal("alice"))
        self.alice_noval = self.mem_noval.session(Principal("alice"))
        self.alice_partitions = self.mem_partitions.session(Principal("alice"))
        # A kept store (--data-dir) says how many rows it holds and how many runs used it: the
        # seed is not paid again, and each run's measured writes get fresh texts (and ids).
        self.marker = root / SEED_MARKER
        kept = json.loads(self.marker.read_text(encoding="utf-8")) if self.marker.exists() else {}
        self.seeded = int(kept.get("rows", 0))
        self.run = int(kept.get("runs", 0))
        self.size = 0
        self.pool = ThreadPoolExecutor(max(args.threads, 1), thread_name_prefix="bench-partitions")
        self.visible_ids: list[str] = []
        self.write_namespaces: set[tuple[str, ...]] = set()
        self.visible_vecs: list[np.ndarray] = []
        self.written: dict[str, list[tuple[str, np.ndarray]]] = {"memwarden": [], "raw": []}
        self.rss_points: list[tuple[int, int, float, float]] = []
        self.disk_points: list[tuple[int, int]] = []
        self.write_serial = 1000 * self.run
        self.write_outcomes: dict[str, int] = {}
        # Query vectors: their own seeded set, looked up by text.
        qrng = np.random.default_rng([SEED, 1])
        self.n_query_vectors = 1000
        self.query_texts = [f"bench query {i}" for i in range(self.n_query_vectors)]
        self.query_vecs = unit_vectors(qrng, self.n_query_vectors)
        self.embedder.add(self.query_texts, self.query_vecs, as_list=True)
        scope = self.engine.scope(self.engine.subjects("alice", ()), "read", ())
        self.scope = scope
        self.pushdown = all_of([visible_filter(utcnow()), scope_filter(scope)])

    def close(self) -> None:
        self.mem.close()
        self.raw_client.close()
        self.pool.shutdown()

    # -- growth
    def grow(self, size: int, progress: Progress, task: Any) -> None:
        gc.collect()
        rss0 = rss_mb()
        start = self.size
        if self.seeded > start and size != self.seeded:
            raise SystemExit(f"the kept store in {self.root} holds {self.seeded:,} seeded rows; measure that size "
                             f"or use another --data-dir")
        for lo in range(start, size, SEED_CHUNK):
            hi = min(lo + SEED_CHUNK, size)
            ids, vecs, docs, metas, visible = self.data.rows(lo, hi)
            if hi > self.seeded:
                self.store.upsert(ids, vecs, docs, metas)
            self.visible_ids += [i for i, v in zip(ids, visible) if v]
            self.visible_vecs += [vec for vec, v in zip(vecs, visible) if v]
            progress.advance(task, hi - lo)
        gc.collect()
        rss1 = rss_mb()
        # Only memwarden's seeding is between the two readings: growth is its store's.
        for lo in range(max(start, self.seeded), size, SEED_CHUNK):
            hi = min(lo + SEED_CHUNK, size)
            ids, vecs, docs, metas, _ = self.data.rows(lo, hi)
            self.col.upsert(ids=ids, embeddings=vecs, documents=docs, metadatas=metas)
            progress.advance(task, hi - lo)
        if self.seeded >= size:
            self.console.log(f"kept store: {self.seeded:,} rows already seeded (run {self.run + 1}); RSS growth not measured")
        self.size = size
        self.seeded = max(self.seeded, size)
        self.marker.write_text(json.dumps({"rows": self.seeded, "runs": self.run + 1}), encoding="utf-8")
        disk = sum(f.stat().st_size for f in (self.root / "chroma").rglob("*") if f.is_file())
        raw_disk = sum(f.stat().st_size for f in (self.root / "raw").rglob("*") if f.is_file())
        self.rss_points.append((start, size, rss0, rss1))
        self.disk_points.append((size, disk))
        self.console.log(f"seeded {start:,} -> {size:,} rows; RSS {rss0:.0f} -> {rss1:.0f} MiB; memwarden dir "
                         f"{disk / 2**20:.0f} MiB ({len(self.backend.partitions())} partitions), raw dir "
                         f"{raw_disk / 2**20:.0f} MiB")

    def reload_index(self) -> None:
        """Load a fresh derived index from the store (what opening a memory does), timed, with
        the RSS it adds; it replaces the one seeding kept up to date (trained on its rows)."""
        if self.derived is None:
            return
        old, self.derived = self.derived, None
        old._stop.set()
        old.index.clear()
        self.store._inner = self.backend  # searches take the partition path while it loads
        del old
        gc.collect()
        rss0 = rss_mb()
        started = time.perf_counter()
        fresh = DerivedIndexBackend(self.backend, self.args.search_index, progress=False)
        assert fresh.wait_ready(), "the search index failed to load"
        seconds = time.perf_counter() - started
        gc.collect()
        rss1 = rss_mb()
        self.derived = fresh
        self.store._inner = fresh
        point = {"rows": self.size, "open_s": round(seconds, 3), "rss_mb": round(rss1 - rss0, 1),
                 "rss_mb_per_100k": round((rss1 - rss0) * 100_000 / max(self.size, 1), 1)}
        self.index_points.append(point)
        self.console.log(f"search index ({self.args.search_index}) loaded {self.size:,} rows in {seconds:.2f} s, "
                         f"+{rss1 - rss0:.0f} MiB RSS")

    # -- what memwarden sends to the store
    def captured_plan(self) -> dict[str, Any]:
        """The partitions alice's search queries, by coverage, and the filters it sends."""
        sent: dict[str, Any] = {}
        backend = self.backend
        real = backend.query_targets

        def spy(embedding: Any, k: int, targets: Any, **kwargs: Any) -> Any:
            sent["targets"] = list(targets)
            return real(embedding, k, targets, **kwargs)

        backend.query_targets = spy  # type: ignore[method-assign]
        try:
            self.alice_partitions.search(self.query_texts[0], k=self.args.k, mode="dense")
        finally:
            del backend.query_targets
        targets = sent["targets"]
        return {
            "partitions": len(targets),
            "coverage": {c.value: sum(t.coverage is c for t in targets) for c in Coverage},
            "residual_filters": [t.where for t in targets if t.coverage is Coverage.PARTIAL],
        }

    # -- arms
    def search_arms(self) -> dict[str, Callable[[int], Any]]:
        k, col, alice = self.args.k, self.col, self.alice
        texts, vecs, where = self.query_texts, self.query_vecs, self.pushdown
        include = ["documents", "metadatas", "distances"]
        n = self.n_query_vectors
        return {
            "governed": lambda i: alice.search(texts[i % n], k=k, mode="dense"),
            "governed_partitions": lambda i: self.alice_partitions.search(texts[i % n], k=k, mode="dense"),
            "raw_filtered": lambda i: col.query(query_embeddings=[vecs[i % n]], n_results=k, where=where,
                                                include=include),
            "raw_unfiltered": lambda i: col.query(query_embeddings=[vecs[i % n]], n_results=k, include=include),
            "raw_partitions": self.partition_calls(),
        }

    def partition_calls(self) -> Callable[[int], Any]:
        """Raw Chroma making the calls a governed search makes, with no governance around them.

        The same collections of the partitioned store, the same residual filters and the same
        two steps (every planned partition's nearest ids side by side, then the best rows
        fetched by id, one call per partition that holds some). Governed over this arm is what
        memwarden itself costs; this arm over raw unfiltered is what the layout costs: Chroma
        charges each call a fixed price, and one search of a partitioned store is several."""
        k, vecs, n = self.args.k, self.query_vecs, self.n_query_vectors
        slack = k + 5   # as PartitionedBackend.query_targets asks
        # The plan a governed search of alice's makes (her whole read scope, as captured_plan shows).
        stored = self.backend.partitions()
        searched = [(self.client.get_collection(collection_name(self.backend.depth, t.partition)), t.where or None)
                    for t in plan(self.scope, stored) if t.searched]
        pool = self.pool

        def run(i: int) -> Any:
            q = [vecs[i % n]]
            lists = list(pool.map(lambda cw: cw[0].query(query_embeddings=q, n_results=slack, where=cw[1],
                                                         include=["distances"]), searched))
            best = sorted((d, rid, j) for j, got in enumerate(lists)
                          for rid, d in zip(got["ids"][0], got["distances"][0]))[:k]
            groups: dict[int, list[str]] = {}
            for _, rid, j in best:
                groups.setdefault(j, []).append(rid)
            return list(pool.map(lambda g: searched[g[0]][0].get(ids=g[1], include=["documents", "metadatas"]),
                                 groups.items()))

        return run

    def get_arms(self) -> dict[str, Callable[[int], Any]]:
        col, alice = self.col, self.alice
        rnd = random.Random(SEED + self.size)
        picks = [rnd.choice(self.visible_ids) for _ in range(4096)]
        return {
            "governed": lambda i: alice.get(picks[i % 4096]),
            "raw": lambda i: col.get(ids=[picks[i % 4096]], include=["documents", "metadatas"]),
        }

    def fresh_writes(self, rng: np.random.Generator, count: int, tag: str
                     ) -> list[tuple[str, tuple[str, ...], str, np.ndarray, dict[str, Any], str]]:
        """``count`` new records alice may write (text, namespace, subject, vector, raw
        metadata, id), their vectors known to the embedder."""
        now = utcnow()
        vecs = unit_vectors(rng, count)
        wards = rng.integers(0, len(ALLOWED_WARDS), count)
        patients = rng.integers(0, 500, count)
        pool = []
        for j in range(count):
            w, p = ALLOWED_WARDS[int(wards[j])], f"p{int(patients[j])}"
            ns = (f"ward{w}", "patients", p)
            text = f"Patient {p} on ward {w}: new finding {tag}-{j}, dose adjusted and charted."
            rec = MemoryRecord(id=record_id("alice", ns, text), namespace=ns, content=text, kind=Kind.FACT,
                               subjects=(f"w{w}{p}",), writer="alice", writer_roles=(), created_at=now)
            pool.append((text, ns, f"w{w}{p}", vecs[j], stored_metadata(to_metadata(rec)), rec.id))
        self.embedder.add([t for t, *_ in pool], vecs)
        self.write_namespaces.update(ns for _, ns, *_ in pool)
        return pool

    def settle(self, op: str) -> None:
        """Start a block of ``op`` right after a persist of every collection its writes go to:
        raw's and the governed partitions of the namespaces written (benchmarks/raw_arm.py),
        recording how many unpersisted log entries each held (where it was in its cycle). The
        partitions are persisted by upserting some of their own rows again, unchanged, through
        Chroma: the lexical index, the derived index and the audit log still describe them."""
        depth = self.backend.depth
        stored = {collection_name(depth, p) for p in self.backend.partitions(fresh=True)}
        names = sorted(stored & {collection_name(depth, self.backend.partition_of(ns)) for ns in self.write_namespaces})
        cols = [("raw", self.root / "raw", self.col)] + [
            (name, self.root / "chroma", self.client.get_collection(name, embedding_function=None)) for name in names]
        threshold = raw_arm.sync_threshold(self.col)
        for name, _, col in cols[1:]:
            if raw_arm.sync_threshold(col) != threshold:
                raise SystemExit(f"the raw arm persists every {threshold} log entries, partition {name} every "
                                 f"{raw_arm.sync_threshold(col)}: not configured alike (benchmarks/raw_arm.py)")
        self.block_starts.setdefault(op, []).append({name: raw_arm.persist_now(root, col) for name, root, col in cols})

    def write_arms(self, count: int) -> dict[str, Callable[[int], Any]]:
        """Fresh content per call and arm, vectors precomputed, raw metadata precomputed."""
        base = self.write_serial
        self.write_serial += 1
        rng = np.random.default_rng([SEED, 2, base])
        gv, nv, rw = (self.fresh_writes(rng, count, f"{base}-{a}") for a in range(3))
        col = self.col

        def governed(i: int) -> Any:
            text, ns, subject, vec, *_ = gv[i]
            record = self.alice.write(text, ns, kind="fact", subjects=[subject])
            self.write_outcomes[record.status.value] = self.write_outcomes.get(record.status.value, 0) + 1
            if record.status.value == "active":
                self.written["memwarden"].append((record.id, vec))
            return record

        def governed_noval(i: int) -> Any:
            text, ns, subject, vec, *_ = nv[i]
            record = self.alice_noval.write(text, ns, kind="fact", subjects=[subject])
            self.written["memwarden"].append((record.id, vec))
            return record

        def raw(i: int) -> Any:
            text, _, _, vec, meta, rid = rw[i]
            self.written["raw"].append((rid, vec))
            return col.upsert(ids=[rid], embeddings=vec[None, :], documents=[text], metadatas=[meta])

        return {"governed": governed, "governed_novalidators": governed_noval, "raw": raw}

    def batch_arms(self, batches: int, size: int) -> dict[str, Callable[[int], Any]]:
        """A bulk import, ``size`` records per call: one governed ``Session.batch`` of writes
        (no validators), against raw Chroma adding the same number of fresh rows in one
        ``collection.add``; vectors precomputed for both (the embedder looks them up)."""
        base = self.write_serial
        self.write_serial += 1
        rng = np.random.default_rng([SEED, 3, base])
        gv, rw = (self.fresh_writes(rng, batches * size, f"batch{base}-{a}") for a in range(2))
        col = self.col

        def governed(i: int) -> Any:
            part = gv[i * size:(i + 1) * size]
            records = self.alice_noval.batch([WriteOp(text, ns, subjects=(subject,)) for text, ns, subject, *_ in part])
            assert all(r.status.value == "active" for r in records)
            self.written["memwarden"] += [(r.id, vec) for r, (_, _, _, vec, *_) in zip(records, part)]
            return records

        def raw(i: int) -> Any:
            part = rw[i * size:(i + 1) * size]
            self.written["raw"] += [(rid, vec) for _, _, _, vec, _, rid in part]
            return col.add(ids=[p[5] for p in part], embeddings=np.stack([p[3] for p in part]),
                           documents=[p[0] for p in part], metadatas=[p[4] for p in part])

        return {"governed_novalidators": governed, "raw": raw}

    def check_equivalence(self, samples: int = 20) -> dict[str, Any]:
        """Governed hits and raw filtered hits against the exact top k over the rows alice may
        see in each store (brute force; the measured writes of earlier sizes went to one store
        each): HNSW is approximate, and the two stores have different graphs."""
        k = self.args.k

        def exact_top(store: str) -> Callable[[np.ndarray], set[str]]:
            ids = np.asarray(self.visible_ids + [i for i, _ in self.written[store]])
            vectors = np.stack(self.visible_vecs + [v for _, v in self.written[store]])
            return lambda q: set(ids[np.argsort(-(vectors @ q))[:k]])

        exact_governed, exact_raw = exact_top("memwarden"), exact_top("raw")
        governed_recall = raw_recall = partitions_recall = 0
        for i in range(samples):
            hits = [h.record.id for h in self.alice.search(self.query_texts[i], k=k, mode="dense")]
            by_partitions = [h.record.id for h in self.alice_partitions.search(self.query_texts[i], k=k, mode="dense")]
            partitions_recall += len(exact_governed(self.query_vecs[i]) & set(by_partitions))
            raw = self.col.query(query_embeddings=[self.query_vecs[i]], n_results=k, where=self.pushdown,
                                 include=[])["ids"][0]
            governed_recall += len(exact_governed(self.query_vecs[i]) & set(hits))
            raw_recall += len(exact_raw(self.query_vecs[i]) & set(raw))
        return {"queries": samples, "governed_recall": governed_recall / (k * samples),
                "governed_partitions_recall": partitions_recall / (k * samples),
                "raw_filtered_recall": raw_recall / (k * samples)}


def inmemory_store(args: argparse.Namespace, progress: Progress, task: Any) -> dict[str, Any]:
    """LangGraph's InMemoryStore with a vector index at 10k rows (a reference, no governance)."""
    from langchain_core.embeddings import Embeddings
    from langgraph.store.base import PutOp
    from langgraph.store.memory import InMemoryStore

    vectors: dict[str, list[float]] = {}

    class Lookup(Embeddings):
        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            return [vectors[t] for t in texts]

        def embed_query(self, text: str) -> list[float]:
            return vectors[text]

    data = Dataset(SEED)
    qrng = np.random.default_rng([SEED, 1])
    qtexts = [f"bench query {i}" for i in range(1000)]
    vectors.update(zip(qtexts, unit_vectors(qrng, 1000).tolist()))
    gc.collect()
    rss0 = rss_mb()
    store = InMemoryStore(index={"dims": DIM, "embed": Lookup(), "fields": ["text"]})
    for lo in range(0, INMEMORY_SIZE, SEED_CHUNK):
        ids, vecs, docs, metas, _ = data.rows(lo, min(lo + SEED_CHUNK, INMEMORY_SIZE))
        vectors.update(zip(docs, vecs.tolist()))
        store.batch([PutOp(tuple(m["ns"].split("/")), i, {"text": d}) for i, d, m in zip(ids, docs, metas)])
        progress.advance(task, len(ids))
    gc.collect()
    rss1 = rss_mb()
    lat: list[float] = []
    for i in range(20):
        store.search((), query=qtexts[i], limit=args.k)
    t0 = time.perf_counter()
    for i in range(5):
        store.search((), query=qtexts[20 + i], limit=args.k)
    per_call = (time.perf_counter() - t0) / 5
    n = max(min(args.queries, int(args.budget / 2 / per_call)), 20)
    for i in range(n):
        t0 = time.perf_counter_ns()
        store.search((), query=qtexts[(25 + i) % 1000], limit=args.k)
        lat.append((time.perf_counter_ns() - t0) / 1e6)
    return {"rows": INMEMORY_SIZE, "queries": n, "p50_ms": pct(lat, 50), "p95_ms": pct(lat, 95),
            "rss_growth_mb_per_10k": (rss1 - rss0) * 10_000 / INMEMORY_SIZE}


def decision_costs(progress: Progress, task: Any) -> dict[str, Any]:
    """pycasbin enforce (what every check would cost without memwarden's cache) against
    memwarden's decide, cached, with 1,000 policy rules."""
    text = hospital_policy(200, writers=False)
    lines = [line for line in text.splitlines() if line.startswith("p,")][:DECISION_RULES]
    lines += [line for line in text.splitlines() if line.startswith("g,")]
    data = parse_policy_text("\n".join(lines), source="bench-1000")
    rules = len(data.rules)
    wards = max(int(r.pattern.labels[0][4:]) for r in data.rules) + 1
    engine = PolicyEngine(data=data)
    # The same model, functions and rules as memwarden's engine, with no cache in front.
    enforcer = new_enforcer(data)
    record = EnforceRequest(UNKNOWN)   # the policy has no conditions: the record does not matter
    subjects = engine.subjects("alice", ())
    rnd = random.Random(SEED)
    requests = [(f"ward{rnd.randrange(wards)}", "patients", f"p{rnd.randrange(500)}") for _ in range(2000)]
    assert all(enforcer.enforce_ex(subjects, ns, "read", record)[0] == engine.decide(subjects, "read", ns).allowed
               for ns in requests[:50])

    def timed(fn: Callable[[int], Any], n: int) -> list[float]:
        out = []
        for i in range(n):
            t0 = time.perf_counter_ns()
            fn(i)
            out.append((time.perf_counter_ns() - t0) / 1e3)
            progress.advance(task)
        return out

    uncached = timed(lambda i: enforcer.enforce_ex(subjects, requests[i], "read", record), 200)
    cold_engine = PolicyEngine(data=data)
    cold = timed(lambda i: cold_engine.decide(subjects, "read", requests[i]), 200)
    # What decide does on a cache miss (PolicyEngine._narrow): the same model and effect over
    # only the rules that can match these subjects and this action (the matcher rejects every
    # other line); measured bare here, beside the full enforcer.
    relevant = PolicyData(engine.rules_for(subjects, "read"), data.links)
    small = new_enforcer(relevant, engine.names)
    assert all(small.enforce_ex(subjects, ns, "read", record)[0] == enforcer.enforce_ex(subjects, ns, "read", record)[0]
               for ns in requests[:200])
    filtered = timed(lambda i: small.enforce_ex(subjects, requests[i], "read", record), 200)
    read_scope = engine.scope(subjects, "read", ())
    contains = timed(lambda i: read_scope.contains(requests[i]), 2_000)
    for ns in requests[:100]:
        engine.decide(subjects, "read", ns)
    cached = timed(lambda i: engine.decide(subjects, "read", requests[i % 100]), 20_000)
    scope = timed(lambda i: engine.scope(subjects, "read", ()), 2_000)
    # What a search's re-check asks: a decision for a stored record, with its attributes. Once
    # for this namespace-only policy, and once with a condition on every read rule, over 8
    # kinds of record (kind x labels), all cached.
    records = [RecordAttributes(kind, "agent", frozenset({"nurse_w0"}), labels) for kind in ("fact", "event")
               for labels in ({}, {"sensitivity": "restricted"}, {"sensitivity": "normal"}, {"team": "x"})]
    condition = parse_condition("label.sensitivity!=restricted&kind!=lesson")
    conditional = PolicyEngine(data=PolicyData(tuple(
        dataclasses.replace(r, condition=condition) if r.action == "read" else r for r in data.rules), data.links))
    for i in range(800):
        engine.decide(subjects, "read", requests[i % 100], records[i % 8])
        conditional.decide(subjects, "read", requests[i % 100], records[i % 8])
    with_record = timed(lambda i: engine.decide(subjects, "read", requests[i % 100], records[i % 8]), 20_000)
    with_conditions = timed(lambda i: conditional.decide(subjects, "read", requests[i % 100], records[i % 8]), 20_000)
    return {
        "rules": rules, "subjects": sorted(subjects.roles),
        "casbin_enforce_uncached_us": {"p50": pct(uncached, 50), "p95": pct(uncached, 95)},
        "memwarden_decide_cold_us": {"p50": pct(cold, 50), "p95": pct(cold, 95)},
        "casbin_enforce_relevant_rules_only_us": {"p50": pct(filtered, 50), "p95": pct(filtered, 95),
                                                  "rules": len(relevant.rules)},
        "read_scope_contains_us": {"p50": pct(contains, 50), "p95": pct(contains, 95)},
        "memwarden_decide_cached_us": {"p50": pct(cached, 50), "p95": pct(cached, 95)},
        "memwarden_scope_cached_us": {"p50": pct(scope, 50), "p95": pct(scope, 95)},
        "memwarden_decide_cached_with_record_us": {"p50": pct(with_record, 50), "p95": pct(with_record, 95)},
        "memwarden_decide_cached_conditional_us": {"p50": pct(with_conditions, 50), "p95": pct(with_conditions, 95)},
        "speedup_cached_vs_uncached_p50": pct(uncached, 50) / pct(cached, 50),
    }


def index_rss(encoding: str, rows: int = 20_000) -> dict[str, float]:
    """Memory of the derived index alone per 100k rows (MiB), with the benchmark's metadata and
    a short (about 80 bytes) or a 1 KB document per row (the index keeps a copy of each): the
    Python side by tracemalloc (RSS is blurred by the allocator reusing freed pages), plus the
    faiss codes, which tracemalloc does not see."""
    import tracemalloc

    if encoding == "off":
        return {}
    data = Dataset(SEED)
    ids, vecs, docs, metas, _ = data.rows(0, rows)
    parts = [Partition((m["ns_0"], m["ns_1"]), int(m["ns_depth"])) for m in metas]
    out = {}
    for label, size in (("short", 0), ("1KB", 1024)):
        documents = [d if not size else (d + " " + "x" * size)[:size - 8] + f" {j:07d}" for j, d in enumerate(docs)]
        rows_in = [StoredRow(i, d, m) for i, d, m in zip(ids, documents, metas)]
        gc.collect()
        tracemalloc.start()
        index = VectorIndex(encoding)
        for lo in range(0, rows, 5000):
            index.put(rows_in[lo:lo + 5000], vecs[lo:lo + 5000], parts[lo:lo + 5000])
        python_side, _ = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        # The documents were built outside the traced block; the index holds them too.
        held = python_side + sum(len(d) + 49 for d in documents) + len(index.buffers()["codes"])
        out[label] = round(held / 2**20 * 100_000 / rows, 1)
        index.clear()
        del index, rows_in, documents
    return out


def profile_paths(bench: Bench, out: Path, queries: int, labels: Sequence[str]) -> dict[str, str]:
    """cProfile of the governed arm of each op in ``labels`` (search, get, write, batch) at the
    current size; top costs, cumulative and own (``overhead_profile_<op>.txt``)."""
    batches = 3  # a batch is hundreds of writes: a few are enough to profile
    factories = {"search": bench.search_arms, "get": bench.get_arms,
                 "write": lambda: bench.write_arms(queries + 5),
                 "batch": lambda: bench.batch_arms(batches + 1, bench.args.batch_size)}
    reports = {}
    for label in labels:
        arms = factories[label]()
        governed = arms["governed" if "governed" in arms else "governed_novalidators"]
        governed(0)
        prof = cProfile.Profile()
        # Search: queries the measured blocks did not make; writes: a fresh pool of records.
        offset = 700 if label in ("search", "get") else 0
        calls = batches if label == "batch" else queries
        started = time.perf_counter()
        prof.enable()
        for i in range(1, calls + 1):
            governed(i + offset)
        prof.disable()
        seconds = time.perf_counter() - started
        buf = io.StringIO()
        per = f" ({1000 * seconds / (calls * bench.args.batch_size):.2f} ms per record)" if label == "batch" else ""
        buf.write(f"{calls} governed {label} calls at {bench.size:,} rows in {seconds:.2f} s under cProfile{per}\n")
        stats = pstats.Stats(prof, stream=buf)
        stats.sort_stats("cumulative").print_stats(45)
        stats.sort_stats("tottime").print_stats(35)
        reports[label] = buf.getvalue()
        (out / f"overhead_profile_{label}.txt").write_text(buf.getvalue(), encoding="utf-8")
    return reports


def measure_ops(bench: Bench, args: argparse.Namespace, writes: int, progress: Progress) -> dict[str, Any]:
    """Every op's arms, interleaved, at the bench's current size (``--only`` picks ops)."""
    only = set(args.only.split(",")) if args.only else {"search", "get", "write", "batch"}
    size, repeats, budget = bench.size, args.repeats, args.budget
    search_arms = lambda: {a: f for a, f in bench.search_arms().items()  # noqa: E731
                           if not (args.no_raw_filter and a == "raw_filtered")}
    # op -> (arms, iterations per repeat, warm-up iterations, fewest iterations per repeat)
    plans: dict[str, tuple[Callable[[], dict[str, Callable[[int], Any]]], int, int, int]] = {
        "search": (search_arms, args.queries, 5, 10),
        "get": (bench.get_arms, args.queries, 20, 10),
        "write": (lambda: bench.write_arms(5 + writes * repeats), writes, 5, 10),
        "batch": (lambda: bench.batch_arms(1 + args.batches * repeats, args.batch_size), args.batches, 1, 1),
    }
    ops: dict[str, Any] = {}
    for op, (arms, n, warmup, floor) in plans.items():
        if op not in only or not n:
            continue
        task = progress.add_task(f"{op} @ {size:,}", total=n * repeats)
        before = (lambda op=op: bench.settle(op)) if op in SETTLED_OPS else None
        wall, cpu = interleaved(arms(), n, repeats, warmup, budget=budget, floor=floor, progress=progress, task=task,
                                before_block=before)
        ops[op] = {"arms": {a: summary(v, cpu[a]) for a, v in wall.items()}, "samples_ms": _rounded(wall),
                   "cpu_samples_ms": _rounded(cpu)}
        if op in SETTLED_OPS:
            ops[op]["log_backlog_at_block_start"] = bench.block_starts.pop(op, [])
    if "write" in ops:
        ops["write"]["governed_outcomes"] = dict(bench.write_outcomes)
    if "batch" in ops:
        ops["batch"]["records_per_call"] = args.batch_size
    return ops


# -- output ----------------------------------------------------------------------------------

def fmt(x: float, unit: str = "") -> str:
    return "-" if x != x else (f"{x:.3f}{unit}" if x < 1 else f"{x:.2f}{unit}" if x < 100 else f"{x:.0f}{unit}")


RATIO_ROWS = (
    ("search", "governed / raw + same filter", "governed", "raw_filtered"),
    ("search", "governed / raw unfiltered", "governed", "raw_unfiltered"),
    ("search", "governed, partition path / raw unfiltered", "governed_partitions", "raw_unfiltered"),
    ("search", "raw + filter / raw unfiltered (Chroma alone)", "raw_filtered", "raw_unfiltered"),
    ("search", "governed / raw, the same partition calls (memwarden's share)", "governed", "raw_partitions"),
    ("search", "raw, the same partition calls / raw unfiltered (the layout's share)", "raw_partitions",
     "raw_unfiltered"),
    ("get", "governed / raw", "governed", "raw"),
    ("write", "governed (validators) / raw", "governed", "raw"),
    ("write", "governed (no validators) / raw", "governed_novalidators", "raw"),
    ("batch", "batched import, governed (no validators) / raw batched adds", "governed_novalidators", "raw"),
)


def ratio_rows(size: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    out = []
    for op, label, num, den in RATIO_ROWS:
        ops = size["ops"].get(op)
        if ops and num in ops["samples_ms"] and den in ops["samples_ms"]:
            r = ratio(ops["samples_ms"][num], ops["samples_ms"][den])
            r["cpu"] = ratio(ops["cpu_samples_ms"][num], ops["cpu_samples_ms"][den])
            out.append((op, label, r))
    return out


def render(console: Console, result: dict[str, Any]) -> None:
    cfg = result["config"]
    table = Table(title=f"latency, governed memwarden vs raw Chroma on the same collection (k={cfg['k']}, "
                        f"validators: {cfg.get('validators')})")
    for col in ("rows", "op", "arm", "calls", "p50 ms", "p95 ms", "mean ms", "CPU p50 ms"):
        table.add_column(col, justify="left" if col in ("op", "arm") else "right", no_wrap=True)
    for size in result["sizes"]:
        for op, entry in size["ops"].items():
            for j, (arm, s) in enumerate(entry["arms"].items()):
                table.add_row(f"{size['rows']:,}" if j == 0 else "", op if j == 0 else "", arm, str(s["n"]),
                              fmt(s["p50_ms"]), fmt(s["p95_ms"]), fmt(s["mean_ms"]), fmt(s["cpu_p50_ms"]))
        table.add_section()
    console.print(table)
    ratios = Table(title="ratios (side by side, interleaved; per repeat = p50 ratio of each repeat)")
    for col in ("rows", "comparison", "p50 ratio", "p95 ratio", "per repeat", "paired median", "CPU p50 ratio"):
        ratios.add_column(col, justify="left" if col == "comparison" else "right", no_wrap=True)
    for size in result["sizes"]:
        for j, (op, label, r) in enumerate(size["ratios"]):
            ratios.add_row(f"{size['rows']:,}" if j == 0 else "", f"{op}: {label}", fmt(r["p50"], "x"),
                           fmt(r["p95"], "x"), " ".join(fmt(x) for x in r["p50_per_repeat"]), fmt(r["paired_median"], "x"),
                           fmt(r["cpu"]["p50"], "x"))
        ratios.add_section()
    console.print(ratios)
    extra = Table(title="reference measurements")
    extra.add_column("what")
    extra.add_column("value", justify="right")
    im = result.get("inmemory_store")
    if im:
        extra.add_row(f"LangGraph InMemoryStore search, {im['rows']:,} rows (p50 / p95)",
                      f"{fmt(im['p50_ms'])} / {fmt(im['p95_ms'])} ms")
        extra.add_row("InMemoryStore RSS growth per 10k rows", f"{im['rss_growth_mb_per_10k']:.1f} MiB")
    si = result.get("search_index") or {}
    for point in si.get("loads", []):
        extra.add_row(f"search index ({si['encoding']}) open, {point['rows']:,} rows",
                      f"{point['open_s']:.2f} s, +{point['rss_mb']:.0f} MiB ({point['rss_mb_per_100k']:.0f} MiB/100k)")
    for label, mb in (si.get("rss_by_document") or {}).items():
        extra.add_row(f"search index ({si['encoding']}) alone, RSS per 100k rows, {label} documents", f"{mb:.0f} MiB")
    for key, value in result["rss"]["growth_mb_per_10k"].items():
        extra.add_row(f"Chroma (memwarden rows) RSS growth per 10k, {key}", f"{value:.1f} MiB")
    for key, value in result["rss"]["disk_mb_per_10k"].items():
        extra.add_row(f"Chroma (memwarden rows) disk per 10k, {key}", f"{value:.1f} MiB")
    d = result.get("decisions")
    if d:
        extra.add_row(f"pycasbin enforce, uncached, {d['rules']} rules (p50 / p95)",
                      f"{fmt(d['casbin_enforce_uncached_us']['p50'])} / {fmt(d['casbin_enforce_uncached_us']['p95'])} µs")
        extra.add_row("memwarden decide, cache miss (p50 / p95)",
                      f"{fmt(d['memwarden_decide_cold_us']['p50'])} / {fmt(d['memwarden_decide_cold_us']['p95'])} µs")
        f = d["casbin_enforce_relevant_rules_only_us"]
        extra.add_row(f"pycasbin enforce over the {f['rules']} rules of the caller's roles (as decide does on a miss, p50 / p95)",
                      f"{fmt(f['p50'])} / {fmt(f['p95'])} µs")
        extra.add_row("ReadScope.contains (p50)", f"{fmt(d['read_scope_contains_us']['p50'])} µs")
        extra.add_row("memwarden decide, cached (p50 / p95)",
                      f"{fmt(d['memwarden_decide_cached_us']['p50'])} / {fmt(d['memwarden_decide_cached_us']['p95'])} µs")
        extra.add_row("memwarden read scope, cached (p50)", f"{fmt(d['memwarden_scope_cached_us']['p50'])} µs")
        for key, what in (("memwarden_decide_cached_with_record_us", "with the record's attributes"),
                          ("memwarden_decide_cached_conditional_us", "conditions on every read rule")):
            if key in d:
                extra.add_row(f"memwarden decide, cached, {what} (p50 / p95)",
                              f"{fmt(d[key]['p50'])} / {fmt(d[key]['p95'])} µs")
    console.print(extra)
    targets = Table(title="targets from the issues")
    for col in ("target", "measured", "met"):
        targets.add_column(col)
    for t in result["targets"]:
        targets.add_row(t["target"], t["measured"], {True: "[green]yes", False: "[red]no", None: "n/a"}[t["met"]])
    console.print(targets)


def _ratio(size: dict[str, Any] | None, label: str) -> dict[str, Any] | None:
    if size is None:
        return None
    return next((r for _, lab, r in size["ratios"] if lab == label), None)


def targets(result: dict[str, Any]) -> list[dict[str, Any]]:
    by_rows = {s["rows"]: s for s in result["sizes"]}
    out = []

    def add(text: str, measured: float | None, limit: float, unit: str = "x") -> None:
        out.append({"target": text, "measured": "not measured" if measured is None else f"{measured:.2f}{unit}",
                    "value": measured, "limit": limit, "met": None if measured is None else measured <= limit})

    s10 = by_rows.get(10_000)
    for label, text, limit in (
        ("governed / raw + same filter", "governed search p50 <= 1.10x raw with the same filter (10k)",
         TARGETS["search_vs_filtered_p50"]),
        ("governed / raw unfiltered", "governed search p50 <= 1.0x raw unfiltered (10k)",
         TARGETS["search_vs_unfiltered_p50"]),
    ):
        r = _ratio(s10, label)
        add(text, r["p50"] if r else None, limit)
    s100 = by_rows.get(FULL_SIZE)
    for rows, size in ((10_000, s10), (FULL_SIZE, s100)):  # issue 19: writes at 10k and at 100k
        at = f"{rows // 1000}k"
        for label, text, limit in (
            ("governed (validators) / raw", f"governed write p50 <= 1.25x raw ({at}, default validators)",
             TARGETS["write_p50"]),
            ("governed (no validators) / raw", f"governed write p50 <= 1.25x raw ({at}, no validators)",
             TARGETS["write_p50"]),
            ("batched import, governed (no validators) / raw batched adds",
             f"batched governed import p50 <= 1.5x raw batched adds ({at})", TARGETS["batch_import_p50"]),
        ):
            r = _ratio(size, label)
            add(text, r["p50"] if r else None, limit)
    r = _ratio(s100, "governed / raw unfiltered")
    add("governed search p50 <= 1.25x raw unfiltered (100k)", r["p50"] if r else None,
        TARGETS["search_vs_unfiltered_p50_100k"])
    for rows, size in sorted(by_rows.items()):
        if rows >= 10_000:
            recall = size["equivalence"]["governed_recall"]
            out.append({"target": f"governed recall@k in scope >= 0.98 vs exact ({rows:,})", "measured": f"{recall:.3f}",
                        "value": recall, "limit": TARGETS["recall_in_scope"],
                        "met": recall >= TARGETS["recall_in_scope"]})
    add("governed search p95 at 100k < 15 ms",
        s100["ops"]["search"]["arms"]["governed"]["p95_ms"] if s100 and "search" in s100["ops"] else None,
        TARGETS["search_p95_100k_ms"], " ms")
    return out


def plot(result: dict[str, Any], path: Path) -> bool:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    ops = [op for op in ("write", "search", "get", "batch") if op in result["sizes"][0]["ops"]]
    fig, axes = plt.subplots(1, len(ops) + 1, figsize=(18, 4.8))
    rows = [s["rows"] for s in result["sizes"]]
    for ax, op in zip(axes, ops):
        arms = list(result["sizes"][0]["ops"][op]["arms"])
        for arm in arms:
            p50 = [s["ops"][op]["arms"][arm]["p50_ms"] for s in result["sizes"]]
            p95 = [s["ops"][op]["arms"][arm]["p95_ms"] for s in result["sizes"]]
            line, = ax.plot(rows, p50, marker="o", label=f"{arm} p50")
            ax.plot(rows, p95, marker="x", linestyle="--", color=line.get_color(), label=f"{arm} p95")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("rows")
        ax.set_ylabel("ms")
        ax.set_title(op)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
    ax = axes[-1]
    for op, label, _, _ in RATIO_ROWS:
        values = [_ratio(s, label) for s in result["sizes"]]
        if all(values):
            ax.plot(rows, [v["p50"] for v in values], marker="o", label=f"{op}: {label}")
    for limit, style in ((1.10, ":"), (1.25, "-."), (1.5, "--")):
        ax.axhline(limit, color="grey", linestyle=style, linewidth=0.8)
    ax.set_xscale("log")
    ax.set_xlabel("rows")
    ax.set_yscale("log")
    ax.set_ylabel("p50 ratio")
    ax.set_title("overhead ratios (grey: 1.10, 1.25, 1.5 targets)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


# -- main ------------------------------------------------------------------------------------

def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default=",".join(map(str, DEFAULT_SIZES)),
                        help="comma-separated row counts (default 1000,10000)")
    parser.add_argument("--full", action="store_true", help="add 100k rows")
    parser.add_argument("--queries", type=int, default=200, help="interleaved calls per arm per repeat")
    parser.add_argument("--repeats", type=int, default=3, help="repeats of each interleaved block")
    parser.add_argument("--writes", type=int, default=None, help="writes per arm per repeat (default queries/2)")
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--budget", type=float, default=180.0,
                        help="seconds per op and size; slow ops run fewer iterations (at least 10 per repeat)")
    parser.add_argument("--out", type=Path, default=HERE / "results", help="directory for overhead.json/.png")
    parser.add_argument("--data-dir", type=Path, default=None, help="where the stores live, kept for the next run of the same size "
                        "(seeded once; default: a temp dir, removed)")
    parser.add_argument("--profile", action="store_true",
                        help="cProfile governed search, get and write at the smallest size (overhead_profile_*.txt)")
    parser.add_argument("--skip-reference", action="store_true", help="skip InMemoryStore and decision costs")
    parser.add_argument("--no-raw-filter", action="store_true",
                        help="leave out raw search with the filter (seconds per query at 100k, so it caps the "
                             "iterations of the other search arms)")
    parser.add_argument("--depth", type=int, default=None, help=f"partition depth (default {DEFAULT_DEPTH})")
    parser.add_argument("--threads", type=int, default=4, help="partitions one search queries side by side")
    parser.add_argument("--search-index", default=DEFAULT_SEARCH_INDEX, choices=list(SEARCH_INDEX),
                        help=f"the derived in-RAM search index of governed searches (default {DEFAULT_SEARCH_INDEX})")
    parser.add_argument("--batches", type=int, default=3,
                        help="batched imports per arm per repeat (0: none); each of --batch-size records")
    parser.add_argument("--batch-size", type=int, default=500, help="records per batched import")
    parser.add_argument("--only", default=None,
                        help="comma-separated ops to measure (search,get,write,batch; default all)")
    parser.add_argument("--search-breadth", type=int, default=None,
                        help="HNSW ef_search of memwarden's partitions (default: Chroma's, 100); raw keeps Chroma's")
    args = parser.parse_args(argv)
    sizes = sorted({int(s) for s in args.sizes.split(",") if s.strip()} | ({FULL_SIZE} if args.full else set()))
    writes = args.writes or max(args.queries // 2, 20)
    args.out.mkdir(parents=True, exist_ok=True)
    console = Console() if Console().is_terminal else Console(width=170)
    started = time.perf_counter()
    # --data-dir keeps the store (seeded rows, measured writes) for the next run of the same size.
    if args.data_dir is not None:
        args.data_dir.mkdir(parents=True, exist_ok=True)
    tmp = args.data_dir or Path(tempfile.mkdtemp(prefix="mw-overhead-"))
    result: dict[str, Any] = {
        "benchmark": "overhead",
        "started": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "config": {"sizes": sizes, "queries": args.queries, "repeats": args.repeats, "writes": writes, "k": args.k,
                   "partition_depth": args.depth or DEFAULT_DEPTH, "search_threads": args.threads,
                   "search_breadth": args.search_breadth, "search_index": args.search_index,
                   "budget_s": args.budget, "dim": DIM, "seed": SEED, "wards": WARDS, "allowed_wards": list(ALLOWED_WARDS),
                   "policy": "bundled hospital.csv instantiated per ward (10 wards, 4 roles each)"},
        "environment": {"python": platform.python_version(), "platform": platform.platform(),
                        "cpus": os.cpu_count(), "chromadb": chromadb.__version__,
                        "load_average_start": list(os.getloadavg()), "rss_source": "psutil" if psutil else "getrusage maxrss",
                        "data_dir": str(tmp)},
        "sizes": [],
    }
    try:
        bench = Bench(tmp, args, console)
        result["config"]["validators"] = bench.validators_name
        result["config"]["validator_chain"] = bench.validator_names
        result["config"]["raw_arm"] = {"hnsw": hnsw_config(bench.col), "persisted_before_each_block": list(SETTLED_OPS)}
        console.log(f"validators: {bench.validators_name} {bench.validator_names}; data in {tmp}")
        columns = (TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
        with Progress(*columns, console=console) as progress:
            for size in sizes:
                seed_task = progress.add_task(f"seed {size:,} rows (memwarden, raw)", total=2 * (size - bench.size))
                bench.grow(size, progress, seed_task)
                bench.reload_index()
                result["raw_filter"] = bench.pushdown
                entry: dict[str, Any] = {"rows": size, "visible_fraction": len(bench.visible_ids) / bench.size}
                entry["plan"] = bench.captured_plan()
                console.log(f"alice's search: {entry['plan']['coverage']} of {entry['plan']['partitions']} partitions")
                entry["equivalence"] = bench.check_equivalence()
                entry["ops"] = measure_ops(bench, args, writes, progress)
                entry["ratios"] = ratio_rows(entry)
                bench.write_outcomes.clear()
                if args.profile and size == sizes[0]:
                    # At the smallest size Chroma's share is smallest, so memwarden's own costs show best.
                    labels = [op for op in ("search", "get", "write", "batch") if op in entry["ops"]]
                    profile_paths(bench, args.out, min(50, args.queries), labels)
                    result["profile"] = {"rows": size, "files": [f"overhead_profile_{x}.txt" for x in labels]}
                entry["load_average"] = list(os.getloadavg())
                result["sizes"].append(entry)
                console.log(f"{size:,} rows: " + "; ".join(f"{op} {label} {r['p50']:.2f}x" for op, label, r in entry["ratios"]))
            if not args.skip_reference:
                t = progress.add_task(f"InMemoryStore {INMEMORY_SIZE:,}", total=INMEMORY_SIZE)
                result["inmemory_store"] = inmemory_store(args, progress, t)
                t = progress.add_task("decisions, 1,000 rules", total=20_000 * 3 + 200 * 3 + 2_000 * 2)
                result["decisions"] = decision_costs(progress, t)
        pts = bench.rss_points
        disk = bench.disk_points
        result["rss"] = {
            "points_mb": pts,
            "growth_mb_per_10k": {f"{a:,}->{b:,}": (rb - ra) * 10_000 / (b - a) for a, b, ra, rb in pts if b > a},
            "disk_mb_per_10k": {f"{a:,}->{b:,}": (db - da) / 2**20 * 10_000 / (b - a)
                                for (a, da), (b, db) in zip([(0, 0)] + disk, disk)},
            "policy_cache_entries": {"decisions": len(bench.engine._decisions), "scopes": len(bench.engine._scopes)},
        }
        result["search_index"] = {"encoding": args.search_index, "loads": bench.index_points,
                                  "rss_by_document": index_rss(args.search_index)}
        bench.close()
    finally:
        if args.data_dir is None:
            shutil.rmtree(tmp, ignore_errors=True)
    result["targets"] = targets(result)
    result["runtime_s"] = time.perf_counter() - started
    result["environment"]["load_average_end"] = list(os.getloadavg())
    (args.out / "overhead.json").write_text(json.dumps(result, indent=2, default=str), encoding="utf-8")
    render(console, result)
    if plot(result, args.out / "overhead.png"):
        console.log(f"plot: {args.out / 'overhead.png'}")
    console.log(f"json: {args.out / 'overhead.json'}; runtime {result['runtime_s']:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
