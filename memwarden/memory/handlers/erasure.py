"""Erasure: the right to be forgotten, physically, without a veto for any writer.

What the caller may erase goes: every record about the subject (or with the given ids)
within its erase scope, everything derived from those and every version of them. What it
may not erase but the erasure reaches (a record about the subject, or derived from an erased
one, in a namespace outside its scope) is held: quarantined with the label
``erasure_pending``, never returned, until someone who may erase it does. So no writer can
block an erasure by tagging a record with the subject somewhere the officer may not go, and
the officer learns only how many records are held. Ids outside the caller's scope count as
missing. The core's lessons about the subject go with it. See docs/erasure.md.
"""

from __future__ import annotations

from memwarden.core.namespace import Namespace, namespace_text
from memwarden.core.ops import EraseOp
from memwarden.core.schema import HELD_LABEL, LESSONS_NAMESPACE
from memwarden.core.records import Kind, MemoryRecord, Status, hashed
from memwarden.guards.lessons import parse_lesson
from memwarden.memory.context import OpContext
from memwarden.memory.effects import Effect, Erase
from memwarden.memory.handlers.base import Handler
from memwarden.memory.needs import InScope
from memwarden.memory.tombstones import tombstone_mark
from memwarden.policies.engine import ReadScope

_ALL = frozenset(Status)


def _lesson_scope(ctx: OpContext, record: MemoryRecord) -> Namespace | None:
    """For a lesson the core wrote, the namespace it was learnt in; None for any other record
    (and for a lesson of an older format, which is then decided as itself)."""
    if record.kind is not Kind.LESSON or record.namespace != LESSONS_NAMESPACE or record.writer != ctx.core_id:
        return None
    lesson = parse_lesson(record.content)
    return lesson.scope if lesson is not None else None


def _run(op: EraseOp, scope: ReadScope, ctx: OpContext) -> tuple[None, list[Effect]]:
    erased: dict[str, MemoryRecord] = {}
    held: dict[str, MemoryRecord] = {}
    lessons = 0
    # The rules that allowed what is erased; a held record's rule is nobody's business.
    rules: dict[str, None] = {}

    def take(record: MemoryRecord) -> bool:
        """Sort one reached record into erased or held; True when it is new. A lesson of the
        core counts as a record of the namespace it was learnt in, whatever the policy says of
        memwarden/lessons: who may erase there erases it (a system rule, named in the audit)."""
        nonlocal lessons
        if record.id in erased or record.id in held:
            return False
        scope = _lesson_scope(ctx, record)
        where = record.model_copy(update={"namespace": scope}) if scope is not None else record
        decision = ctx.ruling("erase", where)
        if decision.allowed:
            erased[record.id] = record
            lessons += scope is not None
            rules[decision.rule_text] = None
        else:
            held[record.id] = record
        return True

    for rid in op.ids:
        record = ctx.find(rid, "erase", _ALL, expired=True)
        if record is not None and ctx.allows("erase", record):
            take(record)
    if op.subject is not None:
        # What earlier erasures of the subject held (derived records that carry no subject
        # of their own) is reached again by its label.
        for record in ctx.view.about(op.subject) + ctx.view.labelled(HELD_LABEL, op.subject):
            take(record)
    direct = len(erased)
    # Everything derived from a reached record (provenance, later versions) and every earlier
    # version of it is reached too, transitively, through held records as well.
    frontier = list(erased.values()) + list(held.values())
    while frontier:
        ids = [r.id for r in frontier]
        reached = ctx.view.children(ids, versions=True)
        earlier = [r.supersedes for r in frontier if r.supersedes]
        reached += ctx.view.records([i for i in earlier if i not in erased and i not in held])
        frontier = [r for r in reached if take(r)]
    if lessons:
        rules[f"core: {lessons} lesson(s) in {namespace_text(LESSONS_NAMESPACE)!r} "
              "erased with what they were learnt from"] = None
    # What decided is the rules that allowed each erasure, not the scope the look-up used.
    ctx.facts.rules[:] = list(rules)
    ids = sorted(erased)
    ctx.facts.record_ids = [hashed(i) for i in ids]
    ctx.facts.about = [op.subject] if op.subject is not None else []
    ctx.facts.returned, ctx.facts.held = len(ids), len(held)
    # No tombstone for a lesson: the same rejection later is a new lesson to learn.
    marks = tuple((tombstone_mark(s, r.namespace, r.content), ctx.kept_attributes(r)) for r in erased.values()
                  if _lesson_scope(ctx, r) is None for s in r.subjects)
    # The pipeline signs the receipt once the erasure is complete (see Erase).
    receipt = dict(subject=op.subject, requested_ids=tuple(op.ids), erased_ids_sha256=tuple(ctx.facts.record_ids),
                   count=len(ids), cascaded=len(ids) - direct, held=len(held), actor=ctx.principal_id,
                   rules=tuple(rules), erased_at=ctx.now)
    return None, [Erase(tuple(erased[i] for i in ids), tuple(held.values()), marks, op.subject, receipt=receipt)]


def held(records: list[MemoryRecord], subject: str | None) -> list[tuple[MemoryRecord, MemoryRecord]]:
    """The held state of records an erasure reaches but may not erase (new state, stored):
    quarantined unless already forgotten (which must never become reviewable), votes cleared."""
    return [(r.model_copy(update={
        "status": r.status if r.status is Status.FORGOTTEN else Status.QUARANTINED,
        "labels": {**r.labels, HELD_LABEL: subject or "ids"},
        "approvals": (), "rejections": (), "reviewed": None}), r) for r in records]


ERASE = Handler(need=lambda op, ctx: InScope("erase", ()), run=_run)
