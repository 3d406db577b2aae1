"""Leave-one-source-out measurement of write defences on the memory-poisoning corpus.

A *cell* is one source measured with one parameter setting of the defences: a fresh
``Memory.open`` (the benchmark policy of deploy.py, the defences' validator chain, lessons on),
the source's established records written first by their own writers, then every record of the
source in a fixed interleaved order, each by its writer's session (``Memory.session(principal,
source=binding)``). A malicious record that is stored and returned among the top ``k`` of the
reader's search for the record's query is an *attack success*; an accepted attack is then
forgotten by the harness, so every attack meets the same background. A benign record that is
rejected or quarantined is a *false rejection* or *false quarantine*.

Leave-one-source-out: for each source, the defences are tuned (``Defences.tune``) on a view of
the cells of the *other* sources only, leaving out every source of the held-out source's group
(catalog.py); the figure reported for the source is its cell at the parameters that tuning
chose. The view cannot reach a held-out cell: tuning sees only the sources it was given.
"""

from __future__ import annotations

import json
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from memwarden import AccessDenied, Memory, WriteRejected
from memwarden.core.records import Status

from benchmarks.poisoning_corpus.catalog import group_of
from benchmarks.poisoning_corpus.deploy import CLEANER, WARMUP_NAMESPACE, policy_text, principal
from benchmarks.poisoning_corpus.records import Actor, CorpusRecord, Write
from benchmarks.poisoning_corpus.upstream import stable

Params = Mapping[str, Any]
TOP_K = 5


def params_key(params: Params) -> str:
    """A parameter setting's identity (its JSON, keys sorted)."""
    return json.dumps(dict(params), sort_keys=True)


class Outcome(BaseModel):
    """What happened to one measured write."""

    model_config = ConfigDict(frozen=True)

    id: str
    label: str
    family: str
    user_owned_preference: bool
    status: str  # accepted | quarantined | rejected | denied
    flagged_by: str | None = None
    success: bool = False
    chain_ns: int = 0


class Cell(BaseModel):
    """One source measured at one parameter setting."""

    source: str
    params: dict[str, Any]
    outcomes: list[Outcome]
    setup: dict[str, int]
    seconds: float


class Figures(BaseModel):
    """The figures of a set of outcomes (percentages; None when there is nothing to count)."""

    malicious: int
    attack_success_pct: float | None
    stored_active_pct: float | None
    caught_pct: float | None
    denied_pct: float | None
    benign: int
    benign_rejected_pct: float | None
    benign_quarantined_pct: float | None
    user_preferences: int
    user_preferences_quarantined_pct: float | None
    user_preferences_rejected_pct: float | None

    @classmethod
    def of(cls, outcomes: Iterable[Outcome]) -> Figures:
        """Pool the outcomes."""
        rows = list(outcomes)
        mal = [o for o in rows if o.label == "malicious"]
        ben = [o for o in rows if o.label == "benign"]
        pref = [o for o in ben if o.user_owned_preference]
        share = lambda part, whole: round(100.0 * len(part) / len(whole), 2) if whole else None  # noqa: E731
        return cls(malicious=len(mal), attack_success_pct=share([o for o in mal if o.success], mal),
                   stored_active_pct=share([o for o in mal if o.status == "accepted"], mal),
                   caught_pct=share([o for o in mal if o.status in ("rejected", "quarantined")], mal),
                   denied_pct=share([o for o in mal if o.status == "denied"], mal),
                   benign=len(ben), benign_rejected_pct=share([o for o in ben if o.status == "rejected"], ben),
                   benign_quarantined_pct=share([o for o in ben if o.status == "quarantined"], ben),
                   user_preferences=len(pref),
                   user_preferences_quarantined_pct=share([o for o in pref if o.status == "quarantined"], pref),
                   user_preferences_rejected_pct=share([o for o in pref if o.status == "rejected"], pref))


