"""``Memory``: the one governed path from a principal's operation to the store.

Every operation, whatever its kind, runs through :meth:`Memory.batch` and then ``_run``:

    span start -> canonicalise + validate -> policy decision (deny by default)
    -> guards for the op kind -> backend, with the policy pushed down as a filter
    -> re-check of every result -> audit entry -> span end

The backend is private to this class; nothing else in memwarden holds it, so there is no
second way to reach stored records.
"""

from __future__ import annotations

import logging
import threading
import time
from datetime import datetime, timedelta
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from memwarden.errors import AccessDenied, InvalidRequest, MemwardenError, NotFound, WriteRejected
from memwarden.guards.contradiction import content_words, find_contradiction
from memwarden.guards.lessons import DEFAULT_KEY, LessonValidator, lesson_content
from memwarden.guards.validators import Outcome, ValidationContext, ValidatorChain, Verdict, WriteValidator, strongest
from memwarden.guards.visibility import hidden_filter, is_visible, visible_filter, visible_metadata
from memwarden.integrations.metrics import record_operation
from memwarden.integrations.tracing import SPAN_NAMES, annotate, operation_span
from memwarden.guards.forgetting import eviction_order, forget_at
from memwarden.memory import compaction
from memwarden.memory.audit import AuditLog, open_audit
from memwarden.memory.caches import INDEXED_KINDS, LessonCache, SubjectIndex
from memwarden.memory.tombstones import Tombstones, tombstone_mark
from memwarden.memory.backends import Backend, StoredRow
from memwarden.memory.coalesce import CoalescingBackend
from memwarden.memory.codec import from_row, to_metadata
from memwarden.memory.partitioned import PartitionedBackend, check_breadth, check_depth
from memwarden.memory.embeddings import as_embedder, embed_many, embed_one
from memwarden.memory.lexical import INDEX_FILE, IndexedBackend
from memwarden.memory.retrieval import SUPERSEDED_WEIGHT, compose, fuse, in_time, time_filter
from memwarden.memory.ops import (
    POLICY_ACTION, EraseOp, ForgetOp, GetOp, HistoryOp, ListNamespacesOp, Op, RetractOp, ReviewOp, SearchOp,
    SweepOp, UpdateOp, WriteOp, op_namespace,
)
from memwarden.memory.records import (
    ErasureReceipt, Kind, MemoryRecord, Principal, SearchHit, Status, hashed, keyed_id, record_id, utcnow,
)
from memwarden.policies.conditions import RecordAttributes
from memwarden.policies.engine import Decision, PolicyEngine, ReadScope
from memwarden.policies.namespace import Namespace, namespace_text
from memwarden.policies.sources import open_policy
from memwarden.policies.partitions import Coverage, Target, plan
from memwarden.policies.pushdown import all_of, any_of, scope_filter
from memwarden.policies.subjects import NO_SUBJECTS, Subjects

# Largest number of ids in one provenance look-up (Chroma's filter depth limit is 1,000).
_LINK_CHUNK = 400
# Lessons are consulted on every write; a bound keeps that cost flat as they accumulate.
_MAX_LESSONS = 500
# Operations that change nothing: their audit entries are committed without waiting for the
# disk (see AuditLog.append); every other entry is flushed before the operation goes on.
_READS = frozenset({"search", "get", "list", "history"})
# Candidates a search with a token budget composes from (each leg fetches this many).
_POOL = 20

# The core's own principal. It writes lesson records and nothing else, and no session can
# act as it: only this object (not another Principal with the same id) is the core.
CORE = Principal("memwarden")
LESSONS_NAMESPACE: Namespace = ("memwarden", "lessons")
_log = logging.getLogger("memwarden")

if TYPE_CHECKING:
    from memwarden.integrations.store import GovernedStore
    from memwarden.memory.session import Session


@dataclass
class _Facts:
    """What one operation did, gathered as it runs; becomes its span attributes and audit entry."""

    op: str
    principal: Principal
    subjects: Subjects = NO_SUBJECTS
    namespace: Namespace | None = None
    decision: str | None = None
    rules: list[str] = field(default_factory=list)
    verdicts: Sequence[Verdict] = ()
    record_ids: list[str] = field(default_factory=list)
    returned: int | None = None
    withheld: int | None = None
    rechecked_out: int = 0
    replay: bool = False
    outcome: str = "error"
    error: str | None = None
    audited: bool = False
    audit_seq: int | None = None
    search_mode: str | None = None
    candidates: dict[str, int] = field(default_factory=dict)
    note: str | None = None
    # Operations of the core that this one causes (lessons), run once it is audited.
    follow_ups: list[Callable[[], None]] = field(default_factory=list)

    def decided(self, decision: Decision) -> Decision:
        self.decision = "allow" if decision.allowed else "deny"
        self.rules.append(decision.rule_text)
        return decision

    def audit_entry(self) -> dict[str, Any]:
        return {
            "op": self.op,
            "principal": self.principal.id,
            "roles": sorted(self.subjects.roles),
            "action": POLICY_ACTION[self.op],
            "namespace": namespace_text(self.namespace) if self.namespace is not None else None,
            "decision": self.decision,
            "rules": list(dict.fromkeys(self.rules)),
            "verdicts": [v.text for v in self.verdicts],
            "records": self.record_ids,
            "returned": self.returned,
            "withheld": self.withheld,
            "replay": self.replay,
            "outcome": self.outcome,
            "error": self.error,
        }

    def span_attributes(self) -> dict[str, Any]:
        return {
            "gen_ai.operation.name": SPAN_NAMES[self.op],
            "memwarden.operation": self.op,
            "memwarden.principal": self.principal.id,
            "memwarden.roles": sorted(self.subjects.roles),
            "memwarden.action": POLICY_ACTION[self.op],
            "memwarden.namespace": namespace_text(self.namespace) if self.namespace is not None else None,
            "memwarden.decision": self.decision,
            "memwarden.rule": "; ".join(dict.fromkeys(self.rules)) or None,
            "memwarden.verdicts": [v.text for v in self.verdicts],
            "memwarden.record_ids": self.record_ids,
            "memwarden.records.returned": self.returned,
            "memwarden.records.withheld": self.withheld,
            "memwarden.records.rechecked_out": self.rechecked_out,
            "memwarden.replay": self.replay,
            "memwarden.outcome": self.outcome,
            "memwarden.audit.seq": self.audit_seq,
            "memwarden.search.mode": self.search_mode,
            "memwarden.search.candidates.dense": self.candidates.get("dense"),
            "memwarden.search.candidates.lexical": self.candidates.get("lexical"),
            "memwarden.search.note": self.note,
        }


def _not_core(principal: object) -> None:
    if principal is CORE:
        raise InvalidRequest("the core principal acts only inside memwarden")


def _chain(validators: Iterable[WriteValidator] | None) -> Iterable[WriteValidator]:
    """The validators a Memory opens with: the default chain unless the caller chose one."""
    if validators is None:
        from memwarden.guards.defaults import default_validators

        return default_validators()
    return validators


