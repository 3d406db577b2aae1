"""Retrieval quality on LoCoMo: evidence recall@k and MRR, baselines vs memwarden, governed or not.

LoCoMo (snap-research/locomo, ACL 2024) has very long two-person conversations with questions
whose evidence is a set of dialogue turns. Each turn becomes one memory ("Speaker: text",
written by that speaker, valid from its session's date); each question of categories 1-4
(single-hop, temporal, multi-hop, open-domain; 5, adversarial, has no evidence to find) is
scored by evidence recall@5, recall@10 and MRR@10 of its top 10 results.

Systems, in one process, on the same vectors (MiniLM, every text embedded once):

* ``bm25``: Okapi BM25 over one conversation's turns (benchmarks/embedding.py's baseline).
* ``dense``: raw Chroma, all conversations in one collection, filtered to the conversation.
* ``bm25+dense rrf``: the two baselines' top 10 fused by reciprocal rank (a reference, no governance).
* ``memwarden lexical``: governed search, ``mode="lexical"`` (memwarden's BM25 leg alone).
* ``memwarden dense``: governed search, ``mode="dense"``.
* ``memwarden hybrid``: governed search, ``mode="hybrid"`` (the default).
* ``memwarden hybrid, allow-all``: the same retrieval under a policy that allows everything.

Governed means a realistic per-speaker policy over one shared store holding every selected
conversation: each speaker writes only into its own namespaces, and each conversation's
assistant (the asker) may read that conversation and nothing else. It asks at the root
(``("locomo",)``), so the policy pushed into both legs is what keeps the other conversations
out. The allow-all run asks at the conversation's namespace instead. The asker may read
everything relevant, so governance should cost no recall; any difference is the cost of
governance. Search latency (p50/p95) of governed dense and hybrid is the cost of the lexical leg.

The data is read from a path given on the command line and never stored in the repository:
``data/locomo10.json`` of the LoCoMo repository (a list of samples), one conversation file of
its ``locomo10.zip`` release (``multimodal_dialog/locomo10_v2/*.json``), or a directory of those.

Usage: python benchmarks/retrieval.py PATH [--conversations 3] [--embedding minilm|hashing]
       [--out DIR] [--tmp DIR] [--check]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from rich.table import Table

HERE = Path(__file__).resolve().parent
# Benchmark the working tree, not whatever memwarden happens to be installed.
sys.path.insert(0, str(HERE.parent))
from benchmarks.results_io import write_result  # noqa: E402

from benchmarks.embedding import BM25  # noqa: E402
from benchmarks.governance import SharedEmbedding, _workroot  # noqa: E402
from memwarden import Memory, Principal  # noqa: E402
from memwarden.memory.embeddings import HashingEmbedding, MiniLMEmbedding  # noqa: E402
from memwarden.core.ops import WriteOp  # noqa: E402
from memwarden.memory.retrieval import fuse  # noqa: E402

DEFAULT_OUT = HERE / "results"
CATEGORIES = {1: "single-hop", 2: "temporal", 3: "multi-hop", 4: "open-domain"}
K = 10
ROOT = "locomo"
BASELINES = ("bm25", "dense")
SYSTEMS = ("bm25", "dense", "bm25+dense rrf", "memwarden lexical", "memwarden dense", "memwarden hybrid",
           "memwarden hybrid, allow-all")
GOVERNED, UNGOVERNED = "memwarden hybrid", "memwarden hybrid, allow-all"


# ----------------------------------------------------------------------------------------
# The data
# ----------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Turn:
    """One dialogue turn: the unit of memory."""

    dia_id: str
    speaker: str
    text: str
    when: datetime

    @property
    def memory(self) -> str:
        """What is stored: the speaker and what they said."""
        return f"{self.speaker}: {self.text}"


@dataclass(frozen=True)
class Question:
    """A question with the turns that hold its answer."""

    text: str
    evidence: tuple[str, ...]
    category: int


@dataclass
class Conversation:
    """One LoCoMo sample: two speakers, their turns over many sessions, and questions."""

    sample_id: str
    speakers: tuple[str, str]
    turns: list[Turn]
    questions: list[Question] = field(default_factory=list)


_DATE = re.compile(r"(\d{1,2}):(\d{2})\s*([ap]m)\s+on\s+(\d{1,2})\s+([A-Za-z]+),?\s+(\d{4})", re.I)


def parse_when(text: str) -> datetime:
    """A LoCoMo session time such as "1:56 pm on 8 May, 2023", in UTC."""
    m = _DATE.search(text)
    if not m:
        raise ValueError(f"unrecognised session time {text!r}")
    hour, minute, half, day, month, year = m.groups()
    hour = int(hour) % 12 + (12 if half.lower() == "pm" else 0)
    return datetime.strptime(f"{day} {month[:3]} {year}", "%d %b %Y").replace(
        hour=hour, minute=int(minute), tzinfo=timezone.utc)


def _evidence(raw: Sequence[str]) -> tuple[str, ...]:
    # A few entries hold several ids in one string ("D8:6; D9:17").
    return tuple(dict.fromkeys(e for item in raw for e in re.findall(r"D\d+:\d+", item)))


def _conversation(sample_id: str, conv: dict[str, Any], qa: Sequence[dict[str, Any]]) -> Conversation:
    turns = []
    sessions = sorted((int(k.split("_")[1]), k) for k in conv if re.fullmatch(r"session_\d+", k))
    for _, key in sessions:
        when = parse_when(conv[f"{key}_date_time"])
        turns += [Turn(t["dia_id"], t["speaker"], t["text"], when) for t in conv[key] if t.get("text")]
    known = {t.dia_id for t in turns}
    questions = []
    for q in qa:
        evidence = tuple(e for e in _evidence(q.get("evidence") or ()) if e in known)
        if q.get("category") in CATEGORIES and evidence:
            questions.append(Question(q["question"], evidence, int(q["category"])))
    return Conversation(sample_id, (conv["speaker_a"], conv["speaker_b"]), turns, questions)


def load_locomo(path: str | Path) -> list[Conversation]:
    """Conversations from ``locomo10.json``, one ``locomo10_v2`` file, or a directory of them."""
    path = Path(path)
    files = sorted(path.glob("*.json"), key=lambda p: (len(p.stem), p.stem)) if path.is_dir() else [path]
    if not files:
        raise ValueError(f"no .json files in {path}")
    found = []
    for file in files:
        data = json.loads(file.read_text(encoding="utf-8"))
        if isinstance(data, list):  # locomo10.json
            found += [_conversation(s.get("sample_id", f"{file.stem}-{i}"), s["conversation"], s["qa"])
                      for i, s in enumerate(data)]
        else:  # one conversation of the v2 release: the conversation's keys and "qa" side by side
            found.append(_conversation(f"conv-{file.stem}", data, data["qa"]))
    return found


# ----------------------------------------------------------------------------------------
# Scoring
# ----------------------------------------------------------------------------------------

def score(ranked: Sequence[Sequence[str]], questions: Sequence[Question]) -> dict[str, Any]:
    """Evidence recall@5, recall@10 and MRR@10 of ranked dialogue ids, overall and per category.

    recall@k is the share of a question's evidence turns among its top k (averaged over
    questions); MRR@10 is 1 / rank of the first evidence turn, 0 when none is in the top 10.
    """
    rows = []
    for got, q in zip(ranked, questions):
        evidence = set(q.evidence)
        first = next((i for i, d in enumerate(got[:K], start=1) if d in evidence), None)
        rows.append((q.category, len(evidence & set(got[:5])) / len(evidence),
                     len(evidence & set(got[:K])) / len(evidence), 1.0 / first if first else 0.0))

    def summary(selected: list[tuple[int, float, float, float]]) -> dict[str, Any]:
        return {"questions": len(selected),
                "recall@5": round(float(np.mean([r[1] for r in selected])), 4) if selected else None,
                "recall@10": round(float(np.mean([r[2] for r in selected])), 4) if selected else None,
                "mrr@10": round(float(np.mean([r[3] for r in selected])), 4) if selected else None}

    return {**summary(rows), "categories": {name: summary([r for r in rows if r[0] == c])
                                            for c, name in CATEGORIES.items()}}


def latency(seconds: Sequence[float]) -> dict[str, float]:
    """p50 and p95 in milliseconds."""
    if not seconds:
        return {"p50_ms": 0.0, "p95_ms": 0.0, "n": 0}
    ms = np.array(seconds) * 1000.0
    return {"p50_ms": round(float(np.percentile(ms, 50)), 2), "p95_ms": round(float(np.percentile(ms, 95)), 2),
            "n": len(ms)}


# ----------------------------------------------------------------------------------------
# The systems
# ----------------------------------------------------------------------------------------

def _label(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "x"


def principal_id(conversation: Conversation, speaker: str) -> str:
    """A speaker's principal: names repeat across conversations, so the conversation is part of it."""
    return f"{_label(speaker)}.{_label(conversation.sample_id)}"


