"""Benchmark of memwarden's default embedder.

(a) Throughput: sentences per second of MiniLMEmbedding over deterministic, varied sentences of
    8-40 words (median of 3 runs), and the time of the first load (import, checksum, session).
(b) Quality: paraphrase retrieval on benchmarks/data/paraphrase.jsonl. Each query must find its
    one target memory among all memories (targets plus distractors); recall@1, recall@5 and MRR
    for MiniLM, a BM25 keyword baseline and the HashingEmbedding test fixture.

Usage: python benchmarks/embedding.py [--out PATH] [--quick]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import random
import re
import statistics
import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from rich.console import Console
from rich.progress import Progress
from rich.table import Table

HERE = Path(__file__).resolve().parent
# Benchmark the working tree, not whatever memwarden happens to be installed.
sys.path.insert(0, str(HERE.parent))
from benchmarks.results_io import write_result  # noqa: E402

from memwarden.memory.embeddings import (  # noqa: E402
    Embedder,
    HashingEmbedding,
    MiniLMEmbedding,
    embed_many,
    embed_one,
)

DATA = HERE / "data" / "paraphrase.jsonl"
DEFAULT_OUT = HERE / "results" / "embedding.json"
RUNS = 3
CHUNK = 500

STOPWORDS = frozenset(
    """a an the and or but if of to in on at by for with from as is are was were be been being
    do does did has have had it its this that these those there here what which who whom whose
    when where why how can could should would will shall may might must not no any all each
    every some our we us you your he she his her him they them their i my me am so than then
    too very just yet up down out over under about into after before again off per s""".split()
)

# Vocabulary for the throughput sentences: memories an agent team might write.
PEOPLE = ["the nurse", "Mrs. Okafor", "the patient in room 12", "our landlord", "the finance team",
          "Daniel", "the year 9 class", "the babysitter", "Dr. Hughes", "the new intern", "Grandma",
          "the physics teacher", "the client from Berlin", "my sister", "the night shift"]
VERBS = ["asked about", "rescheduled", "forgot", "confirmed", "complained about", "approved",
         "needs help with", "is waiting for", "cancelled", "finished", "reviewed", "paid for"]
THINGS = ["the blood test results", "the quarterly budget", "the dentist appointment",
          "the science homework", "the broken boiler", "the insulin dose", "the contract renewal",
          "the school trip forms", "the grocery order", "the penicillin allergy note",
          "the printer repair", "the parent evening slides", "the rent increase", "the flu jab"]
WHENS = ["on Monday morning", "before the weekend", "after lunch", "next Thursday at 3 pm",
         "by the end of the month", "during the holidays", "last night", "tomorrow"]
LINKS = ["because", "although", "and", "so", "while", "even though", "after"]
EXTRAS = ["nobody had told the office", "the forms were missing a signature",
          "the meeting ran over by an hour", "the pharmacy was already closed",
          "the kids were off school with a cold", "the invoice had the wrong address",
          "the ward was short of staff", "the heating had stopped working again",
          "the deadline was moved forward", "the dog had to go to the vet"]


def make_sentences(n: int, seed: int = 20240611) -> list[str]:
    """``n`` varied sentences of 8-40 words, the same for every run and machine."""
    rng = random.Random(seed)
    sentences = []
    for _ in range(n):
        length = rng.randint(8, 40)
        words = f"{rng.choice(PEOPLE)} {rng.choice(VERBS)} {rng.choice(THINGS)} {rng.choice(WHENS)}".split()
        while len(words) < length:
            words += f"{rng.choice(LINKS)} {rng.choice(EXTRAS)}".split()
        text = " ".join(words[:length])
        sentences.append(text[0].upper() + text[1:] + ".")
    return sentences


def throughput(sentences: Sequence[str], progress: Progress) -> dict[str, object]:
    """First-load time and median sentences/s of a fresh MiniLMEmbedding over ``RUNS`` runs."""
    model = MiniLMEmbedding()
    start = time.perf_counter()
    model.load()
    load_seconds = time.perf_counter() - start
    # onnxruntime sizes its buffers on the first runs; keep that out of the timed ones.
    model.embed_documents_array(sentences[: model.batch_size * 2])
    task = progress.add_task("MiniLM throughput", total=RUNS * len(sentences))
    rates, cpu_rates = [], []
    for _ in range(RUNS):
        start, cpu_start = time.perf_counter(), time.process_time()
        for i in range(0, len(sentences), CHUNK):
            chunk = sentences[i : i + CHUNK]
            model.embed_documents_array(chunk)
            progress.advance(task, len(chunk))
        rates.append(len(sentences) / (time.perf_counter() - start))
        cpu_rates.append(len(sentences) / (time.process_time() - cpu_start))
    return {
        "sentences": len(sentences),
        "mean_words": round(statistics.mean(len(s.split()) for s in sentences), 1),
        "runs": [round(r, 1) for r in rates],
        "median_sentences_per_s": round(statistics.median(rates), 1),
        # Per CPU-second of this process, all threads. With every thread busy on an idle machine
        # the wall-clock rate is about `threads` times this; far less means the cores were shared.
        "median_sentences_per_cpu_s": round(statistics.median(cpu_rates), 1),
        "first_load_s": round(load_seconds, 3),
        "batch_size": model.batch_size,
        "threads": model.threads,
    }


@dataclass(frozen=True)
class ParaphraseSet:
    """Queries, the memory corpus, and for each query the index of its one target memory."""

    queries: list[str]
    memories: list[str]
    targets: list[int]
    no_overlap: list[bool]
    distractors: int


def words(text: str) -> list[str]:
    """Lowercased content words: what a keyword index would match on."""
    return [w for w in re.findall(r"\w+", text.lower()) if w not in STOPWORDS]


def load_set(path: Path) -> ParaphraseSet:
    """Read the jsonl set and check it still has the properties docs/embeddings.md states."""
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    pairs = [r for r in rows if r["kind"] == "pair"]
    memories = [r["memory"] for r in pairs] + [r["memory"] for r in rows if r["kind"] == "distractor"]
    no_overlap = [not set(words(r["query"])) & set(words(r["memory"])) for r in pairs]
    problems = []
    if len(pairs) < 150 or len(memories) - len(pairs) < 150:
        problems.append("needs >= 150 pairs and >= 150 distractors")
    if len(set(memories)) != len(memories):
        problems.append("memories must be unique, or a query would have two right answers")
    if sum(no_overlap) * 3 < len(pairs):
        problems.append("fewer than a third of the pairs are free of shared content words")
    if problems:
        raise ValueError(f"{path}: " + "; ".join(problems))
    return ParaphraseSet(
        queries=[r["query"] for r in pairs],
        memories=memories,
        targets=list(range(len(pairs))),
        no_overlap=no_overlap,
        distractors=len(memories) - len(pairs),
    )


class BM25:
    """Okapi BM25 (k1=1.5, b=0.75) over :func:`words`, the classic keyword-search baseline."""

    def __init__(self, documents: Sequence[str], k1: float = 1.5, b: float = 0.75) -> None:
        self.k1, self.b = k1, b
        self.docs = [Counter(words(d)) for d in documents]
        self.lengths = np.array([sum(d.values()) for d in self.docs], dtype=np.float64)
        self.avg_length = float(self.lengths.mean())
        frequency = Counter(term for d in self.docs for term in d)
        n = len(self.docs)
        # The +1 inside the log keeps idf positive for terms in over half the documents.
        self.idf = {t: math.log((n - f + 0.5) / (f + 0.5) + 1.0) for t, f in frequency.items()}

    def scores(self, query: str) -> np.ndarray:
        """BM25 score of every document for ``query``."""
        norm = self.k1 * (1 - self.b + self.b * self.lengths / self.avg_length)
        out = np.zeros(len(self.docs))
        for term in words(query):
            if term not in self.idf:
                continue
            tf = np.array([d[term] for d in self.docs], dtype=np.float64)
            out += self.idf[term] * tf * (self.k1 + 1) / (tf + norm)
        return out


def dense_scorer(embedder: Embedder, memories: Sequence[str]) -> Callable[[str], np.ndarray]:
    """Cosine scores of every memory for a query, embedded as the core embeds them."""
    matrix = embed_many(embedder, memories)
    matrix /= np.maximum(np.linalg.norm(matrix, axis=1, keepdims=True), 1e-12)

    def scores(query: str) -> np.ndarray:
        return matrix @ embed_one(embedder, query, query=True)

    return scores


def retrieval_metrics(scorer: Callable[[str], np.ndarray], data: ParaphraseSet) -> dict[str, object]:
    """recall@1, recall@5 and MRR, overall and separately for pairs with and without a shared
    content word (keyword search can only ever succeed on the former)."""
    ranks = []
    for query, target in zip(data.queries, data.targets):
        scores = scorer(query)
        # Ties count against the target: a keyword search that matches nothing scores all
        # memories 0 and must not be credited with rank 1.
        others = np.delete(scores, target)
        ranks.append(1 + int(np.sum(others >= scores[target])))

    def summary(selected: list[int]) -> dict[str, float]:
        r = np.array(selected)
        return {
            "recall@1": round(float(np.mean(r <= 1)), 3),
            "recall@5": round(float(np.mean(r <= 5)), 3),
            "mrr": round(float(np.mean(1.0 / r)), 3),
        }

    return {
        **summary(ranks),
        "shared_words": summary([r for r, none in zip(ranks, data.no_overlap) if not none]),
        "no_shared_word": summary([r for r, none in zip(ranks, data.no_overlap) if none]),
    }


def quality(data: ParaphraseSet) -> dict[str, dict[str, object]]:
    """Retrieval metrics of each system on the paraphrase set."""
    systems: dict[str, Callable[[], Callable[[str], np.ndarray]]] = {
        "MiniLM int8 (default)": lambda: dense_scorer(MiniLMEmbedding(), data.memories),
        "BM25 (keywords)": lambda: BM25(data.memories).scores,
        "HashingEmbedding (test fixture)": lambda: dense_scorer(HashingEmbedding(), data.memories),
    }
    return {name: retrieval_metrics(build(), data) for name, build in systems.items()}


def report(console: Console, result: dict) -> None:
    """Print the throughput and quality tables."""
    t = result["throughput"]
    speed = Table(title="MiniLM throughput")
    for column in ("sentences", "mean words", "runs (sent/s)", "median sent/s", "sent/CPU-s", "first load (s)",
                   "threads"):
        speed.add_column(column, justify="right")
    speed.add_row(
        str(t["sentences"]), str(t["mean_words"]), ", ".join(map(str, t["runs"])), str(t["median_sentences_per_s"]),
        str(t["median_sentences_per_cpu_s"]), str(t["first_load_s"]), str(t["threads"]),
    )
    console.print(speed)

    d = result["quality"]["dataset"]
    table = Table(
        title=f"Paraphrase retrieval: {d['queries']} queries, {d['memories']} memories "
        f"({d['no_overlap_pairs']} pairs share no content word)"
    )
    table.add_column("system")
    for column in ("R@1", "R@5", "MRR", "R@5 shared words", "R@5 no shared word"):
        table.add_column(column, justify="right")
    for name, m in result["quality"]["systems"].items():
        table.add_row(name, *(f"{v:.3f}" for v in (
            m["recall@1"], m["recall@5"], m["mrr"], m["shared_words"]["recall@5"], m["no_shared_word"]["recall@5"]
        )))
    console.print(table)


def main(argv: Sequence[str] | None = None) -> int:
    """Run both benchmarks, print the tables and write the JSON results."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"JSON output (default {DEFAULT_OUT})")
    parser.add_argument("--quick", action="store_true", help="400 sentences instead of 2,000 for throughput")
    args = parser.parse_args(argv)

    console = Console()
    data = load_set(DATA)
    # Other work on the machine slows the throughput runs; recording the load makes that visible.
    load_before = os.getloadavg()[0]
    with Progress(console=console) as progress:
        speed = throughput(make_sentences(400 if args.quick else 2000), progress)
    import onnxruntime

    result = {
        "quick": args.quick,
        "machine": {
            "cpus": os.cpu_count(),
            "load_average_1min_before": round(load_before, 2),
            "python": platform.python_version(),
            "onnxruntime": onnxruntime.__version__,
            "platform": platform.platform(),
        },
        "throughput": speed,
        "quality": {
            "dataset": {
                "path": str(DATA.relative_to(HERE.parent)),
                "queries": len(data.queries),
                "memories": len(data.memories),
                "distractors": data.distractors,
                "no_overlap_pairs": sum(data.no_overlap),
            },
            "systems": quality(data),
        },
    }
    report(console, result)
    write_result(result, args.out)
    console.print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
