"""Differential run of memwarden against its reference model (issue 16, item 6).

Many seeded random operation sequences by random principals (adversarial ones included: guessed
and hidden ids, keyed overwrites, expired keys, re-approval, partial erasure scopes) run on a
real memwarden Memory and on the reference model (tests/reference_model.py); every output is
compared (tests/model_harness.py, shared with the stateful test). A sequence ends at its first
disagreement, since the two states may differ from then on. At the end: a table of disagreements
by class (operation x kind of difference), a minimal reproducer for each class (steps dropped
while the class still shows) and the run time; results as JSON in benchmarks/results/.

Usage: python benchmarks/reference_model.py [--ops 100000] [--length 100] [--seed 0]
           [--ignore CLASS ...] [--no-shrink] [--tmp DIR] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from rich.table import Table

HERE = Path(__file__).resolve().parent
# This checkout's memwarden, and the harness the stateful test uses (the package tests/).
sys.path.insert(0, str(HERE.parent))
from tests.model_harness import Disagreement, Harness  # noqa: E402
from tests.model_steps import OPS, Step, generate  # noqa: E402


class RandomChooser:
    """Choices from a seeded random.Random."""

    def __init__(self, seed: int) -> None:
        self._rng = random.Random(seed)

    def choice(self, options: Sequence[Any]) -> Any:
        return self._rng.choice(list(options))

    def chance(self, p: float) -> bool:
        return self._rng.random() < p


_WEIGHTED = [op for op, weight in OPS.items() for _ in range(weight)]


@dataclass
class Outcome:
    """One sequence: the steps it ran and its first (not ignored) disagreement."""

    steps: list[Step]
    found: Disagreement | None


def _ignored(found: Disagreement | None, ignore: Sequence[str]) -> bool:
    return found is not None and any(pattern in found.cls for pattern in ignore)


def run_sequence(seed: int, length: int, tmp: str | None, ignore: Sequence[str]) -> Outcome:
    """A fresh memory and model, ``length`` random steps, stopping at a disagreement."""
    chooser, harness, steps = RandomChooser(seed), Harness(tmp), []
    try:
        for _ in range(length):
            step = generate(chooser.choice(_WEIGHTED), chooser, harness.pool())
            steps.append(step)
            found = harness.run(step)
            if found is not None and not _ignored(found, ignore):
                return Outcome(steps, found)
        return Outcome(steps, None)
    finally:
        harness.close()


def replay(steps: Sequence[Step], tmp: str | None, ignore: Sequence[str]) -> Disagreement | None:
    """The first disagreement of these steps on a fresh memory and model."""
    harness = Harness(tmp)
    try:
        for step in steps:
            found = harness.run(step)
            if found is not None and not _ignored(found, ignore):
                return found
        return None
    finally:
        harness.close()


def shrink(steps: list[Step], cls: str, tmp: str | None, ignore: Sequence[str]) -> tuple[list[Step], Disagreement]:
    """Drop chunks of steps, then single steps, while the first disagreement keeps its class."""
    found = replay(steps, tmp, ignore)
    assert found is not None and found.cls == cls, "a disagreement must replay deterministically"
    chunk = max(1, len(steps) // 2)
    while True:
        start = 0
        while start < len(steps):
            trial = steps[:start] + steps[start + chunk:]
            result = replay(trial, tmp, ignore) if trial else None
            if result is not None and result.cls == cls:
                steps, found = trial, result
            else:
                start += chunk
        if chunk == 1:
            break
        chunk = max(1, chunk // 2)
    # Steps after the disagreeing one play no part.
    return steps[: steps.index(found.step) + 1], found


def _commit() -> str | None:
    try:
        return subprocess.run(["git", "rev-parse", "HEAD"], cwd=HERE.parent, capture_output=True, text=True,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, datetime):
        return value.isoformat()
    return value


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", type=int, default=100_000, help="operations to run in all (default 100,000)")
    parser.add_argument("--length", type=int, default=100, help="steps per sequence (default 100)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the first sequence")
    parser.add_argument("--ignore", action="append", default=[],
                        help="treat disagreements whose class contains this text as agreement (exploration)")
    parser.add_argument("--no-shrink", action="store_true", help="report reproducers unshrunk")
    parser.add_argument("--tmp", default="/dev/shm" if os.path.isdir("/dev/shm") else None,
                        help="where the temporary memories live (default /dev/shm when present)")
    parser.add_argument("--out", default=str(HERE / "results" / "reference_model.json"))
    args = parser.parse_args(argv)
    console = Console()

    commit, started = _commit(), time.perf_counter()
    ops = sequences = 0
    counts: Counter[str] = Counter()
    first: dict[str, Outcome] = {}
    seed = args.seed
    with Progress(TextColumn("[bold]reference model"), BarColumn(), MofNCompleteColumn(), TextColumn("ops"),
                  TextColumn("{task.fields[found]} disagreements"), TimeElapsedColumn(), TimeRemainingColumn(),
                  console=console, disable=not console.is_terminal) as progress:
        task = progress.add_task("ops", total=args.ops, found=0)
        last_log = started
        while ops < args.ops:
            outcome = run_sequence(seed, min(args.length, args.ops - ops), args.tmp, args.ignore)
            seed += 1
            sequences += 1
            ops += len(outcome.steps)
            if outcome.found is not None:
                counts[outcome.found.cls] += 1
                first.setdefault(outcome.found.cls, outcome)
            progress.update(task, completed=ops, found=sum(counts.values()))
            if not console.is_terminal and time.perf_counter() - last_log > 30:
                last_log = time.perf_counter()
                print(f"reference model: {ops:,}/{args.ops:,} ops, {sequences:,} sequences, "
                      f"{sum(counts.values())} disagreements, {last_log - started:.0f} s", flush=True)
    run_seconds = time.perf_counter() - started

    classes = []
    for cls, count in counts.most_common():
        outcome = first[cls]
        steps, found = (outcome.steps, outcome.found) if args.no_shrink else shrink(
            outcome.steps, cls, args.tmp, args.ignore)
        classes.append({"class": cls, "count": count, "reproducer": [s.text() for s in steps],
                        "memwarden": _jsonable(found.real), "model": _jsonable(found.expected)})
    total_seconds = time.perf_counter() - started

    table = Table(title=f"reference model: {ops:,} operations in {sequences:,} sequences, "
                        f"{sum(counts.values())} disagreements, {run_seconds:.0f} s")
    table.add_column("disagreements", justify="right")
    table.add_column("class (operation: kind of difference)")
    for entry in classes:
        table.add_row(str(entry["count"]), entry["class"])
    console.print(table)
    for entry in classes:
        console.print(f"\n[bold]{entry['class']}[/bold] ({len(entry['reproducer'])} steps)")
        for line in entry["reproducer"]:
            console.print(f"  {line}", markup=False, highlight=False)
        console.print(f"  memwarden: {entry['memwarden']}", markup=False, highlight=False)
        console.print(f"  model:     {entry['model']}", markup=False, highlight=False)

    result = {
        "benchmark": "reference_model", "ops": ops, "sequences": sequences, "length": args.length,
        "first_seed": args.seed, "ignored": args.ignore, "disagreements": sum(counts.values()),
        "run_seconds": round(run_seconds, 1), "total_seconds_with_shrinking": round(total_seconds, 1),
        "classes": classes, "commit": commit, "python": platform.python_version(),
        "machine": f"{platform.machine()}, {os.cpu_count()} cpus",
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    }
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    console.print(f"\nwritten {out}")
    return 0 if not counts else 1


if __name__ == "__main__":
    sys.exit(main())
