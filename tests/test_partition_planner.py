"""The partition planner against brute force: for random scopes and every partition over a
small alphabet, COVERED / DISJOINT / OUTSIDE are claimed exactly when they hold, and a PARTIAL
partition's filters select exactly the namespaces in scope (and exactly the ones excluded).

Namespaces are enumerated over the labels the patterns use plus one that no pattern uses
("z"): the planner's reasoning is about free label positions taking a label no pattern
names, and "z" is that label, so the enumeration is a complete check, not a sample.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memwarden.policies.engine import Clause, ReadScope
from memwarden.policies.partitions import Coverage, Partition, classify, partition_of, plan
from memwarden.policies.patterns import NamespacePattern

pytestmark = pytest.mark.unit

LABELS = "abc"
ALPHABET = LABELS + "z"
MAX_LEN = 5
NAMESPACES = [tuple(p) for n in range(1, MAX_LEN + 1) for p in itertools.product(ALPHABET, repeat=n)]


def matches(where: dict[str, Any], meta: dict[str, Any]) -> bool:
    """Chroma's reading of a ``where`` filter on one row's metadata (the operators the planner
    and the pushdown use; a missing key satisfies ``$ne`` and nothing else)."""
    if not where:
        return True
    if "$and" in where:
        return all(matches(w, meta) for w in where["$and"])
    if "$or" in where:
        return any(matches(w, meta) for w in where["$or"])
    (key, cond), = where.items()
    value = meta.get(key)
    if not isinstance(cond, dict):
        cond = {"$eq": cond}
    (op, arg), = cond.items()
    if op == "$ne":
        return value != arg
    if value is None:
        return False
    return {"$eq": value == arg, "$gt": value > arg if op == "$gt" else None,
            "$gte": value >= arg if op == "$gte" else None, "$lt": value < arg if op == "$lt" else None,
            "$lte": value <= arg if op == "$lte" else None}[op]


def meta(namespace: tuple[str, ...]) -> dict[str, Any]:
    return {"ns_depth": len(namespace), **{f"ns_{i}": label for i, label in enumerate(namespace)}}


patterns = st.builds(
    lambda labels, deep: NamespacePattern(tuple(labels), deep),
    st.lists(st.sampled_from(LABELS + "*"), min_size=1, max_size=4), st.booleans(),
)
prefixes = st.lists(st.sampled_from(LABELS), max_size=3).map(tuple)
scopes = st.builds(lambda prefix, allow, deny: ReadScope(prefix, tuple(map(Clause, allow)), tuple(map(Clause, deny))),
                   prefixes, st.lists(patterns, max_size=3), st.lists(patterns, max_size=2))


def below(namespace: tuple[str, ...], prefix: tuple[str, ...]) -> bool:
    return namespace[: len(prefix)] == prefix


@settings(max_examples=200, deadline=None)
@given(scope=scopes, depth=st.integers(1, 3))
@pytest.mark.slow
def test_classification_is_exact_against_enumeration(scope: ReadScope, depth: int) -> None:
    members: dict[Partition, list[tuple[str, ...]]] = {}
    for ns in NAMESPACES:
        members.setdefault(partition_of(ns, depth), []).append(ns)
    for target in plan(scope, members):
        rows = members[target.partition]
        assert all(target.partition.holds(ns) for ns in rows)
        region = [ns for ns in rows if below(ns, scope.prefix)]
        inside = [ns for ns in region if scope.contains(ns)]
        if not region:
            expected = Coverage.OUTSIDE
        elif not inside:
            expected = Coverage.DISJOINT
        elif len(inside) == len(rows):
            expected = Coverage.COVERED
        else:
            expected = Coverage.PARTIAL
        assert target.coverage is expected, (target, scope)
        if target.coverage is Coverage.PARTIAL:
            for ns in rows:
                wanted = below(ns, scope.prefix) and scope.contains(ns)
                assert matches(target.where, meta(ns)) == wanted, (ns, target)
                excluded = below(ns, scope.prefix) and not scope.contains(ns)
                assert (target.outside is not None and matches(target.outside, meta(ns))) == excluded, (ns, target)
        if target.coverage is Coverage.DISJOINT:
            assert all(matches(target.outside, meta(ns)) == below(ns, scope.prefix) for ns in rows)


def _scope(prefix: str, allow: list[str], deny: list[str] = ()) -> ReadScope:
    from memwarden.policies.patterns import parse_pattern

    split = tuple(prefix.split("/")) if prefix else ()
    return ReadScope(split, tuple(Clause(parse_pattern(a)) for a in allow), tuple(Clause(parse_pattern(d)) for d in deny))


def test_the_hospital_physician_reads_whole_partitions_unfiltered() -> None:
    scope = _scope("", ["ward3/patients/**", "ward3/notes/**"])
    got = {t.partition: t for t in plan(scope, [
        Partition(("ward3", "patients"), 3), Partition(("ward3", "notes"), 3), Partition(("ward3", "billing"), 3),
        Partition(("ward4", "patients"), 3), Partition(("ward3", "patients"), 2), Partition(("ward3",), 1)])}
    assert got[Partition(("ward3", "patients"), 3)].coverage is Coverage.COVERED
    assert got[Partition(("ward3", "notes"), 3)].coverage is Coverage.COVERED
    assert got[Partition(("ward3", "billing"), 3)].coverage is Coverage.DISJOINT
    assert got[Partition(("ward4", "patients"), 3)].coverage is Coverage.DISJOINT
    # "**" is strictly below: the namespace ward3/patients itself is not readable
    assert got[Partition(("ward3", "patients"), 2)].coverage is Coverage.DISJOINT
    narrowed = classify(_scope("ward3/patients/p12", ["ward3/patients/**"]), Partition(("ward3", "patients"), 3))
    assert narrowed.coverage is Coverage.PARTIAL and narrowed.where == {"ns_2": "p12"}


def test_a_deny_inside_a_partition_becomes_a_selective_residual() -> None:
    target = classify(_scope("", ["home/**"], ["home/kids/*/diary"]), Partition(("home", "kids"), 4))
    assert target.coverage is Coverage.PARTIAL and target.where == {"ns_3": {"$ne": "diary"}}
    assert target.outside == {"ns_3": "diary"}


@pytest.mark.parametrize("condition", [None, "label.sensitivity!=restricted"])
def test_a_conditional_clause_is_never_used_to_claim_coverage(condition: str | None) -> None:
    from memwarden.policies.conditions import parse_condition
    from memwarden.policies.patterns import parse_pattern

    def conditional(pattern: NamespacePattern, text: str | None) -> Clause:
        return Clause(pattern, parse_condition(text) if text else None)

    part = Partition(("ward3", "patients"), 3)
    allow = ReadScope((), (conditional(parse_pattern("ward3/patients/**"), condition),), ())
    assert classify(allow, part).coverage is (Coverage.COVERED if condition is None else Coverage.PARTIAL)
    deny = ReadScope((), (Clause(parse_pattern("ward3/**")),), (conditional(parse_pattern("ward3/patients/*"), condition),))
    assert classify(deny, part).coverage is (Coverage.DISJOINT if condition is None else Coverage.PARTIAL)
    # a plain deny of everything still settles it, whatever a conditional allow says
    both = ReadScope((), (conditional(parse_pattern("ward3/**"), condition),), (Clause(parse_pattern("ward3/*/*")),))
    assert classify(both, part).coverage is Coverage.DISJOINT


def test_a_scope_of_unknown_shape_is_filtered_everywhere() -> None:
    @dataclass(frozen=True)
    class Wider:
        prefix: tuple[str, ...]
        allow: tuple
        deny: tuple
        attributes: Any = None

        @property
        def empty(self) -> bool:
            return not self.allow

    from memwarden.policies.patterns import parse_pattern

    scope = Wider((), (Clause(parse_pattern("ward3/**")),), ())
    target = classify(scope, Partition(("ward3", "patients"), 3))  # type: ignore[arg-type]
    assert target.coverage is Coverage.PARTIAL and target.where
