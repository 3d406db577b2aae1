"""Policy decisions: pycasbin with the bundled model, a decision cache and read scopes.

Decisions are made by pycasbin's enforcer over the bundled model; the cache in front of it
is keyed by the request (subjects, action, namespace, and the part of the record's attributes
that some rule's condition can tell apart) and is dropped whenever the policy changes, so a
cached answer can never outlive the policy that produced it. A request's subjects are its
principal and its roles, in two name spaces (:mod:`memwarden.policies.subjects`): the enforcer
compares tagged names, so a principal id never matches a role's rule.

A request about a record whose attributes are not (all) known, which only the policy tools
make, is decided fail-closed: a conditional allow counts only if the known attributes satisfy
it whatever the unknown ones are, and a conditional deny counts unless they rule it out.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import casbin
from casbin import persist
from casbin.util import SimpleEval

from memwarden.core.errors import InvalidRequest
from memwarden.policies.conditions import UNKNOWN, Condition, Projection, RecordAttributes, parse_condition
from memwarden.policies.loading import LifecycleRule, PolicyData, Rule, bundled_model_path, read_policy
from memwarden.core.namespace import Namespace, namespace_text
from memwarden.policies.patterns import NamespacePattern, parse_pattern
from memwarden.policies.subjects import PRINCIPAL, ROLE, Names, Subjects

# Bounded so that a caller cycling through namespaces cannot grow memory without limit.
_CACHE_LIMIT = 65_536
# Enforcers narrowed to one set of subjects and one action (see PolicyEngine._narrow).
_NARROWED_LIMIT = 1024


@dataclass(frozen=True, slots=True)
class Decision:
    """The answer to one (subjects, action, namespace, record attributes) question, with the
    rule that decided.

    ``attributes`` is what the asker knew about the record, for ``explain`` (set by
    ``tools.explain``; the engine caches one Decision for every record that the policy's
    conditions cannot tell apart, so it records none). When the attributes were not all known
    and some record could get the opposite answer, ``depends`` is a conditional rule that
    would change it; ``allowed`` is then the fail-closed answer.
    """

    allowed: bool
    action: str
    namespace: Namespace
    rule: Rule | None
    review: bool = False
    attributes: RecordAttributes | None = None
    depends: Rule | None = None

    @property
    def rule_text(self) -> str:
        """The deciding policy line, or a note that nothing matched (deny by default)."""
        return self.rule.text if self.rule else "no matching rule (deny by default)"

    def explain(self) -> str:
        """One line a human can read: decision, request and deciding rule."""
        verdict = ("review" if self.review else "allow") if self.allowed else "deny"
        about = f" for a record with {self.attributes.text}" if self.attributes and self.attributes.text else ""
        line = f"{verdict} {self.action} on {namespace_text(self.namespace)!r}{about}: {self.rule_text}"
        if self.depends is not None:
            line += f"; depends on the record: {self.depends.text} may allow it"
        return line


@dataclass(frozen=True, slots=True)
class Lifecycle:
    """Forgetting defaults that apply to one record (None: not set by policy)."""

    ttl: float | None
    half_life: float | None
    capacity: int | None
    #: The ``cap`` line that sets ``capacity`` (the rule a capacity eviction runs under).
    capacity_rule: str | None = None


@dataclass(frozen=True, slots=True)
class Clause:
    """One allow or deny of a scope: a namespace pattern and, optionally, a condition."""

    pattern: NamespacePattern
    condition: Condition | None = None

    @property
    def text(self) -> str:
        """The pattern, and the condition when there is one (for audit and spans)."""
        return self.pattern.text + (f" if {self.condition.text}" if self.condition is not None else "")

    def applies(self, namespace: Namespace, attrs: RecordAttributes, *, deny: bool) -> bool:
        """True when the clause covers the record; with unknown attributes, a deny clause
        applies unless they rule it out and an allow clause only if they settle it."""
        if not self.pattern.matches(namespace):
            return False
        return _counts(self.condition, attrs, deny=deny, optimistic=False)


@dataclass(frozen=True, slots=True)
class ReadScope:
    """Which records under ``prefix`` the subjects may act on, as allow and deny clauses.

    A record is in scope when its namespace is at or below ``prefix``, some allow clause covers
    it and no deny clause does: the same rule the enforcer applies, in a form a store can filter
    on. Clauses whose condition no record can satisfy are left out.
    """

    prefix: Namespace
    allow: tuple[Clause, ...]
    deny: tuple[Clause, ...]

    @property
    def empty(self) -> bool:
        """True when no record under the prefix can be in scope."""
        return not self.allow

    def contains(self, namespace: Namespace, attributes: RecordAttributes | None = None) -> bool:
        """Evaluate the scope on one record (used to test the pushdown against decisions);
        without attributes, fail-closed like ``PolicyEngine.decide``."""
        if namespace[: len(self.prefix)] != self.prefix:
            return False
        attrs = attributes or UNKNOWN
        return (any(c.applies(namespace, attrs, deny=False) for c in self.allow)
                and not any(c.applies(namespace, attrs, deny=True) for c in self.deny))


def _counts(condition: Condition | None, attrs: RecordAttributes, *, deny: bool, optimistic: bool) -> bool:
    """Whether a rule with this condition counts for the record. When the known attributes do
    not settle the condition, the fail-closed reading counts denies and not allows (and the
    optimistic reading, used only to tell that a decision depends on them, the reverse)."""
    if condition is None:
        return True
    verdict = condition.holds(attrs)
    return (optimistic != deny) if verdict is None else verdict


@dataclass(frozen=True, slots=True)
class EnforceRequest:
    """The record part (``r.rec``) of a Casbin request: the record's attributes, and whether
    conditions that unknown attributes leave open count optimistically (only ever used to
    tell that a fail-closed decision depends on them)."""

    attributes: RecordAttributes
    optimistic: bool = False


def _subject_in(rule_subject: str, subjects: Subjects) -> bool:
    return rule_subject in subjects.tags


def _ns_match(namespace: Namespace, pattern_text: str) -> bool:
    return parse_pattern(pattern_text).matches(namespace)


def _cond_match(request: EnforceRequest, condition_text: str, effect: str) -> bool:
    if not condition_text:
        return True
    return _counts(parse_condition(condition_text), request.attributes, deny=effect == "deny",
                   optimistic=request.optimistic)


# pycasbin parses the matcher with ``ast.parse`` on every enforce call. CPython 3.11's ast
# module keeps its recursion-depth counter in interpreter-wide state, so two threads parsing at
# once can fail with "SystemError: AST constructor recursion depth mismatch" (cpython#106905),
# and Team workers decide in parallel, each on its own engine. So a matcher is parsed once, under
# a process-wide lock, and every call evaluates the same (read-only) tree.
_PARSE_LOCK = threading.Lock()
_PARSED: dict[str, SimpleEval] = {}
_PARSED_LIMIT = 256


def _expression(expr: str, functions: dict | None = None) -> SimpleEval:
    """A fresh evaluator (its own names and functions) over the one parsed tree of ``expr``."""
    parsed = _PARSED.get(expr)
    if parsed is None:
        with _PARSE_LOCK:
            parsed = _PARSED.get(expr)
            if parsed is None:
                parsed = casbin.Enforcer._get_expression(expr)  # the only ast.parse of this matcher
                if len(_PARSED) >= _PARSED_LIMIT:
                    _PARSED.clear()
                _PARSED[expr] = parsed
    evaluator = SimpleEval("", functions)
    evaluator.expr, evaluator.ast_parsed_value = parsed.expr, parsed.ast_parsed_value
    return evaluator


class _Enforcer(casbin.Enforcer):
    """pycasbin's enforcer with its matcher parsed once per process (see ``_expression``)."""

    _get_expression = staticmethod(_expression)


