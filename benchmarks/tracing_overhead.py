"""Benchmark: what tracing costs a governed search.

Two configurations in one process, on one Memory (embedded Chroma, a small hospital policy):

- ``no-sdk``: what a library user gets by default. Only ``opentelemetry-api`` is in play; the
  tracer is the API's no-op, spans do not record and attributes are never built.
- ``sdk``: an application that installed the SDK: TracerProvider + BatchSpanProcessor + an
  exporter that drops every span (so the cost measured is memwarden's and the SDK's, not a
  network's).

Measurements come in pairs: the same query once without and once with the SDK, back to back,
the order alternating, so that load bursts and drift from other processes hit both sides of
a pair alike. Reported: wall-clock and process-CPU latency per configuration, the paired
overhead (median and 10%-trimmed mean of the per-pair differences, relative to the no-SDK
median), and a model: the CPU cost of the span machinery alone (operation_span + annotate
with a search's attributes, the exporter thread included) divided by a search's CPU time.
On a busy machine trust CPU over wall clock, and the model over both.

Usage: python benchmarks/tracing_overhead.py [--records N] [--pairs P] [--embedding minilm|hashing]
                                              [--out PATH] [--quick]
"""

from __future__ import annotations

import argparse
import gc
import os
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from rich.console import Console
from rich.table import Table

HERE = Path(__file__).resolve().parent
# Benchmark the working tree, not whatever memwarden happens to be installed.
sys.path.insert(0, str(HERE.parent))
from benchmarks.results_io import write_result  # noqa: E402

from opentelemetry import trace  # noqa: E402
from opentelemetry.sdk.trace import TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult  # noqa: E402

from memwarden import Memory, Principal  # noqa: E402
from memwarden.memory import tracing  # noqa: E402
from memwarden.memory.embeddings import HashingEmbedding  # noqa: E402

DEFAULT_OUT = HERE / "results" / "tracing_overhead.json"
TARGET = 0.05  # the overhead the SDK configuration may add to a governed search

SUBJECTS = [f"p{i}" for i in range(40)]
FACTS = ["is allergic to penicillin", "takes 5 mg warfarin daily", "had an appendectomy on 3 May",
         "asked for a vegetarian diet", "slept well, pain score 2 of 10", "needs a wheelchair to move",
         "has a follow-up scan on Friday", "is diabetic and on insulin", "prefers to be called by first name",
         "reported dizziness after the new medication"]
QUERIES = ["which patients have drug allergies", "who takes blood thinners", "recent surgery and recovery",
           "diet requests", "how did the night shift go", "mobility aids needed", "upcoming scans",
           "patients on insulin", "dizziness after medication", "how to address the patient"]


class DropExporter(SpanExporter):
    """Accepts every batch and throws it away."""

    def __init__(self) -> None:
        self.spans = 0

    def export(self, spans: Sequence[object]) -> SpanExportResult:
        self.spans += len(spans)
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        pass


def _policy(path: Path) -> Path:
    path.write_text("p, physician, ward3/patients/**, read\np, physician, ward3/patients/*, write\n"
                    "p, nurse, ward3/patients/*, read\ng, alice, physician\ng, bob, nurse\n", encoding="utf-8")
    return path


def _once(fn: Callable[[], object]) -> tuple[float, float]:
    """Wall-clock and process-CPU seconds of one call (CPU time counts every thread of this
    process, the span exporter's included, and is far less disturbed by other load)."""
    c0, t0 = time.process_time(), time.perf_counter()
    fn()
    return time.perf_counter() - t0, time.process_time() - c0


