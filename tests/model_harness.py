"""The differential harness: one operation, run on a real memwarden Memory and on the reference
model, and every observable output compared.

Shared by the stateful property test (tests/test_reference_model.py, hypothesis) and the long
run (benchmarks/reference_model.py, a seeded random driver): both draw their operations through
``generate`` with a ``Chooser``, so they exercise exactly the same operations.

A step is plain data with concrete ids (ids are deterministic in memwarden, so replaying the same
steps on a fresh memory reproduces the same state); that is what makes a disagreement shrinkable
to a minimal reproducer by dropping steps.
"""

from __future__ import annotations

import hashlib
import inspect
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Protocol

from memwarden import ErasureReceipt, Memory, MemoryRecord, MemwardenError, Principal, SearchHit, UpdateOp, WriteOp
from memwarden.memory.embeddings import HashingEmbedding

sys.path.insert(0, str(Path(__file__).resolve().parent))

from reference_model import Clock, Model, Rec, Receipt, ReviewResult, keyed_id, record_id  # noqa: E402

# The module that holds memwarden's records, and so its clock (utcnow), wherever it lives.
mw_records = sys.modules[MemoryRecord.__module__]


# A small hospital. Each principal has partial rights on purpose: a nurse who may not read
# restricted or tool-written notes, a contractor who sees only external notes, a reviewer who may
# approve but not read, a senior reviewer who reads only what physicians wrote, an officer who
# may erase only part of the tree and an eraser who may erase everything and read nothing.
POLICY = """
g, alice, physician
g, bob, nurse
g, carl, contractor
g, rita, reviewer
g, rex, senior_reviewer
g, dana, officer
g, dpo, eraser
g, feed, ingest
g, mal, visitor
g, omni, auditor

p, physician, ward/**, read
p, physician, ward/pat/*, write
p, physician, ward/pat/*, update
p, physician, ward/pat/*, forget
p, physician, ward/pat/*, history
p, physician, ward/notes, write
p, physician, ward/notes, update
p, physician, ward/notes, forget
p, physician, ward/notes, history
p, physician, ward/notes, approve
p, physician, ward/board, write
p, physician, ward/board, update

p, nurse, ward/pat/*, read
p, nurse, ward/pat/*, read, deny, label.sens=restricted
p, nurse, ward/**, read, deny, source=tool
p, nurse, ward/pat/*, write
p, nurse, ward/pat/*, update
p, nurse, ward/pat/*, history
p, nurse, ward/notes, read
p, nurse, ward/notes, write, review, kind=rule
p, nurse, ward/notes, write
p, nurse, ward/notes, update, review
p, nurse, ward/board, read
p, nurse, ward/board, write

p, contractor, ward/notes, read, allow, label.audience=external
p, contractor, ward/notes, write, allow, label.audience=external
p, contractor, ward/notes, update, allow, label.audience=external

p, reviewer, ward/**, approve

p, senior_reviewer, ward/**, approve
p, senior_reviewer, ward/**, read, allow, writer_role=physician

p, officer, ward/pat/p1, erase
p, officer, ward/notes, erase
p, officer, ward/**, read

p, eraser, ward/**, erase

p, ingest, ward/pat/*, write
p, ingest, ward/pat/*, write, review, kind=rule
p, ingest, ward/feed, write
p, ingest, ward/feed, read

p, visitor, lobby, read
p, visitor, lobby, write
p, visitor, lobby, update
p, visitor, lobby, forget

p, auditor, ward/**, read
p, auditor, ward/**, history
p, auditor, lobby, read

ttl, ward/feed, *, 1h
ttl, ward/notes, event, 10m
cap, ward/board, 3
"""

#: Who acts, and the source its session is bound to.
PRINCIPALS = {"alice": "user", "bob": "user", "carl": "user", "rita": "user", "rex": "user", "dana": "user",
              "dpo": "user", "feed": "tool", "mal": "user", "omni": "user"}
NAMESPACES = [("ward", "pat", "p1"), ("ward", "pat", "p2"), ("ward", "notes"), ("ward", "feed"),
              ("ward", "board"), ("lobby",), ("ward", "admin")]
PREFIXES = [(), ("ward",), ("ward", "pat"), ("ward", "pat", "p1"), ("ward", "notes"), ("ward", "feed"),
            ("ward", "board"), ("lobby",), ("ward", "admin")]
