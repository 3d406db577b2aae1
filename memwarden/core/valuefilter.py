"""LangGraph's ``filter`` argument of ``search``, checked up front and matched on decoded values.

It lives in the core because a filter-only store search is answered inside the governed
path (:class:`memwarden.core.ops.SearchOp` ``filter``), from the stored documents, rather than
by paging records out to the store adapter: the adapter and the search handler read an
item's value and test it with these same functions.

The semantics are those of LangGraph's stores: a key is a field, or a dotted path into nested
mappings (``{"user.access-level": "admin"}``, as the SQLite and Postgres stores read it); a
value is matched exactly, a nested mapping field by field, a list element by element, and a
mapping of operators (``$eq``, ``$ne``, ``$gt``, ``$gte``, ``$lt``, ``$lte``) compares. The
ordering operators compare as numbers; a missing or non-numeric field does not match them
(InMemoryStore raises there). A missing field reads as None, so ``$ne`` matches it, as in
InMemoryStore.
"""

from __future__ import annotations

import json
import math
import operator
from collections.abc import Mapping
from typing import Any

from memwarden.core.errors import InvalidRequest
from memwarden.core.arguments import shown

__all__ = ["OPERATORS", "check_filter", "item_value", "matches"]

_ORDERINGS = {"$gt": operator.gt, "$gte": operator.ge, "$lt": operator.lt, "$lte": operator.le}
#: LangGraph's filter operators.
OPERATORS = frozenset({"$eq", "$ne", *_ORDERINGS})


def check_filter(filter_by: object, where: str = "filter") -> None:
    """Reject a malformed filter before any record is read, not on the first record it meets."""
    if filter_by is None:
        return
    if not isinstance(filter_by, Mapping):
        raise InvalidRequest(f"{where} must be a mapping, got {type(filter_by).__name__}")
    for key, value in filter_by.items():
        if not isinstance(key, str) or not key or any(not part for part in key.split(".")):
            # "Invalid filter key" first: the words LangGraph's SQL stores use for it.
            raise InvalidRequest(f"Invalid {where} key {shown(key)}: it must be a field name or a dotted path of "
                                 "field names")
        if isinstance(value, Mapping) and any(isinstance(k, str) and k.startswith("$") for k in value):
            unknown = sorted(set(map(str, value)) - OPERATORS)
            if unknown:
                raise InvalidRequest(f"unsupported filter operator(s) {unknown} at {where}[{key!r}]; "
                                     f"expected {', '.join(sorted(OPERATORS))}")
        elif isinstance(value, Mapping):
            check_filter(value, f"{where}[{key!r}]")


def item_value(content: str) -> dict[str, Any]:
    """The value of the store item whose stored content is ``content`` (a JSON object), or
    ``{"content": content}`` for a keyed record written as plain text (through Memory.batch)."""
    try:
        value = json.loads(content)
    except (json.JSONDecodeError, RecursionError):
        value = None
    return value if isinstance(value, dict) else {"content": content}


def matches(value: Mapping[str, Any], filter_by: Mapping[str, Any] | None) -> bool:
    """True when the item value ``value`` passes ``filter_by`` (checked by check_filter)."""
    return not filter_by or all(_compare(_at(value, key), wanted) for key, wanted in filter_by.items())


def _at(value: Any, path: str) -> Any:
    for part in path.split("."):
        if not isinstance(value, Mapping):
            return None
        value = value.get(part)
    return value


def _compare(item_value: Any, filter_value: Any) -> bool:
    if isinstance(filter_value, Mapping):
        if any(isinstance(k, str) and k.startswith("$") for k in filter_value):
            return all(_apply(item_value, k, v) for k, v in filter_value.items())
        return isinstance(item_value, Mapping) and all(
            _compare(_at(item_value, k), v) for k, v in filter_value.items())
    if isinstance(filter_value, (list, tuple)):
        return (isinstance(item_value, (list, tuple)) and len(item_value) == len(filter_value)
                and all(_compare(i, f) for i, f in zip(item_value, filter_value)))
    return _same(item_value, filter_value)


def _same(left: Any, right: Any) -> bool:
    # JSON has one number type and distinct booleans: True is not 1 (Python says it is).
    if isinstance(left, bool) or isinstance(right, bool):
        return isinstance(left, bool) and isinstance(right, bool) and left is right
    return left == right


def _apply(value: Any, op: str, operand: Any) -> bool:
    if op == "$eq":
        return _same(value, operand)
    if op == "$ne":
        return not _same(value, operand)
    if isinstance(value, bool) or isinstance(operand, bool):
        return False
    try:
        left, right = float(value), float(operand)
    except (TypeError, ValueError, OverflowError):
        return False
    if math.isnan(left) or math.isnan(right):
        return False
    return _ORDERINGS[op](left, right)
