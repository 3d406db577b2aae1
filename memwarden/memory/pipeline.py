"""``Pipeline``: the one governed path from a principal's operation to the store.

Every operation, whatever its kind, runs the same steps here, and only here:

    span start -> canonicalise + validate input -> the handler declares its need
    -> the need is resolved: decided by policy before anything is looked up (deny by default)
    -> the handler runs through its OpContext (further decisions, validators, governed reads)
    -> audit entry (before any change) -> effects applied to the store -> caches follow
    -> span end, with the real outcome, after the store has the change

The pipeline alone holds the backend and the policy engine. Handlers
(:mod:`memwarden.memory.handlers`) declare needs and return effects; they never decide, look
up, write, audit or trace anything themselves. The core's maintenance (lessons, capacity
eviction, erasure recovery) runs through the same path as system operations.

Why over 500 lines: it is the only place that decides, looks up, audits and traces, on
purpose; its steps are read in order here rather than across modules.
"""

from __future__ import annotations

import logging
import secrets
import threading
import time
from collections.abc import Iterable, Sequence
from contextlib import nullcontext
from typing import Any

import numpy as np

from memwarden.core.errors import AccessDenied, InvalidRequest, MemwardenError, ReadOnlyError
from memwarden.core.fields import Meta
from memwarden.core.namespace import Namespace, namespace_text
from memwarden.core.ops import Op, RecoverOp, WriteOp, op_namespace
from memwarden.core.records import Binding, Kind, MemoryRecord, Principal, Status, hashed, utcnow
from memwarden.core.schema import LESSONS_NAMESPACE, OP_KINDS
from memwarden.guards.lessons import LessonValidator, lesson_content
from memwarden.guards.validators import ValidatorChain, Verdict, WriteValidator
from memwarden.guards.visibility import is_visible, visible_metadata
from memwarden.memory.audit import AuditLog
from memwarden.memory.auditbatch import AuditBatcher
from memwarden.memory.backends import Backend
from memwarden.memory.caches import INDEXED_KINDS, LessonCache, SubjectIndex, kept_first
from memwarden.memory.codec import from_row, stored_metadata, to_metadata
from memwarden.memory.coalesce import CoalescingBackend
from memwarden.memory.facets import CLEARED
from memwarden.memory.context import OpContext
from memwarden.memory.effects import Effect, Erase, Purge, Restate, Store, Touch, renewed
from memwarden.memory.embeddings import (
    Embedder, UnloadedEmbedder, embed_many, embed_one, embedder_dim, embedder_name,
)
from memwarden.memory.facts import OpFacts, error_text, named_subjects
from memwarden.memory.handlers import erasure, lifecycle, reads, search, system as maintenance, writes
from memwarden.memory.handlers.base import Handler
from memwarden.memory.handlers.erasure import held
from memwarden.memory.journal import ErasureJournal
from memwarden.memory.metrics import record_operation
from memwarden.memory.nearby import nearest_by_others, related_records
from memwarden.memory.needs import Found, InNamespace, InScope, Need, OnRecord
from memwarden.memory.receipts import sign_receipt
from memwarden.memory.settings import Settings
from memwarden.memory.tombstones import Tombstones
from memwarden.memory.tracing import GOVERNED, finish_operation, start_operation, use_operation
from memwarden.memory.view import StoreView
from memwarden.memory.writers import newest_across_writers
from memwarden.policies.conditions import RecordAttributes
from memwarden.policies.engine import Decision, Lifecycle, PolicyEngine, ReadScope
from memwarden.policies.subjects import Subjects