def asker_id(conversation: Conversation) -> str:
    """The assistant that answers questions about one conversation."""
    return f"assistant.{_label(conversation.sample_id)}"


def governed_policy(conversations: Sequence[Conversation]) -> str:
    """Per speaker and per conversation: a speaker writes only its own turns; the speakers and
    the conversation's assistant read that conversation; nobody reads another conversation."""
    lines = []
    for c in conversations:
        conv = _label(c.sample_id)
        lines.append(f"p, member.{conv}, {ROOT}/{conv}/**, read")
        for speaker in c.speakers:
            who = principal_id(c, speaker)
            lines += [f"p, {who}, {ROOT}/{conv}/*/{_label(speaker)}, write", f"g, {who}, member.{conv}"]
        lines.append(f"g, {asker_id(c)}, member.{conv}")
    return "\n".join(lines) + "\n"


def allow_all_policy(conversations: Sequence[Conversation]) -> str:
    """Everyone may read and write everything (the run without governance)."""
    principals = [principal_id(c, s) for c in conversations for s in c.speakers] + [asker_id(c) for c in conversations]
    return "p, everyone, locomo/**, read\np, everyone, locomo/**, write\n" + "".join(
        f"g, {p}, everyone\n" for p in principals)


def turn_namespace(conversation: Conversation, turn: Turn) -> tuple[str, ...]:
    """``locomo/<conversation>/<session>/<speaker>``: a speaker repeating a line in another
    session makes a new memory, as it is a new turn."""
    session = turn.dia_id.split(":")[0].lower()
    return ROOT, _label(conversation.sample_id), session, _label(turn.speaker)


