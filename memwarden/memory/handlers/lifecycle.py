"""The lifecycle of stored memories: forget, retract, review votes and the sweeper."""

from __future__ import annotations

from memwarden.core.fields import Meta
from memwarden.core.errors import AccessDenied, InvalidRequest
from memwarden.core.ops import ForgetOp, RetractOp, ReviewOp, SweepOp
from memwarden.core.records import MemoryRecord, ReviewResult, Source, Status, content_digest, keyed_id
from memwarden.core.schema import HELD_LABEL
from memwarden.guards.lessons import BY_AGENT, QUORUM, RETRACTION, SELF_RETRACTION
from memwarden.guards.validators import Outcome, Verdict
from memwarden.memory.codec import from_row
from memwarden.memory.context import OpContext
from memwarden.memory.effects import Effect, Purge, Restate, Store, relabel
from memwarden.memory.handlers.base import Handler
from memwarden.memory.handlers.reads import current
from memwarden.memory.handlers.writes import retire
from memwarden.memory.needs import Found, InScope, OnRecord
from memwarden.policies.engine import ReadScope
from memwarden.policies.pushdown import all_of, any_of


def _active_descendants(ctx: OpContext, ids: list[str]) -> list[MemoryRecord]:
    return [r for r in ctx.view.descendants(ids) if r.status is Status.ACTIVE]


def _run_forget(op: ForgetOp, got: Found, ctx: OpContext) -> tuple[None, list[Effect]]:
    # Forgetting is about the memory, not one version: an id from before an update still
    # names it, and every version of it goes, so no older text resurfaces in history.
    # Records derived from it (provenance) may repeat what it said: they are held in
    # quarantine, wherever they live, until a reviewer looks at them again.
    target = got.record
    lineage = current(ctx, target, "forget")
    if lineage is None:
        raise ctx.missing(op.id)
    versions = [r for r in lineage if r.status is not Status.FORGOTTEN]
    # Every version goes, so every version must be one the caller may forget.
    for version in versions:
        if version.id != target.id:
            ctx.require_on("forget", version)
    held = _active_descendants(ctx, [r.id for r in versions])
    ctx.facts.record_ids = [r.id for r in versions] + [r.id for r in held]
    gone = Restate(tuple((r.model_copy(update={"status": Status.FORGOTTEN, "valid_to": r.valid_to or ctx.now,
                                               "approvals": (), "rejections": (), "reviewed": None}), r)
                         for r in versions))
    return None, [gone, relabel(held, Status.QUARANTINED, {"derived_from_forgotten": target.id})]


FORGET = Handler(need=lambda op, ctx: OnRecord(op.id, "forget", versions=True), run=_run_forget)


def _run_retract(op: RetractOp, got: Found, ctx: OpContext) -> tuple[list[str], list[Effect]]:
    # Taint tracing: everything derived from the poisoned record, transitively, is held for
    # review; quarantine only hides, so it is applied wherever descendants live.
    record = got.record
    if HELD_LABEL in record.labels:
        # What an erasure holds waits for someone who may erase it (as for a vote): it is
        # nobody else's to retract, nor to know of.
        raise ctx.missing(op.id)
    held = _active_descendants(ctx, [record.id])
    ctx.facts.record_ids = [record.id] + [r.id for r in held]
    verdict = Verdict(validator=SELF_RETRACTION if ctx.principal_id == record.writer else _decided(RETRACTION, ctx),
                      outcome=Outcome.REJECT, reason=f"retracted by {ctx.principal_id}")
    ctx.learn(record, [verdict], stored=True)
    tainted = relabel(held, Status.QUARANTINED, {"tainted_by": record.id})
    # Descendants are held wherever they live, but the caller is told only of those it may
    # know of now: the ones it may review (an id is a hash of writer, namespace and content).
    named = [new.id for new, _ in tainted.changes if ctx.allows("approve", new)]
    return named, [relabel([record], Status.FORGOTTEN, {"forgotten": "retracted"}), tainted]


def _decided(verdict: str, ctx: OpContext) -> str:
    """A decision's verdict name: as people's (kept first by the lesson cache) from a user's
    own session, otherwise marked as an agent's (ranked with validators')."""
    return verdict if ctx.binding.source is Source.USER else verdict + BY_AGENT


RETRACT = Handler(need=lambda op, ctx: OnRecord(op.id, "approve", frozenset({Status.ACTIVE, Status.QUARANTINED})),
                  run=_run_retract)