#: Every handler, by operation kind (:data:`memwarden.core.schema.OP_KINDS`).
HANDLERS: dict[str, Handler] = {
    "write": writes.WRITE, "update": writes.UPDATE,
    "get": reads.GET, "history": reads.HISTORY, "list": reads.LIST,
    "search": search.SEARCH,
    "forget": lifecycle.FORGET, "retract": lifecycle.RETRACT, "review": lifecycle.REVIEW, "sweep": lifecycle.SWEEP,
    "erase": erasure.ERASE,
    "evict": maintenance.EVICT, "recover": maintenance.RECOVER, "maintain": maintenance.MAINTAIN,
}
# Lessons are consulted on every write; a bound keeps that cost flat as they accumulate.
_MAX_LESSONS = 500
#: Operations only the core runs (they have no need: no policy decides them).
SYSTEM_OPS = frozenset({"evict", "recover", "maintain"})
#: The binding of the core's own operations.
_CORE_BINDING = Binding()

_log = logging.getLogger("memwarden")


# The metadata a read may change: a decay clock, and a TTL a refresh_ttl read restarts.
_DECAY_KEYS = tuple(k.value for k in (Meta.LAST_ACCESS, Meta.USES, Meta.EXPIRES_AT))
_RENEWED_KEYS = tuple(k.value for k in (Meta.LAST_ACCESS, Meta.EXPIRES_AT, Meta.TTL_AT))

