"""``GovernedStore``: memwarden as a LangGraph ``BaseStore`` for ``graph.compile(store=...)``.

Every LangGraph store operation becomes memwarden operations run through
``Memory.batch(principal, ...)``, the one governed path (policy, guards, backend, audit). The
store holds nothing but the Memory; it never reaches past it. The principal comes from
:mod:`memwarden.integrations.binding`; with none bound, every operation raises AccessDenied.

How LangGraph's operations map:

- ``put(ns, key, value)``: a keyed WriteOp whose content is the value as canonical JSON.
  Overwriting an existing item needs ``update`` permission as well as ``write``. LangGraph's
  ``ttl`` is in minutes; memwarden's is in seconds. ``put`` returns a PutResult, whose ``held``
  says that the item is held for review (:mod:`memwarden.integrations.store_outcomes`).
- ``delete(ns, key)`` (a put of None): a ForgetOp. Deleting an item that does not exist, or that
  the caller may not see, does nothing, as in LangGraph; one it may see but not forget raises.
- ``get(ns, key)``: a GetOp; None when the item is missing or the caller may not read it.
  ``refresh_ttl`` restarts the item's TTL where the caller may update it. Consecutive puts and
  gets of a batch are one core batch, run in order.
- ``search(prefix, filter=, limit=, offset=)`` without a query: one memwarden SearchOp in storage
  order whose ``filter`` (LangGraph's, :mod:`memwarden.core.valuefilter`) the core tests on the
  stored items itself. With a query: SearchOps nearest first, then the filter on the decoded
  values.
- ``list_namespaces(prefix=, suffix=, max_depth=)``: a memwarden ListNamespacesOp, then
  LangGraph's match conditions and depth truncation.

The options (``index``, ``ttl``, ``search``, ``strict``) are in
:mod:`memwarden.integrations.store_options`. Differences from LangGraph's stores, all listed
in docs/langgraph.md, come from the governed core: namespaces are canonicalised (NFKC; at most
8 labels of 128 characters, no "/"), a value is at most 32,768 characters of JSON and has at
most 64 distinct texts at its index fields (each embedded apart, as in LangGraph, the item
scored by its best: :mod:`memwarden.memory.facets`), a search with a query reaches at most
2,000 records deep, and a search or listing under a prefix where the caller may read nothing
at all raises AccessDenied rather than returning an empty list.

Every argument is checked for its type, by the convenience methods (``get``, ``put``,
``search``...) and by ``batch`` alike, and bad input raises InvalidRequest naming the argument:
a key must be a string (LangGraph's ``str(key)`` would turn ``None`` into the key "None"), a
namespace a tuple of labels or an "a/b" string, and LangGraph's own namespace rules (no "."
in a label; no "langgraph" root in ``put``, which ``batch`` allows, as in LangGraph) hold too:
a bad namespace raises InvalidStoreNamespace, an InvalidRequest that is also LangGraph's
InvalidNamespaceError (:mod:`memwarden.integrations.store_namespaces`).
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Iterable, Mapping, Sequence
from itertools import takewhile
from typing import Any

from langgraph.store.base import (
    NOT_PROVIDED, BaseStore, GetOp, IndexConfig, Item, ListNamespacesOp, MatchCondition, Op, PutOp, Result, SearchItem,
    SearchOp, TTLConfig,
)
from langgraph.store.base.embed import get_text_at_path

from memwarden.core.errors import InvalidRequest, NotFound
from memwarden.core.indextext import MAX_INDEX_TEXTS
from memwarden.integrations.binding import require_principal
from memwarden.core.arguments import encodable, iterable_argument, shown
from memwarden.core.records import AGENT, MemoryRecord, Principal, SearchHit, keyed_id
from memwarden.core.namespace import Namespace, canonical_namespace, namespace_text
from memwarden.core import ops as mw
from memwarden.core.valuefilter import check_filter, item_value, matches
from memwarden.integrations.store_namespaces import match_path, put_namespace, store_namespace
from memwarden.integrations.store_options import UNINDEXED, StoreOptions, minutes
from memwarden.integrations.store_outcomes import PutResult, held_error, strict_requested

__all__ = ["GovernedStore"]

# A filter may discard most of a page, so a filtered search asks for at least this many
# records at once rather than creeping forward a few at a time (each page is one audited op).
_FILTERED_PAGE = 100
# ListNamespacesOp's own limit would cut the list before the LangGraph conditions are applied.
_ALL = sys.maxsize


class GovernedStore(BaseStore):
    """A LangGraph ``BaseStore`` in which every operation is governed by memwarden.

    Built by :meth:`Memory.as_store`. It acts as the principal bound in the current context
    (see :mod:`memwarden.integrations.binding`) and raises AccessDenied when there is none.
    """

    # BaseStore.put refuses a ttl unless the store declares support; expiry is the core's.
    supports_ttl = True

    def __init__(self, memory: mw.OpRunner, *, index: IndexConfig | None = None, ttl: TTLConfig | None = None,
                 search: str = "dense", strict: bool = False) -> None:
        self._memory = memory
        self._options = StoreOptions.of(index=index, ttl=ttl, search=search, strict=strict,
                                        embedder=getattr(memory, "embedder", None))
        self._strict = self._options.strict
        # BaseStore's own attributes, read by LangGraph (and by code that inspects a store).
        self.index_config = dict(index) if index is not None else None
        self.ttl_config = dict(ttl) if ttl is not None else None

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run LangGraph store operations in order as the bound principal; results in order
        (None for every put, as in LangGraph: ``put`` itself returns a PutResult).

        As with ``Memory.batch``, the first failing operation raises and the ones before it
        have taken effect. In strict mode a held put raises HeldForReview after the batch.
        """
        return _langgraph_results(self._governed(require_principal(), _operations(ops), self._strict_now()))

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """``batch`` in a worker thread, so that the event loop is not blocked."""
        # Resolved here, not in the thread, so that a missing binding fails in the caller.
        principal, strict = require_principal(), self._strict_now()
        return _langgraph_results(await asyncio.to_thread(self._governed, principal, _operations(ops), strict))

    # The convenience methods build the operation from the arguments as given, for ``batch``
    # to check; BaseStore's own would raise LangGraph's errors (or a TypeError) for bad
    # namespaces and coerce any key with str().

    def get(self, namespace: tuple[str, ...], key: str, *, refresh_ttl: bool | None = None) -> Item | None:
        """The item at ``key`` in ``namespace``, or None (also when the caller may not read it)."""
        return self.batch([_get_op(namespace, key, refresh_ttl)])[0]

    async def aget(self, namespace: tuple[str, ...], key: str, *, refresh_ttl: bool | None = None) -> Item | None:
        """``get``, asynchronously."""
        return (await self.abatch([_get_op(namespace, key, refresh_ttl)]))[0]

    def put(self, namespace: tuple[str, ...], key: str, value: Mapping[str, Any], index: Any = None, *,
            ttl: Any = NOT_PROVIDED) -> PutResult | None:  # type: ignore[override]
        """Store ``value`` at ``key`` in ``namespace`` (``ttl`` in minutes; ``index``: the fields to embed, or False).

        Returns what was stored: ``result.held`` is True when the put is held for review
        (stored, invisible until approved); None for a put of None, which deletes."""
        op = _put_op(namespace, key, value, index, self._ttl(ttl))
        return self._governed(require_principal(), [op], self._strict_now())[0]

    async def aput(self, namespace: tuple[str, ...], key: str, value: Mapping[str, Any], index: Any = None, *,
                   ttl: Any = NOT_PROVIDED) -> PutResult | None:  # type: ignore[override]
        """``put``, asynchronously."""
        principal, strict = require_principal(), self._strict_now()
        ops = [_put_op(namespace, key, value, index, self._ttl(ttl))]
        return (await asyncio.to_thread(self._governed, principal, ops, strict))[0]

    def delete(self, namespace: tuple[str, ...], key: str) -> None:
        """Forget the item at ``key`` in ``namespace`` (nothing happens when there is none)."""
        self.batch([_delete_op(namespace, key)])

    async def adelete(self, namespace: tuple[str, ...], key: str) -> None:
        """``delete``, asynchronously."""
        await self.abatch([_delete_op(namespace, key)])

    def search(self, namespace_prefix: tuple[str, ...], /, *, query: str | None = None,
               filter: dict[str, Any] | None = None, limit: int = 10, offset: int = 0,
               refresh_ttl: bool | None = None) -> list[SearchItem]:
        """Items at or below ``namespace_prefix``: nearest to ``query`` first, or in storage order."""
        return self.batch([_search_op(namespace_prefix, query, filter, limit, offset, refresh_ttl)])[0]

    async def asearch(self, namespace_prefix: tuple[str, ...], /, *, query: str | None = None,
                      filter: dict[str, Any] | None = None, limit: int = 10, offset: int = 0,
                      refresh_ttl: bool | None = None) -> list[SearchItem]:
        """``search``, asynchronously."""
        return (await self.abatch([_search_op(namespace_prefix, query, filter, limit, offset, refresh_ttl)]))[0]

    def list_namespaces(self, *, prefix: Any = None, suffix: Any = None, max_depth: int | None = None,
                        limit: int = 100, offset: int = 0) -> list[tuple[str, ...]]:
        """The namespaces holding items the caller may see, matching ``prefix`` and ``suffix``
        (labels or "*"), cut to ``max_depth``."""
        return self.batch([_list_op(prefix, suffix, max_depth, limit, offset)])[0]

    async def alist_namespaces(self, *, prefix: Any = None, suffix: Any = None, max_depth: int | None = None,
                               limit: int = 100, offset: int = 0) -> list[tuple[str, ...]]:
        """``list_namespaces``, asynchronously."""
        return (await self.abatch([_list_op(prefix, suffix, max_depth, limit, offset)]))[0]

    def _refresh(self, value: object) -> bool:
        # None: the TTL config's refresh_on_read (True without one, as in LangGraph).
        if value is not None and not isinstance(value, bool):
            raise InvalidRequest(f"refresh_ttl must be True, False or None, got {shown(value)}")
        return self._options.refresh_on_read if value is None else value

    def _ttl(self, ttl: object) -> object:
        # As BaseStore.put does: a put that gives no ttl gets the configured default.
        return self._options.default_ttl if ttl is NOT_PROVIDED else ttl

    def _strict_now(self) -> bool:
        return self._strict or strict_requested()

    def _governed(self, principal: Principal, ops: list[Op], strict: bool) -> list[Any]:
        """The results of ``ops`` (a PutResult for each put of a value); strict, a held put
        raises HeldForReview once every operation has run."""
        results = self._execute(principal, ops, strict)
        held = held_error(results) if strict else None
        if held is not None:
            raise held
        return results

    def _execute(self, principal: Principal, ops: list[Op], strict: bool) -> list[Any]:
        results: list[Any] = []
        # Consecutive puts and gets go to the core as one batch, which embeds the puts' values
        # together and stores them in one call; the batch runs its operations in order (a get
        # after a put of its key sees the put), and their results are filled in when it has run.
        pending: list[tuple[int, mw.WriteOp | mw.GetOp]] = []
        for op in ops:
            if isinstance(op, GetOp) or (isinstance(op, PutOp) and op.value is not None):
                try:
                    core = self._core_op(op)
                except InvalidRequest:
                    # As in Memory.batch: the operations before the first failing one take effect.
                    self._flush(principal, pending, results)
                    raise
                pending.append((len(results), core))
                results.append(None)
                continue
            self._flush(principal, pending, results)
            results.append(self._run(principal, op, strict))
        self._flush(principal, pending, results)
        return results

    def _core_op(self, op: GetOp | PutOp) -> mw.WriteOp | mw.GetOp:
        if isinstance(op, GetOp):
            return mw.GetOp(_item_id(op.namespace, op.key), refresh_ttl=self._refresh(op.refresh_ttl))
        return _write_op(op, self._options)

    def _flush(self, principal: Principal, pending: list[tuple[int, mw.WriteOp | mw.GetOp]],
               results: list[Any]) -> None:
        if pending:
            records = self._memory.batch(principal, [core for _, core in pending], binding=AGENT)
            for (at, core), record in zip(pending, records):
                if isinstance(core, mw.WriteOp):
                    results[at] = PutResult.of(record)
                else:
                    results[at] = _item(record) if record is not None else None
            pending.clear()

    def _run(self, principal: Principal, op: Op, strict: bool) -> Result:
        if isinstance(op, SearchOp):
            return self._search(principal, op)
        if isinstance(op, ListNamespacesOp):
            return self._list_namespaces(principal, op)
        if isinstance(op, PutOp):
            return self._delete(principal, op, strict)
        raise InvalidRequest(f"not a LangGraph store operation: {type(op).__name__}")

    def _delete(self, principal: Principal, op: PutOp, strict: bool) -> None:
        rid = _item_id(op.namespace, op.key)
        try:
            self._memory.batch(principal, [mw.ForgetOp(rid)], binding=AGENT)
        except NotFound:
            # LangGraph's delete of a missing item is a no-op; any other invalid request (an
            # unknown principal, say) still surfaces. Strict, the caller hears that nothing was
            # deleted, in words that are the same for a missing item and a hidden one.
            if strict:
                raise NotFound(f"nothing deleted: no item {op.key!r} in "
                               f"{namespace_text(canonical_namespace(op.namespace))!r} that you may see") from None

    def _search(self, principal: Principal, op: SearchOp) -> list[SearchItem]:
        _check_window(op.limit, op.offset)
        check_filter(op.filter)
        refresh = self._refresh(op.refresh_ttl)
        prefix = store_namespace(op.namespace_prefix, "namespace_prefix", allow_empty=True)
        # "" asks for no query, as in LangGraph; any other non-string is refused by the core.
        query = None if op.query is None or op.query == "" else op.query
        page_found = (self._listed(principal, prefix, op) if query is None
                      else self._ranked(principal, prefix, query, op))
        if refresh:
            # Only what the caller is given restarts its clock, not every row the core read
            # to find it: one governed get per returned item that has a TTL.
            renew = [mw.GetOp(hit.record.id, refresh_ttl=True) for hit, _ in page_found if hit.record.expires_at]
            if renew:
                self._memory.batch(principal, renew, binding=AGENT)
        return [item for _, item in page_found]

    def _listed(self, principal: Principal, prefix: Namespace, op: SearchOp) -> list[tuple[SearchHit, SearchItem]]:
        """A search without a query: the core lists store items and tests the filter itself
        (an empty one still keeps to store items), so offset and limit are the core's."""
        found: list[tuple[SearchHit, SearchItem]] = []
        while len(found) < op.limit:
            k = min(mw.MAX_K, op.limit - len(found))
            search = mw.SearchOp(None, prefix, k=k, offset=op.offset + len(found), mode=self._options.search,
                                 filter=dict(op.filter or {}))
            hits = self._memory.batch(principal, [search], binding=AGENT)[0]
            found += _search_items(hits, None, self._options)
            if len(hits) < k:
                break
        return found

    def _ranked(self, principal: Principal, prefix: Namespace, query: str,
                op: SearchOp) -> list[tuple[SearchHit, SearchItem]]:
        """A search with a query: ranked pages of records, filtered here, read from the start."""
        wanted = op.offset + op.limit
        # offset and limit count store items, while the core pages over all records (unkeyed
        # ones and filtered-out items included), so read from the start and page forward.
        page = min(mw.MAX_K, wanted if not op.filter else max(wanted, _FILTERED_PAGE))
        found: list[tuple[SearchHit, SearchItem]] = []
        # Items put with index=False are never ranked by a query: as in LangGraph, they follow
        # the ranked ones, without a score, when those do not fill the page.
        unranked: list[tuple[SearchHit, SearchItem]] = []
        start = 0
        exhausted = False
        while len(found) < wanted and start <= mw.MAX_K:
            search = mw.SearchOp(query, prefix, k=page, offset=start, mode=self._options.search)
            hits = self._memory.batch(principal, [search], binding=AGENT)[0]
            for hit, item in _search_items(hits, op.filter, self._options):
                (unranked if UNINDEXED in hit.record.labels else found).append((hit, item))
            if len(hits) < page:
                exhausted = True
                break
            start += page
            page = min(mw.MAX_K, page * 2)
        if exhausted:
            found += [(hit, _unscored(item)) for hit, item in unranked]
        return found[op.offset:wanted]

    def _list_namespaces(self, principal: Principal, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        _check_window(op.limit, op.offset)
        if op.max_depth is not None and (isinstance(op.max_depth, bool) or not isinstance(op.max_depth, int)
                                         or op.max_depth < 1):
            raise InvalidRequest(f"max_depth must be a positive integer or None, got {op.max_depth!r}")
        conditions = [_canonical_condition(c, f"match_conditions[{i}]") for i, c in enumerate(iterable_argument(
            op.match_conditions or (), "match_conditions", of="MatchCondition(match_type, path) pairs"))]
        # The longest literal head of a prefix condition narrows what the core reads (and so
        # what the policy scope is checked against); wildcards are matched here afterwards.
        prefix = max((_literal_head(c.path) for c in conditions if c.match_type == "prefix"), key=len, default=())
        namespaces = self._memory.batch(principal, [mw.ListNamespacesOp(prefix, limit=_ALL)], binding=AGENT)[0]
        matching = [ns for ns in namespaces if all(_matches_condition(c, ns) for c in conditions)]
        if op.max_depth is not None:
            matching = sorted({ns[: op.max_depth] for ns in matching})
        return matching[op.offset: op.offset + op.limit]


def _langgraph_results(results: list[Any]) -> list[Result]:
    # LangGraph's batch result for a put is None; the PutResult is ``put``'s own extension.
    return [None if isinstance(r, PutResult) else r for r in results]


def _operations(ops: object) -> list[Op]:
    if isinstance(ops, (GetOp, PutOp, SearchOp, ListNamespacesOp)):
        raise InvalidRequest(f"ops must be an iterable of operations, got one {type(ops).__name__}: put it in a list")
    items = iterable_argument(ops, "ops", of="LangGraph store operations")
    for i, op in enumerate(items):
        if not isinstance(op, (GetOp, PutOp, SearchOp, ListNamespacesOp)):
            raise InvalidRequest(f"ops[{i}] is not a LangGraph store operation: {shown(op)}")
    return items


def _key(value: object) -> str:
    if not isinstance(value, str):
        raise InvalidRequest(f"key must be a string, got {type(value).__name__}")
    if len(value) > mw.MAX_KEY_CHARS:
        raise InvalidRequest(f"key is {len(value)} characters long; the limit is {mw.MAX_KEY_CHARS}")
    return encodable(value, "key")


def _item_id(namespace: object, key: object) -> str:
    return keyed_id(store_namespace(namespace, "namespace"), _key(key))




def _get_op(namespace: object, key: object, refresh_ttl: object) -> GetOp:
    return GetOp(namespace, key, refresh_ttl)  # type: ignore[arg-type] - checked by batch


def _put_op(namespace: object, key: object, value: object, index: object, ttl: object) -> PutOp:
    put_namespace(namespace)  # put's own rule (the reserved root); batch checks the rest
    return PutOp(namespace, key, value, index, None if ttl is NOT_PROVIDED else ttl)  # type: ignore[arg-type]


def _delete_op(namespace: object, key: object) -> PutOp:
    return PutOp(namespace, key, None, None, None)  # type: ignore[arg-type]


def _search_op(prefix: object, query: object, filter_by: object, limit: object, offset: object,
               refresh_ttl: object) -> SearchOp:
    return SearchOp(prefix, filter_by, limit, offset, query, refresh_ttl)  # type: ignore[arg-type]


def _list_op(prefix: object, suffix: object, max_depth: object, limit: object, offset: object) -> ListNamespacesOp:
    conditions = tuple(MatchCondition(kind, match_path(path, kind)) for kind, path in (("prefix", prefix), ("suffix", suffix))
                       if path is not None and path != ())
    return ListNamespacesOp(conditions, max_depth, limit, offset)  # type: ignore[arg-type]


def _index(value: object) -> None:
    if value is None or value is False:
        return
    if not isinstance(value, list) or not all(isinstance(path, str) for path in value):
        raise InvalidRequest(f"index must be None, False or a list of field paths, got {shown(value)}")


def _write_op(op: PutOp, options: StoreOptions) -> mw.WriteOp:
    namespace, key = store_namespace(op.namespace, "namespace"), _key(op.key)
    _index(op.index)
    if not isinstance(op.value, Mapping):
        raise InvalidRequest(f"a store value must be a mapping, got {type(op.value).__name__}")
    try:
        content = json.dumps(dict(op.value), sort_keys=True, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError) as exc:
        raise InvalidRequest(f"a store value must be JSON-serialisable: {exc}") from None
    # Checked here so that the error names the value, not the content the core would see.
    if len(content) > mw.MAX_CONTENT_CHARS:
        raise InvalidRequest(f"a store value is {len(content)} characters as JSON; the limit is {mw.MAX_CONTENT_CHARS}")
    encodable(content, "a store value")
    fields = op.index or options.fields
    texts = () if op.index is False else _index_texts(op.value, fields)
    # Nothing to embed at the fields asked for is an item no query ranks, as index=False is.
    labels = {UNINDEXED: "true"} if not texts else {}
    # The whole value alone is the content, which is embedded when no texts are given.
    index_text = texts if texts and texts != (content,) else None
    return mw.WriteOp(content, namespace, key=key, ttl=_seconds(op.ttl), labels=labels, index_text=index_text)


def _index_texts(value: Mapping[str, Any], fields: Sequence[str]) -> tuple[str, ...]:
    """What is embedded for ``value``, each text apart, as LangGraph's stores embed it: every
    text at every index path (LangGraph's own path reader: "$" or "" is the whole value as
    JSON, ``a[*].b`` may give several texts), in order, each once; blank texts are left out.
    InvalidRequest beyond MAX_INDEX_TEXTS."""
    texts = tuple(dict.fromkeys(text for path in fields for text in get_text_at_path(dict(value), path)
                                if text.strip()))
    if len(texts) > MAX_INDEX_TEXTS:
        raise InvalidRequest(f"a store value has {len(texts)} distinct texts at its index fields {list(fields)}; "
                             f"the limit is {MAX_INDEX_TEXTS} per item: index fewer paths, or put index=False")
    return texts


def _seconds(ttl_minutes: object) -> float | None:
    return None if ttl_minutes is None else minutes(ttl_minutes, "ttl") * 60.0


def _value(record: MemoryRecord) -> dict[str, Any]:
    return item_value(record.content)


def _item(record: MemoryRecord) -> Item:
    # Each put writes a new version with its own created_at, which is therefore also the
    # time of the last update (InMemoryStore likewise resets both on every put).
    return Item(value=_value(record), key=record.key, namespace=record.namespace,
                created_at=record.created_at, updated_at=record.created_at)


def _search_items(hits: list[SearchHit], filter_by: Mapping[str, Any] | None,
                  options: StoreOptions) -> list[tuple[SearchHit, SearchItem]]:
    items = []
    for hit in hits:
        record = hit.record
        if record.key is None:  # a plain memory, not a store item
            continue
        value = _value(record)
        if not matches(value, filter_by):
            continue
        items.append((hit, SearchItem(namespace=record.namespace, key=record.key, value=value,
                                      created_at=record.created_at, updated_at=record.created_at,
                                      score=options.score(hit))))
    return items


def _unscored(item: SearchItem) -> SearchItem:
    return SearchItem(namespace=item.namespace, key=item.key, value=item.value, created_at=item.created_at,
                      updated_at=item.updated_at, score=None)


def _check_window(limit: object, offset: object) -> None:
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise InvalidRequest(f"limit must be a positive integer, got {limit!r}")
    if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
        raise InvalidRequest(f"offset must be a non-negative integer, got {offset!r}")


def _canonical_condition(condition: object, what: str) -> MatchCondition:
    if not isinstance(condition, tuple) or len(condition) != 2:
        raise InvalidRequest(f"{what} must be a MatchCondition(match_type, path), got {shown(condition)}")
    match_type, path = condition
    if match_type not in ("prefix", "suffix"):
        raise InvalidRequest(f"{what}: match_type must be 'prefix' or 'suffix', got {shown(match_type)}")
    return MatchCondition(match_type, match_path(path, f"{what} path"))


def _literal_head(path: tuple[str, ...]) -> Namespace:
    return tuple(takewhile(lambda label: label != "*", path))


def _matches_condition(condition: MatchCondition, namespace: Namespace) -> bool:
    path = condition.path
    if len(namespace) < len(path):
        return False
    pairs = zip(namespace, path) if condition.match_type == "prefix" else zip(reversed(namespace), reversed(path))
    return all(p == "*" or label == p for label, p in pairs)
