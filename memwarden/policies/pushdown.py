"""Read-filter pushdown: a policy scope turned into a Chroma ``where`` filter.

The filter is built from the same allow and deny clauses the enforcer uses: namespace patterns
label by label on the ``ns_i`` metadata keys, and attribute conditions on ``kind``, ``source``,
``content_class``, ``writer_roles`` and ``lbl_<name>``, all compared as exact strings. So unauthorised records are
excluded inside the store and never reach memwarden's process. Every result is still
re-checked by the enforcer afterwards.

Missing keys: Chroma's ``$ne``, ``$nin`` and ``$not_contains`` match a row that lacks the key,
which is exactly the policy's reading (a record without label ``x`` satisfies ``label.x!=v``;
a writer without roles satisfies ``writer_role!=r``). The filters use no negation operator, so
on a store that read missing keys the other way they would only return fewer rows, never more.
"""

from __future__ import annotations

from typing import Any

from memwarden.core.fields import Meta, label_field, ns_label
from memwarden.core.namespace import Namespace
from memwarden.policies.conditions import CONTENT, KIND, SOURCE, WRITER_ROLE, Condition, Term
from memwarden.policies.engine import Clause, ReadScope
from memwarden.policies.patterns import ONE, NamespacePattern

Where = dict[str, Any]

_DEPTH = Meta.NS_DEPTH.value
#: The field each attribute condition reads (besides writer_role, a list, and label.<name>).
_ATTRIBUTE_FIELDS = {KIND: Meta.KIND.value, SOURCE: Meta.SOURCE.value, CONTENT: Meta.CONTENT_CLASS.value}


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
    conds: list[Where] = [{ns_label(i): label} for i, label in enumerate(prefix)]
    conds.append({_DEPTH: {"$gte": len(prefix)}})
    return all_of(conds)


def _depth(pattern: NamespacePattern) -> Where:
    n = len(pattern.labels)
    return {_DEPTH: {"$gt": n}} if pattern.deep else {_DEPTH: n}


def pattern_filter(pattern: NamespacePattern) -> Where:
    """Records whose namespace matches ``pattern``."""
    conds = [{ns_label(i): label} for i, label in enumerate(pattern.labels) if label != ONE]
    return all_of(conds + [_depth(pattern)])


def _pattern_misses(pattern: NamespacePattern) -> list[Where]:
    """Filters, one of which holds exactly when a namespace does not match ``pattern``.

    Chroma's ``$ne`` also matches rows that lack the key, which is what a shallower
    namespace needs: it cannot equal a label at a depth it does not have.
    """
    n = len(pattern.labels)
    depth_miss = {_DEPTH: {"$lte": n}} if pattern.deep else {_DEPTH: {"$ne": n}}
    return [{ns_label(i): {"$ne": label}} for i, label in enumerate(pattern.labels) if label != ONE] + [depth_miss]


def not_pattern_filter(pattern: NamespacePattern) -> Where:
    """Records whose namespace does not match ``pattern`` (De Morgan over its conditions)."""
    return any_of(_pattern_misses(pattern))


def term_filter(term: Term) -> Where:
    """Records that satisfy one condition term."""
    values = list(term.values)
    if term.attribute == WRITER_ROLE:
        # writer_roles is a list: '=' needs one of the roles in it, '!=' none of them.
        if term.negated:
            return all_of([{Meta.WRITER_ROLES.value: {"$not_contains": v}} for v in values])
        return any_of([{Meta.WRITER_ROLES.value: {"$contains": v}} for v in values])
    key = label_field(term.label) if term.label is not None else _ATTRIBUTE_FIELDS[term.attribute]
    return {key: {"$nin" if term.negated else "$in": values}}


def condition_filter(condition: Condition | None) -> Where:
    """Records that satisfy ``condition`` (every record when it is None)."""
    return all_of([term_filter(t) for t in condition.terms]) if condition is not None else {}


def clause_filter(clause: Clause) -> Where:
    """Records a scope clause covers: its pattern and its condition."""
    return all_of([pattern_filter(clause.pattern), condition_filter(clause.condition)])


def not_clause_filter(clause: Clause) -> Where:
    """Records a scope clause does not cover: the pattern misses, or some term fails."""
    terms = clause.condition.terms if clause.condition is not None else ()
    return any_of(_pattern_misses(clause.pattern) + [term_filter(t.negation()) for t in terms])


def scope_filter(scope: ReadScope) -> Where:
    """The filter equivalent to ``scope.contains`` (the caller ensures the scope is not empty)."""
    return all_of(
        [prefix_filter(scope.prefix), any_of([clause_filter(c) for c in scope.allow])]
        + [not_clause_filter(c) for c in scope.deny]
    )


def outside_scope_filter(scope: ReadScope) -> Where:
    """Records at or below the prefix that the scope excludes (used only to count them)."""
    if scope.empty:
        return prefix_filter(scope.prefix)
    excluded = [all_of([not_clause_filter(c) for c in scope.allow])] + [clause_filter(c) for c in scope.deny]
    return all_of([prefix_filter(scope.prefix), any_of(excluded)])