class Pipeline:
    """The governed path (see the module docstring); built and owned by a Memory."""

    def __init__(self, backend: Backend, policy: PolicyEngine, audit: AuditLog, tombstones: Tombstones,
                 journal: ErasureJournal, *, embedder: Embedder, validators: Iterable[WriteValidator],
                 settings: Settings, core: Principal, lesson_key: bytes | None = None,
                 read_only: bool = False) -> None:
        self._embedder = embedder
        # Vectors of another model are noise to this one: the store refuses it (a read-only open records nothing).
        backend.bind_embedder(None if isinstance(embedder, UnloadedEmbedder) else embedder_name(embedder),
                              embedder_dim(embedder), record=not read_only)
        # Upserts made inside one batch reach the store as one call, embedded together, after
        # the batch's audit entries are committed in one transaction.
        self._audits = AuditBatcher(audit)
        self._backend = CoalescingBackend(backend, embed=lambda texts: embed_many(embedder, texts),
                                          before_send=self._audits.commit)
        self.view = StoreView(self._backend)
        self._policy = policy
        self._audit = audit
        self.tombstones = tombstones
        self.journal = journal
        # Lessons are hashed with the store's secret key (open/connect pass lessons.key; a
        # pipeline built without one gets a random key, never a public constant), or with the
        # key the chain's lesson validator was given, so that the validator can read them.
        store_key = lesson_key if lesson_key is not None else secrets.token_bytes(32)
        checked = ValidatorChain(validators).validators
        self.validators = ValidatorChain(v.for_store(store_key) if isinstance(v, LessonValidator) else v
                                         for v in checked)
        self.settings = settings
        self.core = core
        self._handlers = HANDLERS
        self._lesson_key = next((v.key for v in self.validators.validators if isinstance(v, LessonValidator)),
                                store_key)
        self._lesson_cache = LessonCache(self._load_lessons, writer=core.id, limit=_MAX_LESSONS, ttl=settings.cache_ttl)
        self.subject_index = SubjectIndex(self._load_subject, ttl=settings.cache_ttl)
        # Mutations check-then-store (idempotence, supersession, keyed versions); one lock
        # keeps that atomic within the process.
        self._write_lock = threading.RLock()
        self._unfinished = bool(journal.pending())
        # Opened read-only (Memory.open(read_only=True)): nothing may change, not even the
        # decay clocks a read would refresh.
        self._read_only = read_only

    # -- what handlers reach through their context -------------------------------------------

    def is_core(self, principal: object) -> bool:
        """True for the core's own principal object (never another with the same id)."""
        return principal is self.core

    def decide(self, subjects: Subjects, action: str, namespace: Namespace,
               attributes: RecordAttributes | None) -> Decision:
        """The policy engine's decision."""
        return self._policy.decide(subjects, action, namespace, attributes)

    def scope(self, subjects: Subjects, action: str, prefix: Namespace) -> ReadScope:
        """The policy engine's scope for ``action`` at or below ``prefix``."""
        return self._policy.scope(subjects, action, prefix)

    def lifecycle(self, namespace: Namespace, kind: Kind) -> Lifecycle:
        """The policy's forgetting defaults."""
        return self._policy.lifecycle(namespace, kind.value)

    def reduced(self, attributes: RecordAttributes) -> RecordAttributes:
        """What the policy's conditions can tell apart of ``attributes``."""
        return self._policy.reduced(attributes)

    def find(self, ctx: OpContext, rid: str, action: str, states: frozenset[Status],
             versions: bool, expired: bool = False, readers_know: bool = True) -> MemoryRecord | None:
        """The record ``rid`` if the caller knows it (see :class:`OnRecord`), looked up only
        where the caller's read scope, or its scope for ``action`` when ``states`` allow
        acting on records it cannot read, reaches; None for a hidden record as for a missing one."""
        subjects = ctx.facts.subjects
        scopes = [self.scope(subjects, "read", ())]
        if (states or versions) and action != "read":
            scopes.append(self.scope(subjects, action, ()))

        def known(record: MemoryRecord) -> bool:
            if versions and record.status in (Status.ACTIVE, Status.SUPERSEDED):
                # Any version names its memory: known when the caller may read it or do
                # ``action`` on it, and only while the memory itself is known (its current version).
                return (ctx.alive(record) and (ctx.allows("read", record) or ctx.allows(action, record))
                        and self._knows_memory(ctx, record, action))
            if readers_know and ctx.sees(record):
                return True
            return record.status in states and (expired or ctx.alive(record)) and ctx.allows(action, record)

        return self.view.within(rid, scopes, known)

    def _knows_memory(self, ctx: OpContext, record: MemoryRecord, action: str) -> bool:
        """Whether the caller knows the memory ``record`` is a version of: its current version
        (the newest not awaiting review) is visible, and the caller may read it or do ``action``."""
        versions = self.view.lineage(record)
        head = next((r for r in reversed(versions) if r.status is not Status.QUARANTINED), record)
        return ctx.sees(head) or (head.status is Status.ACTIVE and ctx.alive(head) and ctx.allows(action, head))

    def related(self, ctx: OpContext, record: MemoryRecord, k: int, *,
                other_writers: bool = False) -> list[MemoryRecord]:
        """Up to ``k`` active records sharing a subject with ``record`` that the caller may
        see, those sharing the most content words with it first (only those can contradict
        it); ``other_writers``: only records written by another (``by_another``). Served from
        the subject index, not the store."""
        if not record.subjects:
            return []
        return related_records(self.subject_index.about(record.subjects), record, k, ctx.sees,
                               other_writers=other_writers)

    def nearby(self, ctx: OpContext, record: MemoryRecord, k: int) -> list[MemoryRecord]:
        """Up to ``k`` active records under ``record``'s top-level namespace that the caller may
        read, written by another, that share the most words with it, whatever their subjects
        (:func:`~memwarden.memory.nearby.nearest_by_others`). Empty without a lexical index
        (against a Chroma server)."""
        scope = self.scope(ctx.facts.subjects, "read", record.namespace[:1])
        return nearest_by_others(self.view, scope, record, k, ctx.sees)

    def lessons(self) -> list[MemoryRecord]:
        """The active lesson records the lesson validator consults."""
        return self._lesson_cache.get()

    def embed_query(self, text: str) -> np.ndarray:
        """A search query's vector."""
        return embed_one(self._embedder, text, query=True)

    def learn(self, record: MemoryRecord, verdicts: Sequence[Verdict], *, stored: bool) -> None:
        """Leave a lesson about ``record`` (rejected or retracted) through the governed path.

        ``stored``: the record exists in the store (it becomes the lesson's provenance parent).
        A lesson that cannot be written is logged, not raised: the rejection it follows has
        already taken effect, and the validators' other checks still stand.
        """
        if not self.settings.lessons or record.kind is Kind.LESSON:
            return
        # The lesson carries the record's subjects, so that erasing one of them erases it too.
        op = WriteOp(lesson_content(record, verdicts, key=self._lesson_key), LESSONS_NAMESPACE, kind=Kind.LESSON,
                     subjects=record.subjects, parents=(record.id,) if stored else (),
                     labels={"lesson_for": record.id})
        try:
            self.system(op)
        except Exception as exc:  # noqa: BLE001 - see the docstring
            _log.warning("memwarden could not write a lesson for %s: %s", record.id, type(exc).__name__)

    def system(self, op: Any) -> Any:
        """Run ``op`` as the core (maintenance, lessons), through the whole pipeline."""
        return self._run(self.core, op, _CORE_BINDING, [])

    # -- running operations -------------------------------------------------------------------

    def batch(self, principal: Principal, ops: Sequence[Op], binding: Binding) -> list[Any]:
        """Run operations in order; see ``Memory.batch``."""
        if self._read_only:
            changing = sorted({op.action for op in ops if not OP_KINDS[op.action].reads})
            if changing:
                raise ReadOnlyError(f"this memory was opened read-only; {', '.join(changing)} would change it")
        if self._unfinished:
            self.recover()
        deferred: list[Any] = []
        try:
            try:
                with self._audits.deferring(), self._backend.holding():
                    return [self._run(principal, op, binding, deferred) for op in ops]
            finally:
                self._audits.commit()  # nothing is returned before its entry is in the log
        finally:
            # Spans of writes held for the batch's one store call end now, after that call.
            for close in deferred:
                close()

    def recover(self) -> int:
        """Finish every erasure an interrupt left half done (a system operation each, audited
        and traced); returns how many. Run when a memory opens and before the next call.

        The audit log says how far each got: an intent whose "pending" entry was written is
        completed by the recovery's entry; one whose final entry was written already is
        complete, and only its journal entry is left to forget."""
        pending = self.journal.pending()
        if pending and self._read_only:
            raise ReadOnlyError(f"{len(pending)} erasure(s) an interrupt left unfinished must be finished first: "
                                "open this memory once without read_only=True")
        for intent in pending:
            found = {e.get("intent"): e for e in self._audit.entries_after(intent.after_seq)
                     if e.get("outcome") == "pending" and e.get("intent") == intent.token}
            entry = found.get(intent.token)
            if entry is not None and intent.audit_seq is None:
                intent = self.journal.audited(intent, entry["seq"])
            done = intent.audit_seq is not None and any(
                e.get("completes") == intent.audit_seq and e.get("outcome") == "ok"
                for e in self._audit.entries_after(intent.audit_seq))
            if done:
                self.journal.finish(intent)
            else:
                self.system(RecoverOp(intent.n))
        self._unfinished = False
        return len(pending)

    def subjects_for(self, principal: object) -> Subjects:
        """Who ``principal`` acts as: its id and every role it holds (InvalidRequest, saying
        how to fix it, for a principal the policy gives no role)."""
        if principal is self.core:
            return Subjects(self.core.id, frozenset())  # outside the policy: system operations only
        if not isinstance(principal, Principal):
            raise InvalidRequest(f"principal must be a memwarden Principal, got {type(principal).__name__}")
        if principal.id == self.core.id:
            # Its records would pass for the core's (lessons steer the validators), and its
            # operations would read as maintenance in the audit log.
            raise InvalidRequest(f"principal id {principal.id!r} is reserved for memwarden's core (its lessons "
                                 "and maintenance); give this principal another id")
        self._policy.require_known(principal.id, principal.roles)
        return self._policy.subjects(principal.id, principal.roles)

    def _run(self, principal: Principal, op: Any, binding: Binding, deferred: list[Any]) -> Any:
        kind = getattr(op, "action", None)
        handler = self._handlers.get(kind) if isinstance(kind, str) else None
        if handler is None or (kind in SYSTEM_OPS and principal is not self.core):
            raise InvalidRequest(f"not a memwarden operation: {type(op).__name__}")
        # A principal that is not one, or only bears the core's id, is audited as "invalid".
        genuine = isinstance(principal, Principal) and (principal is self.core or principal.id != self.core.id)
        facts = OpFacts(kind, principal if genuine else Principal("invalid"))
        # A change and what follows it (its lesson, a capacity eviction) run under one hold of
        # the write lock: an erasure that starts in between would complete, and the lesson
        # about its subject would then be written after it.
        with nullcontext() if OP_KINDS[kind].reads else self._write_lock:
            started, result, store_held = time.perf_counter(), None, False
            span = start_operation(kind, op)
            try:
                with use_operation(span):
                    result, store_held = self._run_one(principal, op, binding, handler, facts)
                    return result
            finally:
                def close() -> None:
                    finish_operation(span, facts.span_attributes, outcome=facts.outcome, op=op, result=result)
                    record_operation(facts.op, facts.outcome, facts.decision, facts.verdicts,
                                     time.perf_counter() - started,
                                     records=facts.returned if facts.op == "erase" else None)

                if store_held:
                    deferred.append(close)
                else:  # its span reports its entry's sequence number, once committed
                    self._audits.after_commit(close)
                for follow_up in facts.follow_ups:
                    follow_up()

    def _run_one(self, principal: Principal, op: Any, binding: Binding, handler: Any,
                 facts: OpFacts) -> tuple[Any, bool]:
        reads = OP_KINDS[facts.op].reads
        named = named_subjects(op)  # as given: an invalid spelling is quoted by its error
        try:
            facts.subjects = self.subjects_for(principal)
            op = op.canonical()
            facts.namespace = op_namespace(op)
            ctx = OpContext(facts, binding, utcnow(), self)
            need = handler.need(op, ctx)
            with nullcontext() if reads else self._write_lock:
                got = self._resolve(need, ctx)
                result, effects = handler.run(op, got, ctx)
                result = self._apply(facts, effects, result)
            facts.outcome = "ok"
            return result, self._backend.is_holding and any(isinstance(e, Store) for e in effects)
        except MemwardenError as exc:
            facts.outcome = GOVERNED.get(type(exc), "invalid")
            facts.error = error_text(exc, named)
            raise
        except BaseException as exc:  # an interrupt is audited too
            facts.outcome, facts.error = "error", type(exc).__name__
            raise
        finally:
            if not facts.audited:
                # Raising here replaces the result: an operation that cannot be audited
                # does not return its data (fail closed).
                self._audits.record(facts, flush=not reads)

    def _resolve(self, need: Need | None, ctx: OpContext) -> Any:
        """Resolve a handler's need, deciding before anything is looked up."""
        facts = ctx.facts
        if need is None:
            if not ctx.is_core:
                raise InvalidRequest(f"{facts.op} is a system operation")
            return None
        if isinstance(need, InNamespace):
            return ctx.require(need.action, need.namespace, need.attributes)
        if isinstance(need, InScope):
            scope = self.scope(facts.subjects, need.action, need.prefix)
            if scope.empty:
                facts.decision = "deny"
                facts.rules.append("no matching rule (deny by default)")
                raise AccessDenied(f"{facts.principal.id!r} may not {need.action} anything at or below "
                                   f"{namespace_text(need.prefix) or '(root)'!r}")
            facts.decision = "allow"
            facts.rules.extend(f"scope: {c.text}" for c in scope.allow)
            facts.rules.extend(f"scope: not {c.text}" for c in scope.deny)
            return scope
        assert isinstance(need, OnRecord)
        record = self.find(ctx, need.id, need.action, need.states, need.versions, readers_know=need.readers_know)
        if record is None:
            facts.record_ids = [need.id]
            if need.missing_is_none:
                facts.returned = 0
                return None
            raise ctx.missing(need.id)
        facts.namespace = record.namespace
        # The caller knows this record (it may read it, or act on it), so a denial may say so.
        return Found(record, ctx.require_on(need.action, record))

    # -- applying effects -----------------------------------------------------------------------

    def _apply(self, facts: OpFacts, effects: list[Effect], result: Any) -> Any:
        """Audit, then apply ``effects``; a failed apply gets a second, compensating entry.

        Auditing first means a crash leaves either an audited change or an audit entry for a
        change that is absent, never a change no entry accounts for. Upserts held until the
        end of the batch get their compensating entry if storing them fails then.
        """
        erase = next((e for e in effects if isinstance(e, Erase)), None)
        if erase is not None:
            return self._erase(facts, erase, result)
        if all(isinstance(e, Touch) for e in effects):
            if not self._read_only:  # a read-only reader leaves the clocks as they are
                for effect in effects:  # a read's side effect on decay clocks: no entry of its own
                    self._apply_one(effect)
            return result
        facts.outcome = "ok"
        # Upserts held for the batch's store call are audited with the batch's other entries.
        self._audits.record(facts, defer=self._backend.is_holding and all(isinstance(e, Store) for e in effects))

        def failed(exc: BaseException) -> None:
            if facts.outcome != "error":  # once, whether apply or a later flush noticed
                facts.outcome, facts.error = "error", f"apply failed after audit: {type(exc).__name__}"
                self._audits.record(facts)

        try:
            with self._backend.on_failure(failed):
                for effect in effects:
                    self._apply_one(effect)
        except Exception as exc:
            failed(exc)
            raise
        finally:
            # Even after a failed apply: it may have changed some of them.
            self._follow(effects)
        return result

    def _apply_one(self, effect: Effect) -> None:
        if isinstance(effect, Store):
            record = effect.record
            metadata = to_metadata(record, replacing=effect.replacing)
            # A new row has no earlier field to remove: sending None for each unset one would
            # cost Chroma a deletion per field for nothing. A replaced row's facets go unless
            # its texts give it new ones (written when they are embedded), or it keeps another
            # row's (Store.vectors_of).
            metadata = metadata | CLEARED if effect.replacing is not None else stored_metadata(metadata)
            kept = self._backend.stored_vector(effect.vectors_of) if effect.vectors_of is not None else None
            if kept is not None:
                vector, theirs = kept
                facets = {f: theirs[f] for f in CLEARED if theirs.get(f) is not None}
                self._backend.upsert([record.id], vector[None], [record.content], [metadata | facets])
            else:
                self._backend.upsert([record.id], None, [record.content], [metadata],
                                     texts=[effect.embed_texts or (record.content,)])
        elif isinstance(effect, Restate):
            if effect.changes:
                self._backend.update_metadata([new.id for new, _ in effect.changes],
                                              [to_metadata(new, replacing=old) for new, old in effect.changes])
        elif isinstance(effect, Touch):
            now = utcnow()
            fading = [r.model_copy(update={"last_access": now, "uses": r.uses + 1}) for r in effect.records]
            restarted = [renewed(r, now) for r in effect.renewed]
            # Only the decay fields (and a renewed TTL) are sent: Chroma merges metadata, so a
            # concurrent forget or update of the same record is never overwritten by a read.
            self._backend.update_metadata([r.id for r in fading + restarted], [
                {k: v for k, v in to_metadata(r).items() if k in keys}
                for keys, records in ((_DECAY_KEYS, fading), (_RENEWED_KEYS, restarted)) for r in records])
        elif isinstance(effect, Purge):
            if effect.records:
                self._backend.purge([r.id for r in effect.records])

    def _follow(self, effects: Iterable[Effect]) -> None:
        """Keep the write path's caches what the store now holds."""
        changed: list[MemoryRecord] = []
        added: list[MemoryRecord] = []
        for effect in effects:
            if isinstance(effect, Store):
                changed += [effect.replacing] if effect.replacing is not None else []
                added.append(effect.record)
            elif isinstance(effect, Restate):
                changed += [old for _, old in effect.changes]
                added += [new for new, _ in effect.changes]
            elif isinstance(effect, (Purge, Erase)):
                changed += list(effect.records) + list(getattr(effect, "held", ()))
        self.subject_index.discard(changed)
        if any(r.kind is Kind.LESSON for r in changed):
            self._lesson_cache.clear()
        for record in added:
            self.subject_index.add(record)
            self._lesson_cache.add(record)

    def _erase(self, facts: OpFacts, erase: Erase, result: Any) -> Any:
        """Apply an erasure as a recorded intent: journal and "pending" audit entry first,
        then tombstones, holds and the physical purge, then the final entry; the journal
        forgets the intent only when all of it is done (see :mod:`memwarden.memory.journal`)."""
        holds = held(list(erase.held), erase.subject)
        intent = erase.resumes
        if intent is None:
            head = self._audit.head()
            intent = self.journal.begin(facts.principal.id, erase.subject, [r.id for r in erase.records],
                                        [r.id for _, r in holds], list(erase.marks), list(dict.fromkeys(facts.rules)),
                                        after_seq=head[0] if head else 0)
            self._unfinished = True
            facts.outcome, facts.intent = "pending", intent.token
            seq = self._audits.append_now(facts.audit_entry())
            intent = self.journal.audited(intent, seq)
            facts.completes = seq
        else:
            facts.record_ids = [hashed(i) for i in intent.purge]
        facts.audited = True  # from here on, an interrupt leaves the pending entry: the truth
        try:
            # Tombstones first: from this moment the content cannot be re-ingested, even if
            # the process dies before the rows are gone.
            self.tombstones.add(intent.marks, intent.audit_seq)
            if holds:
                self._backend.update_metadata([new.id for new, _ in holds],
                                              [to_metadata(new, replacing=old) for new, old in holds])
            # Physically: no copy of text, metadata or vector stays in Chroma's files.
            self._backend.purge(list(intent.purge))
        finally:
            self._follow([erase])
        facts.outcome = "ok"
        facts.audit_seq = self._audits.append_now(facts.audit_entry())
        self.journal.finish(intent)
        self._unfinished = bool(self.journal.pending())
        if erase.receipt is None:
            return result
        # Only now, complete, does the erasure get its receipt: signed by the store's key,
        # committing to the erased records as they stood before deletion.
        covered = tuple(s for s in (intent.audit_seq, facts.audit_seq) if s is not None)
        return sign_receipt(self._audit.signing_keys(), {**erase.receipt, "audit_seq": facts.audit_seq,
                                                         "audit_seqs": covered}, erase.records)

    # -- cache loaders (system reads) ---------------------------------------------------------------

    def _load_subject(self, subject: str, per_principal: int, limit: int) -> list[MemoryRecord]:
        """Up to ``limit`` visible records about ``subject`` of the kinds the index holds, each
        principal's ``per_principal`` newest, chosen principal by principal (whatever else is stored
        about the subject: a bounded read in storage order was filled by another writer's flood)."""
        now = utcnow().timestamp()
        rows = [row for row in self.view.subject_rows(subject, {k.value for k in INDEXED_KINDS}, per_principal)
                if visible_metadata(row.metadata, now)]
        return [from_row(row) for row in newest_across_writers(rows, limit, per_principal)]

    def _load_lessons(self, limit: int) -> list[MemoryRecord]:
        """The first ``limit`` active lesson records the core wrote, as the lesson cache keeps
        them (kept_first)."""
        now = utcnow()
        return kept_first(r for r in self.view.kind_in(Kind.LESSON, LESSONS_NAMESPACE)
                          if is_visible(r, now) and r.writer == self.core.id)[:limit]

    # -- lifetime -----------------------------------------------------------------------------------

    @property
    def backend(self) -> CoalescingBackend:
        """The store (for the Memory that owns this pipeline, to close it)."""
        return self._backend

    def close(self) -> None:
        """Release the store, the audit log, the tombstones and the journal."""
        self._backend.close()
        self._audit.close()
        self.tombstones.close()
        self.journal.close()
