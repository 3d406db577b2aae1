"""Read planning over namespace partitions: which stored partitions a read must look at, and
with which filter.

Records are stored in partitions (one Chroma collection each). A :class:`Partition` holds
every namespace of exactly ``length`` labels that starts with ``prefix``; with partition depth
D, namespace ``n`` lives in ``Partition(n[:D], len(n))``. So a partition is a set of
namespaces a policy pattern can be compared with symbolically, label by label, the same way
the enforcer matches one namespace.

:func:`plan` classifies every partition for a read scope (a request prefix plus allow and
deny patterns):

- ``OUTSIDE``: no namespace of the partition is at or below the request prefix;
- ``DISJOINT``: some are, but the scope excludes every one of them: never queried;
- ``COVERED``: every namespace of the partition is below the prefix and in scope: queried
  with no filter at all (Chroma's unfiltered query is the fast one);
- ``PARTIAL``: queried with ``where``, the residual filter that is exactly the scope on this
  partition (often a single label equality, which costs little because Chroma's filter cost
  grows with the rows it matches).

The classification is exact for plain patterns: within a partition every label position is
either fixed by the partition (and then a pattern label agrees or not) or free, and a free
position takes infinitely many labels. So a pattern restricted to a partition is a "cube", a
set of label equalities on free positions; a union of cubes covers the partition only if one
of them is unconstrained, and a cube lies inside a union of others only if one of those has
a subset of its equalities. ``tests/test_partition_planner.py`` checks it against brute-force
enumeration. Clauses that carry anything besides a namespace pattern (attribute conditions)
are never used to claim coverage: a partition they touch is PARTIAL and filtered with the
full pushdown filter (:func:`memwarden.policies.pushdown.scope_filter`), so correctness never
depends on how conditions are planned. A scope of any other shape is PARTIAL everywhere.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass
from enum import Enum
from functools import lru_cache
from typing import Any

from memwarden.core.fields import ns_label
from memwarden.policies.engine import ReadScope
from memwarden.core.namespace import Namespace
from memwarden.policies.patterns import ONE, NamespacePattern
from memwarden.policies.pushdown import Where, all_of, any_of, outside_scope_filter, scope_filter


@dataclass(frozen=True, slots=True, order=True)
class Partition:
    """Every namespace of exactly ``length`` labels whose first labels are ``prefix``."""

    prefix: Namespace
    length: int

    def holds(self, namespace: Namespace) -> bool:
        """True when ``namespace`` belongs to this partition."""
        return len(namespace) == self.length and namespace[: len(self.prefix)] == self.prefix


def partition_of(namespace: Namespace, depth: int) -> Partition:
    """The partition a record in ``namespace`` is stored in, at partition depth ``depth``."""
    return Partition(tuple(namespace[:depth]), len(namespace))


class Coverage(str, Enum):
    """How a read scope meets one partition."""

    OUTSIDE = "outside"
    DISJOINT = "disjoint"
    PARTIAL = "partial"
    COVERED = "covered"


@dataclass(frozen=True, slots=True)
class Target:
    """One partition's part in a read: its coverage, the filter to query it with (PARTIAL
    only; COVERED needs none) and ``outside``, the filter of its rows below the prefix that
    the scope excludes (used only to count withheld records; None when there are none, and
    ``{}`` when that is every row).

    The filters use the ``ns_i`` metadata keys; within a partition every row has all of them.
    """

    partition: Partition
    coverage: Coverage
    where: Where | None = None
    outside: Where | None = None

    @property
    def searched(self) -> bool:
        """True when a read must query this partition."""
        return self.coverage in (Coverage.COVERED, Coverage.PARTIAL)


# -- a small boolean algebra over Chroma filters, with constants ------------------------------

_TRUE: Where = {}           # Chroma reads an empty filter as "every row"
_FALSE = None               # no row


def _and(terms: Iterable[Where | None]) -> Where | None:
    kept = []
    for t in terms:
        if t is _FALSE:
            return _FALSE
        if t:
            kept.append(t)
    return all_of(kept)


def _or(terms: Iterable[Where | None]) -> Where | None:
    kept = []
    for t in terms:
        if t is _FALSE:
            continue
        if not t:
            return _TRUE
        kept.append(t)
    return any_of(kept) if kept else _FALSE


def _eq(i: int, label: str) -> Where:
    return {ns_label(i): label}


def _ne(i: int, label: str) -> Where:
    # Every row of a partition has ns_0 .. ns_{length-1}, so $ne never meets a missing key here.
    return {ns_label(i): {"$ne": label}}


# -- restricting patterns to a partition ------------------------------------------------------

Cube = dict[int, str]   # label equalities on the free positions of a partition; {} is all of it


def _restrict(partition: Partition, prefix: Namespace) -> tuple[Namespace, bool] | None:
    """The partition's namespaces at or below ``prefix``, as (fixed leading labels, narrowed):
    None when there are none; ``narrowed`` when that is not the whole partition."""
    fixed = partition.prefix
    if len(prefix) <= len(fixed):
        return (fixed, False) if fixed[: len(prefix)] == prefix else None
    if partition.length < len(prefix) or prefix[: len(fixed)] != fixed:
        return None
    return prefix, True


def _cube(pattern: NamespacePattern, fixed: Namespace, length: int) -> Cube | None:
    """``pattern`` on the namespaces of ``length`` labels starting with ``fixed``: None when it
    matches none of them, else the equalities a namespace must meet to match."""
    n = len(pattern.labels)
    if (length <= n) if pattern.deep else (length != n):
        return None
    cube: Cube = {}
    for i, label in enumerate(pattern.labels):
        if label == ONE:
            continue
        if i < len(fixed):
            if label != fixed[i]:
                return None
        else:
            cube[i] = label
    return cube


def _within(small: Cube, big: Cube) -> bool:
    """True when every namespace meeting ``big`` meets ``small`` (small's equalities ⊆ big's)."""
    return all(big.get(i) == label for i, label in small.items())


def _cube_where(cube: Cube) -> Where:
    return _and(_eq(i, label) for i, label in sorted(cube.items()))


def _not_cube_where(cube: Cube) -> Where | None:
    return _or(_ne(i, label) for i, label in sorted(cube.items()))


def _clause_parts(clause: Any) -> tuple[NamespacePattern, bool] | None:
    """(pattern, conditional) of an allow or deny clause, or None for a shape not known here.

    A clause is a bare NamespacePattern, or a dataclass with a ``pattern`` field; any other
    field that is set (an attribute condition) makes it conditional.
    """
    if type(clause) is NamespacePattern:
        return clause, False
    pattern = getattr(clause, "pattern", None)
    if type(pattern) is NamespacePattern and dataclasses.is_dataclass(clause):
        extra = [f.name for f in dataclasses.fields(clause) if f.name != "pattern"]
        return pattern, any(getattr(clause, name) is not None for name in extra)
    return None


_SCOPE_FIELDS = {"prefix", "allow", "deny"}


def _plain_shape(scope: ReadScope) -> bool:
    return (dataclasses.is_dataclass(scope) and {f.name for f in dataclasses.fields(scope)} == _SCOPE_FIELDS
            and all(_clause_parts(c) is not None for c in (*scope.allow, *scope.deny)))


# -- the planner ------------------------------------------------------------------------------


def classify(scope: ReadScope, partition: Partition) -> Target:
    """How ``scope`` meets ``partition`` (see the module docstring)."""
    region = _restrict(partition, scope.prefix)
    if region is None:
        return Target(partition, Coverage.OUTSIDE)
    fixed, narrowed = region
    length = partition.length
    # The prefix labels the partition does not fix itself: selective equalities.
    below = _and(_eq(i, fixed[i]) for i in range(len(partition.prefix), len(fixed)))
    if scope.empty:
        return Target(partition, Coverage.DISJOINT, outside=below)
    if not _plain_shape(scope):
        return Target(partition, Coverage.PARTIAL, _and([below, scope_filter(scope)]),
                      _and([below, outside_scope_filter(scope)]))

    allows: list[Cube] = []
    denies: list[Cube] = []
    conditional = False
    for clauses, cubes in ((scope.allow, allows), (scope.deny, denies)):
        for clause in clauses:
            pattern, has_condition = _clause_parts(clause)
            cube = _cube(pattern, fixed, length)
            if cube is None:
                continue
            if has_condition:
                conditional = True  # it may allow or deny some rows here: never plan with it
            else:
                cubes.append(cube)

    denied_all = any(not d for d in denies)
    if conditional and not denied_all:
        # A conditional clause touches this partition and no plain deny settles it: the full
        # pushdown filter decides, row by row.
        return Target(partition, Coverage.PARTIAL, _and([below, scope_filter(scope)]),
                      _and([below, outside_scope_filter(scope)]))
    if denied_all or all(any(_within(d, a) for d in denies) for a in allows):
        # (also when no allow is left): every allowed namespace here is denied again
        return Target(partition, Coverage.DISJOINT, outside=below)
    if any(not a for a in allows) and not denies and not narrowed:
        return Target(partition, Coverage.COVERED)
    allowed = _or(_cube_where(a) for a in allows)
    denied = _or(_cube_where(d) for d in denies)
    inside = _and([below, allowed, *(_not_cube_where(d) for d in denies)])
    outside = _and([below, _or([_and(_not_cube_where(a) for a in allows), denied])])
    return Target(partition, Coverage.PARTIAL, inside, outside)


def plan(scope: ReadScope, partitions: Iterable[Partition]) -> list[Target]:
    """Every partition classified for ``scope``, in partition order (memoised: the planner is
    a pure function of its arguments, and the same scopes meet the same partitions)."""
    return list(_plan(scope, tuple(sorted(set(partitions)))))


@lru_cache(maxsize=4096)
def _plan(scope: ReadScope, partitions: tuple[Partition, ...]) -> tuple[Target, ...]:
    return tuple(classify(scope, p) for p in partitions)

