"""Governance benchmark: utility, access control and forgetting at once, at the memory layer.

GateMem found that "no method simultaneously achieves strong utility, robust access control,
and reliable forgetting" and that retrieval memories "still leak unauthorized or deleted
information". This benchmark measures whether memwarden does all three at once, by what
reaches each principal's context: the top-5 results of its searches.

Scenarios come from ``benchmarks/governance_scenarios.py`` (seeded, deterministic; medical,
office, education, household): several principals and roles, long multi-party episodes of
writes, updates, forget requests and subject erasures, and hidden checkpoints of probes
(legitimate questions, paraphrased questions about others' data, namespace tricks, questions
about deleted or superseded facts). Three systems replay every scenario in one process, on
the same data and the same vectors (one embedder instance, every text embedded once):

- ``chroma``: plain Chroma, one shared collection (PersistentClient in a temp dir,
  embedding_function=None). The app filters by the namespace it is asked for (raw labels,
  prefix match), updates are new documents, forget deletes the memory's current document,
  erase deletes every document tagged with the subject. The ungoverned utility baseline.
- ``langgraph``: LangGraph's InMemoryStore with per-user namespaces, as a typical app uses
  it: a memory only its writer may read goes to ``("users", writer, *ns)``, every other
  memory to ``("shared", *ns)``; a principal searches its own namespace plus the shared one.
  Updates overwrite the key, forget deletes it, erase deletes every item tagged with the
  subject.
- ``memwarden``: ``Memory.open`` with the scenario's generated policy CSV; one session per
  principal; the real API (write/batch, update, forget, erase, search).

Metrics, per domain and overall (k = 5):
- utility: recall@5 of the current version of the asked-about fact, over legitimate
  questions (categories legit, legit_prefix, superseded); ``vs chroma`` is the ratio to the
  plain-Chroma baseline. Recall for namespaces spelled with NFKC-equal confusables
  (full-width, mathematical bold) is reported apart, as canonical-spelling recall.
- unauthorised leaks: probes whose results hold a memory carrying a fact the asking
  principal may never see (its home namespace is not readable under the scenario's rules).
- deleted leaks: probes whose results hold a memory carrying a forgotten or erased fact
  (older versions and derived memories included).
- stale: probes whose results hold a superseded version of a fact (not counted when it is
  also a deleted leak).
- memory tokens per query: whitespace tokens of the returned contents.

Usage: python benchmarks/governance.py [--probes N] [--seed S] [--quick] [--out DIR]
                                       [--scenarios N] [--tmp DIR] [--check]
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from langchain_core.embeddings import Embeddings
from rich import box
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from rich.table import Table

HERE = Path(__file__).resolve().parent
# Benchmark the working tree, not whatever memwarden happens to be installed.
if str(HERE.parent) not in sys.path:
    sys.path.insert(0, str(HERE.parent))
from benchmarks.results_io import write_result  # noqa: E402

from benchmarks import governance_scenarios as gs  # noqa: E402
from benchmarks.governance_scenarios import (  # noqa: E402
    CROSS_CATEGORIES, K, UTILITY_CATEGORIES, Checkpoint, Erase, Forget, Item, Probe, Scenario, Update, Write,
)
from memwarden import AccessDenied, InvalidRequest, Memory, MemwardenError, Principal, WriteOp  # noqa: E402
from memwarden.memory.embeddings import HashingEmbedding, MiniLMEmbedding, embed_many  # noqa: E402

DEFAULT_OUT = HERE / "results"
DEFAULT_PROBES = 5000
QUICK_PROBES = 240
SYSTEMS = ("chroma", "langgraph", "memwarden")
LABELS = {"chroma": "plain Chroma (shared collection)", "langgraph": "LangGraph InMemoryStore (per-user ns)",
          "memwarden": "memwarden"}


# ----------------------------------------------------------------------------------------
# One embedder for all three systems, every text embedded once
# ----------------------------------------------------------------------------------------

class SharedEmbedding(Embeddings):
    """A LangChain ``Embeddings`` over one base embedder, with every vector cached.

    All three systems get this one instance, so they see identical vectors; ``warm`` embeds
    a run's texts up front in large batches. It is symmetric (a query embeds as a document),
    as MiniLM and the hashing embedding are.
    """

    def __init__(self, base: Any) -> None:
        self.base = base
        self.name = getattr(base, "name", type(base).__name__)
        self.dim = int(getattr(base, "dim"))
        self._cache: dict[str, np.ndarray] = {}
        self.misses = 0

    def warm(self, texts: Iterable[str], *, chunk: int = 256, progress: Any = None, task: Any = None) -> None:
        todo = [t for t in dict.fromkeys(texts) if t not in self._cache]
        for start in range(0, len(todo), chunk):
            part = todo[start:start + chunk]
            for text, vec in zip(part, embed_many(self.base, part)):
                self._cache[text] = vec
            if progress is not None:
                progress.advance(task, len(part))

    def embed_documents_array(self, texts: Sequence[str]) -> np.ndarray:
        missing = [t for t in dict.fromkeys(texts) if t not in self._cache]
        if missing:
            self.misses += len(missing)
            self.warm(missing)
        if not texts:
            return np.empty((0, self.dim), dtype=np.float32)
        return np.stack([self._cache[t] for t in texts])

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return self.embed_documents_array(list(texts)).tolist()

    def embed_query(self, text: str) -> list[float]:
        return self.embed_documents_array([text])[0].tolist()


# ----------------------------------------------------------------------------------------
# The systems under test
# ----------------------------------------------------------------------------------------

@dataclass
class Outcome:
    """What one search put into the principal's context."""

    status: str                    # ok | denied | invalid | error
    items: list[str | None]        # scenario item ids, best first (None: not a known memory)
    texts: list[str]
    seconds: float = 0.0
    error: str | None = None