@dataclass(frozen=True, slots=True)
class Settings:
    """Tunables of a Memory, passed as keyword arguments to ``Memory.open``.

    ``count_withheld``: count, for every search, the records under the searched prefix that
    policy hid (two small id-only queries per partition the caller may not read, and one per
    partition it may read in part; off by default).
    ``quorum``: distinct approvers (never the writer) needed to release a quarantined write,
    and distinct rejections that reject it. With n = 3f + 1 voters, a quorum of 2f + 1
    means f colluders can never release a write alone.
    ``review_timeout``: seconds a quarantined write waits for its quorum; after that it is
    rejected (fail closed).
    ``lessons``: the core writes a lesson record (see :mod:`memwarden.guards.lessons`) when
    validators reject a write, when reviewers reject a quarantined one, and when a record is
    retracted as poisoned.
    ``cache_ttl``: seconds after which the lesson and subject caches of the write path are
    read again from the store (None: never, right for an embedded store only this process
    writes; ``Memory.connect`` uses 30, since other processes may write to the server).
    ``partition_depth``: how many leading namespace labels choose a record's partition (one
    Chroma collection each) in a new store; None keeps an existing store's depth, or 2 for a
    new one (docs/performance.md). ``repartition``: migrate an existing store to
    ``partition_depth`` instead of refusing to open it at another depth.
    ``search_threads``: partitions queried side by side by one search.
    ``search_breadth``: how many candidates Chroma's HNSW index weighs per partition query
    (its ``ef_search``; None: Chroma's default, 100). Wider finds more of the true nearest
    rows and costs time (docs/performance.md); it applies to new partitions at once and to
    existing ones from the next time a process loads them.
    """

    count_withheld: bool = False
    quorum: int = 2
    review_timeout: float = 7 * 86400.0
    lessons: bool = True
    cache_ttl: float | None = None
    partition_depth: int | None = None
    repartition: bool = False
    search_threads: int = 4
    search_breadth: int | None = None

    def __post_init__(self) -> None:
        if isinstance(self.quorum, bool) or not isinstance(self.quorum, int) or self.quorum < 1:
            raise InvalidRequest(f"quorum must be a positive integer, got {self.quorum!r}")
        if not isinstance(self.review_timeout, (int, float)) or not self.review_timeout > 0:
            raise InvalidRequest(f"review_timeout must be a positive number of seconds, got {self.review_timeout!r}")
        if self.cache_ttl is not None and (not isinstance(self.cache_ttl, (int, float)) or not self.cache_ttl > 0):
            raise InvalidRequest(f"cache_ttl must be a positive number of seconds or None, got {self.cache_ttl!r}")
        if not isinstance(self.lessons, bool):
            raise InvalidRequest(f"lessons must be True or False, got {self.lessons!r}")
        if isinstance(self.search_threads, bool) or not isinstance(self.search_threads, int) or self.search_threads < 1:
            raise InvalidRequest(f"search_threads must be a positive integer, got {self.search_threads!r}")
        check_breadth(self.search_breadth)
        check_depth(self.partition_depth)
        if not isinstance(self.repartition, bool):
            raise InvalidRequest(f"repartition must be True or False, got {self.repartition!r}")

    def backend_options(self) -> dict[str, Any]:
        """The options a :class:`PartitionedBackend` takes from these settings."""
        return {"depth": self.partition_depth, "repartition": self.repartition, "workers": self.search_threads,
                "breadth": self.search_breadth}