@dataclass
class MemwardenRun:
    """What the memwarden systems produced: ranked dialogue ids per system, latencies, leaks."""

    ranked: dict[str, list[list[str]]] = field(default_factory=dict)
    seconds: dict[str, list[float]] = field(default_factory=dict)
    foreign: dict[str, int] = field(default_factory=dict)
    write_seconds: float = 0.0


def write_conversations(mem: Memory, conversations: Sequence[Conversation], progress: Any, task: Any
                        ) -> dict[str, list[str]]:
    """Every turn through ``Session.batch`` as its speaker; returns record id -> dialogue ids."""
    owner: dict[str, list[str]] = {}
    for c in conversations:
        for speaker in c.speakers:
            session = mem.session(Principal(principal_id(c, speaker)))
            mine = [t for t in c.turns if t.speaker == speaker]
            for start in range(0, len(mine), 64):
                part = mine[start:start + 64]
                ops = [WriteOp(t.memory, turn_namespace(c, t), kind="event", subjects=[_label(speaker)],
                               source="user", valid_from=t.when) for t in part]
                for turn, record in zip(part, session.batch(ops)):
                    owner.setdefault(record.id, []).append(turn.dia_id)
                progress.advance(task, len(part))
    return owner


def _ask(mem: Memory, asker: str, question: Question, namespace: tuple[str, ...], mode: str,
         owner: dict[str, list[str]]) -> tuple[list[str], float, list[str]]:
    session = mem.session(Principal(asker))
    started = time.perf_counter()
    hits = session.search(question.text, namespace=namespace, k=K, mode=mode)
    took = time.perf_counter() - started
    return [d for h in hits for d in owner.get(h.record.id, ["?"])], took, [h.record.namespace[1] for h in hits]