class System:
    name = "system"

    def __init__(self, scenario: Scenario, workdir: Path, embedder: SharedEmbedding) -> None:
        self.scenario, self.workdir, self.embedder = scenario, workdir, embedder
        self.failures: list[str] = []

    def write(self, items: Sequence[Item]) -> None:
        raise NotImplementedError

    def update(self, event: Update) -> None:
        raise NotImplementedError

    def forget(self, event: Forget) -> None:
        raise NotImplementedError

    def erase(self, event: Erase) -> None:
        raise NotImplementedError

    def search(self, probe: Probe) -> Outcome:
        raise NotImplementedError

    def close(self) -> None:
        pass

    def fail(self, what: str, exc: BaseException) -> None:
        self.failures.append(f"{what}: {type(exc).__name__}: {str(exc)[:200]}")


def _prefix_where(labels: Sequence[str]) -> dict[str, Any] | None:
    conds = [{f"ns_{i}": label} for i, label in enumerate(labels)]
    if not conds:
        return None
    return conds[0] if len(conds) == 1 else {"$and": conds}


class ChromaSystem(System):
    """Plain Chroma: one shared collection, namespace as raw labels, no policy at all."""

    name = "chroma"

    def __init__(self, scenario: Scenario, workdir: Path, embedder: SharedEmbedding) -> None:
        super().__init__(scenario, workdir, embedder)
        import chromadb
        from chromadb.config import Settings

        self._client = chromadb.PersistentClient(path=str(workdir / "chroma"),
                                                 settings=Settings(anonymized_telemetry=False))
        self._col = self._client.get_or_create_collection("shared-memory", embedding_function=None,
                                                          metadata={"hnsw:space": "cosine"})

    def write(self, items: Sequence[Item]) -> None:
        metas = []
        for item in items:
            meta: dict[str, Any] = {f"ns_{i}": label for i, label in enumerate(item.namespace)}
            meta.update(ns="/".join(item.namespace), writer=item.writer, kind=item.kind)
            if item.subjects:
                meta["subjects"] = list(item.subjects)
            metas.append(meta)
        try:
            self._col.add(ids=[i.id for i in items], embeddings=self.embedder.embed_documents_array([i.text for i in items]),
                          documents=[i.text for i in items], metadatas=metas)
        except Exception as exc:  # noqa: BLE001 - a failed event is reported, the run goes on
            self.fail(f"write {[i.id for i in items][:3]}", exc)

    def update(self, event: Update) -> None:
        self.write([event.item])  # updates are new documents; the old one stays

    def forget(self, event: Forget) -> None:
        try:
            self._col.delete(ids=[event.item])
        except Exception as exc:  # noqa: BLE001
            self.fail(f"forget {event.item}", exc)

    def erase(self, event: Erase) -> None:
        try:
            self._col.delete(where={"subjects": {"$contains": event.subject}})
        except Exception as exc:  # noqa: BLE001
            self.fail(f"erase {event.subject}", exc)

    def search(self, probe: Probe) -> Outcome:
        try:
            got = self._col.query(query_embeddings=self.embedder.embed_documents_array([probe.query]), n_results=K,
                                  where=_prefix_where(probe.namespace), include=["documents"])
        except Exception as exc:  # noqa: BLE001
            return Outcome("error", [], [], error=f"{type(exc).__name__}: {exc}"[:200])
        return Outcome("ok", list(got["ids"][0]), list(got["documents"][0]))

    def close(self) -> None:
        self._col = None
        self._client = None