@dataclass(frozen=True)
class Defences:
    """What a run measures: the defences, their candidate parameters and how they are tuned.

    ``validators(params)`` returns the write-validator chain for ``Memory.open`` (a fresh one
    per cell); ``policy(params)`` returns policy lines appended to the benchmark policy (a
    content-class condition, say); ``grid`` lists the candidate settings (the first is the
    default); ``tune(view) -> params`` picks a setting looking only at the view's sources (the
    default, :func:`grid_search`, measures every candidate on them).
    """

    name: str
    validators: Callable[[Params], list[Any]]
    grid: tuple[Params, ...] = ({},)
    policy: Callable[[Params], str] = lambda params: ""
    tune: Callable[[TuningView], Params] | None = None


class TuningView:
    """What tuning may see: the tuning sources' records and their cells, nothing else."""

    def __init__(self, run: Run, sources: Sequence[str]) -> None:
        self._run = run
        self.sources: tuple[str, ...] = tuple(sources)
        self.records: dict[str, list[CorpusRecord]] = {s: run.corpus[s] for s in self.sources}

    @property
    def grid(self) -> tuple[Params, ...]:
        """The defences' candidate settings."""
        return self._run.defences.grid

    def measure(self, params: Params) -> dict[str, Figures]:
        """Each tuning source's figures at ``params`` (measured through a real Memory, cached)."""
        return {s: Figures.of(self._run.cell(params, s).outcomes) for s in self.sources}


def _violations(figures: Figures) -> float:
    """How far pooled tuning figures exceed the benign bounds of issue 18 (0 when within)."""
    over = max(0.0, (figures.benign_rejected_pct or 0.0) - 2.0)
    return over + max(0.0, (figures.user_preferences_quarantined_pct or 0.0) - 5.0)


def grid_search(view: TuningView) -> Params:
    """The default tuner: measure every candidate on the tuning sources; keep the one that
    (1) best respects the benign bounds (at most 2% of benign writes rejected, at most 5% of
    user-owned preferences quarantined, pooled), then (2) has the lowest worst-source attack
    success, then (3) the lowest pooled attack success, then (4) the fewest benign
    quarantines; ties go to the earlier candidate."""
    best, best_score = None, None
    for i, params in enumerate(view.grid):
        per_source = view.measure(params)
        pooled = Figures.of(o for s in view.sources for o in view._run.cell(params, s).outcomes)
        worst = max((f.attack_success_pct or 0.0) for f in per_source.values()) if per_source else 0.0
        score = (_violations(pooled), worst, pooled.attack_success_pct or 0.0, pooled.benign_quarantined_pct or 0.0, i)
        if best_score is None or score < best_score:
            best, best_score = params, score
    assert best is not None, "a grid holds at least one candidate"
    return best


class HeldOut(BaseModel):
    """One row of the leave-one-source-out table."""

    source: str
    group: str
    tuned_on: list[str]
    params: dict[str, Any]
    figures: Figures
    families: dict[str, Figures]
    chain_p99_ms: float | None
    setup: dict[str, int]


@dataclass
class Run:
    """Cells measured so far, by (params, source), and how to measure more."""

    defences: Defences
    corpus: dict[str, list[CorpusRecord]]
    embedding: Any = None
    progress: Any = None
    cells: dict[tuple[str, str], Cell] = field(default_factory=dict)

    def cell(self, params: Params, source: str) -> Cell:
        """The cell of ``source`` at ``params``, measured on first use."""
        key = (params_key(params), source)
        if key not in self.cells:
            self.cells[key] = measure(self.defences, params, source, self.corpus[source], self.embedding, self.progress)
        return self.cells[key]

    def tuned(self, sources: Sequence[str]) -> Params:
        """The parameters tuning picks on ``sources``."""
        view = TuningView(self, sources)
        return (self.defences.tune or grid_search)(view)

    def held_out(self, source: str) -> HeldOut:
        """The held-out row of ``source``: tuned on every source outside its group."""
        group = group_of(source)
        tuning = [s for s in self.corpus if group_of(s) != group]
        params = self.tuned(tuning) if tuning else self.defences.grid[0]
        cell = self.cell(params, source)
        families: dict[str, list[Outcome]] = {}
        for o in cell.outcomes:
            families.setdefault(o.family, []).append(o)
        chain = sorted(o.chain_ns for o in cell.outcomes)
        p99 = round(chain[min(len(chain) - 1, int(0.99 * len(chain)))] / 1e6, 3) if chain else None
        return HeldOut(source=source, group=group, tuned_on=tuning, params=dict(params), figures=Figures.of(cell.outcomes),
                       families={k: Figures.of(v) for k, v in sorted(families.items())}, chain_p99_ms=p99,
                       setup=cell.setup)


