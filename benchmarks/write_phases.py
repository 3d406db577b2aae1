"""Where a governed write's time goes: wall time per phase of single writes and batched imports.

Opens a store kept by ``overhead.py --data-dir DIR`` (seeded once; nothing is seeded here
unless the directory is new), then runs governed single writes (default validators) and
governed batches (no validators), interleaved with the raw Chroma arms, while timers wrap
the phases every write passes through: the policy decision, the look-up of the write's own
id, the subject look-up of the related-records cache, the validators, the audit append
(split into its SQL and its commit), the lexical index's transaction, the derived index's
update, memwarden's partitioned upsert and Chroma's own ``upsert``. Timers are inclusive
(a phase contains the phases it calls) and count only while a governed call runs.

Usage: python benchmarks/write_phases.py --data-dir DIR [--size 100000] [--writes 60]
                                         [--batches 2] [--cprofile FILE]
"""

from __future__ import annotations

import argparse
import cProfile
import functools
import json
import statistics
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from rich.console import Console
from rich.progress import Progress

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

import overhead  # noqa: E402
from chromadb.api.models.Collection import Collection  # noqa: E402

from memwarden.memory import audit, audit_stores, caches, coalesce, context, derived, lexical  # noqa: E402
from memwarden.memory import partitioned, pipeline, vectorindex, view  # noqa: E402
from memwarden.policies.engine import PolicyEngine  # noqa: E402

# (owner, attribute, label): the phases timed, outermost first.
PHASES: list[tuple[Any, str, str]] = [
    (pipeline.Pipeline, "_run", "pipeline: one operation"),
    (PolicyEngine, "decide", "policy decide"),
    (view.StoreView, "stored", "look-up of the write's own id"),
    (caches.SubjectIndex, "about", "related records (subject index)"),
    (pipeline.Pipeline, "_load_subject", "  subject index miss: store read"),
    (context.OpContext, "validate", "validators"),
    (context.OpContext, "tombstoned", "tombstone check"),
    (audit.AuditLog, "append_many", "audit append"),
    (audit.AuditLog, "_insert", "  audit: chain + INSERT"),
    (audit_stores.SQLiteStore, "appending", None),  # a context manager: timed around its exit (commit)
    (audit.AuditLog, "_appended", "  audit: head file"),
    (coalesce.CoalescingBackend, "flush", "coalescer flush (batch store call)"),
    (lexical.LexicalIndex, "upsert", "lexical index transaction"),
    (derived.DerivedIndexBackend, "upsert", "derived index + Chroma"),
    (vectorindex.VectorIndex, "put", "  derived index: put"),
    (partitioned.PartitionedBackend, "upsert", "partitioned upsert"),
    (partitioned.PartitionedBackend, "_locate", "  partitioned: locate ids"),
    (partitioned.PartitionedBackend, "_ensure", "  partitioned: collection handle"),
    (Collection, "upsert", "  Chroma collection.upsert"),
    (Collection, "add", "  Chroma collection.add"),
]

ACTIVE = [False]
TIMES: dict[str, list[float]] = defaultdict(list)


def timed(fn: Callable[..., Any], label: str) -> Callable[..., Any]:
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if not ACTIVE[0]:
            return fn(*args, **kwargs)
        started = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            TIMES[label].append(time.perf_counter() - started)
    return wrapper


class _TimedCommit:
    """Wraps the audit store's append transaction: the time from the end of the block to the
    end of its exit is the commit (with its sync when flushed)."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def __enter__(self) -> Any:
        return self._inner.__enter__()

    def __exit__(self, *exc: Any) -> Any:
        started = time.perf_counter()
        try:
            return self._inner.__exit__(*exc)
        finally:
            if ACTIVE[0]:
                TIMES["  audit: COMMIT (synced)"].append(time.perf_counter() - started)


def install() -> None:
    for owner, name, label in PHASES:
        fn = getattr(owner, name)
        if label is None:
            setattr(owner, name, functools.wraps(fn)(lambda self, *a, _fn=fn, **k: _TimedCommit(_fn(self, *a, **k))))
        else:
            setattr(owner, name, timed(fn, label))


def measure(arms: dict[str, Callable[[int], Any]], calls: int, governed: str) -> dict[str, Any]:
    """Run the arms interleaved; phase times (ms per call) of the governed arm."""
    wall: dict[str, list[float]] = defaultdict(list)
    per_call: list[dict[str, list[float]]] = []
    for i in range(calls):
        for name in (list(arms) if i % 2 else list(reversed(arms))):
            TIMES.clear()
            ACTIVE[0] = name == governed
            started = time.perf_counter()
            arms[name](i)
            wall[name].append(time.perf_counter() - started)
            ACTIVE[0] = False
            if name == governed:
                per_call.append(dict(TIMES))
    labels = list(dict.fromkeys(label for call in per_call for label in call))
    n = len(per_call)
    return {
        "p50_ms": {a: round(1000 * statistics.median(v), 2) for a, v in wall.items()},
        "mean_ms": {a: round(1000 * statistics.mean(v), 2) for a, v in wall.items()},
        # Per governed call: the phase's total in that call; median and mean over the calls.
        "phase_p50_ms": {label: round(1000 * statistics.median(sum(c.get(label, ())) for c in per_call), 3)
                         for label in labels},
        "phase_mean_ms": {label: round(1000 * sum(sum(c.get(label, ())) for c in per_call) / n, 3)
                          for label in labels},
        "phase_calls_per_call": {label: round(sum(len(c.get(label, ())) for c in per_call) / n, 2)
                                 for label in labels},
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", type=Path, required=True, help="a store kept by overhead.py --data-dir")
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--writes", type=int, default=60)
    parser.add_argument("--batches", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=500)
    parser.add_argument("--cprofile", type=Path, default=None, help="also write a cProfile of the governed arms")
    parser.add_argument("--out", type=Path, default=None, help="JSON of the phases")
    args = parser.parse_args()
    console = Console()
    bench_args = argparse.Namespace(depth=None, threads=4, search_breadth=None,
                                    search_index=overhead.DEFAULT_SEARCH_INDEX, batch_size=args.batch_size)
    args.data_dir.mkdir(parents=True, exist_ok=True)
    bench = overhead.Bench(args.data_dir, bench_args, console)
    with Progress(console=console) as progress:
        bench.grow(args.size, progress, progress.add_task("seed", total=2 * args.size))
    bench.reload_index()
    install()
    prof = cProfile.Profile() if args.cprofile else None
    result: dict[str, Any] = {"rows": args.size}
    writes = bench.write_arms(args.writes + 5)
    for i in range(5):  # warm-up
        for arm in writes.values():
            arm(args.writes + i)
    bench.settle("write")  # every collection written starts right after a persist (overhead.py)
    if prof:
        prof.enable()
    result["write"] = measure({k: v for k, v in writes.items() if k != "governed_novalidators"},
                              args.writes, "governed")
    if args.batches:
        batches = bench.batch_arms(args.batches + 1, args.batch_size)
        for arm in batches.values():
            arm(args.batches)  # warm-up
        if prof:
            prof.disable()  # the settling is no phase of a governed write
        bench.settle("batch")
        if prof:
            prof.enable()
        result["batch"] = measure(batches, args.batches, "governed_novalidators")
    result["log_backlog_at_block_start"] = bench.block_starts
    if prof:
        prof.disable()
        prof.dump_stats(str(args.cprofile))
    bench.close()
    console.print_json(json.dumps(result))
    if args.out:
        args.out.write_text(json.dumps(result, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    np.seterr(all="ignore")
    raise SystemExit(main())