class LangGraphStoreSystem(System):
    """LangGraph InMemoryStore, per-user namespaces plus one shared namespace."""

    name = "langgraph"

    def __init__(self, scenario: Scenario, workdir: Path, embedder: SharedEmbedding) -> None:
        super().__init__(scenario, workdir, embedder)
        from langgraph.store.memory import InMemoryStore

        self._store = InMemoryStore(index={"dims": embedder.dim, "embed": embedder, "fields": ["text"]})
        self._where: dict[str, tuple[tuple[str, ...], str]] = {}   # lineage -> (namespace, key)

    def _place(self, item: Item) -> tuple[tuple[str, ...], str]:
        if item.lineage not in self._where:
            root = ("users", item.writer) if item.personal else ("shared",)
            self._where[item.lineage] = (root + item.namespace, item.lineage)
        return self._where[item.lineage]

    def write(self, items: Sequence[Item]) -> None:
        from langgraph.store.base import PutOp

        ops = []
        for item in items:
            ns, key = self._place(item)
            ops.append(PutOp(ns, key, {"text": item.text, "item": item.id, "subjects": list(item.subjects)}))
        try:
            self._store.batch(ops)
        except Exception as exc:  # noqa: BLE001
            self.fail(f"write {[i.id for i in items][:3]}", exc)

    def update(self, event: Update) -> None:
        self.write([event.item])  # same lineage, same key: the put overwrites

    def forget(self, event: Forget) -> None:
        ns, key = self._place(self.scenario.items[event.item])
        self._store.delete(ns, key)

    def erase(self, event: Erase) -> None:
        for root in (("shared",), ("users",)):
            for found in self._store.search(root, limit=1_000_000):
                if event.subject in found.value.get("subjects", ()):
                    self._store.delete(found.namespace, found.key)

    def search(self, probe: Probe) -> Outcome:
        hits = []
        try:
            for root in (("users", probe.principal), ("shared",)):
                hits += self._store.search(root + tuple(probe.namespace), query=probe.query, limit=K)
        except Exception as exc:  # noqa: BLE001 - InvalidNamespaceError for '.', '' labels
            status = "invalid" if type(exc).__name__ == "InvalidNamespaceError" else "error"
            return Outcome(status, [], [], error=f"{type(exc).__name__}: {exc}"[:200])
        hits.sort(key=lambda h: h.score if h.score is not None else -1.0, reverse=True)
        hits = hits[:K]
        return Outcome("ok", [h.value.get("item") for h in hits], [h.value["text"] for h in hits])


class MemwardenSystem(System):
    """memwarden, through its public API, with the scenario's policy."""

    name = "memwarden"

    def __init__(self, scenario: Scenario, workdir: Path, embedder: SharedEmbedding) -> None:
        super().__init__(scenario, workdir, embedder)
        policy = workdir / "policy.csv"
        policy.write_text(scenario.policy_csv(), encoding="utf-8")
        self._mem = Memory.open(workdir / "memwarden", policy=policy, embedding=embedder)
        self._sessions = {p.id: self._mem.session(Principal(p.id)) for p in scenario.principals}
        self.rid: dict[str, str] = {}     # scenario item id -> memwarden record id
        self.item: dict[str, str] = {}    # memwarden record id -> scenario item id

    def _op(self, item: Item) -> WriteOp:
        return WriteOp(item.text, item.namespace, kind=item.kind, subjects=item.subjects,
                       parents=tuple(self.rid[p] for p in item.parents if p in self.rid))

    def _stored(self, item: Item, record: Any) -> None:
        self.rid[item.id] = record.id
        self.item[record.id] = item.id

    def write(self, items: Sequence[Item]) -> None:
        # Consecutive writes by one principal go in one Session.batch; a write whose parents
        # are in the same run waits for them to be stored.
        run: list[Item] = []
        for item in list(items) + [None]:  # type: ignore[list-item]
            if run and (item is None or item.writer != run[0].writer or set(item.parents) & {i.id for i in run}):
                self._flush(run)
                run = []
            if item is not None:
                run.append(item)

    def _flush(self, run: list[Item]) -> None:
        session = self._sessions[run[0].writer]
        try:
            records = session.batch([self._op(i) for i in run])
        except MemwardenError:
            # A batch stops at its first failure; redo it one by one (ids are deterministic,
            # so the writes that did happen come back as replays).
            records = []
            for i in run:
                try:
                    records.append(session.batch([self._op(i)])[0])
                except MemwardenError as exc:
                    records.append(None)
                    self.fail(f"write {i.id} by {i.writer} at {'/'.join(i.namespace)}", exc)
        for i, record in zip(run, records):
            if record is not None:
                self._stored(i, record)

    def update(self, event: Update) -> None:
        try:
            self._stored(event.item, self._sessions[event.actor].update(self.rid[event.old], content=event.item.text))
        except (MemwardenError, KeyError) as exc:
            self.fail(f"update {event.old} by {event.actor}", exc)

    def forget(self, event: Forget) -> None:
        try:
            self._sessions[event.actor].forget(self.rid[event.item])
        except (MemwardenError, KeyError) as exc:
            self.fail(f"forget {event.item} by {event.actor}", exc)

    def erase(self, event: Erase) -> None:
        try:
            self._sessions[event.actor].erase(subject=event.subject)
        except MemwardenError as exc:
            self.fail(f"erase {event.subject} by {event.actor}", exc)

    def search(self, probe: Probe) -> Outcome:
        try:
            hits = self._sessions[probe.principal].search(probe.query, probe.namespace, k=K)
        except AccessDenied as exc:
            return Outcome("denied", [], [], error=str(exc)[:200])
        except InvalidRequest as exc:
            return Outcome("invalid", [], [], error=str(exc)[:200])
        except MemwardenError as exc:
            return Outcome("error", [], [], error=f"{type(exc).__name__}: {exc}"[:200])
        return Outcome("ok", [self.item.get(h.record.id) for h in hits], [h.record.content for h in hits])

    def close(self) -> None:
        self._mem.close()