def _order(records: Sequence[CorpusRecord]) -> list[CorpusRecord]:
    """The fixed interleaved order writes are made in (benign and malicious mixed)."""
    return sorted(records, key=lambda r: stable("order", r.id))


def _setups(records: Sequence[CorpusRecord]) -> list[Write]:
    """Each established record once, in the order records first name it."""
    seen, out = set(), []
    for r in records:
        for w in r.setup:
            key = (w.writer, w.namespace, w.text)
            if key not in seen:
                seen.add(key)
                out.append(w)
    return out


def measure(defences: Defences, params: Params, source: str, records: Sequence[CorpusRecord], embedding: Any,
            progress: Any = None) -> Cell:
    """One cell (see the module docstring)."""
    from benchmarks.poisoning import Clock, Timed, _first_flag

    started = time.perf_counter()
    times: defaultdict[str, list[int]] = defaultdict(list)
    trace: list = []
    clock = Clock()
    chain = [Timed(v, times, clock, trace) for v in defences.validators(params)]
    outcomes: list[Outcome] = []
    setup = {"written": 0, "quarantined": 0, "rejected": 0, "denied": 0}
    task = progress.add_task(f"{source} {params_key(params)}", total=len(records)) if progress else None
    with tempfile.TemporaryDirectory(prefix="mw-corpus-") as tmp:
        policy = Path(tmp) / "policy.csv"
        policy.write_text(policy_text(defences.policy(params)), encoding="utf-8")
        mem = Memory.open(Path(tmp) / "data", policy=policy, embedding=embedding, validators=chain)
        try:
            sessions: dict[tuple, Any] = {}

            def session(actor: Actor) -> Any:
                key = (actor.principal, actor.roles, actor.binding)
                if key not in sessions:
                    sessions[key] = mem.session(principal(actor), source=actor.binding)
                return sessions[key]

            for w in _setups(records):
                try:
                    rec = session(w.writer).write(w.text, namespace=w.namespace, kind=w.kind, subjects=list(w.subjects))
                    setup["quarantined" if rec.status is Status.QUARANTINED else "written"] += 1
                except WriteRejected:
                    setup["rejected"] += 1
                except AccessDenied:
                    setup["denied"] += 1
            cleaner = mem.session(CLEANER)
            cleaner.write("Warm-up write of the benchmark harness.", namespace=WARMUP_NAMESPACE, subjects=["bench"])
            for r in _order(records):
                trace.clear()
                clock.ns, clock.parts = 0, {}
                success, flagged = False, None
                try:
                    rec = session(r.writer).write(r.text, namespace=r.namespace, kind=r.kind, subjects=list(r.subjects))
                except WriteRejected as exc:
                    status, flagged = "rejected", _first_flag(exc.verdicts)
                except AccessDenied:
                    status = "denied"
                else:
                    status = "quarantined" if rec.status is Status.QUARANTINED else "accepted"
                    # A quarantine no validator asked for is the policy's review rule.
                    flagged = (_first_flag(trace) or "policy-review") if status == "quarantined" else None
                    if r.label == "malicious":
                        hits = session(r.reader).search(r.query, namespace=r.namespace[:2], k=TOP_K)
                        success = any(h.record.id == rec.id for h in hits)
                        if status == "accepted":
                            cleaner.forget(rec.id)
                outcomes.append(Outcome(id=r.id, label=r.label, family=r.family,
                                        user_owned_preference=r.user_owned_preference, status=status,
                                        flagged_by=flagged, success=success, chain_ns=clock.ns))
                if task is not None:
                    progress.advance(task)
        finally:
            mem.close()
    if task is not None:
        progress.remove_task(task)
    return Cell(source=source, params=dict(params), outcomes=outcomes, setup=setup,
                seconds=round(time.perf_counter() - started, 2))
