"""The differential harness: one step (tests/model_steps.py), run on a real memwarden Memory
and on the reference model (tests/reference_model.py), and every observable output compared:
results, exceptions (type and message), receipts, versions; where the model gives the missing
answer, memwarden's answer must equal its own answer for an id never written; and no text the
model refuses may reach the embedder.

Shared by the stateful property test (tests/test_reference_model.py) and the long run
(benchmarks/reference_model.py).
"""

from __future__ import annotations

import hashlib
import shutil
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memwarden import ErasureReceipt, Memory, MemoryRecord, MemwardenError, Principal, SearchHit, UpdateOp, WriteOp
from memwarden.memory.embeddings import HashingEmbedding

from tests.model_steps import POLICY, PRINCIPALS, QUORUM, REVIEW_TIMEOUT, START, Pool, Step
from tests.clock import Clock, patched_clock
from tests.reference_model import Model, Rec

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
                "rejections": tuple(value.rejections), "quorum": getattr(value, "quorum", None),
                "record": record_view(shown) if shown is not None else None}
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
        if real[0] == "raise":
            return f"raises {real[1]}, model returns"
        return f"returns{'' if real[1] else ' (empty)'}, model raises {expected[1]}"
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
        # Each session is bound to its principal's source; a write may still declare another.
        self.sessions = {p: self.memory.session(Principal(p), source=s) for p, s in PRINCIPALS.items()}
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
            return lambda: s.write(content, namespace, **a)
        if step.op == "update":
            rid = a.pop("id")
            return lambda: s.update(rid, a.pop("content"), **a)
        if step.op == "list":
            return lambda: s.list_namespaces(a["prefix"], limit=1000)
        if step.op == "search":
            return lambda: s.search(a["query"], a["prefix"], k=1000)
        if step.op == "batch":
            return lambda: s.batch([self._op(kind, args) for kind, args in a["ops"]])
        if step.op == "erase_subject":
            return lambda: s.erase(subject=a["subject"])
        if step.op == "erase_ids":
            return lambda: s.erase(ids=list(a["ids"]))
        return lambda: getattr(s, step.op)(a["id"])

    @staticmethod
    def _op(kind: str, args: dict[str, Any]) -> WriteOp | UpdateOp:
        """One operation of a batch, as memwarden's op value."""
        return UpdateOp(**args) if kind == "update" else WriteOp(**args)

    def _expected(self, step: Step) -> Callable[[], Any]:
        m, who, a = self.model, step.principal, dict(step.args)
        source = PRINCIPALS.get(who, "user")
        if step.op in ("write", "put"):
            declared = a.pop("source", None)
            return lambda: m.write(who, source, a.pop("namespace"), a.pop("content"), source_declared=declared, **a)
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
