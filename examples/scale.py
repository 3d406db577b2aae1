"""Scaling a shared memory: partitions, side-by-side search, the search breadth and the derived index.

A hospital of three wards keeps its notes in one governed memory. memwarden stores each
namespace partition (the first ``partition_depth`` labels plus the namespace's length) in its
own Chroma collection, so a physician's search queries only the partitions of her wards, with
no filter, side by side (``search_threads``). This example:

1. writes the wards' notes in batches (a progress bar), into two memories that search Chroma
   partition by partition (``search_index="off"``) and differ only in ``search_breadth``, the
   HNSW ``ef_search`` of every partition, and into a third with the default derived in-RAM
   index (``search_index="sq8"``), whose searches scan exactly the rows the scope may see;
2. searches as alice, a physician of wards 0 and 1, and as bob, a nurse of ward 2, and checks
   that every hit lies in the searcher's scope;
3. compares the three on alice's searches: the share of the exact top 10 (over the
   notes she may read, by brute force) each one finds, and the time a search takes. Small
   partitions are searched nearly exactly at any breadth; with thousands of rows a partition
   the default (100) starts to miss some of the nearest (docs/performance.md).

Runs offline: ``python examples/scale.py [--notes 1500] [--hashing] [--data DIR]``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from rich.console import Console
from rich.progress import Progress
from rich.table import Table

from memwarden import Memory, Principal
from memwarden.memory.embeddings import HashingEmbedding, as_embedder, embed_many, embed_one
from memwarden.core.ops import WriteOp

WARDS = 3
ALICE, BOB = Principal("alice"), Principal("bob")
#: The two breadths compared: a narrow one, and Chroma's default of 100 widened fourfold.
BREADTHS = (10, 400)
WORDS = ("fever cough rash fracture insulin warfarin sepsis allergy dressing wound oxygen pain "
         "nausea discharge transfer scan biopsy dialysis infusion sutures mobility diet").split()
QUERIES = ("warfarin dose and bleeding", "wound dressing changed", "oxygen saturation overnight",
           "allergy to penicillin", "insulin before meals", "pain after the fracture", "sepsis screen",
           "discharge planning", "dialysis schedule", "mobility and diet")


def policy_text() -> str:
    """Per-ward roles: a physician reads and writes all of her ward, a nurse its patients."""
    lines = []
    for w in range(WARDS):
        lines += [f"p, physician_w{w}, ward{w}/**, read", f"p, physician_w{w}, ward{w}/**, write",
                  f"p, nurse_w{w}, ward{w}/patients/**, read", f"p, nurse_w{w}, ward{w}/patients/**, write"]
    lines += ["g, alice, physician_w0", "g, alice, physician_w1", "g, bob, nurse_w2"]
    lines += [f"g, writer{w}, physician_w{w}" for w in range(WARDS)]
    return "\n".join(lines) + "\n"


def notes(count: int, seed: int = 7) -> list[tuple[str, tuple[str, ...], str]]:
    """``count`` (writer, namespace, text) triples over the wards: 70% patient notes, 30% shift notes."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(count):
        w = int(rng.integers(WARDS))
        # Two chart codes per note make the notes (and their vectors) tell apart, as real ones do.
        words = " ".join([*rng.choice(WORDS, 4), *(f"code{c}" for c in rng.integers(5000, size=2))])
        if rng.random() < 0.7:
            p = int(rng.integers(60))
            out.append((f"writer{w}", (f"ward{w}", "patients", f"p{p}"), f"Patient {p}: {words}, note {i}."))
        else:
            out.append((f"writer{w}", (f"ward{w}", "notes", f"day{i % 30}"), f"Shift note {i}: {words}."))
    return out


def seed(mem: Memory, rows: Sequence[tuple[str, tuple[str, ...], str]], progress: Progress, label: str) -> None:
    """Write ``rows`` through the governed path, 100 to a batch (one store call per partition)."""
    task = progress.add_task(label, total=len(rows))
    for lo in range(0, len(rows), 100):
        chunk = rows[lo:lo + 100]
        by_writer: dict[str, list[WriteOp]] = {}
        for writer, namespace, text in chunk:
            by_writer.setdefault(writer, []).append(WriteOp(content=text, namespace=namespace))
        for writer, ops in by_writer.items():
            mem.batch(Principal(writer), ops)
        progress.advance(task, len(chunk))


