"""``OpContext``: the one door an operation handler has to policy, guards and the store.

A handler receives what it declared it needs, already resolved, and this context for
anything further: a decision on another record or version, a governed look-up, validation,
the store's relations. Every decision made through it is recorded in the operation's facts
(so its audit entry and span name every rule that decided), and every look-up is governed.
Handlers import neither the policy engine nor a backend (``tests/test_pipeline_structure.py``
checks it), so there is no second way through.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from memwarden.core.errors import AccessDenied, NotFound, WriteRejected
from memwarden.core.namespace import Namespace, namespace_text
from memwarden.core.records import Binding, Kind, MemoryRecord, Principal, Status
from memwarden.guards.forgetting import forget_at
from memwarden.guards.validators import Outcome, ValidationContext, Verdict, by_another, strongest
from memwarden.guards.visibility import is_visible
from memwarden.memory.caches import Related
from memwarden.memory.facts import OpFacts
from memwarden.memory.journal import Intent
from memwarden.policies.conditions import RecordAttributes
from memwarden.policies.engine import Decision, Lifecycle, ReadScope

def _attributes(kept: str | None) -> RecordAttributes | None:
    if kept is None:
        return None
    data = json.loads(kept)
    roles = data.get("writer_roles")
    return RecordAttributes(data.get("kind"), data.get("source"), None if roles is None else frozenset(roles),
                            data.get("labels"), data.get("content"))


if TYPE_CHECKING:
    from memwarden.guards.validators import ValidatorChain
    from memwarden.memory.caches import SubjectIndex
    from memwarden.memory.journal import ErasureJournal
    from memwarden.memory.settings import Settings
    from memwarden.memory.tombstones import Tombstones
    from memwarden.memory.view import StoreView
    from memwarden.policies.subjects import Subjects


#: How many of the writer's own versions an update may walk back over to find the version
#: another writer established (each is one read by id).
_MAX_OWN_VERSIONS = 1000


class Governor(Protocol):
    """What a context asks of the pipeline that runs it (the pipeline is the one
    implementation; naming it here keeps the two modules from importing each other)."""

    core: Principal
    settings: Settings
    view: StoreView
    tombstones: Tombstones
    journal: ErasureJournal
    subject_index: SubjectIndex
    validators: ValidatorChain

    def is_core(self, principal: object) -> bool: ...
    def decide(self, subjects: Subjects, action: str, namespace: Namespace,
               attributes: RecordAttributes | None) -> Decision: ...
    def scope(self, subjects: Subjects, action: str, prefix: Namespace) -> ReadScope: ...
    def lifecycle(self, namespace: Namespace, kind: Kind) -> Lifecycle: ...
    def reduced(self, attributes: RecordAttributes) -> RecordAttributes: ...
    def find(self, ctx: OpContext, rid: str, action: str, states: frozenset[Status], versions: bool,
             expired: bool = False, readers_know: bool = True) -> MemoryRecord | None: ...
    def related(self, ctx: OpContext, record: MemoryRecord, k: int, *,
                other_writers: bool = False) -> list[MemoryRecord]: ...
    def lessons(self) -> list[MemoryRecord]: ...
    def embed_query(self, text: str) -> np.ndarray: ...
    def learn(self, record: MemoryRecord, verdicts: Sequence[Verdict], *, stored: bool) -> None: ...
    def system(self, op: Any) -> Any: ...


@dataclass
class OpContext:
    """What one running operation may ask of the pipeline (see the module docstring)."""

    facts: OpFacts
    binding: Binding
    now: datetime
    _pipeline: Governor
    #: What the handler worked out in ``need`` and uses again in ``run`` (a write's attributes:
    #: classifying its content is the costliest step of a write's own work).
    memo: dict[str, Any] = field(default_factory=dict)

    # -- who and when ---------------------------------------------------------------------

    @property
    def principal_id(self) -> str:
        """The acting principal's id."""
        return self.facts.principal.id

    @property
    def is_core(self) -> bool:
        """True when the core itself acts (lessons, maintenance)."""
        return self._pipeline.is_core(self.facts.principal)

    @property
    def core_id(self) -> str:
        """The id the core writes its own records under."""
        return self._pipeline.core.id

    @property
    def roles(self) -> tuple[str, ...]:
        """The roles the principal acts with (stored as a record's writer roles)."""
        return tuple(self.facts.roles())

    @property
    def settings(self) -> Settings:
        """The memory's settings."""
        return self._pipeline.settings

    @property
    def view(self) -> StoreView:
        """The store's relations and scoped reads (system reads: decide on what they return)."""
        return self._pipeline.view

    # -- decisions --------------------------------------------------------------------------

    def decide(self, action: str, namespace: Namespace, attributes: RecordAttributes | None = None) -> Decision:
        """The policy's decision (recorded in the facts), without raising."""
        return self.facts.decided(self._pipeline.decide(self.facts.subjects, action, namespace, attributes))

    def require(self, action: str, namespace: Namespace, attributes: RecordAttributes) -> Decision:
        """The decision for ``action``; AccessDenied unless it allows."""
        decision = self.decide(action, namespace, attributes)
        if not decision.allowed:
            raise AccessDenied(f"{self.principal_id!r} may not {action} in {namespace_text(namespace)!r}: "
                               f"{decision.rule_text}", rule=decision.rule.text if decision.rule else None)
        return decision

    def require_on(self, action: str, record: MemoryRecord) -> Decision:
        """``require`` for a record: its namespace and its attributes."""
        return self.require(action, record.namespace, RecordAttributes.of(record))

    def allows(self, action: str, record: MemoryRecord) -> bool:
        """Whether the caller may do ``action`` on ``record`` (not recorded: a filter)."""
        return self.ruling(action, record).allowed

    def ruling(self, action: str, record: MemoryRecord) -> Decision:
        """The decision on ``action`` for ``record``, not recorded in the facts (the caller
        records what it may tell)."""
        return self._pipeline.decide(self.facts.subjects, action, record.namespace, RecordAttributes.of(record))

    def sees(self, record: MemoryRecord | None) -> bool:
        """Visible and readable by the caller."""
        return record is not None and is_visible(record, self.now) and self.allows("read", record)

    def scope(self, action: str, prefix: Namespace) -> ReadScope:
        """The caller's scope for ``action`` at or below ``prefix`` (possibly empty)."""
        return self._pipeline.scope(self.facts.subjects, action, prefix)

    def lifecycle(self, namespace: Namespace, kind: Kind) -> Lifecycle:
        """The policy's forgetting defaults for a record of ``kind`` in ``namespace``."""
        return self._pipeline.lifecycle(namespace, kind)

    # -- governed look-ups --------------------------------------------------------------------

    def find(self, rid: str, action: str = "read", states: frozenset[Status] = frozenset(), *,
             versions: bool = False, expired: bool = False) -> MemoryRecord | None:
        """The record ``rid`` if the caller knows it (see :class:`~memwarden.memory.needs.OnRecord`;
        ``expired``: a record past its expiry still counts for ``states``), else None,
        whether it is missing or hidden."""
        return self._pipeline.find(self, rid, action, states, versions, expired)

    def missing(self, rid: str) -> NotFound:
        """The error for an id the caller does not know: the same for hidden and missing ids."""
        return NotFound(f"no record {rid!r} is visible to {self.principal_id!r}")

    def alive(self, record: MemoryRecord) -> bool:
        """Not past its forget deadline (TTL or decay), whatever its status."""
        deadline = forget_at(record)
        return deadline is None or deadline > self.now

    # -- guards -----------------------------------------------------------------------------

    def _established(self, record: MemoryRecord, replaced: MemoryRecord | None) -> MemoryRecord | None:
        """The newest version, ``replaced`` or one it supersedes, written by another than
        ``record``'s writer (``by_another``), when the caller may read the memory: a chain of
        the writer's own updates, each harmless, still changes what that version established."""
        if not self.sees(replaced):
            return None
        version = replaced
        for _ in range(_MAX_OWN_VERSIONS):
            if version is None or by_another(record, version):
                break
            older = version.supersedes
            version = self.view.stored(older, version.namespace) if older else None
        else:
            version = None
        return version if version is not None and self.allows("read", version) else None

    def _blind(self, record: MemoryRecord) -> bool:
        """Whether the caller may not read a record like ``record`` whoever wrote it: its
        namespace, kind, labels and content class, any writer and source (a policy that lets
        it read only agents' records hides the user's it may contradict). Asked of the policy
        alone, with those two attributes unknown (fail closed), never of other records."""
        attributes = replace(RecordAttributes.of(record), source=None, writer_roles=None)
        return not self._pipeline.decide(self.facts.subjects, "read", record.namespace, attributes).allowed

    def validate(self, record: MemoryRecord, decision: Decision, *, replaced: MemoryRecord | None = None) -> MemoryRecord:
        """Run the write validators on ``record``: WriteRejected (a lesson follows), or the
        record, quarantined when a validator or the deciding rule asks for review.
        ``replaced``: the version the write replaces (shown to the validators only if the
        caller may read it, so that a verdict cannot leak it)."""
        pipeline = self._pipeline
        context = ValidationContext(self.facts.principal, self.facts.subjects,
                                    related=lambda r, k: pipeline.related(self, r, k),
                                    lessons=pipeline.lessons,
                                    others=lambda r, k: pipeline.related(self, r, k, other_writers=True),
                                    replaced=replaced if self.sees(replaced) else None,
                                    nearby=lambda r, k: pipeline.nearby(self, r, k),
                                    established=self._established(record, replaced),
                                    blind=lambda: self._blind(record))
        verdicts = list(pipeline.validators.run(record, context))
        if decision.review:
            verdicts.append(Verdict(validator="policy", outcome=Outcome.QUARANTINE,
                                    reason=f"review required by {decision.rule_text}"))
        self.facts.verdicts = verdicts
        outcome = strongest(verdicts)
        if outcome is Outcome.REJECT:
            reasons = "; ".join(v.text for v in verdicts if v.outcome is Outcome.REJECT)
            self.learn(record, verdicts, stored=False)
            raise WriteRejected(f"write rejected: {reasons}", verdicts=tuple(verdicts))
        if outcome is Outcome.QUARANTINE:
            return record.model_copy(update={"status": Status.QUARANTINED})
        return record

    def tombstoned(self, subjects: Sequence[str], namespace: Namespace, content: str) -> str | None:
        """The subject whose erased content this write would re-ingest in ``namespace``, if
        any; a tombstone is consulted only where the caller could have read the erased record
        (its kept attributes; unknown ones decided fail-closed), so it never confirms an erasure
        outside the caller's scope."""
        for subject, attrs in self._pipeline.tombstones.hits(subjects, namespace, content):
            if self._pipeline.decide(self.facts.subjects, "read", namespace, _attributes(attrs)).allowed:
                return subject
        return None

    def kept_attributes(self, record: MemoryRecord) -> str:
        """What a tombstone keeps of an erased record: the attributes the policy's conditions
        can tell apart (JSON; no content)."""
        reduced = self._pipeline.reduced(RecordAttributes.of(record))
        return json.dumps({"kind": reduced.kind, "source": reduced.source, "content": reduced.content,
                           "writer_roles": None if reduced.writer_roles is None else sorted(reduced.writer_roles),
                           "labels": reduced.labels}, sort_keys=True)

    def related(self, record: MemoryRecord, k: int) -> list[MemoryRecord]:
        """Up to ``k`` records about the same subjects that the caller may see."""
        return self._pipeline.related(self, record, k)

    def about(self, subjects: Sequence[str]) -> list[Related]:
        """The subject index's entries about ``subjects`` (a cache of the store: decide with
        :meth:`sees` before using one)."""
        return self._pipeline.subject_index.about(subjects)

    def intent(self, n: int) -> Intent:
        """The unfinished erasure with journal number ``n`` (for the core's recovery)."""
        return next(i for i in self._pipeline.journal.pending() if i.n == n)

    def embed_query(self, text: str) -> np.ndarray:
        """The vector of a search query (only ever after the search's decision)."""
        return self._pipeline.embed_query(text)

    # -- what follows the operation --------------------------------------------------------------

    def learn(self, record: MemoryRecord, verdicts: Sequence[Verdict], *, stored: bool) -> None:
        """Leave a lesson about ``record`` once this operation is audited."""
        self.facts.follow_ups.append(lambda: self._pipeline.learn(record, verdicts, stored=stored))

    def system(self, op: object) -> None:
        """Run ``op`` as the core, through the pipeline, once this operation is audited (a
        capacity eviction after a write)."""
        self.facts.follow_ups.append(lambda: self._pipeline.system(op))