def run_memwarden(conversations: Sequence[Conversation], embedder: SharedEmbedding, root: Path, progress: Any
                  ) -> MemwardenRun:
    """Write once, ask every question as the governed assistant (lexical, dense and hybrid,
    interleaved so machine noise hits them alike), then again under the allow-all policy."""
    out = MemwardenRun()
    for name in SYSTEMS[3:]:
        out.ranked[name], out.seconds[name], out.foreign[name] = [], [], 0
    policies = {"governed": root / "governed.csv", "allow-all": root / "allow-all.csv"}
    policies["governed"].write_text(governed_policy(conversations), encoding="utf-8")
    policies["allow-all"].write_text(allow_all_policy(conversations), encoding="utf-8")
    total_turns = sum(len(c.turns) for c in conversations)
    total_questions = sum(len(c.questions) for c in conversations)
    store = root / "memwarden"
    task = progress.add_task("memwarden: writing turns", total=total_turns)
    with Memory.open(store, policy=policies["governed"], embedding=embedder) as mem:
        started = time.perf_counter()
        owner = write_conversations(mem, conversations, progress, task)
        out.write_seconds = time.perf_counter() - started
        task = progress.add_task("memwarden: governed questions", total=total_questions)
        for c in conversations:
            conv = _label(c.sample_id)
            for q in c.questions:
                for name, mode in (("memwarden lexical", "lexical"), ("memwarden dense", "dense"),
                                   ("memwarden hybrid", "hybrid")):
                    got, took, spaces = _ask(mem, asker_id(c), q, (ROOT,), mode, owner)
                    out.ranked[name].append(got)
                    out.seconds[name].append(took)
                    out.foreign[name] += sum(s != conv for s in spaces)
                progress.advance(task)
    task = progress.add_task("memwarden: allow-all questions", total=total_questions)
    with Memory.open(store, policy=policies["allow-all"], embedding=embedder) as mem:
        for c in conversations:
            conv = _label(c.sample_id)
            for q in c.questions:
                got, took, spaces = _ask(mem, asker_id(c), q, (ROOT, conv), "hybrid", owner)
                out.ranked[UNGOVERNED].append(got)
                out.seconds[UNGOVERNED].append(took)
                out.foreign[UNGOVERNED] += sum(s != conv for s in spaces)
                progress.advance(task)
    return out


def run_baselines(conversations: Sequence[Conversation], embedder: SharedEmbedding, root: Path, progress: Any
                  ) -> tuple[dict[str, list[list[str]]], dict[str, list[float]]]:
    """BM25 per conversation, raw Chroma dense (one collection, filtered per conversation) and
    their RRF fusion (of each one's top 10, as memwarden fuses); ranked dialogue ids and
    per-question latencies."""
    import chromadb
    from chromadb.config import Settings

    ranked: dict[str, list[list[str]]] = {name: [] for name in SYSTEMS[:3]}
    seconds: dict[str, list[float]] = {name: [] for name in SYSTEMS[:2]}
    client = chromadb.PersistentClient(path=str(root / "chroma-baseline"), settings=Settings(anonymized_telemetry=False))
    col = client.get_or_create_collection("baseline", embedding_function=None, metadata={"hnsw:space": "cosine"})
    turns = [(c, t) for c in conversations for t in c.turns]
    for start in range(0, len(turns), 1000):
        part = turns[start:start + 1000]
        col.add(ids=[f"{c.sample_id}/{t.dia_id}" for c, t in part],
                embeddings=embedder.embed_documents_array([t.memory for _, t in part]),
                documents=[t.memory for _, t in part], metadatas=[{"conv": c.sample_id} for c, _ in part])
    task = progress.add_task("baselines: questions", total=sum(len(c.questions) for c in conversations))
    for c in conversations:
        bm25 = BM25([t.memory for t in c.turns])
        ids = [t.dia_id for t in c.turns]
        for q in c.questions:
            started = time.perf_counter()
            scores = bm25.scores(q.text)
            lexical = [ids[i] for i in np.argsort(-scores, kind="stable")[:K] if scores[i] > 0]
            seconds["bm25"].append(time.perf_counter() - started)
            started = time.perf_counter()
            got = col.query(query_embeddings=[embedder.embed_documents_array([q.text])[0]], n_results=K,
                            where={"conv": c.sample_id}, include=[])["ids"][0]
            seconds["dense"].append(time.perf_counter() - started)
            dense = [i.split("/", 1)[1] for i in got]
            ranked["bm25"].append(lexical)
            ranked["dense"].append(dense)
            ranked["bm25+dense rrf"].append([i for i, _ in fuse([dense, lexical])][:K])
            progress.advance(task)
    return ranked, seconds


# ----------------------------------------------------------------------------------------
# The run
# ----------------------------------------------------------------------------------------

