"""The same read filter, compiled for SQLite: Chroma's ``where`` dialect as SQL over JSON metadata.

memwarden's lexical index (:mod:`memwarden.memory.lexical`) keeps a copy of every record's flat
metadata as a JSON object. This module turns any filter that :mod:`memwarden.policies.pushdown`
(or the visibility, kind and time filters) builds for Chroma into a SQL condition on that
column, with Chroma's semantics, so that the lexical leg of a search applies exactly the policy
the dense leg does. Compiling the dialect rather than the ReadScope means a new kind of clause
in the pushdown is covered as soon as it is expressed in Chroma's operators; an operator this
compiler does not know raises ValueError, so nothing is ever silently left unfiltered.

Chroma's semantics, as measured on chromadb 1.5.9 and checked by tests/test_sqlfilter.py
against a real collection:

* ``{"k": v}`` / ``$eq``: numbers compare as numbers (1 equals 1.0), strings and booleans only
  to their own type; a list-valued key never equals a scalar; a missing key never matches.
* ``$ne`` and ``$nin`` are the negations: they also match rows without the key.
* ``$gt``, ``$gte``, ``$lt``, ``$lte``: numeric operands only; booleans are not numbers.
* ``$in``: any of the values (all of one type).
* ``$contains`` on a list-valued key: an element of exactly the operand's type (an int list
  does not contain 1.0); on a scalar key it never matches. ``$not_contains`` is its negation.
* ``$and`` / ``$or``: conjunction and disjunction of sub-filters.
"""

from __future__ import annotations

import re
from typing import Any

Where = dict[str, Any]

_KEY = re.compile(r"^[A-Za-z0-9_]+$")
_NUMBER_TYPES = "('integer', 'real')"
_COMPARE = {"$gt": ">", "$gte": ">=", "$lt": "<", "$lte": "<="}


def compile_where(where: Where | None, column: str = "meta") -> tuple[str, list[Any]]:
    """SQL condition and parameters equivalent to Chroma's ``where`` on a JSON ``column``.

    An empty or None filter is ``1`` (everything). Raises ValueError for anything outside the
    dialect (unknown operators, keys with characters memwarden never writes, mixed types).
    """
    if not where:
        return "1", []
    params: list[Any] = []
    return _node(where, column, params), params


def _node(where: Where, column: str, params: list[Any]) -> str:
    if not isinstance(where, dict) or len(where) != 1:
        raise ValueError(f"a filter must have exactly one key or operator, got {where!r}")
    (key, value), = where.items()
    if key in ("$and", "$or"):
        if not isinstance(value, list) or not value:
            raise ValueError(f"{key} needs a non-empty list of filters, got {value!r}")
        joiner = " AND " if key == "$and" else " OR "
        return "(" + joiner.join(_node(part, column, params) for part in value) + ")"
    if key.startswith("$") or not _KEY.match(key):
        raise ValueError(f"unsupported filter key {key!r}")
    if isinstance(value, dict):
        if len(value) != 1:
            raise ValueError(f"a condition on {key!r} must have exactly one operator, got {value!r}")
        (op, operand), = value.items()
    else:
        op, operand = "$eq", value
    return _condition(key, op, operand, column, params)


def _condition(key: str, op: str, operand: Any, column: str, params: list[Any]) -> str:
    path = f"'$.\"{key}\"'"
    typ = f"json_type({column}, {path})"
    val = f"json_extract({column}, {path})"
    if op in ("$eq", "$ne"):
        cond = _equals(typ, val, operand, params)
        return cond if op == "$eq" else f"NOT {cond}"
    if op in ("$in", "$nin"):
        if not isinstance(operand, list) or not operand:
            raise ValueError(f"{op} on {key!r} needs a non-empty list, got {operand!r}")
        if len({_type_name(v) for v in operand}) != 1:
            raise ValueError(f"{op} on {key!r} needs values of one type, got {operand!r}")
        cond = "(" + " OR ".join(_equals(typ, val, v, params) for v in operand) + ")"
        return cond if op == "$in" else f"NOT {cond}"
    if op in _COMPARE:
        if _type_name(operand) != "number":
            raise ValueError(f"{op} on {key!r} needs a number, got {operand!r}")
        params.append(operand)
        return f"({typ} IN {_NUMBER_TYPES} AND {val} {_COMPARE[op]} ?)"
    if op in ("$contains", "$not_contains"):
        kind = _type_name(operand)
        if kind == "bool":
            element = "e.type = ?"
            params.append("true" if operand else "false")
        else:
            element = "e.type = ? AND e.value = ?"
            params.extend([{"str": "text", "number": "integer" if isinstance(operand, int) else "real"}[kind], operand])
        cond = f"({typ} = 'array' AND EXISTS (SELECT 1 FROM json_each({column}, {path}) AS e WHERE {element}))"
        return cond if op == "$contains" else f"NOT {cond}"
    raise ValueError(f"unsupported filter operator {op!r} on {key!r}")


def _equals(typ: str, val: str, operand: Any, params: list[Any]) -> str:
    kind = _type_name(operand)
    if kind == "bool":
        return f"({typ} = '{'true' if operand else 'false'}')"
    params.append(operand)
    if kind == "number":
        return f"({typ} IN {_NUMBER_TYPES} AND {val} = ?)"
    return f"({typ} = 'text' AND {val} = ?)"


def _type_name(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "str"
    raise ValueError(f"filter values must be strings, numbers or booleans, got {value!r}")