class Memory:
    """A governed, shared memory: policy, guards, audit and tracing around a Chroma store."""

    def __init__(self, backend: Backend, policy: PolicyEngine, audit: AuditLog, tombstones: Tombstones, *,
                 embedding: object | None = None, validators: Iterable[WriteValidator] = (),
                 settings: Settings = Settings()) -> None:
        # Upserts made inside one batch reach the store as one call (see coalesce.py).
        self._backend = CoalescingBackend(backend)
        self._policy = policy
        self._audit = audit
        self._tombstones = tombstones
        self._embedder = as_embedder(embedding)
        self._validators = ValidatorChain(validators)
        self._settings = settings
        # Lessons are hashed with the key of the chain's lesson validator, so that it can read them.
        self._lesson_key = next((v.key for v in self._validators.validators if isinstance(v, LessonValidator)),
                                DEFAULT_KEY)
        self._lesson_cache = LessonCache(self._load_lessons, limit=_MAX_LESSONS, ttl=settings.cache_ttl)
        self._subject_index = SubjectIndex(self._load_subject, ttl=settings.cache_ttl)
        # Writes check-then-store (idempotence, supersession); one lock keeps that atomic.
        self._write_lock = threading.RLock()
        self._closed = False
        # What open/connect opened beside the parts above (a database policy's connections).
        self._on_close: list[Callable[[], None]] = []
        self._handlers: dict[str, Callable[[Any, _Facts, dict[str, np.ndarray]], Any]] = {
            "write": self._write, "search": self._search, "list": self._list, "get": self._get,
            "update": self._update, "forget": self._forget, "erase": self._erase, "review": self._review,
            "retract": self._retract, "history": self._history, "sweep": self._sweep,
        }

    # -- construction -------------------------------------------------------------------

    @classmethod
    def open(cls, path: str | Path, policy: str | Path | PolicyEngine | None = None, *,
             audit: str | Path | None = None, embedding: object | None = None,
             validators: Iterable[WriteValidator] | None = None, **settings: Any) -> Memory:
        """Open (or create) an embedded memory in directory ``path``.

        ``policy`` is a CSV policy file, the name of a bundled policy ("hospital", "office",
        "household"), a database URL (``sqlite:///policy.db``, ``postgresql://...``: see
        docs/deployment.md), a ready PolicyEngine, or None (no rules: everything is denied).
        ``audit`` is None (``audit.sqlite3`` in ``path``), another SQLite file, or a
        ``postgresql://`` URL. ``embedding`` is any LangChain ``Embeddings``; None uses the
        bundled offline MiniLM. ``validators``: the write-validator chain; None (the default)
        is :func:`~memwarden.guards.defaults.default_validators` (injection, provenance,
        lessons, contradiction), ``[]`` turns write validation off.
        Further keyword arguments are :class:`Settings`.
        """
        root = Path(path)
        if root.exists() and not root.is_dir():
            raise InvalidRequest(f"memory path {str(root)!r} exists and is not a directory")
        root.mkdir(parents=True, exist_ok=True)

        def backend(options: Settings) -> Backend:
            if compaction.pending(root / "chroma"):
                compaction.recover(root / "chroma")  # finish an erasure a crash interrupted
            # The lexical index is repaired against Chroma before first use (see memory/lexical.py).
            chroma = PartitionedBackend.embedded(str(root / "chroma"), **options.backend_options())
            return IndexedBackend.open(chroma, root / INDEX_FILE)

        return cls._assemble(root, backend, policy, audit, embedding, validators, settings)

    @classmethod
    def connect(cls, host: str, port: int, policy: str | Path | PolicyEngine | None = None, *,
                state: str | Path = "./memwarden-state", audit: str | Path | None = None, ssl: bool = False,
                headers: dict[str, str] | None = None, embedding: object | None = None,
                validators: Iterable[WriteValidator] | None = None, **settings: Any) -> Memory:
        """The same governed memory against a Chroma server (``chroma run``).

        Transient server errors are retried (tenacity); ids are deterministic, so retries
        never duplicate. ``policy`` and ``audit`` are as for :meth:`open`: database URLs let
        every process share them. Local state (tombstones, the audit key, and the audit log
        unless ``audit`` names one) lives in directory ``state``. There is no lexical index
        here (a process-local one would miss other processes' writes and keep text they
        erase), so hybrid searches run the dense leg only and say so in their span.
        """
        from memwarden.memory.remote import RetryingPartitionedBackend

        root = Path(state)
        root.mkdir(parents=True, exist_ok=True)
        def backend(options: Settings) -> Backend:
            return RetryingPartitionedBackend.connect(host, port, ssl=ssl, headers=headers, **options.backend_options())

        return cls._assemble(root, backend,
                             policy, audit, embedding, validators, {"cache_ttl": 30.0, **settings})

    @classmethod
    def _assemble(cls, state: Path, backend: Callable[[Settings], Backend], policy: str | Path | PolicyEngine | None,
                  audit: str | Path | None, embedding: object | None, validators: Iterable[WriteValidator] | None,
                  settings: dict[str, Any]) -> Memory:
        """Open the parts of a memory whose local state is ``state``; if one fails, the parts
        already opened are released before the error propagates."""
        options = Settings(**settings)
        engine, close_policy = open_policy(policy)
        opened = [close_policy]
        try:
            log = open_audit(audit, state)
            opened.append(log.close)
            tombstones = Tombstones(state / "tombstones.sqlite3")
            opened.append(tombstones.close)
            memory = cls(backend(options), engine, log, tombstones, embedding=embedding,
                         validators=_chain(validators), settings=options)
        except BaseException:
            for close in reversed(opened):
                close()
            raise
        memory._on_close.append(close_policy)
        return memory

    # -- public surface -----------------------------------------------------------------

    @property
    def policy(self) -> PolicyEngine:
        """The policy engine in force (reload it to apply policy changes)."""
        return self._policy

    @property
    def audit_log(self) -> AuditLog:
        """The hash-chained audit log of every operation."""
        return self._audit

    def session(self, principal: Principal) -> Session:
        """A session that acts as ``principal`` for every operation it makes."""
        from memwarden.memory.session import Session

        _not_core(principal)
        self._subjects_for(principal)
        return Session(self, principal)

    def batch(self, principal: Principal, ops: Iterable[Op]) -> list[Any]:
        """Run operations in order, each through the governed pipeline; results in order.

        The first operation that fails raises; the ones before it have taken effect. The
        batch's writes reach the store as one call when it ends (every operation in it still
        sees the writes before it; see coalesce.py), so batching many writes is much cheaper.
        """
        if self._closed:
            raise InvalidRequest("this Memory is closed")
        _not_core(principal)
        ops = list(ops)
        vectors = self._prefetch_vectors(ops)
        with self._backend.holding():
            return [self._run(principal, op, vectors) for op in ops]

    def as_store(self) -> GovernedStore:
        """This memory as a LangGraph ``BaseStore`` for ``graph.compile(store=...)``."""
        from memwarden.integrations.store import GovernedStore

        return GovernedStore(self)

    def close(self) -> None:
        """Release the store and the audit log; the Memory cannot be used afterwards."""
        if not self._closed:
            self._closed = True
            self._backend.close()
            self._audit.close()
            self._tombstones.close()
            for close in self._on_close:
                close()

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- the pipeline -------------------------------------------------------------------

    def _prefetch_vectors(self, ops: list[Op]) -> dict[str, np.ndarray]:
        # Embedding is pure computation; doing all of a batch's texts at once is several
        # times faster, and a vector for a write that is later denied is simply dropped.
        texts = list(dict.fromkeys(
            op.content for op in ops
            if isinstance(op, (WriteOp, UpdateOp)) and isinstance(op.content, str) and op.content.strip()
        ))
        if len(texts) < 2:
            return {}
        return dict(zip(texts, embed_many(self._embedder, texts)))

    def _vector(self, text: str, vectors: dict[str, np.ndarray]) -> np.ndarray:
        vec = vectors.get(text)
        return vec if vec is not None else embed_one(self._embedder, text)

    def _subjects_for(self, principal: Principal) -> Subjects:
        if principal is CORE:
            return Subjects(CORE.id, frozenset())  # outside the policy: see _core_decision
        if not isinstance(principal, Principal):
            raise InvalidRequest(f"principal must be a memwarden Principal, got {type(principal).__name__}")
        self._policy.require_known(principal.id, principal.roles)
        return self._policy.subjects(principal.id, principal.roles)

    def _run(self, principal: Principal, op: Op, vectors: dict[str, np.ndarray]) -> Any:
        action = getattr(op, "action", None)
        if action not in self._handlers:
            raise InvalidRequest(f"not a memwarden operation: {type(op).__name__}")
        facts = _Facts(action, principal if isinstance(principal, Principal) else Principal("invalid"))
        try:
            return self._run_one(principal, op, facts, vectors)
        finally:
            for follow_up in facts.follow_ups:
                follow_up()

    def _run_one(self, principal: Principal, op: Op, facts: _Facts, vectors: dict[str, np.ndarray]) -> Any:
        action, started, result = facts.op, time.perf_counter(), None
        with operation_span(action, op) as span:
            try:
                facts.subjects = self._subjects_for(principal)
                op = op.canonical()
                facts.namespace = op_namespace(op)
                result = self._handlers[action](op, facts, vectors)
                facts.outcome = "ok"
                return result
            except MemwardenError as exc:
                facts.outcome = {AccessDenied: "denied", WriteRejected: "rejected"}.get(type(exc), "invalid")
                facts.error = f"{type(exc).__name__}: {str(exc)[:200]}"
                raise
            except Exception as exc:
                facts.outcome, facts.error = "error", type(exc).__name__
                raise
            finally:
                if not facts.audited:
                    # Raising here replaces the result: an operation that cannot be audited
                    # does not return its data (fail closed).
                    facts.audit_seq = self._audit.append(facts.audit_entry(), flush=action not in _READS)
                annotate(span, facts.span_attributes, error=facts.outcome != "ok", op=op, result=result)
                record_operation(facts.op, facts.outcome, facts.decision, facts.verdicts,
                                 time.perf_counter() - started,
                                 records=facts.returned if facts.op == "erase" else None)

    def _commit(self, facts: _Facts, apply: Callable[[], None], changed: Sequence[MemoryRecord] = (),
                added: Sequence[MemoryRecord] = ()) -> None:
        """Audit a mutation, then apply it; a failed apply gets a second, compensating entry.

        Auditing first means a crash leaves either an audited record or an audit entry for
        a record that is absent, never a record that no entry accounts for. Upserts held
        until the end of the batch (coalesce.py) get their compensating entry if storing
        them fails then. ``changed``: the stored records the mutation removes or changes (the
        caches drop them); ``added``: the records it stores (the caches take the active ones).
        """
        facts.outcome = "ok"
        facts.audit_seq = self._audit.append(facts.audit_entry())
        facts.audited = True

        def failed(exc: BaseException) -> None:
            if facts.outcome != "error":  # once, whether apply or a later flush noticed
                facts.outcome, facts.error = "error", f"apply failed after audit: {type(exc).__name__}"
                self._audit.append(facts.audit_entry())

        try:
            with self._backend.on_failure(failed):
                apply()
        except Exception as exc:
            failed(exc)
            raise
        finally:
            # Even after a failed apply: it may have changed some of them.
            self._subject_index.discard(changed)
            if any(r.kind is Kind.LESSON for r in changed):
                self._lesson_cache.clear()
        for record in added:
            self._subject_index.add(record)
            self._lesson_cache.add(record)

    def _require(self, facts: _Facts, action: str, namespace: Namespace, attributes: RecordAttributes) -> Decision:
        """The decision for ``action`` on a record in ``namespace`` with ``attributes`` (the
        stored record, or the one being written); AccessDenied unless it allows."""
        decision = facts.decided(self._policy.decide(facts.subjects, action, namespace, attributes))
        if not decision.allowed:
            raise AccessDenied(f"{facts.principal.id!r} may not {action} in {namespace_text(namespace)!r}: "
                               f"{decision.rule_text}", rule=decision.rule.text if decision.rule else None)
        return decision

    def _require_on(self, facts: _Facts, action: str, record: MemoryRecord) -> Decision:
        """``_require`` for a record: its namespace and its attributes."""
        return self._require(facts, action, record.namespace, RecordAttributes.of(record))

    def _read_scope(self, facts: _Facts, prefix: Namespace) -> ReadScope:
        scope = self._policy.scope(facts.subjects, "read", prefix)
        if scope.empty:
            facts.decision = "deny"
            facts.rules.append("no matching rule (deny by default)")
            raise AccessDenied(f"{facts.principal.id!r} may not read anything at or below "
                               f"{namespace_text(prefix) or '(root)'!r}")
        facts.decision = "allow"
        facts.rules.extend(f"scope: {c.text}" for c in scope.allow)
        facts.rules.extend(f"scope: not {c.text}" for c in scope.deny)
        return scope

    def _fetch_one(self, rid: str, namespace: Namespace | None = None) -> MemoryRecord | None:
        """The record ``rid``; ``namespace``, when known, saves locating it (ids follow from it)."""
        within = [self._backend.partition_of(namespace)] if namespace is not None else None
        rows = self._backend.fetch(ids=[rid], partitions=within)
        return from_row(rows[0]) if rows else None

    def _allows(self, facts: _Facts, action: str, record: MemoryRecord) -> bool:
        """Whether policy lets the caller do ``action`` on this stored record (its namespace
        and its attributes); records no decision without raising."""
        return self._policy.decide(facts.subjects, action, record.namespace, RecordAttributes.of(record)).allowed

    def _may_see(self, facts: _Facts, record: MemoryRecord | None) -> bool:
        return record is not None and is_visible(record, utcnow()) and self._allows(facts, "read", record)

    def _may_find(self, facts: _Facts, record: MemoryRecord, history: ReadScope | None) -> bool:
        """What a search may return: what :meth:`_may_see` allows, and, when the search asks
        for history, superseded versions the caller may read and see the history of."""
        if record.status is Status.SUPERSEDED and history is not None:
            deadline = forget_at(record)
            return ((deadline is None or deadline > utcnow())
                    and self._policy.decide(facts.subjects, "read", record.namespace).allowed
                    and self._policy.decide(facts.subjects, "history", record.namespace).allowed)
        return self._may_see(facts, record)

    def _target(self, facts: _Facts, rid: str, *, superseded_ok: bool = False) -> MemoryRecord:
        """The record an update or forget acts on. A record the caller may not read gets the
        same error as a missing id, so a denied caller learns nothing about whether it exists."""
        record = self._fetch_one(rid)
        readable = record is not None and self._allows(facts, "read", record)
        if readable and superseded_ok and record.status is Status.SUPERSEDED:
            facts.namespace = record.namespace
            return record
        if not (readable and is_visible(record, utcnow())):
            raise NotFound(f"no record {rid!r} is visible to {facts.principal.id!r}")
        facts.namespace = record.namespace
        return record

    def _lineage(self, record: MemoryRecord) -> list[MemoryRecord]:
        """Every version of the memory ``record`` belongs to, oldest first."""
        # Every version keeps the namespace, so all of them are in one partition.
        within = [self._backend.partition_of(record.namespace)]
        chain = [record]
        while chain[0].supersedes and (older := self._fetch_one(chain[0].supersedes, record.namespace)) is not None:
            chain.insert(0, older)
        while newer := self._backend.fetch(where={"supersedes": chain[-1].id}, limit=1, partitions=within):
            chain.append(from_row(newer[0]))
        return chain

    def _related(self, facts: _Facts, record: MemoryRecord, k: int) -> list[MemoryRecord]:
        """Up to ``k`` active records sharing a subject with ``record`` that the principal of
        ``facts`` may read, those sharing the most content words with it first (only records
        that share words can contradict it). Served from the subject index, not the store."""
        if not record.subjects:
            return []
        mine = content_words(record.content)
        found: list[MemoryRecord] = []
        # Ranked first (set sizes are cheap), checked against the policy only until k are found.
        for related in sorted(self._subject_index.about(record.subjects), key=lambda r: len(r.words & mine),
                              reverse=True):
            if related.record.id != record.id and self._may_see(facts, related.record):
                found.append(related.record)
                if len(found) == k:
                    break
        return found

    def _load_subject(self, subject: str, limit: int) -> list[MemoryRecord]:
        """Up to ``limit`` visible records about ``subject`` of the kinds the index holds (in
        storage order: the index then keeps the newest as writes come in)."""
        # Only the subject is looked up in the store: it matches few rows, and Chroma's filter
        # costs by the rows a clause matches; visibility and kind, which most rows pass, are
        # tested here.
        now = utcnow().timestamp()
        rows = self._backend.about(subject, 4 * limit)
        kinds = {k.value for k in INDEXED_KINDS}
        return [from_row(row) for row in rows
                if visible_metadata(row.metadata, now) and row.metadata.get("kind") in kinds][:limit]

    def _load_lessons(self, limit: int) -> list[MemoryRecord]:
        """The newest ``limit`` active lesson records."""
        now = utcnow().timestamp()
        rows = self._backend.fetch(where={"kind": Kind.LESSON.value},
                                   partitions=[self._backend.partition_of(LESSONS_NAMESPACE)])
        return sorted((from_row(r) for r in rows if visible_metadata(r.metadata, now)),
                      key=lambda r: r.created_at, reverse=True)[:limit]

    def _validated(self, facts: _Facts, record: MemoryRecord, decision: Decision) -> MemoryRecord:
        context = ValidationContext(facts.principal, facts.subjects,
                                    related=lambda r, k: self._related(facts, r, k), lessons=self._lesson_cache.get)
        verdicts = list(self._validators.run(record, context))
        if decision.review:
            verdicts.append(Verdict(validator="policy", outcome=Outcome.QUARANTINE,
                                    reason=f"review required by {decision.rule_text}"))
        facts.verdicts = verdicts
        outcome = strongest(verdicts)
        if outcome is Outcome.REJECT:
            reasons = "; ".join(v.text for v in verdicts if v.outcome is Outcome.REJECT)
            facts.follow_ups.append(lambda: self._learn(record, verdicts, stored=False))
            raise WriteRejected(f"write rejected: {reasons}", verdicts=tuple(verdicts))
        if outcome is Outcome.QUARANTINE:
            return record.model_copy(update={"status": Status.QUARANTINED})
        return record

    def _roles(self, facts: _Facts) -> tuple[str, ...]:
        return tuple(sorted(facts.subjects.roles))

    # -- handlers, one per operation kind -----------------------------------------------

    def _write(self, op: WriteOp, facts: _Facts, vectors: dict[str, np.ndarray]) -> MemoryRecord:
        core = facts.principal is CORE
        # The condition of a write rule applies to the record as it will be stored.
        attributes = RecordAttributes(op.kind.value, op.source.value, frozenset(self._roles(facts)), op.labels)
        decision = self._core_decision(facts, op) if core else self._require(facts, "write", op.namespace, attributes)
        for parent in op.parents:
            # The core links a lesson to the rejected record, which nobody can see any more.
            if not core and not self._may_see(facts, self._fetch_one(parent)):
                raise InvalidRequest(f"parent {parent!r} is not a record visible to {facts.principal.id!r}")
        erased_subject = self._tombstones.hit(op.subjects, op.content)
        if erased_subject is not None:
            if not op.allow_reingest:
                raise WriteRejected(f"this content about subject {erased_subject!r} was erased; re-ingesting it "
                                    "needs allow_reingest=True and erase permission")
            self._require(facts, "erase", op.namespace, attributes)
        keyed = op.key is not None
        rid = keyed_id(op.namespace, op.key) if keyed else record_id(facts.principal.id, op.namespace, op.content)
        facts.record_ids = [rid]
        now = utcnow()
        lifecycle = self._policy.lifecycle(op.namespace, op.kind.value)
        ttl = op.ttl if op.ttl is not None else lifecycle.ttl
        version = 1
        with self._write_lock:
            existing = self._fetch_one(rid, op.namespace)
            if existing is not None and existing.status is not Status.FORGOTTEN:
                if not keyed:
                    facts.replay = True
                    return existing
                # Overwriting a keyed item replaces what others wrote: that is an update, and
                # like any update it must be allowed on the old record and on the new one.
                self._require_on(facts, "update", existing)
                self._require(facts, "update", op.namespace, attributes)
                version = existing.version + 1
            record = self._validated(facts, MemoryRecord(
                id=rid, namespace=op.namespace, content=op.content, kind=op.kind, subjects=op.subjects,
                writer=facts.principal.id, writer_roles=self._roles(facts), source=op.source,
                parents=op.parents, created_at=now, valid_from=op.valid_from, valid_to=op.valid_to,
                expires_at=now + timedelta(seconds=ttl) if ttl else None, trust=op.trust, labels=op.labels,
                key=op.key, version=version, half_life=lifecycle.half_life,
                last_access=now if lifecycle.half_life else None,
            ), decision)
            vector = self._vector(op.content, vectors)  # after validation: a rejected write costs no embedding
            evicted = self._evictions(record, lifecycle.capacity)
            facts.record_ids += [r.id for r in evicted]

            def apply() -> None:
                self._backend.upsert([rid], [vector], [op.content], [to_metadata(record)])
                self._set_status(evicted, Status.FORGOTTEN, {"forgotten": "evicted"})

            # A keyed item's earlier version is replaced too.
            self._commit(facts, apply, changed=evicted + ([existing] if existing is not None else []), added=[record])
        return record

    def _core_decision(self, facts: _Facts, op: WriteOp) -> Decision:
        """The core writes lessons into their reserved namespace, whatever the policy says
        (it never reads or writes anything else); the audit entry names this rule."""
        if op.namespace != LESSONS_NAMESPACE or op.kind is not Kind.LESSON:
            raise AccessDenied("the core writes only lesson records")
        facts.decision = "allow"
        facts.rules.append(f"core: lessons in {namespace_text(LESSONS_NAMESPACE)!r}")
        return Decision(True, "write", op.namespace, None)

    def _learn(self, record: MemoryRecord, verdicts: Sequence[Verdict], *, stored: bool) -> None:
        """Leave a lesson about ``record`` (rejected or retracted) through the governed path.

        ``stored``: the record exists in the store (it becomes the lesson's provenance parent).
        A lesson that cannot be written is logged, not raised: the rejection it follows has
        already taken effect, and the validators' other checks still stand.
        """
        if not self._settings.lessons or record.kind is Kind.LESSON:
            return
        op = WriteOp(lesson_content(record, verdicts, key=self._lesson_key), LESSONS_NAMESPACE, kind=Kind.LESSON, parents=(record.id,) if stored else (),
                     labels={"lesson_for": record.id})
        try:
            self._run(CORE, op, {})
        except Exception as exc:  # noqa: BLE001 - see the docstring
            _log.warning("memwarden could not write a lesson for %s: %s", record.id, type(exc).__name__)

    def _evictions(self, record: MemoryRecord, capacity: int | None) -> list[MemoryRecord]:
        """Active records that must go so the namespace stays within ``capacity`` (a write
        never evicts itself; see :func:`eviction_order`)."""
        if capacity is None or record.status is not Status.ACTIVE:
            return []
        now = utcnow().timestamp()
        rows = self._backend.fetch(where={"ns": record.namespace_text},
                                   partitions=[self._backend.partition_of(record.namespace)])
        others = [from_row(row) for row in rows if row.id != record.id and visible_metadata(row.metadata, now)]
        overflow = len(others) + 1 - capacity
        return eviction_order(others)[:overflow] if overflow > 0 else []

    def _set_status(self, records: Sequence[MemoryRecord], status: Status, labels: dict[str, str]) -> None:
        if records:
            changed = [r.model_copy(update={"status": status, "labels": {**r.labels, **labels}}) for r in records]
            self._backend.update_metadata([r.id for r in changed], [to_metadata(r) for r in changed])

    def _touch(self, records: Sequence[MemoryRecord]) -> None:
        """Refresh the decay clock of records that were just read (a use stretches the half-life)."""
        now = utcnow()
        fading = [r.model_copy(update={"last_access": now, "uses": r.uses + 1}) for r in records if r.half_life]
        if fading:
            # Only the decay fields are sent: Chroma merges metadata, so a concurrent forget
            # or update of the same record is never overwritten by a read.
            self._backend.update_metadata([r.id for r in fading], [
                {k: v for k, v in to_metadata(r).items() if k in ("last_access", "uses", "expires_at")} for r in fading
            ])

    def _search(self, op: SearchOp, facts: _Facts, vectors: dict[str, np.ndarray]) -> list[SearchHit]:
        scope = self._read_scope(facts, op.namespace)
        now = utcnow()
        history = self._policy.scope(facts.subjects, "history", op.namespace) if op.include_superseded else None
        if history is not None and not history.empty:
            # Earlier versions only where the caller may also see history (as HistoryOp needs).
            alive = any_of([visible_filter(now), all_of([
                {"status": Status.SUPERSEDED.value}, {"expires_at": {"$gt": now.timestamp()}}, scope_filter(history)])])
        else:
            alive = visible_filter(now)
        when = {"as_of": op.as_of, "time_range": op.time_range,
                "created_after": op.created_after, "created_before": op.created_before}
        kinds = {"kind": {"$in": [k.value for k in op.kinds]}} if op.kinds else {}
        rest = all_of([alive, kinds, time_filter(**when)])
        # The policy goes down as a choice of partitions plus their residual filters. When
        # the rest of the filter is visibility and kinds only, which nearly every row passes
        # (the costly case for Chroma's filter), it is tested on the rows that come back;
        # history and time windows go down with it as a filter.
        targets = plan(scope, self._backend.partitions())
        simple = (history is None or history.empty) and not any(v is not None for v in when.values())
        shown = self._shown(now, kinds) if simple else None
        wanted = max(_POOL, op.k) if op.budget_tokens else op.k
        if op.query is None:
            ranked = [(row, None, None, None) for row in self._backend.fetch_targets(
                targets, None if shown else rest, wanted, op.offset, accept=shown)]
        else:
            where = all_of([rest, scope_filter(scope)])  # the same filter, whole, for the lexical leg
            ranked = self._ranked(op, facts, targets, where, shown, rest, op.offset + wanted)[op.offset:]
        hits: list[SearchHit] = []
        for row, score, similarity, bm25 in ranked:
            record = from_row(row)
            # Defence in depth: the enforcer itself must agree with the pushed-down filter.
            if (record.namespace[: len(op.namespace)] == op.namespace and self._may_find(facts, record, history)
                    and (not op.kinds or record.kind in op.kinds) and in_time(record, **when)):
                hits.append(SearchHit(record=record, score=score, similarity=similarity, bm25=bm25))
            else:
                facts.rechecked_out += 1
        if op.budget_tokens:
            hits = compose(hits, op.budget_tokens, kinds=op.kinds, limit=op.k)
        if op.consensus:
            hits = self._consensus(facts, hits)
        facts.returned = len(hits)
        facts.record_ids = [h.record.id for h in hits]
        self._touch([h.record for h in hits])
        if self._settings.count_withheld:
            facts.withheld = self._withheld(targets, now, kinds)
        return hits

    def _ranked(self, op: SearchOp, facts: _Facts, targets: Sequence[Target], where: dict,
                shown: Callable[[dict[str, Any]], bool] | None, rest: dict, want: int
                ) -> list[tuple[StoredRow, float, float | None, float | None]]:
        """Rows for a query, best first, with (score, similarity, bm25), then fused by
        reciprocal rank; superseded versions are down-weighted. Nothing outside the caller's
        scope can enter a candidate list: the dense leg queries the planned ``targets`` (with
        ``rest`` as a filter, or tested by ``shown`` on what comes back), the lexical leg
        takes ``where``, the whole filter compiled to SQL."""
        mode = op.mode
        if mode != "dense" and not self._backend.has_text_index:
            if mode == "lexical":
                raise InvalidRequest("lexical search needs the lexical index, which only an embedded memory "
                                     "(Memory.open) has; use mode='dense' or 'hybrid' against a server")
            mode, facts.note = "dense", "no lexical index against a Chroma server: dense leg only"
        facts.search_mode = mode
        # Each leg fetches as many as are wanted: fusing deeper lists lets records that both
        # legs rank mediocre overtake ones that one leg ranks first, which measured worse on
        # LoCoMo (docs/retrieval.md), and costs the dense leg nothing over a dense search.
        dense: list[tuple[StoredRow, float]] = []
        lexical: list[tuple[str, float]] = []
        if mode != "lexical":
            dense = self._dense(targets, embed_one(self._embedder, op.query, query=True), want, shown, rest)
            facts.candidates["dense"] = len(dense)
        if mode != "dense":
            lexical = self._backend.text_query(op.query, want, where)
            facts.candidates["lexical"] = len(lexical)
        similarity = {row.id: 1.0 - float(d) for row, d in dense}
        bm25 = dict(lexical)
        if mode == "dense":
            ranked = [(row.id, similarity[row.id]) for row, _ in dense]
        elif mode == "lexical":
            ranked = lexical
        else:
            ranked = fuse([[row.id for row, _ in dense], [i for i, _ in lexical]])
        rows = {row.id: row for row, _ in dense}
        if op.include_superseded and op.as_of is None:
            # Earlier versions rank below current ones (which needs every candidate's status).
            # As of a past moment, the version that held then was current: no down-weight.
            rows |= self._rows([i for i, _ in ranked if i not in rows])
            ranked = sorted(((i, s * SUPERSEDED_WEIGHT if rows.get(i) and rows[i].metadata.get("status")
                              == Status.SUPERSEDED.value else s) for i, s in ranked), key=lambda p: -p[1])
        top = ranked[:want]
        # The lexical leg gives ids: rows come from Chroma, the authority, and are re-checked.
        rows |= self._rows([i for i, _ in top if i not in rows])
        return [(rows[i], s, similarity.get(i), bm25.get(i)) for i, s in top if i in rows]

    def _rows(self, ids: list[str]) -> dict[str, StoredRow]:
        return {row.id: row for row in self._backend.fetch(ids=ids)} if ids else {}

    def _consensus(self, facts: _Facts, hits: list[SearchHit]) -> list[SearchHit]:
        """Read-time consensus (A-MemGuard): each hit is compared with the related memories
        the caller may see, those about the same subject that share at least two content
        words with it (comparable statements). It is contested when a strict majority of
        them contradict it; only ids the caller may see are named."""
        judged = []
        for hit in hits:
            record = hit.record
            if record.kind not in INDEXED_KINDS or not record.subjects:
                judged.append(hit)
                continue
            mine = content_words(record.content)
            comparable = [r.record for r in self._subject_index.about(record.subjects)
                          if r.record.id not in (record.id, record.supersedes) and len(r.words & mine) >= 2
                          and self._may_see(facts, r.record)]
            against = tuple(r.id for r in comparable if find_contradiction(record.content, r.content))
            contested = 2 * len(against) > len(comparable)
            judged.append(hit.model_copy(update={"contested": contested, "contradicted_by": against}))
        return judged

    def _dense(self, targets: Sequence[Target], vector: np.ndarray, k: int,
               shown: Callable[[dict[str, Any]], bool] | None, rest: dict) -> list[tuple[StoredRow, float]]:
        """The k nearest rows in the planned partitions that pass ``rest``. With ``shown`` (the
        same test on stored metadata) it is applied to the rows that come back, and ``rest``
        is the filter of a partition whose nearest rows it refused too often; without, each
        partition is queried with its residual filter and ``rest``."""
        if shown is not None:
            return self._backend.query_targets(vector, k, targets, accept=shown, fallback=rest)
        narrowed = [Target(t.partition, Coverage.PARTIAL, all_of([t.where or {}, rest])) for t in targets if t.searched]
        return self._backend.query_targets(vector, k, narrowed, accept=lambda _: True, fallback=rest)

    @staticmethod
    def _shown(now: datetime, kinds: dict[str, Any]) -> Callable[[dict[str, Any]], bool]:
        """The test a search applies to stored metadata: visible at ``now``, of ``kinds``."""
        wanted = set(kinds["kind"]["$in"]) if kinds else None
        stamp = now.timestamp()
        return lambda meta: visible_metadata(meta, stamp) and (wanted is None or meta.get("kind") in wanted)

    def _withheld(self, targets: Sequence[Target], now: datetime, kinds: dict[str, Any]) -> int:
        """Visible records under the searched prefix that the scope excludes, counted by id
        in the partitions the caller may not read, or may read in part: all of their rows (or
        those the residual excludes), less the few that are hidden anyway."""
        total = 0
        for t in targets:
            if t.outside is None:
                continue
            where, within = all_of([t.outside, kinds]), [t.partition]
            total += (self._backend.count(where=where, partitions=within)
                      - self._backend.count(where=all_of([where, hidden_filter(now)]), partitions=within))
        return total

    def _list(self, op: ListNamespacesOp, facts: _Facts, vectors: dict[str, np.ndarray]) -> list[Namespace]:
        scope = self._read_scope(facts, op.prefix)
        now = utcnow().timestamp()
        seen: dict[Namespace, None] = {}
        for row in self._backend.fetch_targets(plan(scope, self._backend.partitions()), None, None):
            if not visible_metadata(row.metadata, now):
                continue
            record = from_row(row)
            # Re-checked like search hits (see _search).
            if record.namespace[: len(op.prefix)] == op.prefix and self._may_see(facts, record):
                seen[record.namespace[: op.max_depth] if op.max_depth else record.namespace] = None
            else:
                facts.rechecked_out += 1
        found = sorted(seen)[op.offset: op.offset + op.limit]
        facts.returned = len(found)
        return found

    def _get(self, op: GetOp, facts: _Facts, vectors: dict[str, np.ndarray]) -> MemoryRecord | None:
        record = self._fetch_one(op.id)
        facts.record_ids = [op.id]
        if record is None:
            facts.returned = 0
            return None
        facts.namespace = record.namespace
        decision = facts.decided(self._policy.decide(facts.subjects, "read", record.namespace,
                                                     RecordAttributes.of(record)))
        if not (decision.allowed and is_visible(record, utcnow())):
            facts.returned, facts.withheld = 0, 1
            return None
        facts.returned, facts.withheld = 1, 0
        self._touch([record])
        return record

    def _update(self, op: UpdateOp, facts: _Facts, vectors: dict[str, np.ndarray]) -> MemoryRecord:
        with self._write_lock:
            old = self._target(facts, op.id)
            # Both versions must be allowed: an update cannot move a record out of (or into)
            # what a condition covers by changing its kind or labels.
            before = self._require_on(facts, "update", old)
            now = utcnow()
            candidate = old.model_copy(update={
                "id": record_id(facts.principal.id, old.namespace, op.content, supersedes=old.id),
                "content": op.content,
                "kind": op.kind if op.kind is not None else old.kind,
                "subjects": op.subjects if op.subjects is not None else old.subjects,
                "labels": op.labels if op.labels is not None else old.labels,
                "writer": facts.principal.id, "writer_roles": self._roles(facts),
                "created_at": now, "version": old.version + 1, "supersedes": old.id,
                # The new version holds from when the old one stops holding (see _retire).
                "valid_from": now if old.valid_from is not None and old.valid_from < now else old.valid_from,
                "status": Status.ACTIVE, "approvals": (), "rejections": (),
                "last_access": now if old.half_life else None, "uses": 0,
            })
            after = self._require_on(facts, "update", candidate)
            new = self._validated(facts, candidate, after if after.review or not before.review else before)
            vector = self._vector(op.content, vectors)
            facts.record_ids = [new.id, old.id]

            def apply() -> None:
                self._backend.upsert([new.id], [vector], [new.content], [to_metadata(new)])
                # A quarantined new version leaves the old one in force until it is approved.
                if new.status is Status.ACTIVE:
                    self._retire(old, now)

            self._commit(facts, apply, changed=[old] if new.status is Status.ACTIVE else [], added=[new])
        return new

    def _retire(self, old: MemoryRecord, now: datetime) -> None:
        retired = old.model_copy(update={"status": Status.SUPERSEDED, "valid_to": now})
        self._backend.update_metadata([old.id], [to_metadata(retired)])

    def _forget(self, op: ForgetOp, facts: _Facts, vectors: dict[str, np.ndarray]) -> None:
        # Forgetting is about the memory, not one version: an id from before an update still
        # names it, and every version of it goes, so no older text resurfaces in history.
        # Records derived from it (provenance) may repeat what it said: they are held in
        # quarantine, wherever they live, until a reviewer looks at them again.
        with self._write_lock:
            target = self._target(facts, op.id, superseded_ok=True)
            now = utcnow()
            versions = [r for r in self._lineage(target) if r.status is not Status.FORGOTTEN]
            # Every version goes, so every version must be one the caller may forget.
            for version in [target] + [r for r in versions if r.id != target.id]:
                self._require_on(facts, "forget", version)
            held = [r for r in self._descendants([r.id for r in versions]) if r.status is Status.ACTIVE]
            facts.record_ids = [r.id for r in versions] + [r.id for r in held]
            gone = [r.model_copy(update={"status": Status.FORGOTTEN, "valid_to": r.valid_to or now}) for r in versions]

            def apply() -> None:
                self._backend.update_metadata([r.id for r in gone], [to_metadata(r) for r in gone])
                self._set_status(held, Status.QUARANTINED, {"derived_from_forgotten": target.id})

            self._commit(facts, apply, changed=versions + held)

    def _descendants(self, ids: Sequence[str]) -> list[MemoryRecord]:
        """Every record derived from ``ids`` through provenance, transitively."""
        found: dict[str, MemoryRecord] = {}
        frontier = list(ids)
        while frontier:
            rows = [row for start in range(0, len(frontier), _LINK_CHUNK) for row in self._backend.fetch(
                where=any_of([{"parents": {"$contains": i}} for i in frontier[start:start + _LINK_CHUNK]]))]
            fresh = [r for r in map(from_row, rows) if r.id not in found and r.id not in ids]
            found.update((r.id, r) for r in fresh)
            frontier = [r.id for r in fresh]
        return list(found.values())

    def _erase(self, op: EraseOp, facts: _Facts, vectors: dict[str, np.ndarray]) -> ErasureReceipt:
        with self._write_lock:
            found: dict[str, MemoryRecord] = {}
            frontier = [from_row(r) for r in self._backend.fetch(ids=list(op.ids))] if op.ids else []
            if op.subject is not None:
                frontier += [from_row(r) for r in self._backend.fetch(where={"subjects": {"$contains": op.subject}})]
            direct = len({r.id for r in frontier})
            # Everything derived from an erased record (provenance parents, later versions)
            # and every earlier version of it goes too, transitively.
            while frontier:
                fresh = [r for r in frontier if r.id not in found]
                found.update((r.id, r) for r in fresh)
                if not fresh:
                    break
                ids = [r.id for r in fresh]
                frontier = []
                # Chroma refuses filter trees deeper than 1,000 nodes, so look links up in chunks.
                for start in range(0, len(ids), _LINK_CHUNK):
                    chunk = ids[start:start + _LINK_CHUNK]
                    linked = [{"parents": {"$contains": i}} for i in chunk] + [{"supersedes": {"$in": chunk}}]
                    frontier += [from_row(r) for r in self._backend.fetch(where=any_of(linked))]
                earlier = [r.supersedes for r in fresh if r.supersedes and r.supersedes not in found]
                if earlier:
                    frontier += [from_row(r) for r in self._backend.fetch(ids=earlier)]
            # All or nothing: every record must be erasable by this caller before any is touched.
            for record in found.values():
                self._require_on(facts, "erase", record)
            erased = sorted(found)
            facts.record_ids = [hashed(i) for i in erased]
            facts.returned = len(erased)
            marks = [tombstone_mark(s, r.content) for r in found.values() for s in r.subjects]

            def apply() -> None:
                # Tombstones first: from this moment the content cannot be re-ingested, even
                # if the process dies before the rows are gone.
                self._tombstones.add(marks, facts.audit_seq)
                # Physically: no copy of text, metadata or vector stays in Chroma's files.
                self._backend.purge(erased)

            self._commit(facts, apply, changed=list(found.values()))
        return ErasureReceipt(
            subject=op.subject, requested_ids=tuple(op.ids), erased_ids_sha256=tuple(facts.record_ids),
            count=len(erased), cascaded=len(erased) - direct, actor=facts.principal.id,
            rules=tuple(dict.fromkeys(facts.rules)), erased_at=utcnow(), audit_seq=facts.audit_seq,
        )

    def _review(self, op: ReviewOp, facts: _Facts, vectors: dict[str, np.ndarray]) -> MemoryRecord:
        with self._write_lock:
            record = self._fetch_one(op.id)
            if record is None or record.status is not Status.QUARANTINED:
                raise InvalidRequest(f"no record {op.id!r} is awaiting review")
            facts.namespace = record.namespace
            facts.record_ids = [record.id]
            self._require_on(facts, "approve", record)
            if facts.principal.id == record.writer:
                raise AccessDenied(f"{facts.principal.id!r} wrote {record.id!r} and may not review it")
            now = utcnow()
            if (now - record.created_at).total_seconds() >= self._settings.review_timeout:
                raise InvalidRequest(f"the review window of {record.id!r} has closed; it counts as rejected")
            voter = facts.principal.id
            approvals = tuple(sorted({*record.approvals, voter} if op.approve else set(record.approvals) - {voter}))
            rejections = tuple(sorted(set(record.rejections) - {voter} if op.approve else {*record.rejections, voter}))
            status, labels = Status.QUARANTINED, dict(record.labels)
            if len(approvals) >= self._settings.quorum:
                status = Status.ACTIVE
            elif len(rejections) >= self._settings.quorum:
                status, labels["forgotten"] = Status.FORGOTTEN, "rejected"
            facts.rules.append(f"votes: {len(approvals)} approve, {len(rejections)} reject, quorum {self._settings.quorum}")
            decided = record.model_copy(update={"approvals": approvals, "rejections": rejections,
                                                "status": status, "labels": labels})
            older = (self._fetch_one(record.supersedes, record.namespace)
                     if record.supersedes and status is Status.ACTIVE else None)

            def apply() -> None:
                self._backend.update_metadata([record.id], [to_metadata(decided)])
                if older is not None and older.status is Status.ACTIVE:
                    self._retire(older, now)

            self._commit(facts, apply, changed=[older] if older is not None else [], added=[decided])
            if decided.status is Status.FORGOTTEN:
                verdict = Verdict(validator="quorum", outcome=Outcome.REJECT,
                                  reason=f"rejected by {len(rejections)} reviewers")
                facts.follow_ups.append(lambda: self._learn(decided, [verdict], stored=True))
        return decided

    def _retract(self, op: RetractOp, facts: _Facts, vectors: dict[str, np.ndarray]) -> list[str]:
        with self._write_lock:
            record = self._fetch_one(op.id)
            if record is None or record.status is Status.FORGOTTEN:
                raise InvalidRequest(f"no record {op.id!r} can be retracted")
            facts.namespace = record.namespace
            self._require_on(facts, "approve", record)
            # Taint tracing: everything derived from the poisoned record, transitively, is held
            # for review; quarantine only hides, so it is applied wherever descendants live.
            held = [r for r in self._descendants([record.id]) if r.status is Status.ACTIVE]
            facts.record_ids = [record.id] + [r.id for r in held]

            def apply() -> None:
                self._set_status([record], Status.FORGOTTEN, {"forgotten": "retracted"})
                self._set_status(held, Status.QUARANTINED, {"tainted_by": record.id})

            self._commit(facts, apply, changed=[record, *held])
            verdict = Verdict(validator="retraction", outcome=Outcome.REJECT, reason=f"retracted by {facts.principal.id}")
            facts.follow_ups.append(lambda: self._learn(record, [verdict], stored=True))
        return [r.id for r in held]

    def _history(self, op: HistoryOp, facts: _Facts, vectors: dict[str, np.ndarray]) -> list[MemoryRecord]:
        record = self._fetch_one(op.id)
        if record is None:
            raise InvalidRequest(f"no record {op.id!r} has a history visible to {facts.principal.id!r}")
        facts.namespace = record.namespace
        self._require_on(facts, "history", record)
        live = [r for r in self._lineage(record) if r.status in (Status.ACTIVE, Status.SUPERSEDED)]
        # Versions may differ in kind and labels: each one is shown only if policy allows it.
        versions = [r for r in live if self._allows(facts, "history", r)]
        facts.record_ids = [r.id for r in versions]
        facts.returned, facts.withheld = len(versions), len(live) - len(versions)
        return versions

    def _sweep(self, op: SweepOp, facts: _Facts, vectors: dict[str, np.ndarray]) -> int:
        scope = self._policy.scope(facts.subjects, "admin", op.namespace)
        if scope.empty:
            facts.decision = "deny"
            raise AccessDenied(f"{facts.principal.id!r} may not administer anything at or below "
                               f"{namespace_text(op.namespace) or '(root)'!r}")
        facts.decision = "allow"
        facts.rules.extend(f"scope: {c.text}" for c in scope.allow)
        facts.rules.extend(f"scope: not {c.text}" for c in scope.deny)
        now = utcnow()
        cutoff = now.timestamp() - self._settings.review_timeout
        gone = any_of([{"status": Status.FORGOTTEN.value},
                       all_of([{"status": Status.ACTIVE.value}, {"expires_at": {"$lte": now.timestamp()}}]),
                       all_of([{"status": Status.QUARANTINED.value}, {"created_at": {"$lte": cutoff}}])])
        with self._write_lock:
            rows = self._backend.fetch_targets(plan(scope, self._backend.partitions()), gone, None)
            doomed = [r for r in map(from_row, rows) if self._allows(facts, "admin", r)]
            ids = sorted(r.id for r in doomed)
            facts.record_ids = ids
            facts.returned = len(ids)
            self._commit(facts, lambda: self._backend.purge(ids), changed=doomed)
        return len(ids)