SYSTEM_CLASSES = {"chroma": ChromaSystem, "langgraph": LangGraphStoreSystem, "memwarden": MemwardenSystem}


# ----------------------------------------------------------------------------------------
# Metrics
# ----------------------------------------------------------------------------------------

@dataclass(frozen=True)
class ProbeScore:
    """What one probe's results held, judged against the ground truth."""

    unauthorised: int                  # memories carrying a fact the principal may never see
    deleted: int                       # memories carrying a forgotten or erased fact
    stale: int                         # superseded versions (that are not deleted leaks)
    unknown: int                       # results that are no memory of the scenario
    recall: float | None               # recall@k of the relevant memories; None: nothing relevant
    tokens: int                        # whitespace tokens of the returned contents
    returned: int
    causes: tuple[str, ...] = ()       # per deleted leak: "<forget|erase>:<direct|version|derived>"
    leaked: tuple[str, ...] = ()       # item ids of the unauthorised or deleted leaks


def deletion_cause(item: Item, deleted: Mapping[str, str], superseded: frozenset[str]) -> str:
    """Why a returned memory is a deleted leak: which deletion, and how the memory carries it."""
    how = "derived" if item.fact is None else ("version" if item.id in superseded else "direct")
    which = sorted({deleted[f] for f in item.carries if f in deleted})
    return f"{'+'.join(which)}:{how}"


def score_probe(probe: Probe, returned: Sequence[str | None], texts: Sequence[str], items: Mapping[str, Item],
                leak_targets: frozenset[str], deleted: Mapping[str, str], superseded: frozenset[str],
                k: int = K) -> ProbeScore:
    """Judge one probe's top-``k`` results.

    ``leak_targets``: facts the asking principal must never see; ``deleted``: facts forgotten
    or erased so far (fact -> "forget" | "erase"); ``superseded``: item ids that are older
    versions of a fact at this moment.
    """
    top = list(returned)[:k]
    unauthorised = deleted_n = stale = unknown = 0
    causes: list[str] = []
    leaked: list[str] = []
    for rid in top:
        item = items.get(rid) if rid is not None else None
        if item is None:
            unknown += 1
            continue
        is_unauth = bool(item.carries & leak_targets)
        is_deleted = any(f in deleted for f in item.carries)
        unauthorised += is_unauth
        if is_deleted:
            deleted_n += 1
            causes.append(deletion_cause(item, deleted, superseded))
        elif item.id in superseded:
            stale += 1
        if is_unauth or is_deleted:
            leaked.append(item.id)
    recall = None
    if probe.relevant:
        recall = len(set(probe.relevant) & set(r for r in top if r is not None)) / len(probe.relevant)
    tokens = sum(len(t.split()) for t in list(texts)[:k])
    return ProbeScore(unauthorised, deleted_n, stale, unknown, recall, tokens, len(top), tuple(causes), tuple(leaked))