def run_scale(data_dir: str | Path | None = None, console: Console | None = None, *, embedding: Any = None,
              count: int = 1500) -> dict[str, Any]:
    """Seed two memories (one per breadth), search, print; returns the figures shown."""
    console = console or Console()
    rows = notes(count)
    # One embedder for both memories and for the exact answer (None: the bundled MiniLM).
    embedder = as_embedder(embedding)
    with tempfile.TemporaryDirectory(prefix="memwarden-scale-") as scratch:
        root = Path(data_dir or scratch)
        root.mkdir(parents=True, exist_ok=True)
        policy = root / "wards.csv"
        policy.write_text(policy_text(), encoding="utf-8")
        mems: dict[int | str, Memory] = {
            b: Memory.open(root / f"breadth-{b}", policy=policy, embedding=embedder, partition_depth=2,
                           search_threads=4, search_breadth=b, search_index="off") for b in BREADTHS}
        mems["index"] = Memory.open(root / "index", policy=policy, embedding=embedder, partition_depth=2)
        try:
            with Progress(console=console, transient=True) as progress:
                for b, mem in mems.items():
                    seed(mem, rows, progress, f"writing {count:,} notes ({_label(b)})")
            mem = mems[BREADTHS[-1]]
            scopes = {"alice": (ALICE, {"ward0", "ward1"}, None), "bob": (BOB, {"ward2"}, "patients")}
            in_scope = {}
            for name, (who, wards, area) in scopes.items():
                hits = mem.session(who).search(QUERIES[0], k=10, mode="dense")
                in_scope[name] = all(h.record.namespace[0] in wards and (area is None or h.record.namespace[1] == area)
                                     for h in hits)
                console.print(f"{name}: {len(hits)} hits for {QUERIES[0]!r}, all in scope: {in_scope[name]} "
                              f"({', '.join(sorted({'/'.join(h.record.namespace[:2]) for h in hits}))})")
            figures = compare(mems, rows, embedder, console)
            verified = all(m.audit_log.verify().ok for m in mems.values())
            console.print(f"\naudit chains verified: {verified}")
            return {"in_scope": in_scope, "audit_ok": verified, **figures}
        finally:
            for m in mems.values():
                m.close()


def _label(key: int | str) -> str:
    return "derived index (sq8)" if key == "index" else f"search_breadth={key}"


def compare(mems: dict[int | str, Memory], rows: Sequence[tuple[str, tuple[str, ...], str]], embedding: Any,
            console: Console) -> dict[str, Any]:
    """alice's searches at each breadth, and with the derived index: recall of the exact top 10
    and time per search."""
    mine = [text for _, ns, text in rows if ns[0] in ("ward0", "ward1")]
    vectors = embed_many(embedding, mine)
    table = Table(title="alice's searches (dense, k=10) by search breadth, and with the derived index")
    for col in ("search", "recall of the exact top 10", "search p50 ms"):
        table.add_column(col, justify="right")
    recall: dict[int | str, float] = {}
    timing: dict[int | str, float] = {}
    for b, mem in mems.items():
        alice = mem.session(ALICE)
        found, times = 0, []
        for query in QUERIES:
            exact = {mine[i] for i in np.argsort(-(vectors @ embed_one(embedding, query, query=True)))[:10]}
            start = time.perf_counter()
            hits = alice.search(query, k=10, mode="dense")
            times.append((time.perf_counter() - start) * 1000)
            found += len(exact & {h.record.content for h in hits})
        recall[b], timing[b] = found / (10 * len(QUERIES)), statistics.median(times)
        table.add_row(_label(b), f"{recall[b]:.2f}", f"{timing[b]:.1f}")
    console.print(table)
    per_partition = len(mine) // 4   # alice's notes lie in 4 partitions (2 wards x patients, notes)
    if recall[BREADTHS[-1]] > recall[BREADTHS[0]]:
        console.print(f"The wider breadth found more of the exact top 10, at about {per_partition:,} notes a partition.")
    else:
        console.print(f"At about {per_partition:,} notes a partition both breadths find the same; the breadth matters "
                      "from thousands of rows a partition (docs/performance.md).")
    return {"recall": recall, "search_ms": timing}


def main(argv: Sequence[str] | None = None) -> int:
    """Command line: ``--notes`` how many notes, ``--hashing`` the fast test embedding, ``--data`` to keep the memories."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--notes", type=int, default=1500, help="notes written into each memory")
    parser.add_argument("--hashing", action="store_true", help="hashing test embedding (words, not meaning)")
    parser.add_argument("--data", default=None, help="keep the memories in this directory")
    args = parser.parse_args(argv)
    hashing = args.hashing or os.environ.get("MEMWARDEN_EMBEDDING") == "hashing"
    run_scale(args.data, embedding=HashingEmbedding() if hashing else None, count=args.notes)
    return 0


if __name__ == "__main__":
    sys.exit(main())