def casbin_fields(rule: Rule, names: Names) -> tuple[str, str, str, str, str]:
    """The rule as Casbin sees it: its subject tagged as a principal or a role (``names``), a
    review rule as an allow (the engine adds the review), no condition as an empty field."""
    return (names.subject(rule), rule.pattern.text, rule.action, "deny" if rule.effect == "deny" else "allow",
            rule.condition.text if rule.condition is not None else "")


class PolicyDataAdapter(persist.Adapter):
    """A read-only pycasbin adapter over already validated PolicyData, with tagged names."""

    def __init__(self, data: PolicyData, names: Names) -> None:
        self.data = data
        self.names = names

    def load_policy(self, model) -> None:  # pycasbin's Model has no public type
        """Load every validated rule and role link into the Casbin model."""
        for rule in self.data.rules:
            model.add_policy("p", "p", list(casbin_fields(rule, self.names)))
        for link in self.data.links:
            model.add_policy("g", "g", list(self.names.link(link)))


def new_enforcer(data: PolicyData, names: Names | None = None) -> casbin.Enforcer:
    """A pycasbin enforcer over the bundled model and ``data``, with memwarden's functions;
    ``names`` says which names are principals (default: those of ``data`` itself).

    Requests are ``(Subjects, namespace, action, EnforceRequest(attributes))``.
    """
    enforcer = _Enforcer(bundled_model_path(), PolicyDataAdapter(data, names or Names.of(data)))
    enforcer.add_function("subjectIn", _subject_in)
    enforcer.add_function("nsMatch", _ns_match)
    enforcer.add_function("condMatch", _cond_match)
    return enforcer