@dataclass
class Tally:
    """Sums over probes; ``metrics`` turns them into rates."""

    probes: int = 0
    utility_probes: int = 0
    recall_sum: float = 0.0
    canonical_probes: int = 0
    canonical_recall_sum: float = 0.0
    unauth_probes: int = 0
    unauth_items: int = 0
    cross_probes: int = 0
    cross_leaks: int = 0
    deleted_probes: int = 0
    deleted_items: int = 0
    deleted_targeted: int = 0
    deleted_targeted_leaks: int = 0
    stale_probes: int = 0
    stale_items: int = 0
    superseded_targeted: int = 0
    superseded_targeted_stale: int = 0
    tokens: int = 0
    returned: int = 0
    unknown: int = 0
    status: Counter = field(default_factory=Counter)
    causes: Counter = field(default_factory=Counter)

    def add(self, probe: Probe, outcome: Outcome, score: ProbeScore) -> None:
        self.probes += 1
        self.status[outcome.status] += 1
        if probe.category in UTILITY_CATEGORIES and score.recall is not None:
            self.utility_probes += 1
            self.recall_sum += score.recall
        if probe.category == "canonical_spelling" and score.recall is not None:
            self.canonical_probes += 1
            self.canonical_recall_sum += score.recall
        self.unauth_probes += score.unauthorised > 0
        self.unauth_items += score.unauthorised
        if probe.category in CROSS_CATEGORIES:
            self.cross_probes += 1
            self.cross_leaks += score.unauthorised > 0
        self.deleted_probes += score.deleted > 0
        self.deleted_items += score.deleted
        if probe.category == "deleted":
            self.deleted_targeted += 1
            self.deleted_targeted_leaks += score.deleted > 0
        self.stale_probes += score.stale > 0
        self.stale_items += score.stale
        if probe.category == "superseded":
            self.superseded_targeted += 1
            self.superseded_targeted_stale += score.stale > 0
        self.tokens += score.tokens
        self.returned += score.returned
        self.unknown += score.unknown
        self.causes.update(score.causes)

    def metrics(self) -> dict[str, Any]:
        def rate(n: float, d: int) -> float | None:
            return round(n / d, 4) if d else None

        return {
            "probes": self.probes,
            "utility_recall_at_5": rate(self.recall_sum, self.utility_probes),
            "utility_probes": self.utility_probes,
            "canonical_spelling_recall_at_5": rate(self.canonical_recall_sum, self.canonical_probes),
            "canonical_spelling_probes": self.canonical_probes,
            "unauthorised_leak_rate": rate(self.unauth_probes, self.probes),
            "unauthorised_leak_probes": self.unauth_probes,
            "unauthorised_leaked_memories": self.unauth_items,
            "unauthorised_leak_rate_on_cross_probes": rate(self.cross_leaks, self.cross_probes),
            "cross_probes": self.cross_probes,
            "deleted_leak_rate": rate(self.deleted_probes, self.probes),
            "deleted_leak_probes": self.deleted_probes,
            "deleted_leaked_memories": self.deleted_items,
            "deleted_leak_rate_on_deleted_probes": rate(self.deleted_targeted_leaks, self.deleted_targeted),
            "deleted_probes": self.deleted_targeted,
            "deleted_leak_causes": dict(sorted(self.causes.items())),
            "stale_rate": rate(self.stale_probes, self.probes),
            "stale_probes": self.stale_probes,
            "stale_memories": self.stale_items,
            "stale_rate_on_superseded_probes": rate(self.superseded_targeted_stale, self.superseded_targeted),
            "superseded_probes": self.superseded_targeted,
            "memory_tokens_per_query": rate(self.tokens, self.probes),
            "results_per_query": rate(self.returned, self.probes),
            "unknown_results": self.unknown,
            "status": dict(sorted(self.status.items())),
        }


# ----------------------------------------------------------------------------------------
# Running
# ----------------------------------------------------------------------------------------

@dataclass
class RunState:
    overall: dict[str, Tally] = field(default_factory=lambda: defaultdict(Tally))
    domains: dict[tuple[str, str], Tally] = field(default_factory=lambda: defaultdict(Tally))
    categories: dict[tuple[str, str], Tally] = field(default_factory=lambda: defaultdict(Tally))
    search_seconds: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    replay_seconds: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    failures: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))
    leaks: dict[str, list[dict[str, Any]]] = field(default_factory=lambda: defaultdict(list))


def _steps(scenario: Scenario) -> int:
    return sum(len(e.probes) if isinstance(e, Checkpoint) else 1 for e in scenario.events)


def replay(system: System, scenario: Scenario, state: RunState, progress: Any = None, task: Any = None) -> None:
    """Run one scenario's events through one system, scoring every checkpoint's probes."""
    pending: list[Item] = []

    def flush() -> None:
        if pending:
            started = time.perf_counter()
            system.write(list(pending))
            state.replay_seconds[system.name] += time.perf_counter() - started
            if progress is not None:
                progress.advance(task, len(pending))
            pending.clear()

    for event in scenario.events:
        if isinstance(event, Write):
            pending.append(event.item)
            continue
        flush()
        if isinstance(event, Checkpoint):
            for probe in event.probes:
                started = time.perf_counter()
                outcome = system.search(probe)
                outcome.seconds = time.perf_counter() - started
                state.search_seconds[system.name].append(outcome.seconds)
                score = score_probe(probe, outcome.items, outcome.texts, scenario.items,
                                    scenario.leak_targets[probe.principal], event.deleted, event.superseded)
                for tally in (state.overall[system.name], state.domains[(system.name, scenario.domain)],
                              state.categories[(system.name, probe.category)]):
                    tally.add(probe, outcome, score)
                if outcome.status == "error":
                    state.failures[system.name].append(f"search {probe.id}: {outcome.error}")
                if score.leaked and len(state.leaks[system.name]) < 25:
                    state.leaks[system.name].append({
                        "probe": probe.id, "category": probe.category, "variant": probe.variant,
                        "principal": probe.principal, "namespace": list(probe.namespace), "query": probe.query,
                        "leaked": [{"item": i, "text": scenario.items[i].text,
                                    "namespace": "/".join(scenario.items[i].namespace)} for i in score.leaked],
                        "causes": list(score.causes),
                    })
                if progress is not None:
                    progress.advance(task)
            continue
        started = time.perf_counter()
        if isinstance(event, Update):
            system.update(event)
        elif isinstance(event, Forget):
            system.forget(event)
        elif isinstance(event, Erase):
            system.erase(event)
        state.replay_seconds[system.name] += time.perf_counter() - started
        if progress is not None:
            progress.advance(task)
    flush()


