"""Chroma's ``where`` dialect as a tree: one walk of it, which both of its compilers use.

``policies/sqlfilter.py`` compiles a filter to SQL (the audit and policy databases' tables of
records), ``policies/metafilter.py`` to a Python predicate over a row's metadata (the derived
search index). Both must accept and refuse exactly the same filters, so the shape of the tree
(one key per node, ``$and``/``$or`` over a non-empty list, one operator per condition, plain
field names) is checked here once.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

__all__ = ["FIELD", "walk_where"]

#: A field name a filter may test (what Chroma accepts as a metadata key here).
FIELD = re.compile(r"^[A-Za-z0-9_]+$")

T = TypeVar("T")


def walk_where(where: Mapping[str, Any], *, both: Callable[[str, list[T]], T],
               leaf: Callable[[str, str, Any], T]) -> T:
    """Fold the filter ``where``: ``both(op, parts)`` for an ``$and``/``$or`` node (parts in
    order), ``leaf(field, op, operand)`` for a condition (a bare value is ``$eq``).
    ValueError, naming what is wrong, for anything outside the dialect."""
    if not isinstance(where, dict) or len(where) != 1:
        raise ValueError(f"a filter must have exactly one key or operator, got {where!r}")
    (key, value), = where.items()
    if key in ("$and", "$or"):
        if not isinstance(value, list) or not value:
            raise ValueError(f"{key} needs a non-empty list of filters, got {value!r}")
        return both(key, [walk_where(part, both=both, leaf=leaf) for part in value])
    if key.startswith("$") or not FIELD.match(key):
        raise ValueError(f"unsupported filter key {key!r}")
    if isinstance(value, dict):
        if len(value) != 1:
            raise ValueError(f"a condition on {key!r} must have exactly one operator, got {value!r}")
        (op, operand), = value.items()
    else:
        op, operand = "$eq", value
    return leaf(key, op, operand)
