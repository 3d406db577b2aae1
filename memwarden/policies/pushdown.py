"""Read-filter pushdown: a policy scope turned into a Chroma ``where`` filter.

The filter is built from the same allow and deny patterns the enforcer uses, label by label
on the ``ns_i`` metadata keys, so unauthorised records are excluded inside the store and
never reach memwarden's process. Every result is still re-checked by the enforcer afterwards.
"""

from __future__ import annotations

from typing import Any

from memwarden.policies.engine import ReadScope
from memwarden.policies.namespace import Namespace
from memwarden.policies.patterns import ONE, NamespacePattern

Where = dict[str, Any]


def all_of(conditions: list[Where]) -> Where:
    """Conjunction in Chroma's dialect ($and needs two or more operands; none means 'true')."""
    conditions = [c for c in conditions if c]
    if not conditions:
        return {}
    return conditions[0] if len(conditions) == 1 else {"$and": conditions}


def any_of(conditions: list[Where]) -> Where:
    """Disjunction in Chroma's dialect; callers never pass an empty list (that is 'false')."""
    if not conditions:
        raise ValueError("an empty disjunction matches nothing; decide that before filtering")
    return conditions[0] if len(conditions) == 1 else {"$or": conditions}


def prefix_filter(prefix: Namespace) -> Where:
    """Records at or below ``prefix``."""
    if not prefix:
        return {}
    conds: list[Where] = [{f"ns_{i}": label} for i, label in enumerate(prefix)]
    conds.append({"ns_depth": {"$gte": len(prefix)}})
    return all_of(conds)


def _depth(pattern: NamespacePattern) -> Where:
    n = len(pattern.labels)
    return {"ns_depth": {"$gt": n}} if pattern.deep else {"ns_depth": n}


def pattern_filter(pattern: NamespacePattern) -> Where:
    """Records whose namespace matches ``pattern``."""
    conds = [{f"ns_{i}": label} for i, label in enumerate(pattern.labels) if label != ONE]
    return all_of(conds + [_depth(pattern)])


def not_pattern_filter(pattern: NamespacePattern) -> Where:
    """Records whose namespace does not match ``pattern`` (De Morgan over its conditions).

    Chroma's ``$ne`` also matches rows that lack the key, which is what a shallower
    namespace needs: it cannot equal a label at a depth it does not have.
    """
    n = len(pattern.labels)
    depth_miss = {"ns_depth": {"$lte": n}} if pattern.deep else {"ns_depth": {"$ne": n}}
    conds = [{f"ns_{i}": {"$ne": label}} for i, label in enumerate(pattern.labels) if label != ONE]
    return any_of(conds + [depth_miss])


def scope_filter(scope: ReadScope) -> Where:
    """The filter equivalent to ``scope.contains`` (the caller ensures the scope is not empty)."""
    return all_of(
        [prefix_filter(scope.prefix), any_of([pattern_filter(p) for p in scope.allow])]
        + [not_pattern_filter(p) for p in scope.deny]
    )


def outside_scope_filter(scope: ReadScope) -> Where:
    """Records at or below the prefix that the scope excludes (used only to count them)."""
    if scope.empty:
        return prefix_filter(scope.prefix)
    excluded = [all_of([not_pattern_filter(p) for p in scope.allow])] + [pattern_filter(p) for p in scope.deny]
    return all_of([prefix_filter(scope.prefix), any_of(excluded)])