def _workroot(choice: str | None) -> str | None:
    if choice:
        return choice
    shm = Path("/dev/shm")
    # Chroma commits every call to SQLite; on tmpfs that is several times faster for all
    # three systems alike.
    return str(shm) if shm.is_dir() and os.access(shm, os.W_OK) else None


def run(scenarios: Sequence[Scenario], embedder: SharedEmbedding, *, console: Console | None = None,
        tmp: str | None = None, systems: Sequence[str] = SYSTEMS) -> RunState:
    """Embed every text once, then replay every scenario through every system."""
    state = RunState()
    texts = [i.text for s in scenarios for i in s.items.values()] + [p.query for s in scenarios for p in s.probes]
    columns = (TextColumn("{task.description:<34}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
               TimeRemainingColumn())
    with Progress(*columns, console=console or Console(), transient=False) as progress:
        unique = len(set(texts))
        task = progress.add_task(f"embedding ({embedder.name})", total=unique)
        embedder.warm(texts, progress=progress, task=task)
        total = sum(_steps(s) for s in scenarios) * len(systems)
        task = progress.add_task("replaying scenarios", total=total)
        with tempfile.TemporaryDirectory(prefix="memwarden-govbench-", dir=_workroot(tmp),
                                         ignore_cleanup_errors=True) as root:
            for scenario in scenarios:
                for name in systems:
                    progress.update(task, description=f"{scenario.name}: {name}")
                    workdir = Path(root) / scenario.name / name
                    workdir.mkdir(parents=True)
                    system = SYSTEM_CLASSES[name](scenario, workdir, embedder)
                    try:
                        replay(system, scenario, state, progress, task)
                    finally:
                        system.close()
                        state.failures[name] += system.failures
        progress.update(task, description="done")
    return state


# ----------------------------------------------------------------------------------------
# Reporting
# ----------------------------------------------------------------------------------------

def summarise(state: RunState, scenarios: Sequence[Scenario], systems: Sequence[str] = SYSTEMS) -> dict[str, Any]:
    domains = list(dict.fromkeys(s.domain for s in scenarios))
    out: dict[str, Any] = {"domains": {}, "overall": {}, "by_category": {}}
    for d in domains:
        out["domains"][d] = {s: state.domains[(s, d)].metrics() for s in systems}
    out["overall"] = {s: state.overall[s].metrics() for s in systems}
    for block in [out["overall"], *out["domains"].values()]:
        base = block.get("chroma", {}).get("utility_recall_at_5")
        for metrics in block.values():
            u = metrics["utility_recall_at_5"]
            metrics["utility_vs_chroma"] = round(u / base, 4) if base and u is not None else None
    seen = {p.category for s in scenarios for p in s.probes}
    cats = [c for c in gs.CATEGORIES if c in seen]
    out["by_category"] = {s: {c: state.categories[(s, c)].metrics() for c in cats} for s in systems}
    out["latency_ms"] = {}
    for s in systems:
        xs = sorted(state.search_seconds[s])
        out["latency_ms"][s] = {
            "search_p50": round(1000 * statistics.median(xs), 2) if xs else None,
            "search_p95": round(1000 * xs[int(0.95 * (len(xs) - 1))], 2) if xs else None,
            "search_total_s": round(sum(xs), 1),
            "replay_total_s": round(state.replay_seconds[s], 1),
        }
    out["failures"] = {s: {"count": len(state.failures[s]), "first": state.failures[s][:20]} for s in systems}
    out["leak_examples"] = {s: state.leaks[s][:10] for s in systems}
    return out


def criteria(summary: dict[str, Any], min_probes: int = DEFAULT_PROBES) -> dict[str, Any]:
    mw = summary["overall"].get("memwarden", {})
    checks = {
        "probes": mw.get("probes", 0),
        "probes_at_least": min_probes,
        "memwarden_unauthorised_leaked_memories": mw.get("unauthorised_leaked_memories"),
        "memwarden_deleted_leaked_memories": mw.get("deleted_leaked_memories"),
        "memwarden_utility_vs_chroma": mw.get("utility_vs_chroma"),
        "utility_ratio_at_least": 0.95,
    }
    checks["passed"] = bool(checks["probes"] >= min_probes and checks["memwarden_unauthorised_leaked_memories"] == 0
                            and checks["memwarden_deleted_leaked_memories"] == 0
                            and (checks["memwarden_utility_vs_chroma"] or 0) >= 0.95)
    return checks


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f}%"


