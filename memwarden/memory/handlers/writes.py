"""Writes: new memories, keyed items (the LangGraph store's put) and updates."""

from __future__ import annotations

from datetime import timedelta

from memwarden.core.errors import AccessDenied, InvalidRequest, WriteRejected
from memwarden.core.namespace import namespace_text
from memwarden.core.ops import EvictOp, UpdateOp, WriteOp
from memwarden.core.schema import HELD_LABEL, LESSONS_NAMESPACE
from memwarden.core.records import SOURCE_ORDER, Kind, MemoryRecord, Source, Status, keyed_id, record_id
from memwarden.guards.directives import classify
from memwarden.guards.validators import shown_text
from memwarden.memory.context import OpContext
from memwarden.memory.effects import Effect, Purge, Restate, Store
from memwarden.memory.handlers.base import Handler
from memwarden.memory.needs import Found, InNamespace, OnRecord
from memwarden.policies.conditions import RecordAttributes
from memwarden.policies.engine import Decision

def _provenance(op: WriteOp, ctx: OpContext) -> tuple[Source, float]:
    """The source and trust a write gets: the binding's, unless the write declares others."""
    return (op.source if op.source is not None else ctx.binding.source,
            op.trust if op.trust is not None else ctx.binding.trust)


def _attributes(op: WriteOp, ctx: OpContext) -> RecordAttributes:
    """What a write rule's condition sees: the record as it will be stored (its text, key
    included, classified: statement or directive, whatever kind was declared), worked out
    once per write."""
    found = ctx.memo.get("attributes")
    if found is None:
        source, _ = _provenance(op, ctx)
        found = ctx.memo["attributes"] = RecordAttributes(op.kind.value, source.value, frozenset(ctx.roles),
                                                          op.labels, classify(shown_text(op.content, op.key)).value)
    return found


def _need_write(op: WriteOp, ctx: OpContext) -> InNamespace | None:
    if ctx.is_core:
        return None  # the core's lessons: see _core_write
    return InNamespace("write", op.namespace, _attributes(op, ctx))


def _core_write(op: WriteOp, ctx: OpContext) -> Decision:
    """The core writes lessons into their reserved namespace, whatever the policy says (it
    never writes anything else); the audit entry names this rule."""
    if op.namespace != LESSONS_NAMESPACE or op.kind is not Kind.LESSON:
        raise AccessDenied("the core writes only lesson records")
    ctx.facts.decision = "allow"
    ctx.facts.rules.append(f"core: lessons in {namespace_text(LESSONS_NAMESPACE)!r}")
    return Decision(True, "write", op.namespace, None)


def _checked(op: WriteOp, ctx: OpContext, attributes: RecordAttributes) -> Decision | None:
    """What a caller's write must pass besides the write decision: claims, parents, tombstones;
    returns the claim's decision, when the write makes one."""
    source, trust = _provenance(op, ctx)
    claim = None
    if SOURCE_ORDER.index(source) < SOURCE_ORDER.index(ctx.binding.source) or trust > ctx.binding.trust:
        # Provenance more trusted than the binding gives is a claim, which needs the right to
        # make it; declaring less (tool output in a user's session) needs none.
        claim = ctx.require("claim", op.namespace, attributes)
    for parent in op.parents:
        if ctx.find(parent) is None:
            raise InvalidRequest(f"parent {parent!r} is not a record visible to {ctx.principal_id!r}")
    erased = ctx.tombstoned(op.subjects, op.namespace, op.content)
    if erased is not None:
        if not op.allow_reingest:
            raise WriteRejected(f"this content about subject {erased!r} was erased; re-ingesting it "
                                "needs allow_reingest=True and erase permission")
        ctx.require("erase", op.namespace, attributes)
    return claim


