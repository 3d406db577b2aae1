"""Reads of known records: get, history, and the listing of namespaces."""

from __future__ import annotations

from memwarden.core.fields import Meta, ns_label
from memwarden.core.namespace import Namespace
from memwarden.core.ops import GetOp, HistoryOp, ListNamespacesOp
from memwarden.core.records import MemoryRecord, Status
from memwarden.guards.visibility import visible_metadata
from memwarden.memory.codec import from_row
from memwarden.memory.context import OpContext
from memwarden.memory.effects import Effect, Touch
from memwarden.memory.handlers.base import Handler
from memwarden.memory.needs import Found, InScope, OnRecord
from memwarden.policies.engine import ReadScope


def touched(records: list[MemoryRecord], ctx: OpContext, refresh_ttl: bool = False) -> list[Effect]:
    """The decay refresh of records just returned (a use stretches the half-life), and with
    ``refresh_ttl`` the restart of the TTLs the caller may renew."""
    fading = tuple(r for r in records if r.half_life)
    renew = tuple(r for r in records if refresh_ttl and renewable(r, ctx))
    return [Touch(fading, renew)] if fading or renew else []


def renewable(record: MemoryRecord, ctx: OpContext) -> bool:
    """Whether a read with ``refresh_ttl`` restarts ``record``'s TTL: it has one (a decaying
    record's life is its decay's, which every read already refreshes), and the reader may
    update it. Lengthening a record's life is a change: a reader who could not make it by
    writing the record again does not make it by reading."""
    return record.expires_at is not None and record.half_life is None and ctx.allows("update", record)


def _run_get(op: GetOp, got: Found | None, ctx: OpContext) -> tuple[MemoryRecord | None, list[Effect]]:
    ctx.facts.record_ids = [op.id]
    ctx.facts.returned = 0 if got is None else 1
    return (got.record, touched([got.record], ctx, op.refresh_ttl)) if got is not None else (None, [])


GET = Handler(need=lambda op, ctx: OnRecord(op.id, "read", missing_is_none=True), run=_run_get)


def current(ctx: OpContext, target: MemoryRecord, action: str) -> list[MemoryRecord] | None:
    """The versions of ``target``'s memory when the caller knows the memory (its current
    version is visible, and the caller may read it or do ``action`` on it), else None: an id
    of an earlier version names the memory only while the memory itself is there."""
    versions = ctx.view.lineage(target)
    head = next((r for r in reversed(versions) if r.status is not Status.QUARANTINED), target)
    if head.status is not Status.ACTIVE or not ctx.alive(head) \
            or not (ctx.allows("read", head) or ctx.allows(action, head)):
        return None
    return versions


def _run_history(op: HistoryOp, got: Found, ctx: OpContext) -> tuple[list[MemoryRecord], list[Effect]]:
    versions = current(ctx, got.record, "history")
    if versions is None:
        raise ctx.missing(op.id)
    # Expiry and forgetting apply to history exactly as to get; versions may differ in kind
    # and labels, so each one is shown only where the caller holds history on it.
    live = [r for r in versions if r.status in (Status.ACTIVE, Status.SUPERSEDED) and ctx.alive(r)]
    shown = [r for r in live if ctx.allows("history", r)]
    ctx.facts.record_ids = [r.id for r in shown]
    ctx.facts.returned, ctx.facts.withheld = len(shown), len(live) - len(shown)
    return shown, []


HISTORY = Handler(need=lambda op, ctx: OnRecord(op.id, "history", frozenset({Status.ACTIVE, Status.SUPERSEDED}),
                                                versions=True), run=_run_history)


def _run_list(op: ListNamespacesOp, scope: ReadScope, ctx: OpContext) -> tuple[list[Namespace], list[Effect]]:
    now = ctx.now.timestamp()
    targets = ctx.view.targets(scope)
    seen: dict[Namespace, None] = {}

    def unlisted(meta: dict) -> bool:
        return visible_metadata(meta, now) and _listed_as(meta, op.max_depth) not in seen

    def take(rows: list, count: bool) -> bool:
        """List the namespaces of the rows the re-check passes; True when it refused one."""
        refused = False
        for row in rows:
            if _listed_as(row.metadata, op.max_depth) in seen:
                continue
            record = from_row(row)
            # Re-checked like search hits.
            if record.namespace[: len(op.prefix)] == op.prefix and ctx.sees(record):
                seen[record.namespace[: op.max_depth] if op.max_depth else record.namespace] = None
            else:
                refused = True
                ctx.facts.rechecked_out += count
        return refused

    # One record the caller sees lists its namespace, so the store is asked for the first
    # visible row of each (the derived index answers without reading any row out of Chroma).
    # Should the re-check refuse one (it disagrees with the pushed-down scope), every visible
    # row of the namespaces still unlisted is read and re-checked, as without the shortcut.
    if take(ctx.view.listed(targets, None, None, accept=unlisted,
                            distinct=lambda meta: _listed_as(meta, op.max_depth)), count=False):
        take(ctx.view.listed(targets, None, None, accept=unlisted), count=True)
    found = sorted(seen)[op.offset: op.offset + op.limit]
    ctx.facts.returned = len(found)
    return found, []


def _listed_as(metadata: dict, max_depth: int | None) -> Namespace | None:
    """The namespace a stored row would be listed as (None for a row without a readable one,
    which is then rebuilt and re-checked like any other)."""
    try:
        namespace = tuple(metadata[ns_label(i)] for i in range(int(metadata[Meta.NS_DEPTH])))
    except (KeyError, TypeError, ValueError):
        return None
    return namespace[:max_depth] if max_depth else namespace


LIST = Handler(need=lambda op, ctx: InScope("read", op.prefix), run=_run_list)
