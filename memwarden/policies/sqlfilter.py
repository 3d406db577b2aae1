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
* An integer-valued key compared (by any operator) with a fractional operand is compared with
  the operand truncated toward zero: ``{"n": 2.5}`` matches n = 2 (a Chroma quirk; memwarden's
  own filters compare integers with integers and times with floats, so it never arises there).
* ``$in``: any of the values (all of one type).
* ``$contains`` on a list-valued key: an element of exactly the operand's type (an int list
  does not contain 1.0); on a scalar key it never matches. ``$not_contains`` is its negation.
* ``$and`` / ``$or``: conjunction and disjunction of sub-filters.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from memwarden.policies.where import FIELD, walk_where

Where = dict[str, Any]

_NUMBER_TYPES = "('integer', 'real')"
_COMPARE = {"$gt": ">", "$gte": ">=", "$lt": "<", "$lte": "<="}


def compile_where(where: Where | None, column: str = "meta",
                  scalars: Mapping[str, str] | None = None) -> tuple[str, list[Any]]:
    """SQL condition and parameters equivalent to Chroma's ``where`` on a JSON ``column``.

    ``scalars`` maps hot keys to columns that hold the key's value when it is a string or a
    number and NULL otherwise (missing, boolean or list), declared without a type so SQLite
    never converts between text and numbers (see :func:`scalar_column`). Comparisons with a
    string or number operand read those columns instead of parsing the JSON, which is an
    order of magnitude faster and means the same.

    An empty or None filter is ``1`` (everything). Raises ValueError for anything outside the
    dialect (unknown operators, keys with characters memwarden never writes, mixed types).
    """
    if not where:
        return "1", []
    params: list[Any] = []
    return _node(where, _Target(column, dict(scalars or {})), params), params


def scalar_column(key: str, column: str = "meta") -> str:
    """The SQL expression a ``scalars`` column must be generated from."""
    if not FIELD.match(key):
        raise ValueError(f"unsupported filter key {key!r}")
    path = f"'$.\"{key}\"'"
    return f"CASE WHEN json_type({column}, {path}) IN {_NUMBER_TYPES} OR json_type({column}, {path}) = 'text' " \
           f"THEN json_extract({column}, {path}) END"


class _Target:
    def __init__(self, column: str, scalars: dict[str, str]) -> None:
        self.column, self.scalars = column, scalars


def _node(where: Where, target: _Target, params: list[Any]) -> str:
    return walk_where(where, both=lambda op, parts: "(" + (" AND " if op == "$and" else " OR ").join(parts) + ")",
                      leaf=lambda key, op, operand: _condition(key, op, operand, target, params))


def _condition(key: str, op: str, operand: Any, target: _Target, params: list[Any]) -> str:
    column = target.column
    path = f"'$.\"{key}\"'"
    typ = f"json_type({column}, {path})"
    val = f"json_extract({column}, {path})"
    scalar = target.scalars.get(key)
    if op in ("$eq", "$ne"):
        cond = _equals(typ, val, scalar, operand, params)
        return cond if op == "$eq" else f"NOT {cond}"
    if op in ("$in", "$nin"):
        if not isinstance(operand, list) or not operand:
            raise ValueError(f"{op} on {key!r} needs a non-empty list, got {operand!r}")
        if len({_type_name(v) for v in operand}) != 1:
            raise ValueError(f"{op} on {key!r} needs values of one type, got {operand!r}")
        cond = "(" + " OR ".join(_equals(typ, val, scalar, v, params) for v in operand) + ")"
        return cond if op == "$in" else f"NOT {cond}"
    if op in _COMPARE:
        if _type_name(operand) != "number":
            raise ValueError(f"{op} on {key!r} needs a number, got {operand!r}")
        if scalar is not None:
            return _number(f"typeof({scalar})", scalar, _COMPARE[op], operand, params)
        return _number(typ, val, _COMPARE[op], operand, params)
    if op in ("$contains", "$not_contains"):
        kind = _type_name(operand)
        if kind == "bool":
            element = "e.type = ?"
            params.append("true" if operand else "false")
        else:
            element = "e.type = ? AND e.value = ?"
            params.extend([{"str": "text", "number": "integer" if isinstance(operand, int) else "real"}[kind], operand])
        cond = f"coalesce({typ} = 'array' AND EXISTS (SELECT 1 FROM json_each({column}, {path}) AS e WHERE {element}), 0)"
        return cond if op == "$contains" else f"NOT {cond}"
    raise ValueError(f"unsupported filter operator {op!r} on {key!r}")


def _equals(typ: str, val: str, scalar: str | None, operand: Any, params: list[Any]) -> str:
    # Every leaf is 0 or 1, never NULL (a missing key makes json_type NULL), so that its
    # negation ($ne, $nin, $not_contains) is true for rows without the key, as in Chroma.
    kind = _type_name(operand)
    if kind == "bool":
        return f"coalesce({typ} = '{'true' if operand else 'false'}', 0)"
    if scalar is not None:
        # An untyped column never converts, so text equals only text and numbers only
        # numbers; NULL stands for missing, boolean or list.
        if kind == "number":
            return _number(f"typeof({scalar})", scalar, "=", operand, params)
        params.append(operand)
        return f"coalesce({scalar} = ?, 0)"
    if kind == "number":
        return _number(typ, val, "=", operand, params)
    params.append(operand)
    return f"coalesce({typ} = 'text' AND {val} = ?, 0)"


def _number(typ: str, val: str, sign: str, operand: float, params: list[Any]) -> str:
    """A numeric comparison. Chroma compares an integer-valued key with a fractional operand
    truncated toward zero (``{"n": {"$gte": 2.5}}`` matches n = 2); so does this."""
    if isinstance(operand, int) or operand.is_integer():
        params.append(operand)
        return f"coalesce({typ} IN {_NUMBER_TYPES} AND {val} {sign} ?, 0)"
    params.extend([int(operand), operand])
    return f"coalesce(({typ} = 'integer' AND {val} {sign} ?) OR ({typ} = 'real' AND {val} {sign} ?), 0)"


def _type_name(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "str"
    raise ValueError(f"filter values must be strings, numbers or booleans, got {value!r}")
