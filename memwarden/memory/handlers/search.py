"""Search: the dense and lexical legs within the caller's scope, fused by reciprocal rank,
every result re-checked before it is returned."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any

from memwarden.core.fields import Meta
from memwarden.core.errors import InvalidRequest
from memwarden.core.ops import SearchOp
from memwarden.core.records import MemoryRecord, SearchHit, Status
from memwarden.core.valuefilter import item_value, matches
from memwarden.guards.contradiction import content_words, find_contradiction
from memwarden.guards.visibility import hidden_filter, visible_filter, visible_metadata
from memwarden.memory.backends import StoredRow
from memwarden.memory.caches import INDEXED_KINDS
from memwarden.memory.codec import from_row
from memwarden.memory.context import OpContext
from memwarden.memory.effects import Effect
from memwarden.memory.handlers.base import Handler
from memwarden.memory.handlers.reads import current, touched
from memwarden.memory.needs import InScope
from memwarden.memory.writers import voice_of
from memwarden.memory.retrieval import SUPERSEDED_WEIGHT, compose, fuse, in_time, time_filter
from memwarden.policies.engine import ReadScope
from memwarden.policies.metafilter import compile_predicate
from memwarden.policies.partitions import Target
from memwarden.policies.pushdown import all_of, any_of, scope_filter

# Candidates a search with a token budget composes from (each leg fetches this many).
_POOL = 20

Ranked = list[tuple[StoredRow, float | None, float | None, float | None]]


def _shown(now: datetime, kinds: dict[str, Any]) -> Callable[[dict[str, Any]], bool]:
    """The test a search applies to stored metadata: visible at ``now``, of ``kinds``."""
    wanted = set(kinds[Meta.KIND]["$in"]) if kinds else None
    stamp = now.timestamp()
    return lambda meta: visible_metadata(meta, stamp) and (wanted is None or meta.get(Meta.KIND) in wanted)


def is_item(key: str | None, content: str, filter_by: Mapping[str, Any]) -> bool:
    """Whether a record (its key and content) is a store item whose value passes ``filter_by``."""
    return key is not None and matches(item_value(content), filter_by)


def _item_test(filter_by: Mapping[str, Any] | None) -> Callable[[dict[str, Any], str], bool] | None:
    """The row test of a search's ``filter`` (None without one), on the stored key and document."""
    if filter_by is None:
        return None
    return lambda meta, document: is_item(meta.get("key"), document, filter_by)


def _may_find(ctx: OpContext, record: MemoryRecord, history: ReadScope | None) -> bool:
    """What a search may return: what the caller sees, and, when the search asks for history,
    superseded versions it may read and see the history of, of a memory it knows (as
    HistoryOp: no version of a memory whose current version was retracted, rejected, evicted
    or forgotten)."""
    if record.status is Status.SUPERSEDED and history is not None:
        return (ctx.alive(record) and ctx.allows("read", record) and ctx.allows("history", record)
                and current(ctx, record, "history") is not None)
    return ctx.sees(record)


def _run(op: SearchOp, scope: ReadScope, ctx: OpContext) -> tuple[list[SearchHit], list[Effect]]:
    now = ctx.now
    history = ctx.scope("history", op.namespace) if op.include_superseded else None
    if history is not None and history.empty:
        history = None
    if history is not None:
        # Earlier versions only where the caller may also see history (as HistoryOp needs).
        alive = any_of([visible_filter(now), all_of([
            {Meta.STATUS.value: Status.SUPERSEDED.value}, {Meta.EXPIRES_AT.value: {"$gt": now.timestamp()}}, scope_filter(history)])])
    else:
        alive = visible_filter(now)
    when = {"as_of": op.as_of, "time_range": op.time_range,
            "created_after": op.created_after, "created_before": op.created_before}
    kinds = {Meta.KIND.value: {"$in": [k.value for k in op.kinds]}} if op.kinds else {}
    rest = all_of([alive, kinds, time_filter(**when)])
    # The policy goes down as a choice of partitions plus their residual filters. When the
    # rest of the filter is visibility and kinds only, which nearly every row passes (the
    # costly case for Chroma's filter), it is tested on the rows that come back; history and
    # time windows go down with it as a filter.
    targets = ctx.view.targets(scope)
    simple = history is None and not any(v is not None for v in when.values())
    shown = _shown(now, kinds) if simple else None
    wanted = max(_POOL, op.k) if op.budget_tokens else op.k
    if op.query is None:
        # A store item's value is inside its document, where no metadata filter reaches: the
        # rows are tested where they are read (the derived index's copies once it is loaded),
        # so k and offset count matching items and nothing is paged out to the caller.
        ranked: Ranked = [(row, None, None, None) for row in ctx.view.listed(
            targets, None if shown else rest, wanted, op.offset, accept=shown, matching=_item_test(op.filter))]
    else:
        where = all_of([rest, scope_filter(scope)])  # the same filter, whole, for the lexical leg
        ranked = _ranked(op, ctx, targets, where, shown, rest, op.offset + wanted)[op.offset:]
    hits: list[SearchHit] = []
    for row, score, similarity, bm25 in ranked:
        record = from_row(row)
        # Defence in depth: the enforcer itself must agree with the pushed-down filter.
        if (record.namespace[: len(op.namespace)] == op.namespace and _may_find(ctx, record, history)
                and (not op.kinds or record.kind in op.kinds) and in_time(record, **when)
                and (op.filter is None or is_item(record.key, record.content, op.filter))):
            hits.append(SearchHit(record=record, score=score, similarity=similarity, bm25=bm25))
        else:
            ctx.facts.rechecked_out += 1
    if op.budget_tokens:
        hits = compose(hits, op.budget_tokens, kinds=op.kinds, limit=op.k)
    if op.consensus:
        hits = _consensus(ctx, hits)
    ctx.facts.returned = len(hits)
    ctx.facts.record_ids = [h.record.id for h in hits]
    if ctx.settings.count_withheld:
        ctx.facts.withheld = _withheld(ctx, targets, kinds)
    return hits, touched([h.record for h in hits], ctx)