def _keyed_version(op: WriteOp, ctx: OpContext, existing: MemoryRecord, attributes: RecordAttributes,
                   decision: Decision) -> tuple[int, Decision]:
    """The version a keyed put gets over the row stored under its key (see docs/langgraph.md),
    and the decision its review follows: an item the caller sees, or its own item awaiting
    review, is updated (update on the old and the new record; a review either asks for
    holds); an expired or forgotten one is gone, so the put starts afresh, unless an erasure
    holds it; any other is refused without saying more about it than that the key is taken."""
    own_pending = (existing.status is Status.QUARANTINED and existing.writer == ctx.principal_id
                   and HELD_LABEL not in existing.labels and ctx.alive(existing) and ctx.allows("read", existing))
    if ctx.sees(existing) or own_pending:
        decisions = [decision, ctx.require_on("update", existing), ctx.require("update", op.namespace, attributes)]
        return existing.version + 1, next((d for d in decisions if d.review), decision)
    # A row an erasure holds is not gone, even when forgotten or expired: replacing it would
    # lose it to the erasure that is to finish it.
    if (existing.status is Status.FORGOTTEN or not ctx.alive(existing)) and HELD_LABEL not in existing.labels:
        return 1, decision
    raise AccessDenied(f"{ctx.principal_id!r} may not write key {op.key!r} in {namespace_text(op.namespace)!r}: "
                       "the key holds an item it may not replace")


def _run_write(op: WriteOp, decision: Decision | None, ctx: OpContext) -> tuple[MemoryRecord, list[Effect]]:
    attributes = _attributes(op, ctx)
    ctx.facts.about = list(op.subjects)  # first: a refused write's entry says which subjects too
    if ctx.is_core:
        decision = _core_write(op, ctx)
    else:
        claim = _checked(op, ctx, attributes)
        if claim is not None and claim.review:
            decision = claim  # a claim held for review holds the write
    assert decision is not None
    keyed = op.key is not None
    rid = keyed_id(op.namespace, op.key) if keyed else record_id(ctx.principal_id, op.namespace, op.content)
    ctx.facts.record_ids, ctx.facts.parents = [rid], list(op.parents)
    existing = ctx.view.stored(rid, op.namespace)
    version = 1
    if existing is not None:
        held = HELD_LABEL in existing.labels
        if not keyed and (existing.status is not Status.FORGOTTEN or held):
            ctx.facts.replay = True  # the same writer, place and content: a retry
            # A record an erasure holds is returned as held for review, without saying why:
            # that an erasure reached it is nobody's business but its officer's. Even a
            # forgotten one stays held: writing it again must not make it readable.
            return existing.model_copy(update={
                "labels": {k: v for k, v in existing.labels.items() if k != HELD_LABEL},
                "status": Status.QUARANTINED if held else existing.status}), []
        if keyed:
            version, decision = _keyed_version(op, ctx, existing, attributes, decision)
    now = ctx.now
    lifecycle = ctx.lifecycle(op.namespace, op.kind)
    ttl = op.ttl if op.ttl is not None else lifecycle.ttl
    source, trust = _provenance(op, ctx)
    record = ctx.validate(MemoryRecord(
        id=rid, namespace=op.namespace, content=op.content, kind=op.kind,
        content_class=attributes.content, subjects=op.subjects,
        writer=ctx.principal_id, writer_roles=ctx.roles, source=source, parents=op.parents, created_at=now,
        valid_from=op.valid_from, valid_to=op.valid_to,
        expires_at=now + timedelta(seconds=ttl) if ttl else None, trust=trust, labels=op.labels,
        key=op.key, version=version, half_life=lifecycle.half_life,
        last_access=now if lifecycle.half_life else None,
    ), decision, replaced=existing if keyed else None)
    if keyed and version > 1 and record.status is Status.QUARANTINED and existing.status is Status.ACTIVE:
        return _pending(record, rid, op, ctx)
    if lifecycle.capacity is not None and record.status is Status.ACTIVE:
        ctx.system(EvictOp(op.namespace, rid, lifecycle.capacity, lifecycle.capacity_rule or "cap"))
    if keyed and existing is not None and set(existing.subjects) - set(record.subjects):
        # The overwrite drops a subject: the item's earlier text stays in Chroma's files (its
        # log) under an id an erasure of that subject would no longer reach. So the earlier
        # version is erased physically first, and the new one stored afresh.
        return record, [Purge((existing,)), Store(record, embed_texts=op.index_text)]
    return record, [Store(record, replacing=existing, embed_texts=op.index_text)]