def _summary(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {"median_ms": statistics.median(ordered) * 1e3, "mean_ms": statistics.fmean(ordered) * 1e3,
            "p95_ms": ordered[int(0.95 * (len(ordered) - 1))] * 1e3, "n": len(ordered)}


def _trimmed_mean(values: list[float], cut: float = 0.1) -> float:
    ordered = sorted(values)
    k = int(len(ordered) * cut)
    return statistics.fmean(ordered[k:len(ordered) - k] or ordered)


def span_only_cost(n: int, provider: TracerProvider | None) -> tuple[float, float]:
    """(wall µs, process-CPU µs) per operation_span + annotate with nothing inside: the fixed
    cost tracing adds to every operation, with the attributes a search span carries."""
    tracing.set_tracer_provider(provider)
    attrs = {"memwarden.operation": "search", "memwarden.principal": "alice", "memwarden.roles": ["physician"],
             "memwarden.action": "read", "memwarden.namespace": "ward3/patients", "memwarden.decision": "allow",
             "memwarden.rule": "p, physician, ward3/patients/**, read", "memwarden.verdicts": [],
             "memwarden.record_ids": [f"mem_{i:032x}" for i in range(5)], "memwarden.records.returned": 5,
             "memwarden.records.withheld": 0, "memwarden.records.rechecked_out": 0, "memwarden.outcome": "ok",
             "memwarden.audit.seq": 1}

    def one() -> None:
        with tracing.operation_span("search") as span:
            tracing.annotate(span, lambda: attrs)

    for _ in range(200):
        one()
    if provider is not None:
        provider.force_flush()
    c0, t0 = time.process_time(), time.perf_counter()
    for _ in range(n):
        one()
    if provider is not None:
        provider.force_flush()  # the exporter thread's share of the work is counted too
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    tracing.set_tracer_provider(None)
    return wall / n * 1e6, cpu / n * 1e6


def run(records: int, pairs: int, embedding: str, console: Console) -> dict:
    if not isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider):
        raise SystemExit("a global TracerProvider is already installed; the no-SDK baseline would not be one")
    sdk = TracerProvider()
    dropper = DropExporter()
    sdk.add_span_processor(BatchSpanProcessor(dropper))
    providers = {"no-sdk": None, "sdk": sdk}
    with tempfile.TemporaryDirectory(prefix="memwarden-bench-") as tmp:
        root = Path(tmp)
        emb = HashingEmbedding() if embedding == "hashing" else None
        started = time.perf_counter()
        with Memory.open(root / "data", policy=_policy(root / "policy.csv"), embedding=emb) as mem:
            alice, bob = mem.session(Principal("alice")), mem.session(Principal("bob"))
            for i in range(records):
                subject = SUBJECTS[i % len(SUBJECTS)]
                alice.write(f"Patient {subject[1:]} {FACTS[i % len(FACTS)]} (note {i}).",
                            namespace=("ward3", "patients", subject), subjects=[subject])
            setup_s = time.perf_counter() - started

            def search(query: str) -> Callable[[], object]:
                return lambda: bob.search(query, namespace=("ward3", "patients"), k=5)

            for mode in ("no-sdk", "sdk"):  # warm up both paths (imports, caches, HNSW pages)
                tracing.set_tracer_provider(providers[mode])
                for q in QUERIES * 2:
                    search(q)()
            wall: dict[str, list[float]] = {"no-sdk": [], "sdk": []}
            cpu: dict[str, list[float]] = {"no-sdk": [], "sdk": []}
            d_wall: list[float] = []
            d_cpu: list[float] = []
            gc.collect()
            for i in range(pairs):
                fn = search(QUERIES[i % len(QUERIES)])
                got = {}
                for mode in (("no-sdk", "sdk") if i % 2 == 0 else ("sdk", "no-sdk")):
                    tracing.set_tracer_provider(providers[mode])
                    got[mode] = _once(fn)
                    wall[mode].append(got[mode][0])
                    cpu[mode].append(got[mode][1])
                d_wall.append(got["sdk"][0] - got["no-sdk"][0])
                d_cpu.append(got["sdk"][1] - got["no-sdk"][1])
            tracing.set_tracer_provider(None)
    sdk.force_flush()
    exported = dropper.spans
    span_noop = span_only_cost(20000, None)
    span_sdk = span_only_cost(20000, sdk)
    sdk.shutdown()

    off, on = _summary(wall["no-sdk"]), _summary(wall["sdk"])
    off_cpu, on_cpu = _summary(cpu["no-sdk"]), _summary(cpu["sdk"])
    base_wall, base_cpu = off["median_ms"] / 1e3, off_cpu["median_ms"] / 1e3
    modelled = (span_sdk[1] - span_noop[1]) / 1e6 / base_cpu
    result = {
        "benchmark": "tracing_overhead",
        "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "machine": {"python": platform.python_version(), "platform": platform.platform(),
                    "cpus": os.cpu_count(), "load_average": os.getloadavg()},
        "config": {"records": records, "pairs": pairs, "embedding": embedding, "k": 5,
                   "setup_seconds": round(setup_s, 2)},
        "wall_no_sdk": off,
        "wall_sdk_batch_drop": on,
        "cpu_no_sdk": off_cpu,
        "cpu_sdk_batch_drop": on_cpu,
        "overhead_wall_paired_median": statistics.median(d_wall) / base_wall,
        "overhead_wall_paired_trimmed_mean": _trimmed_mean(d_wall) / base_wall,
        "overhead_cpu_paired_median": statistics.median(d_cpu) / base_cpu,
        "overhead_cpu_paired_trimmed_mean": _trimmed_mean(d_cpu) / base_cpu,
        "span_only_us": {"no_sdk_wall": span_noop[0], "no_sdk_cpu": span_noop[1],
                         "sdk_wall": span_sdk[0], "sdk_cpu": span_sdk[1]},
        "overhead_modelled_from_span_cpu": modelled,
        "spans_exported_to_drop": exported,
        "target": TARGET,
    }
    result["meets_target"] = max(result["overhead_cpu_paired_median"], modelled) <= TARGET
    table = Table(title=f"Governed search ({embedding} embedding, {records} records, k=5), "
                        f"{pairs} same-query pairs")
    for col in ("configuration", "wall median ms", "wall p95 ms", "CPU median ms", "CPU mean ms"):
        table.add_column(col, justify="right" if col != "configuration" else "left")
    for name, w, c in (("no SDK (API only)", off, off_cpu), ("SDK + BatchSpanProcessor + drop", on, on_cpu)):
        table.add_row(name, f"{w['median_ms']:.3f}", f"{w['p95_ms']:.3f}", f"{c['median_ms']:.3f}",
                      f"{c['mean_ms']:.3f}")
    console.print(table)
    verdict = "[green]within[/]" if result["meets_target"] else "[red]over[/]"
    console.print(f"overhead with SDK, paired: CPU {result['overhead_cpu_paired_median']:+.2%} (median), "
                  f"{result['overhead_cpu_paired_trimmed_mean']:+.2%} (trimmed mean); wall "
                  f"{result['overhead_wall_paired_median']:+.2%} (median), "
                  f"{result['overhead_wall_paired_trimmed_mean']:+.2%} (trimmed mean)")
    console.print(f"span machinery alone: {span_noop[1]:.1f} µs CPU without SDK, {span_sdk[1]:.1f} µs with SDK "
                  f"= {modelled:+.2%} of a search's CPU: {verdict} the {TARGET:.0%} target "
                  f"({exported} spans reached the exporter; load average {os.getloadavg()[0]:.1f})")
    return result


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark, print the table and write the JSON result."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=400, help="records in the store (default 400)")
    parser.add_argument("--pairs", type=int, default=400,
                        help="same-query pairs, each one search without and one with the SDK (default 400)")
    parser.add_argument("--embedding", choices=("minilm", "hashing"), default="minilm",
                        help="the bundled MiniLM (realistic, default) or the fast hashing test embedding")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"JSON output (default {DEFAULT_OUT})")
    parser.add_argument("--quick", action="store_true", help="a smoke run: 60 records, 40 pairs")
    args = parser.parse_args(argv)
    if args.quick:
        args.records, args.pairs = 60, 40
    result = run(args.records, args.pairs, args.embedding, Console())
    write_result(result, args.out)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
