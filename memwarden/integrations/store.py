"""``GovernedStore``: memwarden as a LangGraph ``BaseStore`` for ``graph.compile(store=...)``.

Every LangGraph store operation becomes memwarden operations run through
``Memory.batch(principal, ...)``, the one governed path (policy, guards, backend, audit). The
store holds nothing but the Memory; it never reaches past it. The principal comes from
:mod:`memwarden.integrations.binding`; with none bound, every operation raises AccessDenied.

How LangGraph's operations map:

- ``put(ns, key, value)``: a keyed WriteOp whose content is the value as canonical JSON.
  Overwriting an existing item needs ``update`` permission as well as ``write``. LangGraph's
  ``ttl`` is in minutes; memwarden's is in seconds.
- ``delete(ns, key)`` (a put of None): a ForgetOp. Deleting an item that does not exist, or that
  the caller may not see, does nothing, as in LangGraph; one it may see but not forget raises.
- ``get(ns, key)``: a GetOp; None when the item is missing or the caller may not read it.
- ``search(prefix, query=, filter=, limit=, offset=)``: a memwarden SearchOp (nearest first with
  a query, storage order without), then LangGraph's ``filter`` on the decoded values.
- ``list_namespaces(prefix=, suffix=, max_depth=)``: a memwarden ListNamespacesOp, then
  LangGraph's match conditions and depth truncation.

Differences from LangGraph's InMemoryStore, all from the governed core: namespaces are
canonicalised (NFKC; at most 8 labels of 128 characters, no "/"), a value is at most 32,768
characters of JSON, TTLs are not refreshed on read (a refresh would be a write the reader may
not be allowed to make), ``index`` is ignored (the whole value is embedded), a search reaches at
most 2,000 records deep, and a search or listing under a prefix where the caller may read
nothing at all raises AccessDenied rather than returning an empty list.
"""

from __future__ import annotations

import asyncio
import json
import math
import operator
import sys
from collections.abc import Iterable, Mapping, Sequence
from itertools import takewhile
from typing import TYPE_CHECKING, Any

from langgraph.store.base import (
    BaseStore, GetOp, Item, ListNamespacesOp, MatchCondition, Op, PutOp, Result, SearchItem, SearchOp,
)

from memwarden.core.errors import InvalidRequest, NotFound
from memwarden.integrations.binding import require_principal
from memwarden.core import ops as mw
from memwarden.core.records import AGENT, MemoryRecord, Principal, SearchHit, keyed_id
from memwarden.core.namespace import Namespace, canonical_label, canonical_namespace

if TYPE_CHECKING:
    from memwarden.memory.memory import Memory

__all__ = ["GovernedStore"]