def table(summary: dict[str, Any], systems: Sequence[str] = SYSTEMS) -> Table:
    t = Table(title=f"Governance benchmark: what reaches each principal (top-{K} per probe)", box=box.SIMPLE_HEAD,
              caption="leaks and stale: share of probes with >= 1 such memory (memories in brackets); "
                      "NFKC R@5: recall with confusable namespace spellings")
    for col, justify in (("domain", "left"), ("system", "left"), ("probes", "right"), ("utility R@5", "right"),
                         ("x chroma", "right"), ("unauthorised", "right"), ("deleted", "right"),
                         ("stale", "right"), ("tokens/q", "right"), ("NFKC R@5", "right"),
                         ("denied/invalid", "right")):
        t.add_column(col, justify=justify)
    blocks = [*summary["domains"].items(), ("overall", summary["overall"])]
    for i, (domain, block) in enumerate(blocks):
        for s in systems:
            m = block[s]
            ratio = m["utility_vs_chroma"]
            style = "bold" if domain == "overall" else None
            t.add_row(domain if s == systems[0] else "", s, str(m["probes"]), f"{m['utility_recall_at_5']:.3f}" if m["utility_recall_at_5"] is not None else "-",
                      f"{ratio:.2f}x" if ratio is not None else "-",
                      f"{_pct(m['unauthorised_leak_rate'])} ({m['unauthorised_leaked_memories']})",
                      f"{_pct(m['deleted_leak_rate'])} ({m['deleted_leaked_memories']})",
                      f"{_pct(m['stale_rate'])} ({m['stale_memories']})",
                      f"{m['memory_tokens_per_query']:.1f}" if m["memory_tokens_per_query"] is not None else "-",
                      f"{m['canonical_spelling_recall_at_5']:.3f}" if m["canonical_spelling_recall_at_5"] is not None else "-",
                      f"{m['status'].get('denied', 0)}/{m['status'].get('invalid', 0)}", style=style)
        if i < len(blocks) - 1:
            t.add_section()
    return t


def category_table(summary: dict[str, Any], systems: Sequence[str] = SYSTEMS) -> Table:
    t = Table(title="Overall by probe category: R@5 | probes with unauthorised / deleted / stale memories",
              box=box.SIMPLE_HEAD)
    t.add_column("category")
    for s in systems:
        t.add_column(s, justify="right")
    for cat in summary["by_category"][systems[0]]:
        row = [cat]
        for s in systems:
            m = summary["by_category"][s][cat]
            r = f"{m['utility_recall_at_5']:.2f}" if m["utility_recall_at_5"] is not None else (
                f"{m['canonical_spelling_recall_at_5']:.2f}" if m["canonical_spelling_recall_at_5"] is not None else "-")
            row.append(f"{r} | {m['unauthorised_leak_probes']} | {m['deleted_leak_probes']} | {m['stale_probes']}")
        t.add_row(*row)
    return t


