"""What choosing writer by writer costs a write: governed writes about one subject by many writers.

Opens a fresh embedded store (HashingEmbedding, default validators), then has ``--writers``
principals write ``--writes`` facts about one subject in turn, one write per call, so that
every write consults the subject index (its eviction, the nearest related records chosen
principal by principal) and, after ``--restart``, loads the subject from the store again.
Prints the total, p50 and p99 per write, and the time spent in the windows themselves (the
subject index's ``add`` and load, the pipeline's ``related``): a write's time is mostly
Chroma's, and the machine is noisy, so the windows are timed on their own. Run it on two
checkouts to compare (it wraps only names that exist before the writer windows too).

Usage: python benchmarks/writer_windows.py [--writers 10] [--writes 200] [--rounds 3]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from memwarden import Memory, Principal  # noqa: E402
from memwarden.memory.caches import SubjectIndex  # noqa: E402
from memwarden.memory.embeddings import HashingEmbedding  # noqa: E402
from memwarden.memory.pipeline import Pipeline  # noqa: E402

#: Seconds spent in each wrapped window, summed over a round.
SPENT: dict[str, float] = {}


def _timed(owner: type, name: str) -> None:
    inner = getattr(owner, name)

    def timed(*args, **kwargs):
        started = time.perf_counter()
        try:
            return inner(*args, **kwargs)
        finally:
            SPENT[name] = SPENT.get(name, 0.0) + time.perf_counter() - started

    setattr(owner, name, timed)


for _owner, _name in ((SubjectIndex, "add"), (SubjectIndex, "_entries"), (Pipeline, "related")):
    _timed(_owner, _name)


def run(writers: int, writes: int, root: Path) -> list[float]:
    """Seconds per write of ``writes`` writes about one subject by ``writers`` principals."""
    policy = root / "policy.csv"
    policy.write_text("p, staff, ward/**, read\np, staff, ward/**, write\n"
                      + "".join(f"g, w{i}, staff\n" for i in range(writers)), encoding="utf-8")
    took = []
    with Memory.open(root / "data", policy=policy, embedding=HashingEmbedding()) as mem:
        sessions = [mem.session(Principal(f"w{i}"), source="agent") for i in range(writers)]
        for n in range(writes):
            a, b = divmod(n, 26)
            text = f"Ward round note {chr(97 + a % 26)}{chr(97 + b)} by nurse {n % writers}: patient twelve slept well."
            started = time.perf_counter()
            sessions[n % writers].write(text, ("ward", f"bed{n % 3}"), subjects=["p12"])
            took.append(time.perf_counter() - started)
    return took


def main() -> None:
    """Parse the arguments, run the rounds, print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--writers", type=int, default=10)
    parser.add_argument("--writes", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    for r in range(args.rounds):
        SPENT.clear()
        with tempfile.TemporaryDirectory() as tmp:
            took = run(args.writers, args.writes, Path(tmp))
        ms = sorted(t * 1000 for t in took)
        print(f"round {r + 1}: {args.writes} writes by {args.writers} writers: total {sum(ms) / 1000:.2f} s, "
              f"p50 {statistics.median(ms):.2f} ms, p99 {ms[int(0.99 * (len(ms) - 1))]:.2f} ms; windows per write: "
              + ", ".join(f"{k} {v / args.writes * 1e6:.0f} us" for k, v in sorted(SPENT.items())))


if __name__ == "__main__":
    main()