CONTENTS = ["p1 is allergic to penicillin", "p1 takes drug A daily", "p2 has diabetes", "p2 is HIV positive",
            "shift change at seven", "always double check doses", "meeting at noon", "lobby open late",
            # the same texts as tombstones see them (case and spacing do not count)
            "P1 is  allergic to PENICILLIN", "p2 IS hiv positive"]
KINDS = ["fact", "event", "rule"]
SUBJECTS = [(), ("p1",), ("p2",), ("p1", "p2")]
LABELS = [{}, {"sens": "restricted"}, {"audience": "external"}, {"sens": "restricted", "audience": "external"}]
KEYS = ["k1", "k2", "k3"]
TTLS = [None, None, 60, 3600]
TICKS = [1, 30, 600, 3601, 86401]
#: Search queries: None lists; with k above the store's size a query search returns every seen
#: record too (ranking is not part of the model, so only the sets are compared).
QUERIES = [None, None, None, "penicillin allergy", "HIV"]
START = datetime(2031, 1, 1, tzinfo=timezone.utc)
QUORUM, REVIEW_TIMEOUT = 2, 86400.0


class Chooser(Protocol):
    """Where a generator's choices come from (random.Random, or hypothesis' data.draw)."""

    def choice(self, options: Sequence[Any]) -> Any: ...

    def chance(self, p: float) -> bool: ...


@dataclass(frozen=True)
class Step:
    """One operation by one principal, with concrete arguments."""

    op: str
    principal: str
    args: dict[str, Any] = field(default_factory=dict)

    def text(self) -> str:
        """The step as a line of a reproducer."""
        args = ", ".join(f"{k}={v!r}" for k, v in self.args.items())
        return f"{self.principal}.{self.op}({args})"


# -- generating steps ----------------------------------------------------------------------

@dataclass(frozen=True)
class Pool:
    """The ids a run can aim at: every id it has seen (hidden, erased or visible alike), and
    those awaiting review in the model now (so that votes, re-votes and overwrites of records
    under review are frequent, not lucky)."""

    known: Sequence[str] = ()
    pending: Sequence[str] = ()


def _ids(c: Chooser, pool: Pool) -> str:
    """An id to aim at: a known or pending one, or a guess computed the way memwarden computes
    ids (so it may name a record that exists but is hidden)."""
    known = pool.known
    how = c.choice(["known"] * 5 + ["pending", "pending", "guess", "guess", "keyed", "version", "random"])
    if how == "pending" and pool.pending:
        return c.choice(pool.pending)
    if how in ("known", "pending") and known:
        return c.choice(known)
    if how == "keyed":
        return keyed_id(c.choice(NAMESPACES), c.choice(KEYS))
    if how == "version" and known:
        return record_id(c.choice(list(PRINCIPALS)), c.choice(NAMESPACES), c.choice(CONTENTS),
                         supersedes=c.choice(known))
    if how == "random":
        return "mem_" + hashlib.sha256(c.choice(CONTENTS).encode() + b"x").hexdigest()[:32]
    return record_id(c.choice(list(PRINCIPALS)), c.choice(NAMESPACES), c.choice(CONTENTS))


def _write_args(c: Chooser, pool: Pool, keyed: bool) -> dict[str, Any]:
    args: dict[str, Any] = {"content": c.choice(CONTENTS), "namespace": c.choice(NAMESPACES),
                            "kind": c.choice(KINDS), "subjects": c.choice(SUBJECTS), "labels": c.choice(LABELS),
                            "ttl": c.choice(TTLS)}
    if keyed:
        args["key"] = c.choice(KEYS)
    if c.chance(0.15):
        args["parents"] = (_ids(c, pool),)
    if c.chance(0.1):
        args["allow_reingest"] = True
    return args