_ORDERINGS = {"$gt": operator.gt, "$gte": operator.ge, "$lt": operator.lt, "$lte": operator.le}
#: LangGraph's filter operators (InMemoryStore's set).
OPERATORS = frozenset({"$eq", "$ne", *_ORDERINGS})

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

    def __init__(self, memory: Memory) -> None:
        self._memory = memory

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run LangGraph store operations in order as the bound principal; results in order.

        As with ``Memory.batch``, the first failing operation raises and the ones before it
        have taken effect.
        """
        return self._execute(require_principal(), list(ops))

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """``batch`` in a worker thread, so that the event loop is not blocked."""
        # Resolved here, not in the thread, so that a missing binding fails in the caller.
        principal = require_principal()
        return await asyncio.to_thread(self._execute, principal, list(ops))

    def _execute(self, principal: Principal, ops: list[Op]) -> list[Result]:
        results: list[Result] = []
        # Consecutive puts go to the core as one batch, which embeds their values together.
        writes: list[mw.WriteOp] = []
        for op in ops:
            if isinstance(op, PutOp) and op.value is not None:
                writes.append(_write_op(op))
                results.append(None)
                continue
            self._flush(principal, writes)
            results.append(self._run(principal, op))
        self._flush(principal, writes)
        return results

    def _flush(self, principal: Principal, writes: list[mw.WriteOp]) -> None:
        if writes:
            self._memory.batch(principal, writes, binding=AGENT)
            writes.clear()

    def _run(self, principal: Principal, op: Op) -> Result:
        if isinstance(op, GetOp):
            record = self._memory.batch(principal, [mw.GetOp(keyed_id(canonical_namespace(op.namespace), op.key))], binding=AGENT)[0]
            return _item(record) if record is not None else None
        if isinstance(op, SearchOp):
            return self._search(principal, op)
        if isinstance(op, ListNamespacesOp):
            return self._list_namespaces(principal, op)
        if isinstance(op, PutOp):
            return self._delete(principal, op)
        raise InvalidRequest(f"not a LangGraph store operation: {type(op).__name__}")

    def _delete(self, principal: Principal, op: PutOp) -> None:
        rid = keyed_id(canonical_namespace(op.namespace), op.key)
        try:
            self._memory.batch(principal, [mw.ForgetOp(rid)], binding=AGENT)
        except NotFound:
            # LangGraph's delete of a missing item is a no-op; any other invalid request (an
            # unknown principal, say) still surfaces.
            pass

    def _search(self, principal: Principal, op: SearchOp) -> list[SearchItem]:
        _check_window(op.limit, op.offset)
        _check_filter(op.filter)
        prefix = canonical_namespace(op.namespace_prefix, allow_empty=True)
        wanted = op.offset + op.limit
        # offset and limit count store items, while the core pages over all records (unkeyed
        # ones and filtered-out items included), so read from the start and page forward.
        page = min(mw.MAX_K, wanted if not op.filter else max(wanted, _FILTERED_PAGE))
        found: list[SearchItem] = []
        start = 0
        while len(found) < wanted and start <= mw.MAX_K:
            hits = self._memory.batch(principal, [mw.SearchOp(op.query or None, prefix, k=page, offset=start)], binding=AGENT)[0]
            found += _search_items(hits, op.filter)
            if len(hits) < page:
                break
            start += page
            page = min(mw.MAX_K, page * 2)
        return found[op.offset:wanted]

    def _list_namespaces(self, principal: Principal, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        _check_window(op.limit, op.offset)
        if op.max_depth is not None and (isinstance(op.max_depth, bool) or not isinstance(op.max_depth, int)
                                         or op.max_depth < 1):
            raise InvalidRequest(f"max_depth must be a positive integer or None, got {op.max_depth!r}")
        conditions = [_canonical_condition(c) for c in op.match_conditions or ()]
        # The longest literal head of a prefix condition narrows what the core reads (and so
        # what the policy scope is checked against); wildcards are matched here afterwards.
        prefix = max((_literal_head(c.path) for c in conditions if c.match_type == "prefix"), key=len, default=())
        namespaces = self._memory.batch(principal, [mw.ListNamespacesOp(prefix, limit=_ALL)], binding=AGENT)[0]
        matching = [ns for ns in namespaces if all(_matches_condition(c, ns) for c in conditions)]
        if op.max_depth is not None:
            matching = sorted({ns[: op.max_depth] for ns in matching})
        return matching[op.offset: op.offset + op.limit]


def _write_op(op: PutOp) -> mw.WriteOp:
    if not isinstance(op.value, Mapping):
        raise InvalidRequest(f"a store value must be a mapping, got {type(op.value).__name__}")
    try:
        content = json.dumps(dict(op.value), sort_keys=True, ensure_ascii=False)
    except (TypeError, ValueError) as exc:
        raise InvalidRequest(f"a store value must be JSON-serialisable: {exc}") from None
    return mw.WriteOp(content, op.namespace, key=op.key, ttl=_seconds(op.ttl))


def _seconds(ttl_minutes: object) -> float | None:
    if ttl_minutes is None:
        return None
    if isinstance(ttl_minutes, bool) or not isinstance(ttl_minutes, (int, float)) \
            or not math.isfinite(ttl_minutes) or ttl_minutes <= 0:
        raise InvalidRequest(f"ttl must be a positive number of minutes, got {ttl_minutes!r}")
    return ttl_minutes * 60.0


def _value(record: MemoryRecord) -> dict[str, Any]:
    try:
        value = json.loads(record.content)
    except json.JSONDecodeError:
        value = None
    # A keyed record written through Memory.batch rather than this store may hold plain text.
    return value if isinstance(value, dict) else {"content": record.content}


def _item(record: MemoryRecord) -> Item:
    # Each put writes a new version with its own created_at, which is therefore also the
    # time of the last update (InMemoryStore likewise resets both on every put).
    return Item(value=_value(record), key=record.key, namespace=record.namespace,
                created_at=record.created_at, updated_at=record.created_at)


def _search_items(hits: list[SearchHit], filter_by: Mapping[str, Any] | None) -> list[SearchItem]:
    items = []
    for hit in hits:
        record = hit.record
        if record.key is None:  # a plain memory, not a store item
            continue
        value = _value(record)
        if filter_by and not all(_compare(value.get(k), v) for k, v in filter_by.items()):
            continue
        items.append(SearchItem(namespace=record.namespace, key=record.key, value=value,
                                created_at=record.created_at, updated_at=record.created_at, score=hit.score))
    return items


def _check_window(limit: object, offset: object) -> None:
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise InvalidRequest(f"limit must be a positive integer, got {limit!r}")
    if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
        raise InvalidRequest(f"offset must be a non-negative integer, got {offset!r}")


def _check_filter(filter_by: object) -> None:
    """Reject a malformed filter before any record is read, not on the first record it meets."""
    if filter_by is None:
        return
    if not isinstance(filter_by, Mapping):
        raise InvalidRequest(f"filter must be a mapping, got {type(filter_by).__name__}")
    for value in filter_by.values():
        if isinstance(value, Mapping):
            if any(isinstance(k, str) and k.startswith("$") for k in value):
                unknown = sorted(set(map(str, value)) - OPERATORS)
                if unknown:
                    raise InvalidRequest(f"unsupported filter operator(s) {unknown}; "
                                         f"expected {', '.join(sorted(OPERATORS))}")
            else:
                _check_filter(value)


def _compare(item_value: Any, filter_value: Any) -> bool:
    # InMemoryStore's semantics: a mapping of operators, a nested mapping matched field by
    # field, a sequence matched element by element, or plain equality.
    if isinstance(filter_value, Mapping):
        if any(isinstance(k, str) and k.startswith("$") for k in filter_value):
            return all(_apply(item_value, k, v) for k, v in filter_value.items())
        return isinstance(item_value, Mapping) and all(
            _compare(item_value.get(k), v) for k, v in filter_value.items())
    if isinstance(filter_value, (list, tuple)):
        return (isinstance(item_value, (list, tuple)) and len(item_value) == len(filter_value)
                and all(_compare(i, f) for i, f in zip(item_value, filter_value)))
    return item_value == filter_value


def _apply(value: Any, op: str, operand: Any) -> bool:
    if op == "$eq":
        return value == operand
    if op == "$ne":
        return value != operand
    try:
        left, right = float(value), float(operand)
    except (TypeError, ValueError):
        # InMemoryStore raises here; a missing or non-numeric field simply does not match.
        return False
    return _ORDERINGS[op](left, right)


def _canonical_condition(condition: MatchCondition) -> MatchCondition:
    match_type, path = condition
    if match_type not in ("prefix", "suffix"):
        raise InvalidRequest(f"match_type must be 'prefix' or 'suffix', got {match_type!r}")
    if isinstance(path, str) or not isinstance(path, Sequence):
        raise InvalidRequest(f"a match condition path must be a tuple of labels, got {type(path).__name__}")
    return MatchCondition(match_type, tuple(p if p == "*" else canonical_label(p) for p in path))


def _literal_head(path: tuple[str, ...]) -> Namespace:
    return tuple(takewhile(lambda label: label != "*", path))


def _matches_condition(condition: MatchCondition, namespace: Namespace) -> bool:
    path = condition.path
    if len(namespace) < len(path):
        return False
    pairs = zip(namespace, path) if condition.match_type == "prefix" else zip(reversed(namespace), reversed(path))
    return all(p == "*" or label == p for label, p in pairs)