def run(conversations: Sequence[Conversation], base_embedder: Any, *, tmp: str | None = None,
        console: Console | None = None) -> dict[str, Any]:
    """Embed every text once, run every system, score them; the result as a JSON-ready dict."""
    embedder = SharedEmbedding(base_embedder)
    questions = [q for c in conversations for q in c.questions]
    texts = [t.memory for c in conversations for t in c.turns] + [q.text for q in questions]
    columns = (TextColumn("{task.description:<34}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
               TimeRemainingColumn())
    started = time.perf_counter()
    with Progress(*columns, console=console or Console(), transient=False) as progress:
        task = progress.add_task(f"embedding ({embedder.name})", total=len(set(texts)))
        embedder.warm(texts, progress=progress, task=task)
        with tempfile.TemporaryDirectory(prefix="memwarden-retrieval-", dir=_workroot(tmp),
                                         ignore_cleanup_errors=True) as root:
            ranked, seconds = run_baselines(conversations, embedder, Path(root), progress)
            mw = run_memwarden(conversations, embedder, Path(root), progress)
    ranked.update(mw.ranked)
    seconds.update(mw.seconds)
    systems = {name: {**score(ranked[name], questions), "latency": latency(seconds.get(name, ())),
                      "foreign_results": mw.foreign.get(name)} for name in SYSTEMS}
    return {
        "dataset": {"name": "LoCoMo (snap-research/locomo, ACL 2024)",
                    "conversations": [c.sample_id for c in conversations],
                    "turns": sum(len(c.turns) for c in conversations), "questions": len(questions),
                    "categories": {name: sum(q.category == c for q in questions) for c, name in CATEGORIES.items()}},
        "embedding": embedder.name,
        "k": K,
        "systems": systems,
        "hybrid_latency_cost": {
            "dense_p50_ms": systems["memwarden dense"]["latency"]["p50_ms"],
            "hybrid_p50_ms": systems["memwarden hybrid"]["latency"]["p50_ms"],
            "p50_ratio": round(systems["memwarden hybrid"]["latency"]["p50_ms"]
                               / max(systems["memwarden dense"]["latency"]["p50_ms"], 1e-9), 3),
            "dense_p95_ms": systems["memwarden dense"]["latency"]["p95_ms"],
            "hybrid_p95_ms": systems["memwarden hybrid"]["latency"]["p95_ms"],
        },
        "write_seconds": round(mw.write_seconds, 2),
        "seconds": round(time.perf_counter() - started, 1),
        "criteria": criteria(systems),
    }


def criteria(systems: dict[str, Any]) -> dict[str, Any]:
    """The issue's done-when: governed recall@10 >= the best baseline, and within 1% of the
    same retrieval without governance; no result from another conversation."""
    governed, free = systems[GOVERNED]["recall@10"], systems[UNGOVERNED]["recall@10"]
    best = max(systems[b]["recall@10"] for b in BASELINES)
    gap = abs(governed - free) / free if free else 0.0
    checks = {"beats_best_baseline": governed >= best, "within_1pct_of_ungoverned": gap <= 0.01,
              "no_foreign_results": systems[GOVERNED]["foreign_results"] == 0}
    return {**checks, "best_baseline_recall@10": best, "governed_recall@10": governed,
            "ungoverned_recall@10": free, "relative_gap": round(gap, 4), "passed": all(checks.values())}


# ----------------------------------------------------------------------------------------
# Reporting
# ----------------------------------------------------------------------------------------

def table(result: dict[str, Any]) -> Table:
    """One row per system."""
    d = result["dataset"]
    out = Table(title=f"LoCoMo evidence retrieval: {len(d['conversations'])} conversations, {d['turns']} turns, "
                      f"{d['questions']} questions ({result['embedding']})")
    out.add_column("system")
    for column in ("R@5", "R@10", "MRR@10", *CATEGORIES.values(), "p50 ms", "p95 ms"):
        out.add_column(column, justify="right")
    for name, m in result["systems"].items():
        cats = [m["categories"][c]["recall@10"] for c in CATEGORIES.values()]
        out.add_row(name, f"{m['recall@5']:.3f}", f"{m['recall@10']:.3f}", f"{m['mrr@10']:.3f}",
                    *("-" if v is None else f"{v:.3f}" for v in cats),
                    *(f"{m['latency'][p]:.1f}" if m["latency"]["n"] else "-" for p in ("p50_ms", "p95_ms")))
    return out


def chart(result: dict[str, Any], path: Path) -> str | None:
    """Bars of recall@5, recall@10 and MRR@10 per system, and the latency of memwarden's dense
    and hybrid search. Returns the path, or None when matplotlib is not installed."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    systems = result["systems"]
    metrics = [("recall@5", "recall@5"), ("recall@10", "recall@10"), ("mrr@10", "MRR@10")]
    colours = ["#bdbdbd", "#9e9e9e", "#757575", "#f4a261", "#8ecae6", "#2a9d8f", "#e9c46a"]
    fig, (ax, lat) = plt.subplots(1, 2, figsize=(12, 4.6), gridspec_kw={"width_ratios": [3, 1]})
    width = 0.8 / len(systems)
    x = np.arange(len(metrics))
    for j, (name, m) in enumerate(systems.items()):
        values = [m[key] for key, _ in metrics]
        bars = ax.bar(x + (j - (len(systems) - 1) / 2) * width, values, width, label=name, color=colours[j % len(colours)])
        for bar, v in zip(bars, values):
            ax.text(bar.get_x() + bar.get_width() / 2, v + 0.01, f"{v:.3f}", ha="center", va="bottom", fontsize=6.5,
                    rotation=90)
    ax.set_xticks(x, [label for _, label in metrics])
    ax.set_ylim(0, 1.0)
    ax.grid(axis="y", alpha=0.3)
    d = result["dataset"]
    ax.set_title(f"LoCoMo: {len(d['conversations'])} conversations, {d['questions']} questions", fontsize=10)
    ax.legend(fontsize=7.5, loc="upper left", ncol=2, frameon=False)
    names = ["memwarden dense", "memwarden hybrid"]
    for i, p in enumerate(("p50_ms", "p95_ms")):
        vals = [systems[n]["latency"][p] for n in names]
        bars = lat.bar(np.arange(2) + (i - 0.5) * 0.38, vals, 0.38, label=p.replace("_ms", ""),
                       color=["#2a9d8f", "#264653"][i])
        for bar, v in zip(bars, vals):
            lat.text(bar.get_x() + bar.get_width() / 2, v, f"{v:.1f}", ha="center", va="bottom", fontsize=7)
    lat.set_xticks(np.arange(2), ["dense", "hybrid"])
    lat.set_ylabel("governed search latency (ms)")
    lat.set_title("latency of the lexical leg", fontsize=10)
    lat.legend(fontsize=8, frameon=False)
    fig.tight_layout()
    fig.savefig(path, dpi=130)
    plt.close(fig)
    return str(path)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark: progress bars, a table, JSON and PNG in ``--out``."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("path", type=Path, help="locomo10.json, a locomo10_v2 conversation file, or a directory of them")
    parser.add_argument("--conversations", type=int, default=3, help="how many conversations, in file order (default 3)")
    parser.add_argument("--embedding", choices=("minilm", "hashing"), default="minilm",
                        help="the bundled MiniLM (default) or HashingEmbedding (a smoke test, not a result)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"output directory (default {DEFAULT_OUT})")
    parser.add_argument("--tmp", default=None, help="where the stores live while running (default /dev/shm if writable)")
    parser.add_argument("--check", action="store_true",
                        help="exit 1 unless governed hybrid recall@10 >= the best baseline and within 1%% of allow-all")
    args = parser.parse_args(list(argv) if argv is not None else None)
    if args.conversations < 1:
        parser.error("--conversations must be at least 1")
    console = Console(width=150)
    conversations = load_locomo(args.path)[: args.conversations]
    base = MiniLMEmbedding() if args.embedding == "minilm" else HashingEmbedding()
    result = run(conversations, base, tmp=args.tmp, console=console)
    result["machine"] = {"cpus": os.cpu_count(), "load_average_1min": round(os.getloadavg()[0], 2),
                         "python": platform.python_version(), "platform": platform.platform()}
    console.print(table(result))
    console.print(f"lexical leg latency cost: p50 {result['hybrid_latency_cost']['dense_p50_ms']:.1f} ms dense -> "
                  f"{result['hybrid_latency_cost']['hybrid_p50_ms']:.1f} ms hybrid "
                  f"({result['hybrid_latency_cost']['p50_ratio']:.2f}x)")
    check = result["criteria"]
    console.print(f"criteria: {json.dumps(check)}")
    out = args.out / "retrieval.json"
    write_result(result, out)
    png = chart(result, args.out / "retrieval.png")
    console.print(f"wrote {out}" + (f" and {png}" if png else " (no chart: matplotlib is not installed)"))
    return 1 if args.check and not check["passed"] else 0


if __name__ == "__main__":
    sys.exit(main())
