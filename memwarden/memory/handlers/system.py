"""The core's maintenance operations: capacity eviction and erasure recovery. No session can
run them; they go through the pipeline like any other operation, audited and traced."""

from __future__ import annotations

from memwarden.core.ops import EvictOp, MaintainOp, RecoverOp
from memwarden.core.records import Status, hashed
from memwarden.guards.forgetting import eviction_order
from memwarden.memory.context import OpContext
from memwarden.memory.effects import Effect, Erase, relabel
from memwarden.memory.handlers.base import Handler


def _run_evict(op: EvictOp, _: None, ctx: OpContext) -> tuple[int, list[Effect]]:
    # The policy's cap line decides, not the writer's rights: a write never evicts itself,
    # and the eviction order is documented (docs/lifecycle.md).
    ctx.facts.namespace = op.namespace
    ctx.facts.decision = "allow"
    ctx.facts.rules.append(op.rule)
    others = [r for r in ctx.view.in_namespace(op.namespace) if r.id != op.keep]
    overflow = len(others) + 1 - op.capacity
    evicted = eviction_order(others)[:overflow] if overflow > 0 else []
    ctx.facts.record_ids = [r.id for r in evicted]
    ctx.facts.returned = len(evicted)
    return len(evicted), [relabel(evicted, Status.FORGOTTEN, {"forgotten": "evicted"})] if evicted else []


EVICT = Handler(need=lambda op, ctx: None, run=_run_evict)


def _run_recover(op: RecoverOp, _: None, ctx: OpContext) -> tuple[int, list[Effect]]:
    intent = ctx.intent(op.intent)
    ctx.facts.decision = "allow"
    ctx.facts.rules.append(f"core: finish the erasure of audit entry {intent.audit_seq} by {intent.principal!r}")
    ctx.facts.rules.extend(intent.rules)
    ctx.facts.completes = intent.audit_seq
    ctx.facts.record_ids = [hashed(i) for i in intent.purge]
    ctx.facts.about = [intent.subject] if intent.subject is not None else []
    present = ctx.view.records(list(intent.purge))
    ctx.facts.returned, ctx.facts.held = len(intent.purge), len(intent.hold)
    return len(intent.purge), [Erase(tuple(present), tuple(ctx.view.records(list(intent.hold))), intent.marks,
                                     intent.subject, resumes=intent)]


RECOVER = Handler(need=lambda op, ctx: None, run=_run_recover)


def _run_maintain(op: MaintainOp, _: None, ctx: OpContext) -> tuple[int, list[Effect]]:
    # The storage did this before the pipeline existed (it had to, to open); the entry says so.
    ctx.facts.decision = "allow"
    ctx.facts.rules.append("core: storage maintenance when the memory opened")
    ctx.facts.rules.extend(op.events)
    return len(op.events), []


MAINTAIN = Handler(need=lambda op, ctx: None, run=_run_maintain)
