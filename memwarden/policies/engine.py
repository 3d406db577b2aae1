"""Policy decisions: pycasbin with the bundled model, a decision cache and read scopes.

Decisions are made by pycasbin's enforcer over the bundled model; the cache in front of it
is keyed by the exact request and is dropped whenever the policy changes, so a cached answer
can never outlive the policy that produced it.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import casbin

from memwarden.policies.loading import (
    PolicyData, PolicyDataAdapter, Rule, bundled_model_path, casbin_fields, read_policy,
)
from memwarden.policies.namespace import Namespace, namespace_text
from memwarden.policies.patterns import NamespacePattern, parse_pattern

Subjects = frozenset[str]

# Bounded so that a caller cycling through namespaces cannot grow memory without limit.
_CACHE_LIMIT = 65_536


@dataclass(frozen=True, slots=True)
class Decision:
    """The answer to one (subjects, action, namespace) question, with the rule that decided."""

    allowed: bool
    action: str
    namespace: Namespace
    rule: Rule | None
    review: bool = False

    @property
    def rule_text(self) -> str:
        """The deciding policy line, or a note that nothing matched (deny by default)."""
        return self.rule.text if self.rule else "no matching rule (deny by default)"

    def explain(self) -> str:
        """One line a human can read: decision, request and deciding rule."""
        verdict = ("review" if self.review else "allow") if self.allowed else "deny"
        return f"{verdict} {self.action} on {namespace_text(self.namespace)!r}: {self.rule_text}"


@dataclass(frozen=True, slots=True)
class Lifecycle:
    """Forgetting defaults that apply to one record (None: not set by policy)."""

    ttl: float | None
    half_life: float | None
    capacity: int | None


@dataclass(frozen=True, slots=True)
class ReadScope:
    """Which namespaces under ``prefix`` the subjects may act on, as allow and deny patterns.

    A namespace is in scope when it is at or below ``prefix``, matches some allow pattern and
    matches no deny pattern: the same rule the enforcer applies, in a form a store can filter on.
    """

    prefix: Namespace
    allow: tuple[NamespacePattern, ...]
    deny: tuple[NamespacePattern, ...]

    @property
    def empty(self) -> bool:
        """True when no namespace under the prefix can be in scope."""
        return not self.allow

    def contains(self, namespace: Namespace) -> bool:
        """Evaluate the scope on one namespace (used to test the pushdown against decisions)."""
        if namespace[: len(self.prefix)] != self.prefix:
            return False
        return any(p.matches(namespace) for p in self.allow) and not any(p.matches(namespace) for p in self.deny)


def _subject_in(rule_subject: str, subjects: Subjects) -> bool:
    return rule_subject in subjects


def _ns_match(namespace: Namespace, pattern_text: str) -> bool:
    return parse_pattern(pattern_text).matches(namespace)


class PolicyEngine:
    """Casbin-backed decisions over canonical namespaces, with caching and hot reload."""

    def __init__(self, source: str | Path | None = None, *, data: PolicyData | None = None) -> None:
        self._source = source
        self._lock = threading.RLock()
        self.version = 0
        self._install(data if data is not None else read_policy(source))

    def _install(self, data: PolicyData) -> None:
        enforcer = casbin.Enforcer(bundled_model_path(), PolicyDataAdapter(data))
        enforcer.add_function("subjectIn", _subject_in)
        enforcer.add_function("nsMatch", _ns_match)
        by_fields = {casbin_fields(r): r for r in data.rules}
        named = {r.subject for r in data.rules} | {l.member for l in data.links} | {l.role for l in data.links}
        with self._lock:
            self._enforcer = enforcer
            self._data = data
            self._by_fields = by_fields
            self._named = frozenset(named)
            self._decisions: dict[tuple, Decision] = {}
            self._subjects: dict[tuple, Subjects] = {}
            self._scopes: dict[tuple, ReadScope] = {}
            self.version += 1

    def reload(self, data: PolicyData | None = None) -> None:
        """Re-read the policy source (or install ``data``); caches are dropped atomically."""
        self._install(data if data is not None else read_policy(self._source))

    @property
    def data(self) -> PolicyData:
        """The validated policy currently in force."""
        return self._data

    def knows(self, principal_id: str, roles: Iterable[str]) -> bool:
        """True when the principal has given roles or is named anywhere in the policy."""
        return bool(tuple(roles)) or principal_id in self._named

    def subjects(self, principal_id: str, roles: tuple[str, ...]) -> Subjects:
        """The principal's id plus the union of its given roles and the policy's ``g`` lines."""
        key = (principal_id, roles)
        cached = self._subjects.get(key)
        if cached is not None:
            return cached
        with self._lock:
            enforcer = self._enforcer
            found = {principal_id, *roles}
            for name in (principal_id, *roles):
                found.update(enforcer.get_implicit_roles_for_user(name))
            result = frozenset(found)
            if len(self._subjects) < _CACHE_LIMIT:
                self._subjects[key] = result
            return result

    def decide(self, subjects: Subjects, action: str, namespace: Namespace) -> Decision:
        """Decide one request; deny by default, deny overrides allow."""
        key = (subjects, action, namespace)
        cached = self._decisions.get(key)
        if cached is not None:
            return cached
        with self._lock:
            allowed, explain = self._enforcer.enforce_ex(subjects, namespace, action)
            rule = self._by_fields.get(tuple(explain)) if explain else None
            review = next((r for r in self._data.rules if r.effect == "review" and r.action == action
                           and r.subject in subjects and r.pattern.matches(namespace)), None) if allowed else None
            decision = Decision(bool(allowed), action, namespace, review or rule, review is not None)
            if len(self._decisions) >= _CACHE_LIMIT:
                self._decisions.clear()
            self._decisions[key] = decision
            return decision

    def lifecycle(self, namespace: Namespace, kind: str) -> Lifecycle:
        """Forgetting defaults for a record: the shortest TTL and half-life and the smallest
        capacity among the matching ``ttl``, ``decay`` and ``cap`` lines (the strictest wins)."""
        def strictest(what: str) -> float | None:
            values = [r.value for r in self._data.lifecycle if r.what == what and r.pattern.matches(namespace)
                      and r.kind in (None, kind)]
            return min(values) if values else None

        cap = strictest("cap")
        return Lifecycle(strictest("ttl"), strictest("decay"), int(cap) if cap is not None else None)

    def scope(self, subjects: Subjects, action: str, prefix: Namespace) -> ReadScope:
        """The allow and deny patterns relevant to ``action`` at or below ``prefix``."""
        key = (subjects, action, prefix)
        cached = self._scopes.get(key)
        if cached is not None:
            return cached
        with self._lock:
            relevant = [
                r for r in self._data.rules
                if r.action == action and r.subject in subjects and r.pattern.may_overlap_prefix(prefix)
            ]
            scope = ReadScope(
                prefix,
                # a review rule allows too (decide says allowed, with review), so it is in scope
                tuple(dict.fromkeys(r.pattern for r in relevant if r.effect != "deny")),
                tuple(dict.fromkeys(r.pattern for r in relevant if r.effect == "deny")),
            )
            if len(self._scopes) >= _CACHE_LIMIT:
                self._scopes.clear()
            self._scopes[key] = scope
            return scope