def generate(op: str, c: Chooser, pool: Pool) -> Step:
    """A step of kind ``op`` by a chosen principal, aiming at ids from ``pool``."""
    who = c.choice(list(PRINCIPALS))
    if op in ("write", "put"):
        return Step(op, who, _write_args(c, pool, op == "put"))
    if op == "update":
        args = {"id": _ids(c, pool), "content": c.choice(CONTENTS)}
        if c.chance(0.4):
            args["labels"] = c.choice(LABELS)
        if c.chance(0.2):
            args["kind"] = c.choice(KINDS)
        return Step(op, who, args)
    if op in ("get", "forget", "retract", "approve", "reject", "history"):
        return Step(op, who, {"id": _ids(c, pool)})
    if op == "search":
        return Step(op, who, {"prefix": c.choice(PREFIXES), "query": c.choice(QUERIES)})
    if op == "list":
        return Step(op, who, {"prefix": c.choice(PREFIXES)})
    if op == "batch":
        parts = []
        for _ in range(c.choice([2, 3])):
            kind = c.choice(["write", "write", "put", "update"])
            parts.append((kind, generate(kind, c, pool).args))
        return Step(op, who, {"ops": tuple(parts)})
    if op == "erase_subject":
        return Step(op, who, {"subject": c.choice(["p1", "p2"])})
    if op == "erase_ids":
        return Step(op, who, {"ids": tuple(dict.fromkeys(_ids(c, pool) for _ in range(c.choice([1, 1, 2, 3]))))})
    if op == "tick":
        return Step(op, "clock", {"seconds": c.choice(TICKS)})
    raise ValueError(f"unknown op {op!r}")


#: Operation kinds with their weight in a random run.
OPS = {"write": 6, "put": 5, "update": 3, "get": 4, "search": 3, "list": 1, "forget": 2, "retract": 1,
       "approve": 3, "reject": 1, "history": 2, "erase_subject": 1, "erase_ids": 1, "batch": 1,
       "tick": 1}


# -- the clock -----------------------------------------------------------------------------

@contextmanager
def patched_clock(clock: Clock) -> Iterator[None]:
    """Make every memwarden module that reads ``utcnow`` read ``clock`` instead."""
    original = mw_records.utcnow
    patched = [m for name, m in list(sys.modules.items())
               if name.startswith("memwarden") and getattr(m, "utcnow", None) is original]
    for module in patched:
        module.utcnow = clock
    try:
        yield
    finally:
        for module in patched:
            module.utcnow = original


# -- observing both sides ------------------------------------------------------------------

FIELDS = ("id", "namespace", "content", "kind", "subjects", "writer", "writer_roles", "source", "parents",
          "created_at", "expires_at", "status", "version", "supersedes", "labels", "key", "approvals", "rejections")


def _plain(value: Any) -> Any:
    value = getattr(value, "value", value)
    if isinstance(value, (tuple, list)):
        return tuple(value)
    if isinstance(value, dict):
        return dict(sorted(value.items()))
    return value


def record_view(rec: Any) -> dict[str, Any]:
    """The observable fields of a record of either side."""
    return {f: _plain(getattr(rec, f)) for f in FIELDS}


