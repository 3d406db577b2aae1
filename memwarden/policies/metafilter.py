"""The same read filter, compiled to a Python predicate on a row's flat metadata.

memwarden's derived vector index (:mod:`memwarden.memory.vectorindex`) keeps a copy of every
row's metadata in RAM and turns a read scope into a bitmap of the rows it may see. The rows of
a partly covered partition are selected by the residual ``where`` filter the planner built for
Chroma; this module evaluates that filter, with Chroma's semantics, exactly as
:mod:`memwarden.policies.sqlfilter` does for the lexical leg (see its docstring for the
semantics; ``tests/test_sqlfilter.py`` checks both against a real collection). An operator or
shape outside the dialect raises ValueError when the filter is compiled, so nothing is ever
silently left unfiltered.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from memwarden.policies.sqlfilter import _type_name
from memwarden.policies.where import walk_where

Where = dict[str, Any]
Predicate = Callable[[dict[str, Any]], bool]

_MISSING = object()
_COMPARE: dict[str, Callable[[Any, Any], bool]] = {
    "$gt": lambda a, b: a > b, "$gte": lambda a, b: a >= b,
    "$lt": lambda a, b: a < b, "$lte": lambda a, b: a <= b,
}


def compile_predicate(where: Where | None) -> Predicate:
    """A function of a row's metadata that is True exactly when Chroma's ``where`` selects it.
    An empty or None filter selects everything; ValueError for anything outside the dialect."""
    if not where:
        return lambda meta: True
    return _node(where)


def _node(where: Where) -> Predicate:
    return walk_where(where, both=_both, leaf=_condition)


def _both(op: str, parts: list[Predicate]) -> Predicate:
    if op == "$and":
        return lambda meta: all(p(meta) for p in parts)
    return lambda meta: any(p(meta) for p in parts)


def _condition(key: str, op: str, operand: Any) -> Predicate:
    if op in ("$eq", "$ne"):
        test = _equals(operand)
        return (lambda meta: test(meta.get(key, _MISSING))) if op == "$eq" else \
            (lambda meta: not test(meta.get(key, _MISSING)))
    if op in ("$in", "$nin"):
        if not isinstance(operand, list) or not operand:
            raise ValueError(f"{op} on {key!r} needs a non-empty list, got {operand!r}")
        if len({_type_name(v) for v in operand}) != 1:
            raise ValueError(f"{op} on {key!r} needs values of one type, got {operand!r}")
        tests = [_equals(v) for v in operand]

        def any_equal(meta: dict[str, Any]) -> bool:
            value = meta.get(key, _MISSING)
            return any(t(value) for t in tests)

        return any_equal if op == "$in" else (lambda meta: not any_equal(meta))
    if op in _COMPARE:
        if _type_name(operand) != "number":
            raise ValueError(f"{op} on {key!r} needs a number, got {operand!r}")
        test = _number(_COMPARE[op], operand)
        return lambda meta: test(meta.get(key, _MISSING))
    if op in ("$contains", "$not_contains"):
        kind = _type_name(operand)
        # An element of exactly the operand's type: an int list does not contain 1.0.
        exact = bool if kind == "bool" else (str if kind == "str" else type(operand))

        def contains(meta: dict[str, Any]) -> bool:
            value = meta.get(key, _MISSING)
            return isinstance(value, list) and any(type(e) is exact and e == operand for e in value)

        return contains if op == "$contains" else (lambda meta: not contains(meta))
    raise ValueError(f"unsupported filter operator {op!r} on {key!r}")


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _equals(operand: Any) -> Callable[[Any], bool]:
    kind = _type_name(operand)
    if kind == "bool":
        return lambda value: isinstance(value, bool) and value is operand
    if kind == "str":
        return lambda value: isinstance(value, str) and value == operand
    return _number(lambda a, b: a == b, operand)


def _number(compare: Callable[[Any, Any], bool], operand: float) -> Callable[[Any], bool]:
    """A numeric comparison; an integer-valued key meets a fractional operand truncated toward
    zero, as in Chroma (see :func:`memwarden.policies.sqlfilter._number`)."""
    if isinstance(operand, int) or operand.is_integer():
        return lambda value: _is_number(value) and compare(value, operand)
    truncated = int(operand)
    return lambda value: _is_number(value) and compare(value, truncated if isinstance(value, int) else operand)