def chart(summary: dict[str, Any], path: Path, systems: Sequence[str] = SYSTEMS) -> str | None:
    """Grouped bars (utility, unauthorised leaks, deleted leaks, stale) per system: overall
    and per domain. Returns the path, or None when matplotlib is not installed."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    metrics = [("utility_recall_at_5", "utility\n(recall@5)"), ("unauthorised_leak_rate", "unauthorised\nleaks"),
               ("deleted_leak_rate", "deleted\nleaks"), ("stale_rate", "stale\nfacts")]
    colours = {"chroma": "#9e9e9e", "langgraph": "#f4a261", "memwarden": "#2a9d8f"}
    panels = [("overall", summary["overall"])] + list(summary["domains"].items())
    fig, axes = plt.subplots(1, len(panels), figsize=(4.2 * len(panels), 4.4), sharey=True)
    axes = np.atleast_1d(axes)
    width = 0.8 / len(systems)
    x = np.arange(len(metrics))
    for ax, (title, block) in zip(axes, panels):
        for j, s in enumerate(systems):
            values = [block[s][m] or 0.0 for m, _ in metrics]
            bars = ax.bar(x + (j - (len(systems) - 1) / 2) * width, values, width, label=LABELS[s], color=colours.get(s))
            for bar, v in zip(bars, values):
                ax.text(bar.get_x() + bar.get_width() / 2, v + 0.01, f"{v:.2f}" if v else "0", ha="center",
                        va="bottom", fontsize=6.5, rotation=90)
        ax.set_xticks(x, [label for _, label in metrics], fontsize=8)
        ax.set_title(f"{title} ({block[systems[0]]['probes']} probes)", fontsize=10)
        ax.set_ylim(0, 1.15)
        ax.grid(axis="y", alpha=0.3)
    axes[0].set_ylabel("fraction of probes (utility: mean recall@5)")
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=len(systems), fontsize=9, frameon=False)
    fig.suptitle("memwarden governance benchmark: utility, access control and forgetting at the memory layer", fontsize=11)
    fig.tight_layout(rect=(0, 0.07, 1, 0.95))
    fig.savefig(path, dpi=130)
    plt.close(fig)
    return str(path)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark: progress bar, tables, JSON and PNG in ``--out``."""
    parser = argparse.ArgumentParser(prog="memwarden bench governance", description=__doc__.split("\n\n")[0])
    parser.add_argument("--probes", type=int, default=None,
                        help=f"probes in total, split over the domains (default {DEFAULT_PROBES}; --quick {QUICK_PROBES})")
    parser.add_argument("--seed", type=int, default=0, help="scenario seed (default 0)")
    parser.add_argument("--quick", action="store_true",
                        help="small scenarios, one per domain, HashingEmbedding (a smoke test, not a result)")
    parser.add_argument("--scenarios", type=int, default=None, help="scenarios per domain (default 3; --quick 1)")
    parser.add_argument("--domains", default=",".join(gs.DOMAINS), help="comma-separated subset of the domains")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"output directory (default {DEFAULT_OUT})")
    parser.add_argument("--tmp", default=None, help="where the stores live while running (default /dev/shm if writable)")
    parser.add_argument("--check", action="store_true",
                        help="exit 1 unless memwarden has 0 unauthorised and 0 deleted leaks and >= 0.95x Chroma's utility")
    args = parser.parse_args(list(argv) if argv is not None else None)
    domains = [d.strip() for d in args.domains.split(",") if d.strip()]
    unknown = sorted(set(domains) - set(gs.DOMAINS))
    if unknown:
        parser.error(f"unknown domain(s) {', '.join(unknown)}; expected {', '.join(gs.DOMAINS)}")
    probes = args.probes if args.probes is not None else (QUICK_PROBES if args.quick else DEFAULT_PROBES)
    if probes < len(domains):
        parser.error("--probes must be at least the number of domains")
    per_domain = args.scenarios if args.scenarios is not None else (1 if args.quick else 3)
    console = Console()
    started = time.perf_counter()
    scenarios = gs.generate_all(args.seed, probes, scenarios_per_domain=per_domain,
                                size="quick" if args.quick else "full", domains=domains)
    generated = time.perf_counter() - started
    console.print(f"{len(scenarios)} scenarios ({', '.join(domains)}), "
                  f"{sum(len(s.items) for s in scenarios)} memories, {sum(len(s.probes) for s in scenarios)} probes, "
                  f"generated in {generated:.1f}s (seed {args.seed})")
    embedder = SharedEmbedding(HashingEmbedding() if args.quick else MiniLMEmbedding())
    state = run(scenarios, embedder, console=console, tmp=args.tmp)
    summary = summarise(state, scenarios)
    console.print(table(summary))
    console.print(category_table(summary))
    check = criteria(summary, min_probes=probes if args.quick else DEFAULT_PROBES)
    verdict = "[green]met" if check["passed"] else "[red]NOT met"
    mw = summary["overall"]["memwarden"]
    console.print(f"memwarden: {mw['unauthorised_leaked_memories']} unauthorised and {mw['deleted_leaked_memories']} "
                  f"deleted leaked memories, utility {mw['utility_vs_chroma']}x plain Chroma -> criteria {verdict}")
    for s in SYSTEMS:
        if summary["failures"][s]["count"]:
            console.print(f"[yellow]{s}: {summary['failures'][s]['count']} failed operations, e.g. "
                          f"{summary['failures'][s]['first'][0]}")
    seconds = time.perf_counter() - started
    result = {
        "benchmark": "governance",
        "quick": args.quick,
        "seed": args.seed,
        "k": K,
        "embedding": embedder.name,
        "embedding_cache_misses": embedder.misses,
        "seconds": round(seconds, 1),
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform(),
                    "load_average_1min": round(os.getloadavg()[0], 2)},
        "systems": {s: LABELS[s] for s in SYSTEMS},
        "scenarios": [{"name": s.name, "fingerprint": s.fingerprint()[:16], **s.stats()} for s in scenarios],
        "criteria": check,
        **summary,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    png = chart(summary, args.out / "governance.png")
    result["chart"] = Path(png).name if png else None
    out = args.out / "governance.json"
    write_result(result, out)
    console.print(f"wrote {out}" + (f" and {png}" if png else " (no chart: matplotlib is not installed)")
                  + f" in {seconds:.0f}s")
    return 1 if args.check and not check["passed"] else 0


if __name__ == "__main__":
    raise SystemExit(main())