def _ranked(op: SearchOp, ctx: OpContext, targets: Sequence[Target], where: dict,
            shown: Callable[[dict[str, Any]], bool] | None, rest: dict, want: int) -> Ranked:
    """Rows for a query, best first, with (score, similarity, bm25), fused by reciprocal
    rank; superseded versions are down-weighted. Nothing outside the caller's scope can enter
    a candidate list: the dense leg searches the planned ``targets``, testing ``shown`` (or
    ``rest``, when there is no ``shown``) on what comes back, the lexical leg takes ``where``,
    the whole filter compiled to SQL."""
    assert op.query is not None
    mode = op.mode
    if mode != "dense" and not ctx.view.has_text_index:
        if mode == "lexical":
            raise InvalidRequest("lexical search needs the lexical index, which only an embedded memory "
                                 "(Memory.open) has; use mode='dense' or 'hybrid' against a server")
        mode, ctx.facts.note = "dense", "no lexical index against a Chroma server: dense leg only"
    ctx.facts.search_mode = mode
    # Each leg fetches as many as are wanted: fusing deeper lists lets records that both legs
    # rank mediocre overtake ones that one leg ranks first, which measured worse on LoCoMo
    # (docs/retrieval.md), and costs the dense leg nothing over a dense search.
    dense: list[tuple[StoredRow, float]] = []
    lexical: list[tuple[str, float]] = []
    if mode != "lexical":
        vector = ctx.embed_query(op.query)
        # History and time windows are tested on the rows that come back too, with Chroma's
        # semantics (policies.metafilter), and go down as a filter only where they refuse too
        # many: the targets stay the scope's, one cached bitmap in the derived index.
        accept = shown if shown is not None else compile_predicate(rest)
        dense = ctx.view.nearest(vector, want, targets, accept=accept, fallback=rest)
        ctx.facts.candidates["dense"] = len(dense)
    if mode != "dense":
        lexical = ctx.view.lexical(op.query, want, where)
        ctx.facts.candidates["lexical"] = len(lexical)
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
        rows |= ctx.view.rows([i for i, _ in ranked if i not in rows])
        ranked = sorted(((i, s * SUPERSEDED_WEIGHT if rows.get(i) and rows[i].metadata.get(Meta.STATUS)
                          == Status.SUPERSEDED.value else s) for i, s in ranked), key=lambda p: -p[1])
    top = ranked[:want]
    # The lexical leg gives ids: rows come from Chroma, the authority, and are re-checked.
    rows |= ctx.view.rows([i for i, _ in top if i not in rows])
    return [(rows[i], s, similarity.get(i), bm25.get(i)) for i, s in top if i in rows]


def _consensus(ctx: OpContext, hits: list[SearchHit]) -> list[SearchHit]:
    """Read-time consensus (A-MemGuard): each hit is compared with the related memories the
    caller may see, those about the same subject that share at least two content words with
    it (comparable statements). Principals vote, not records nor sources (three copies of a
    poison, under as many declared sources, are one voice): a principal is against the hit
    when a strict majority of its comparable records from its most trusted source contradict
    it (:func:`~memwarden.memory.writers.voice_of`), and the hit is contested when a strict
    majority of those principals are against it. Only ids the caller may see are named."""
    judged = []
    for hit in hits:
        record = hit.record
        if record.kind not in INDEXED_KINDS or not record.subjects:
            judged.append(hit)
            continue
        mine = content_words(record.content)
        comparable = [r.record for r in ctx.about(record.subjects)
                      if r.record.id not in (record.id, record.supersedes) and len(r.words & mine) >= 2
                      and ctx.sees(r.record)]
        against = tuple(r.id for r in comparable if find_contradiction(record.content, r.content))
        by_principal: dict[str, list[MemoryRecord]] = {}
        for r in comparable:
            by_principal.setdefault(r.writer, []).append(r)
        votes = [[r.id in against for r in voice_of(said)] for said in by_principal.values()]
        contested = 2 * sum(2 * sum(v) > len(v) for v in votes) > len(votes)
        judged.append(hit.model_copy(update={"contested": contested, "contradicted_by": against}))
    return judged


def _withheld(ctx: OpContext, targets: Sequence[Target], kinds: dict[str, Any]) -> int:
    """Visible records under the searched prefix that the scope excludes, counted by id in the
    partitions the caller may not read, or may read in part: all of their rows (or those the
    residual excludes), less the few that are hidden anyway."""
    total = 0
    for t in targets:
        if t.outside is None:
            continue
        where = all_of([t.outside, kinds])
        total += (ctx.view.count(where, t.partition)
                  - ctx.view.count(all_of([where, hidden_filter(ctx.now)]), t.partition))
    return total


SEARCH = Handler(need=lambda op, ctx: InScope("read", op.namespace), run=_run)
