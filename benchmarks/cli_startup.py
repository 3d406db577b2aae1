"""Benchmark: how long ``memwarden --help`` and ``memwarden --version`` take, start to exit.

Each run is a fresh interpreter (``python -m memwarden.cli ...``, the package of this checkout),
timed from outside, its start-up included: that is what a user waits for. Reported: the median,
min and max wall-clock and CPU seconds over the runs, with the bound of issue 21 (0.5 s).

Usage: python benchmarks/cli_startup.py [--runs N] [--out PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
DEFAULT_OUT = HERE / "results" / "cli_startup.json"
BOUND_S = 0.5
COMMANDS = {"--help": ["--help"], "--version": ["--version"], "audit export --help": ["audit", "export", "--help"]}


def _run_once(args: list[str]) -> tuple[float, float]:
    """(wall, cpu) seconds of one ``python -m memwarden.cli ARGS`` run."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "memwarden.cli", *args], cwd=ROOT, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def measure(args: list[str], runs: int) -> dict[str, float]:
    """Median, min and max wall and CPU seconds over ``runs`` runs, after one warm-up."""
    _run_once(args)
    walls, cpus = zip(*(_run_once(args) for _ in range(runs)))
    return {"wall_median_s": round(statistics.median(walls), 3), "wall_min_s": round(min(walls), 3),
            "wall_max_s": round(max(walls), 3), "cpu_median_s": round(statistics.median(cpus), 3)}


def main(argv: Sequence[str] | None = None) -> int:
    """Time each command, print one line each, write the JSON; 1 when a median is over the bound."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args(argv)
    results = {name: measure(cmd, args.runs) for name, cmd in COMMANDS.items()}
    for name, r in results.items():
        verdict = "ok" if r["wall_median_s"] < BOUND_S else "OVER"
        print(f"memwarden {name:<20} median {r['wall_median_s']:.3f} s wall (min {r['wall_min_s']:.3f}, "
              f"max {r['wall_max_s']:.3f}), {r['cpu_median_s']:.3f} s CPU: {verdict} (bound {BOUND_S} s)")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({
        "runs": args.runs, "bound_s": BOUND_S, "commands": results,
        "environment": {"python": platform.python_version(), "platform": platform.platform(), "cpus": os.cpu_count(),
                        "load_average": [round(x, 2) for x in os.getloadavg()]},
    }, indent=1) + "\n", encoding="utf-8")
    return 0 if all(r["wall_median_s"] < BOUND_S for r in results.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