def _sha(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()


def view(op: str, value: Any) -> Any:
    """An operation's result as plain, comparable data."""
    if value is None:
        return None
    if op in ("write", "put", "update", "get"):
        return record_view(value)
    if op == "batch":
        return [record_view(r) for r in value]
    if op == "search":
        return {(h.record if isinstance(h, SearchHit) else h).id: record_view(h.record if isinstance(h, SearchHit) else h)
                for h in value}
    if op == "history":
        return [record_view(r) for r in value]
    if op in ("approve", "reject"):
        shown = value if isinstance(value, MemoryRecord) else getattr(value, "record", None)
        return {"id": value.id, "status": _plain(value.status), "approvals": tuple(value.approvals),
                "rejections": tuple(value.rejections), "record": record_view(shown) if shown is not None else None}
    if op in ("erase_subject", "erase_ids"):
        hashes = value.erased_ids_sha256 if isinstance(value, ErasureReceipt) else tuple(_sha(i) for i in value.erased_ids)
        return {"subject": value.subject, "requested_ids": tuple(value.requested_ids), "erased": tuple(sorted(hashes)),
                "count": value.count, "cascaded": value.cascaded, "held": getattr(value, "held", None),
                "actor": value.actor}
    if op == "retract":
        return tuple(sorted(value))
    if op == "list":
        return [tuple(ns) for ns in value]
    return value


def observe(op: str, call: Callable[[], Any]) -> tuple:
    """("ok", view) or ("raise", type name, message); anything unexpected is a crash."""
    try:
        return ("ok", view(op, call()))
    except MemwardenError as exc:
        return ("raise", type(exc).__name__, str(exc))
    except Exception as exc:  # noqa: BLE001 - a crash is a finding, not a harness failure
        return ("crash", type(exc).__name__, str(exc)[:300])


def difference(op: str, real: tuple, expected: tuple) -> str | None:
    """The kind of the first difference between the two outcomes, or None when they agree."""
    if real == expected:
        return None
    if real[0] == "crash":
        return f"crash {real[1]}"
    if real[0] != expected[0]:
        return f"raises {real[1]}, model returns" if real[0] == "raise" else f"returns, model raises {expected[1]}"
    if real[0] == "raise":
        return f"raises {real[1]}, model raises {expected[1]}" if real[1] != expected[1] else f"message of {real[1]}"
    got, want = real[1], expected[1]
    if op == "search":
        if set(got) - set(want):
            return "extra records (shown, model hides)"
        if set(want) - set(got):
            return "missing records (hidden, model shows)"
        return next(f"field {f}" for i in want for f in FIELDS if got[i][f] != want[i][f])
    if op in ("history", "batch"):
        if op == "batch" and len(got) != len(want):
            return "result"
        if [r["id"] for r in got] != [r["id"] for r in want]:
            extra = {r["id"] for r in got} - {r["id"] for r in want}
            return "extra versions" if extra else "missing or reordered versions"
        return next(f"field {f}" for g, w in zip(got, want) for f in FIELDS if g[f] != w[f])
    if isinstance(want, dict) and isinstance(got, dict):
        if op in ("get", "write", "put", "update"):
            return next(f"field {f}" for f in FIELDS if got[f] != want[f])
        key = next(k for k in want if got.get(k) != want.get(k))
        if key == "record" and (got["record"] is None) != (want["record"] is None):
            return "record shown, model hides it" if want["record"] is None else "record hidden, model shows it"
        return f"field {key}" if op in ("approve", "reject") else f"receipt {key}"
    if got is None or want is None:
        return "returns a record, model None" if want is None else "returns None, model a record"
    return "result"


# -- the two sides ---------------------------------------------------------------------------

class RecordingEmbedding(HashingEmbedding):
    """The offline test embedding, noting every document text it is given (queries aside):
    a text that reaches the embedder has left the process with a hosted embedding API."""

    def __init__(self) -> None:
        super().__init__()
        self.documents: list[str] = []

    def embed_documents_array(self, texts: Sequence[str]) -> Any:
        self.documents.extend(texts)
        return super().embed_documents_array(texts)

    def embed_query(self, text: str) -> list[float]:
        return HashingEmbedding.embed_documents_array(self, [text])[0].tolist()


@dataclass
class Disagreement:
    """What one step produced on each side."""

    step: Step
    kind: str
    real: tuple
    expected: tuple

    @property
    def cls(self) -> str:
        """The class: operation x kind of difference."""
        return f"{self.step.op}: {self.kind}"


def _missing_id(rid: str) -> str:
    """An id no record has, of the same shape as ``rid``."""
    return "mem_" + _sha("never written " + rid)[:32]


class Harness:
    """A fresh Memory (embedded Chroma in a temporary directory) and a fresh model side by side."""

    ID_OPS = ("get", "update", "forget", "retract", "approve", "reject", "history")

    def __init__(self, root: str | Path | None = None) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="refmodel-", dir=root))
        (self.dir / "policy.csv").write_text(POLICY, encoding="utf-8")
        self.clock = Clock(START)
        self.embedder = RecordingEmbedding()
        self._clock = patched_clock(self.clock)
        self._clock.__enter__()
        self.memory = Memory.open(self.dir / "data", policy=self.dir / "policy.csv", embedding=self.embedder,
                                  validators=[], lessons=False, quorum=QUORUM, review_timeout=REVIEW_TIMEOUT)
        self.model = Model(POLICY, self.clock, quorum=QUORUM, review_timeout=REVIEW_TIMEOUT)
        # The sessions bind their source where memwarden supports it; on older code the
        # source is declared on each write instead.
        self._binds = "source" in inspect.signature(Memory.session).parameters
        self.sessions = {p: (self.memory.session(Principal(p), source=s) if self._binds
                             else self.memory.session(Principal(p))) for p, s in PRINCIPALS.items()}
        self.known: list[str] = []
        self.steps = 0

    def pool(self) -> Pool:
        """What the next step may aim at."""
        return Pool(tuple(self.known), tuple(sorted(r.id for r in self.model.records.values()
                                                    if r.status == "quarantined")))

    def close(self) -> None:
        """Close the memory, restore the clock, remove the directory."""
        try:
            self.memory.close()
        finally:
            self._clock.__exit__(None, None, None)
            shutil.rmtree(self.dir, ignore_errors=True)

    def _real(self, step: Step) -> Callable[[], Any]:
        s, a = self.sessions.get(step.principal), dict(step.args)
        if step.op in ("write", "put"):
            content, namespace = a.pop("content"), a.pop("namespace")
            if not self._binds:
                a["source"] = PRINCIPALS[step.principal]
            return lambda: s.write(content, namespace, **a)
        if step.op == "update":
            rid = a.pop("id")
            return lambda: s.update(rid, a.pop("content"), **a)
        if step.op == "list":
            return lambda: s.list_namespaces(a["prefix"], limit=1000)
        if step.op == "search":
            return lambda: s.search(a["query"], a["prefix"], k=1000)
        if step.op == "batch":
            return lambda: s.batch([self._op(step.principal, kind, args) for kind, args in a["ops"]])
        if step.op == "erase_subject":
            return lambda: s.erase(subject=a["subject"])
        if step.op == "erase_ids":
            return lambda: s.erase(ids=list(a["ids"]))
        return lambda: getattr(s, step.op)(a["id"])

    def _op(self, principal: str, kind: str, args: dict[str, Any]) -> WriteOp | UpdateOp:
        """One operation of a batch, as memwarden's op value."""
        if kind == "update":
            return UpdateOp(**args)
        source = {} if self._binds else {"source": PRINCIPALS[principal]}
        return WriteOp(**args, **source)

    def _expected(self, step: Step) -> Callable[[], Any]:
        m, who, a = self.model, step.principal, dict(step.args)
        source = PRINCIPALS.get(who, "user")
        if step.op in ("write", "put"):
            return lambda: m.write(who, source, a.pop("namespace"), a.pop("content"), **a)
        if step.op == "update":
            return lambda: m.update(who, source, a.pop("id"), a.pop("content"), **a)
        if step.op == "search":
            return lambda: m.search(who, a["prefix"])
        if step.op == "batch":
            return lambda: self._model_batch(who, source, a["ops"])
        if step.op == "list":
            return lambda: m.list_namespaces(who, a["prefix"])
        if step.op in ("approve", "reject"):
            return lambda: m.review(who, a["id"], step.op == "approve")
        if step.op == "erase_subject":
            return lambda: m.erase(who, subject=a["subject"])
        if step.op == "erase_ids":
            return lambda: m.erase(who, ids=a["ids"])
        return lambda: getattr(m, step.op)(who, a["id"])

    def _model_batch(self, who: str, source: str, ops: Sequence[tuple[str, dict[str, Any]]]) -> list[Rec]:
        """A batch is its operations in order; the first failure raises, the ones before it
        have taken effect."""
        results = []
        for kind, args in ops:
            args = dict(args)
            call = self._expected(Step(kind, who, args))
            results.append(call())
            self._completed.append(results[-1].content)
        return results

    def run(self, step: Step) -> Disagreement | None:
        """Run one step on both sides; the first difference, if any."""
        self.steps += 1
        if step.op == "tick":
            self.clock.advance(step.args["seconds"])
            return None
        self.embedder.documents.clear()
        self._completed: list[str] = []
        real = observe(step.op, self._real(step))
        expected = observe(step.op, self._expected(step))
        if expected[0] == "ok" and step.op in ("write", "put", "update"):
            self._completed.append(expected[1]["content"])
        for outcome in (real, expected):
            if outcome[0] == "ok" and step.op in ("write", "put", "update", "batch"):
                made = outcome[1] if step.op == "batch" else [outcome[1]]
                self.known.extend(r["id"] for r in made if r["id"] not in self.known)
        kind = difference(step.op, real, expected)
        if kind is None and set(self.embedder.documents) - set(self._completed):
            kind = "a text the model refuses reached the embedder"
        if kind is None and step.op in self.ID_OPS:
            kind = self._oracle(step, real, expected)
        return Disagreement(step, kind, real, expected) if kind else None

    def _oracle(self, step: Step, real: tuple, expected: tuple) -> str | None:
        """Where the model gives the missing answer, memwarden must answer exactly as it does for
        an id that was never written (result, exception type and message, the id aside)."""
        rid, fake = step.args["id"], _missing_id(step.args["id"])
        probe = Step(step.op, step.principal, {**step.args, "id": fake})
        if observe(step.op, self._expected(probe)) != _swap(expected, rid, fake):
            return None  # the model answers this id differently from a missing one: it is known
        if observe(step.op, self._real(probe)) != _swap(real, rid, fake):
            return "hidden and missing ids answered differently"
        return None


def _swap(outcome: tuple, rid: str, fake: str) -> tuple:
    return tuple(part.replace(rid, fake) if isinstance(part, str) else part for part in outcome)