def _run_review(op: ReviewOp, got: Found, ctx: OpContext) -> tuple[ReviewResult, list[Effect]]:
    record = got.record
    if record.status is not Status.QUARANTINED or HELD_LABEL in record.labels:
        # Nothing awaits review under this id, whatever else is there: a record an erasure
        # holds waits for someone who may erase it, never for votes.
        raise ctx.missing(op.id)
    ctx.facts.record_ids = [record.id]
    voter = ctx.principal_id
    if voter == record.writer:
        raise AccessDenied(f"{voter!r} wrote {record.id!r} and may not review it")
    if (ctx.now - record.created_at).total_seconds() >= ctx.settings.review_timeout:
        raise InvalidRequest(f"the review window of {record.id!r} has closed; it counts as rejected")
    older = ctx.view.stored(record.supersedes, record.namespace) if record.supersedes else None
    if op.approve and older is not None and older.status is not Status.ACTIVE:
        # Released, it would stand beside the version that replaced its predecessor: two
        # current versions of one memory (or a forgotten memory back with new text).
        raise InvalidRequest(f"{record.id!r} updates a version that is no longer current; it can only be rejected")
    takes_key = older is not None and record.key is not None and older.id == keyed_id(record.namespace, record.key)
    if op.approve and takes_key and older.version + 1 != record.version:
        # Another version of the item was established meanwhile: approving this one would
        # silently undo that change.
        raise InvalidRequest(f"{record.id!r} overwrites a version of key {record.key!r} that is no longer current; "
                             "it can only be rejected")
    # A vote counts only for the content it was cast on.
    digest = content_digest(record.content)
    fresh = record.reviewed == digest
    approvals = set(record.approvals) if fresh else set()
    rejections = set(record.rejections) if fresh else set()
    (approvals if op.approve else rejections).add(voter)
    (rejections if op.approve else approvals).discard(voter)
    quorum = ctx.settings.quorum
    status, labels = Status.QUARANTINED, dict(record.labels)
    if len(approvals) >= quorum:
        status = Status.ACTIVE
    elif len(rejections) >= quorum:
        status, labels["forgotten"] = Status.FORGOTTEN, "rejected"
    ctx.facts.rules.append(f"votes: {len(approvals)} approve, {len(rejections)} reject, quorum {quorum}")
    decided = record.model_copy(update={"approvals": tuple(sorted(approvals)), "rejections": tuple(sorted(rejections)),
                                        "reviewed": digest, "status": status, "labels": labels})
    effects: list[Effect] = [Restate(((decided, record),))]
    if status is Status.ACTIVE and takes_key:
        # An approved overwrite of a keyed item takes over the item's id (reads go by key),
        # then its waiting row goes: stored first, so an interrupt never loses the approved text.
        # It keeps the held row's vectors: they were made from the put's index texts, which
        # the record does not keep (embedding its whole content lost its fields' facets).
        decided = decided.model_copy(update={"id": older.id, "supersedes": None})
        effects = [Store(decided, replacing=older, vectors_of=record.id), Purge((record,))]
    elif status is Status.ACTIVE and older is not None:
        effects.append(retire(older, ctx.now))
    if status is Status.FORGOTTEN:
        # The session that made the quorum names the decision (earlier votes keep no source).
        ctx.learn(decided, [Verdict(validator=_decided(QUORUM, ctx), outcome=Outcome.REJECT,
                                    reason=f"rejected by {len(rejections)} reviewers")], stored=True)
    # A reviewer who may approve but not read learns the outcome, never the content.
    shown = decided if ctx.allows("read", decided) else None
    return ReviewResult(id=record.id, status=status, approvals=decided.approvals, rejections=decided.rejections,
                        quorum=quorum, record=shown), effects


REVIEW = Handler(need=lambda op, ctx: OnRecord(op.id, "approve", frozenset({Status.QUARANTINED}), readers_know=False),
                 run=_run_review)


def _run_sweep(op: SweepOp, scope: ReadScope, ctx: OpContext) -> tuple[int, list[Effect]]:
    now = ctx.now
    cutoff = now.timestamp() - ctx.settings.review_timeout
    gone = any_of([{Meta.STATUS.value: Status.FORGOTTEN.value},
                   all_of([{Meta.STATUS.value: Status.ACTIVE.value}, {Meta.EXPIRES_AT.value: {"$lte": now.timestamp()}}]),
                   all_of([{Meta.STATUS.value: Status.QUARANTINED.value}, {Meta.CREATED_AT.value: {"$lte": cutoff}}])])
    rows = ctx.view.listed(ctx.view.targets(scope), gone, None)
    # Records held for an erasure are not garbage: they wait for someone who may erase them.
    doomed = [r for r in map(from_row, rows) if ctx.allows("admin", r) and HELD_LABEL not in r.labels]
    ctx.facts.record_ids = sorted(r.id for r in doomed)
    ctx.facts.returned = len(doomed)
    return len(doomed), [Purge(tuple(doomed))]


SWEEP = Handler(need=lambda op, ctx: InScope("admin", op.namespace), run=_run_sweep)