def _pending(record: MemoryRecord, rid: str, op: WriteOp, ctx: OpContext) -> tuple[MemoryRecord, list[Effect]]:
    """A held overwrite of an item in force: the new version waits under an id of its own
    (superseding the item's), so the established value stays what every reader gets until
    reviewers approve the new one (it then takes over the key: see the review handler), and a
    rejection loses nothing. Stored under the item's id, a held put by anyone who may update
    the item would take it out of force at once, and a rejection would lose it for good."""
    pending = record.model_copy(update={"id": record_id(ctx.principal_id, op.namespace, op.content, supersedes=rid),
                                        "supersedes": rid})
    ctx.facts.record_ids = [pending.id]
    before = ctx.view.stored(pending.id, op.namespace)
    if before is not None and HELD_LABEL in before.labels:
        ctx.facts.replay = True  # as for any write an erasure holds (see _run_write)
        return pending, []
    return pending, [Store(pending, replacing=before, embed_texts=op.index_text)]


WRITE = Handler(need=_need_write, run=_run_write)


def _run_update(op: UpdateOp, got: Found, ctx: OpContext) -> tuple[MemoryRecord, list[Effect]]:
    old, before = got.record, got.decision
    if old.key is not None:
        # A keyed item has one id, the one its key names: it changes by a put of the key.
        raise InvalidRequest(f"{old.id!r} is the item of key {old.key!r}; change it by writing that key again "
                             "(Session.write(..., key=...) or the LangGraph store's put), not with update")
    now = ctx.now
    candidate = MemoryRecord(
        id=record_id(ctx.principal_id, old.namespace, op.content, supersedes=old.id),
        namespace=old.namespace, content=op.content, content_class=classify(op.content),
        kind=op.kind if op.kind is not None else old.kind,
        subjects=op.subjects if op.subjects is not None else old.subjects,
        labels=op.labels if op.labels is not None else old.labels,
        # The new text is the updater's: it gets the updater's provenance, never the old one's.
        writer=ctx.principal_id, writer_roles=ctx.roles, source=ctx.binding.source,
        trust=min(old.trust, ctx.binding.trust), parents=old.parents, created_at=now,
        version=old.version + 1, supersedes=old.id, key=old.key,
        # The new version holds from when the old one stops holding (see below).
        valid_from=now if old.valid_from is not None and old.valid_from < now else old.valid_from,
        valid_to=old.valid_to, expires_at=old.expires_at, half_life=old.half_life,
        last_access=now if old.half_life else None,
    )
    # Both versions must be allowed: an update cannot move a record out of (or into) what a
    # condition covers by changing its kind or labels.
    after = ctx.require_on("update", candidate)
    ctx.facts.about = list(candidate.subjects)
    erased = ctx.tombstoned(candidate.subjects, candidate.namespace, candidate.content)
    if erased is not None:
        raise WriteRejected(f"this content about subject {erased!r} was erased; an update cannot re-ingest it")
    new = ctx.validate(candidate, _held_by(ctx, candidate, after, before), replaced=old)
    ctx.facts.record_ids = [new.id, old.id]
    effects: list[Effect] = [Store(new)]
    # A quarantined new version leaves the old one in force until it is approved.
    if new.status is Status.ACTIVE:
        effects.append(retire(old, now))
    return new, effects


def _held_by(ctx: OpContext, candidate: MemoryRecord, *decisions: Decision) -> Decision:
    """The decision an update's review follows: the first of ``decisions`` that asks for
    review, else the review a write of the new version would need. An update establishes new
    text as a write does (the keyed put, an overwrite, asks the write decision too), so a
    review rule on writes (``content=directive``, ``kind=rule``...) cannot be escaped by
    writing something harmless first and updating it into what the rule holds; and a deny rule
    on writes refuses the update (AccessDenied), as it refuses the write."""
    written = ctx.ruling("write", candidate)
    if not written.allowed and written.rule is not None and written.rule.effect == "deny":
        ctx.facts.decided(written)
        raise AccessDenied(f"{ctx.principal_id!r} may not write this new version in "
                           f"{namespace_text(candidate.namespace)!r}, so may not update a record into it: "
                           f"{written.rule_text}", rule=written.rule.text)
    asked = next((d for d in decisions if d.review), None)
    if asked is not None:
        return asked
    return ctx.facts.decided(written) if written.allowed and written.review else decisions[0]


def retire(old: MemoryRecord, now: object) -> Restate:
    """The old version of an update, superseded from ``now``."""
    return Restate(((old.model_copy(update={"status": Status.SUPERSEDED, "valid_to": now}), old),))


UPDATE = Handler(need=lambda op, ctx: OnRecord(op.id, "update"), run=_run_update)