class PolicyEngine:
    """Casbin-backed decisions over canonical namespaces, with caching and hot reload."""

    def __init__(self, source: str | Path | None = None, *, data: PolicyData | None = None) -> None:
        self._source = source
        self._lock = threading.RLock()
        self.version = 0
        self._install(data if data is not None else read_policy(source))

    def _install(self, data: PolicyData) -> None:
        names = Names.of(data)
        enforcer = new_enforcer(data, names)
        by_fields = {casbin_fields(r, names): r for r in data.rules}
        conditions = [r.condition for r in data.rules if r.condition is not None]
        closure = names.closure(data.links)
        with self._lock:
            self._enforcer = enforcer
            self._data = data
            self._names = names
            self._closure = closure
            self._by_fields = by_fields
            self._decisions: dict[tuple, Decision] = {}
            # Read together, without the lock, by decide: a key is only ever looked up in the
            # cache of the projection that made it, even while a reload swaps both.
            self._cache = (Projection(conditions), self._decisions)
            self._subjects: dict[tuple, Subjects] = {}
            self._scopes: dict[tuple, ReadScope] = {}
            self._narrowed: dict[tuple[Subjects, str], casbin.Enforcer] = {}
            self.version += 1

    def reload(self, data: PolicyData | None = None) -> None:
        """Re-read the policy source (or install ``data``); caches are dropped atomically."""
        self._install(data if data is not None else read_policy(self._source))

    @property
    def data(self) -> PolicyData:
        """The validated policy currently in force."""
        return self._data

    @property
    def names(self) -> Names:
        """Which names of the policy in force are principals and which are roles."""
        return self._names

    def knows(self, principal_id: str, roles: Iterable[str]) -> bool:
        """True when the principal has given roles or the policy declares it (a ``g`` line)."""
        return bool(tuple(roles)) or principal_id in self._names.principals

    def require_known(self, principal_id: str, roles: Iterable[str]) -> None:
        """Raise InvalidRequest, saying how to fix it, for a principal with no roles at all."""
        if self.knows(principal_id, roles):
            return
        note = ""
        if principal_id in self._names.roles:
            note = (f"; {principal_id!r} is a role in this policy, and a principal id never holds the role of the "
                    "same name")
        raise InvalidRequest(f"unknown principal {principal_id!r}: it has no roles (none were given, and no g line "
                             f"of the policy gives it one){note}. Give it roles: Principal({principal_id!r}, "
                             f"roles=[...]), --role ROLE on the command line, or a policy line "
                             f"'g, {principal_id}, ROLE'")

    def subjects(self, principal_id: str, roles: tuple[str, ...]) -> Subjects:
        """The principal and its roles: the given roles and everything the policy's ``g``
        lines add to the principal or to those roles, transitively. A given role that the
        policy declares as a principal is refused (InvalidRequest)."""
        key = (principal_id, roles)
        cached = self._subjects.get(key)
        if cached is not None:
            return cached
        with self._lock:
            names, closure = self._names, self._closure
            for role in roles:
                if role in names.principals:
                    link = names.declared_by[role]
                    raise InvalidRequest(
                        f"role {role!r} is a principal in this policy ({link.origin}: 'g, {link.member}, {link.role}' "
                        f"declares it, and no g line gives {role!r} as a role), so it cannot be given as a role")
            # An undeclared principal is in no g line: its own tag adds nothing.
            held = {t for start in (PRINCIPAL + principal_id, *(ROLE + r for r in roles))
                    for t in closure.get(start, {start})}
            result = Subjects(principal_id, frozenset(t[len(ROLE):] for t in held if t.startswith(ROLE)))
            if len(self._subjects) < _CACHE_LIMIT:
                self._subjects[key] = result
            return result

    def rules_for(self, subjects: Subjects, action: str) -> tuple[Rule, ...]:
        """The rules of ``action`` whose subject is the principal or one of its roles."""
        tags = subjects.tags
        return tuple(r for r in self._data.rules if r.action == action and self._names.subject(r) in tags)

    def reduced(self, attributes: RecordAttributes) -> RecordAttributes:
        """What the policy's conditions can tell apart of ``attributes`` (see
        :meth:`~memwarden.policies.conditions.Projection.reduce`): what may be kept of an erased
        record to decide, later, who could have read it."""
        return self._cache[0].reduce(attributes)

    def decide(self, subjects: Subjects, action: str, namespace: Namespace,
               attributes: RecordAttributes | None = None) -> Decision:
        """Decide one request about a record in ``namespace`` with ``attributes`` (None:
        unknown, decided fail-closed); deny by default, deny overrides allow."""
        attrs = attributes or UNKNOWN
        project, decisions = self._cache
        cached = decisions.get((subjects, action, namespace, project(attrs)))
        if cached is not None:
            return cached
        with self._lock:
            project, decisions = self._cache   # the policy in force now, consistent with the enforcer
            key = (subjects, action, namespace, project(attrs))
            allowed, rule, review = self._enforce(subjects, action, namespace, attrs, optimistic=False)
            depends = None
            if not allowed and not project.empty and not attrs.complete:
                could, depends, _ = self._enforce(subjects, action, namespace, attrs, optimistic=True)
                depends = depends if could else None
            decision = Decision(allowed, action, namespace, rule, review, None, depends)
            if len(decisions) >= _CACHE_LIMIT:
                decisions.clear()
            decisions[key] = decision
            return decision

    def _narrow(self, subjects: Subjects, action: str) -> casbin.Enforcer:
        """An enforcer over only the rules of ``subjects`` for ``action`` (called with the lock
        held). The matcher rejects every other rule before anything else (``subjectIn`` and
        ``r.act == p.act``), so it decides exactly as the full enforcer does, without
        evaluating the matcher once per rule of the whole policy (milliseconds per uncached
        decision with a few hundred rules)."""
        key = (subjects, action)
        enforcer = self._narrowed.get(key)
        if enforcer is None:
            enforcer = new_enforcer(PolicyData(self.rules_for(subjects, action), ()), self._names)
            if len(self._narrowed) >= _NARROWED_LIMIT:
                self._narrowed.clear()
            self._narrowed[key] = enforcer
        return enforcer

    def _enforce(self, subjects: Subjects, action: str, namespace: Namespace, attrs: RecordAttributes, *,
                 optimistic: bool) -> tuple[bool, Rule | None, bool]:
        allowed, explain = self._narrow(subjects, action).enforce_ex(subjects, namespace, action,
                                                                    EnforceRequest(attrs, optimistic))
        rule = self._by_fields.get(tuple(explain)) if explain else None
        review = next((r for r in self.rules_for(subjects, action) if r.effect == "review"
                       and r.pattern.matches(namespace)
                       # review restricts: with unknown attributes it counts like a deny
                       and _counts(r.condition, attrs, deny=True, optimistic=optimistic)),
                      None) if allowed else None
        return bool(allowed), review or rule, review is not None

    def lifecycle(self, namespace: Namespace, kind: str) -> Lifecycle:
        """Forgetting defaults for a record: the shortest TTL and half-life and the smallest
        capacity among the matching ``ttl``, ``decay`` and ``cap`` lines (the strictest wins)."""
        def strictest(what: str) -> LifecycleRule | None:
            rules = [r for r in self._data.lifecycle if r.what == what and r.pattern.matches(namespace)
                     and r.kind in (None, kind)]
            return min(rules, key=lambda r: r.value) if rules else None

        ttl, decay, cap = strictest("ttl"), strictest("decay"), strictest("cap")
        return Lifecycle(ttl.value if ttl else None, decay.value if decay else None,
                         int(cap.value) if cap else None,
                         f"cap, {cap.pattern.text}, {int(cap.value)}" if cap else None)

    def scope(self, subjects: Subjects, action: str, prefix: Namespace) -> ReadScope:
        """The allow and deny clauses relevant to ``action`` at or below ``prefix``."""
        key = (subjects, action, prefix)
        cached = self._scopes.get(key)
        if cached is not None:
            return cached
        with self._lock:
            relevant = [
                r for r in self.rules_for(subjects, action)
                if r.pattern.may_overlap_prefix(prefix) and (r.condition is None or r.condition.satisfiable)
            ]
            scope = ReadScope(
                prefix,
                # a review rule allows too (decide says allowed, with review), so it is in scope
                tuple(dict.fromkeys(Clause(r.pattern, r.condition) for r in relevant if r.effect != "deny")),
                tuple(dict.fromkeys(Clause(r.pattern, r.condition) for r in relevant if r.effect == "deny")),
            )
            if len(self._scopes) >= _CACHE_LIMIT:
                self._scopes.clear()
            self._scopes[key] = scope
            return scope
