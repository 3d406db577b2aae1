"""Tools for policy authors: explain one decision, ask who may do something somewhere, and
lint a policy before it is deployed.

``explain`` answers "may this principal do this here, and which line decides?" with the same
canonicalisation and engine the governed path uses; ``who_can`` asks it of every role and
every declared principal of the policy. ``lint`` reads a policy (text, a file, or
already parsed data) and reports, with line numbers, every line that is malformed, can never
match, never changes a decision, or is probably a mistake. Lint never raises on a bad policy:
parse errors are findings like any other.

Every "never matches" or "redundant" finding is exact, not a heuristic: it follows from the
matching rules (label by label, ``*`` = one label, trailing ``**`` = one or more labels,
deny overrides review overrides allow, subjects = given roles plus the ``g`` closure) and
from the algebra of attribute conditions (which records satisfy a condition, whether one
condition implies another), so removing a line reported as ``duplicate-rule``, ``shadowed-*``,
``redundant-*``, ``unused-deny`` or ``unsatisfiable-condition`` never changes any decision
(neither whether it allows nor whether it requires review), for any record.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from memwarden.core.errors import InvalidRequest, PolicyError
from memwarden.policies.conditions import TRUE, record_attributes
from memwarden.policies.engine import Decision, PolicyEngine
from memwarden.policies.loading import (
    ACTIONS, LifecycleRule, PolicyData, RoleLink, Rule, parse_records, read_policy_file,
)
from memwarden.core.namespace import MAX_DEPTH, canonical_namespace, exact_name
from memwarden.policies.patterns import ONE, NamespacePattern
from memwarden.policies.subjects import Names
from memwarden.policies.tokenizer import csv_line, policy_lines

__all__ = ["Holder", "LintFinding", "can_match", "covers", "explain", "lint", "lint_file", "lint_text", "overlaps",
           "who_can"]

# Severities, most serious first.
ERROR, WARNING, INFO = "error", "warning", "info"
_SEVERITY_ORDER = {ERROR: 0, WARNING: 1, INFO: 2}


def explain(engine: PolicyEngine, principal_id: str, roles: Iterable[str], action: str,
            namespace: object, *, kind: str | None = None, source: str | None = None, content: str | None = None,
            labels: Mapping[str, str] | None = None, writer_roles: Iterable[str] | None = None) -> Decision:
    """Decide one request exactly as the governed path would, and return the Decision.

    The principal id and roles are checked exactly and the namespace canonicalised first (bad
    input raises InvalidRequest, as it would for a real operation, and so does a principal with
    no roles at all); the principal acts as itself (for the rules of a declared principal) and
    as its given roles and everything the policy's ``g`` lines add, transitively.
    ``kind``, ``source``, ``content`` (statement or directive), ``labels`` and ``writer_roles`` describe the record (the stored one
    for a read, the one being written for a write); an attribute left None is unknown, and a
    request whose answer depends on unknown attributes is decided fail-closed, with
    ``decision.depends`` naming a rule that would allow some records.
    ``decision.explain()`` renders the answer and the deciding line for a human.
    """
    if action not in ACTIONS:
        raise InvalidRequest(f"unknown action {action!r}; expected one of {', '.join(ACTIONS)}")
    if isinstance(roles, str):
        raise InvalidRequest("roles must be a list of role names, not one string")
    pid = exact_name(principal_id, what="principal id")
    given = tuple(dict.fromkeys(exact_name(r, what="role") for r in roles))
    ns = canonical_namespace(namespace)
    attributes = None
    if (kind, source, content, labels, writer_roles) != (None, None, None, None, None):
        attributes = record_attributes(kind=kind, source=source, content=content, labels=labels,
                                       writer_roles=writer_roles)
    engine.require_known(pid, given)
    decision = engine.decide(engine.subjects(pid, given), action, ns, attributes)
    return dataclasses.replace(decision, attributes=attributes) if attributes is not None else decision


@dataclass(frozen=True, slots=True)
class Holder:
    """One role or declared principal of a policy, and the decision it gets (see who_can);
    ``roles``: what the policy's ``g`` lines give it, transitively."""

    name: str
    is_role: bool
    roles: tuple[str, ...]
    decision: Decision


def who_can(engine: PolicyEngine, action: str, namespace: object, *, kind: str | None = None,
            source: str | None = None, content: str | None = None, labels: Mapping[str, str] | None = None,
            writer_roles: Iterable[str] | None = None) -> list[Holder]:
    """Every role and every declared principal (``g`` lines) of the policy, roles first, each
    with the decision :func:`explain` gives it for ``action`` on ``namespace`` (and the record
    attributes given, unknown otherwise). A role is asked as a principal holding that role and
    nothing else; a declared principal as itself, with the roles its ``g`` lines give it.
    An undeclared principal given roles at run time holds exactly the union of its roles, so
    the role rows answer for it.
    """
    names = engine.names
    # A stand-in principal for the role rows; it must not be a declared one, whose own g lines
    # and rules would count.
    stand_in = "who-can"
    while stand_in in names.principals:
        stand_in += "_"
    record = {"kind": kind, "source": source, "content": content, "labels": labels, "writer_roles": writer_roles}
    holders = [Holder(role, True, tuple(sorted(engine.subjects(stand_in, (role,)).roles - {role})),
                      explain(engine, stand_in, [role], action, namespace, **record))
               for role in sorted(names.roles)]
    holders += [Holder(principal, False, tuple(sorted(engine.subjects(principal, ()).roles)),
                       explain(engine, principal, [], action, namespace, **record))
                for principal in sorted(names.principals)]
    return holders


@dataclass(frozen=True, slots=True)
class LintFinding:
    """One problem found in a policy.

    ``code`` is stable and machine-readable (see :func:`lint`); ``origin`` is the
    ``source:line`` of the offending line (None for findings about the policy as a whole);
    ``line`` is the policy line as written (rules are shown in normalised form).
    """

    severity: str
    code: str
    origin: str | None
    message: str
    line: str | None = None

    @property
    def lineno(self) -> int | None:
        """The line number within the source, when the finding is about one line."""
        if self.origin is None:
            return None
        tail = self.origin.rsplit(":", 1)[-1]
        return int(tail) if tail.isdigit() else None

    def __str__(self) -> str:
        where = f"{self.origin}: " if self.origin else ""
        return f"{where}{self.severity}: {self.message} [{self.code}]"


# -- pattern algebra (exact over an unbounded label alphabet, depths 1..MAX_DEPTH) --------

def _depths(p: NamespacePattern) -> range:
    n = len(p.labels)
    return range(n + 1, MAX_DEPTH + 1) if p.deep else range(n, n + 1)


def can_match(p: NamespacePattern) -> bool:
    """False when no namespace of allowed depth can match ``p`` (``**`` after MAX_DEPTH labels)."""
    return len(_depths(p)) > 0


def covers(outer: NamespacePattern, inner: NamespacePattern) -> bool:
    """True when every namespace matching ``inner`` also matches ``outer``."""
    if not can_match(inner):
        return True
    if not set(_depths(inner)) <= set(_depths(outer)):
        return False
    # Every depth of inner reaches every label position of outer (outer's depths >= its
    # length), so position by position: outer's '*' takes anything; a fixed label in outer
    # needs the same fixed label in inner (inner's '*' could be any other label).
    return all(o == ONE or o == i for o, i in zip(outer.labels, inner.labels))


def overlaps(a: NamespacePattern, b: NamespacePattern) -> bool:
    """True when some namespace matches both patterns."""
    if not set(_depths(a)) & set(_depths(b)):
        return False
    return all(x == ONE or y == ONE or x == y for x, y in zip(a.labels, b.labels))


# -- lint ------------------------------------------------------------------------------------

def lint(data: PolicyData | str | Path, *, source: str | None = None) -> list[LintFinding]:
    """Check a policy and return every finding, errors first, then by line.

    ``data`` is parsed PolicyData, policy text, or a Path to a policy file. Codes:

    errors
      ``parse-error``      the line is malformed (the engine would refuse the whole file): also
                           an unknown attribute, kind or source, or a non-canonical value in a
                           condition
      ``never-matches``    the pattern of a rule or lifecycle line cannot match any namespace
                           (``**`` after MAX_DEPTH labels)
      ``unsatisfiable-condition``  no record can satisfy the rule's condition
                           (``kind=fact&kind=event``): the rule never matches
    warnings
      ``duplicate-rule``   the same rule appears on an earlier line (conditions compared in
                           normal form)
      ``shadowed-allow``   a deny of the same action covers every namespace and every record of
      ``shadowed-review``  this allow, for the same subject or a role that subject always holds:
                           it never allows
      ``unknown-subject``  the subject is not named in any ``g`` line, so only a principal given
                           that role at run time can use the rule (never one whose id it is)
      ``duplicate-link``   the same ``g`` line appears earlier
      ``role-cycle``       the ``g`` line closes a cycle (harmless, but never intended)
    info
      ``redundant-allow``  a broader allow of the same action, for the same subject or a role it
                           always holds, covers this one (its pattern and its condition, which this
                           rule's condition implies): removing it changes nothing
      ``redundant-review`` likewise for a review rule covered by a broader review rule (a
                           broader review rule also makes an allow redundant: review wins)
      ``redundant-deny``   likewise for a deny covered by a broader deny
      ``unused-deny``      no allow or review rule of the same action (for anyone) overlaps this deny
                           (namespace and condition), and no match means deny anyway: it never
                           changes a decision
      ``deny-misses-unlabelled``  a deny conditioned on ``label.x=v`` does not cover records
                           without label x (or with another spelling of v): it does not fail
                           closed; ``label.x!=...`` on a deny, or ``label.x=...`` on an allow, does
    """
    if isinstance(data, Path):
        return lint_file(data)
    if isinstance(data, str):
        return lint_text(data, source=source or "<policy>")
    if not isinstance(data, PolicyData):
        raise TypeError(f"lint takes PolicyData, policy text or a Path, got {type(data).__name__}")
    return _sorted(_lint_data(data))


def lint_file(path: str | Path) -> list[LintFinding]:
    """Lint a policy file; an unreadable file is a single ``parse-error`` finding."""
    try:
        text = read_policy_file(path)
    except (OSError, PolicyError) as exc:
        return [LintFinding(ERROR, "parse-error", str(path), f"cannot read policy file: {exc}")]
    return lint_text(text, source=str(path))


def lint_text(text: str, *, source: str = "<policy>") -> list[LintFinding]:
    """Lint policy text record by record: every malformed line is reported (not only the
    first), and the lines that do parse are checked as a policy of their own."""
    findings: list[LintFinding] = []
    rules: list[Rule] = []
    links: list[RoleLink] = []
    lifecycle: list[LifecycleRule] = []
    errors: list[tuple[int, PolicyError]] = []
    for lineno, fields in policy_lines(text, source=source, errors=errors):
        origin = f"{source}:{lineno}"
        try:
            parsed = parse_records([(origin, fields)])
        except Exception as exc:  # noqa: BLE001 - lint reports, it never raises on a policy
            message = str(exc) if isinstance(exc, PolicyError) else f"{type(exc).__name__}: {exc}"
            findings.append(LintFinding(ERROR, "parse-error", origin, message.removeprefix(f"{origin}: "),
                                        csv_line(fields)))
            continue
        rules += parsed.rules
        links += parsed.links
        lifecycle += parsed.lifecycle
    for lineno, exc in errors:
        origin = f"{source}:{lineno}"
        findings.append(LintFinding(ERROR, "parse-error", origin, str(exc).removeprefix(f"{origin}: ")))
    return _sorted(findings + _lint_data(PolicyData(tuple(rules), tuple(links), tuple(lifecycle))))


def _sorted(findings: list[LintFinding]) -> list[LintFinding]:
    return sorted(findings, key=lambda f: (_SEVERITY_ORDER[f.severity], f.lineno or 0, f.code))


def _lint_data(data: PolicyData) -> list[LintFinding]:
    findings: list[LintFinding] = []
    names = Names.of(data)
    closure = names.closure(data.links)
    named = {g.member for g in data.links} | {g.role for g in data.links}

    def holds(rule: Rule) -> frozenset[str]:
        """The tagged subjects that whoever a rule applies to always holds."""
        tag = names.subject(rule)
        return closure.get(tag, frozenset({tag}))

    def add(severity: str, code: str, item: Rule | RoleLink, message: str) -> None:
        text = item.text if isinstance(item, Rule) else f"g, {item.member}, {item.role}"
        findings.append(LintFinding(severity, code, item.origin, message, text))

    live: list[Rule] = []
    first_seen: dict[tuple, Rule] = {}
    for rule in data.rules:
        key = (rule.subject, rule.pattern, rule.action, rule.effect, rule.condition)
        if key in first_seen:
            add(WARNING, "duplicate-rule", rule, f"duplicate of {first_seen[key].origin}")
            continue
        first_seen[key] = rule
        if not can_match(rule.pattern):
            add(ERROR, "never-matches", rule,
                f"pattern {rule.pattern.text!r} needs more than {MAX_DEPTH} labels, the deepest namespace allowed")
            continue
        if rule.condition is not None and not rule.condition.satisfiable:
            add(ERROR, "unsatisfiable-condition", rule,
                f"no record can satisfy {rule.condition.text!r}: the rule never matches")
            continue
        gap = next((t for t in (rule.condition.terms if rule.condition else ()) if t.label and not t.negated), None)
        if rule.effect == "deny" and gap is not None:
            add(INFO, "deny-misses-unlabelled", rule,
                f"records without label {gap.label!r}, or with any other value, escape this deny; to fail closed, "
                f"deny with {gap.attribute}!=... or allow with {gap.attribute}=...")
        if rule.subject not in named:
            add(WARNING, "unknown-subject", rule,
                f"subject {rule.subject!r} is in no g line: the rule applies only to principals given role "
                f"{rule.subject!r} at run time (never to a principal whose id is {rule.subject!r})")
        live.append(rule)

    for rule in live:
        same = [o for o in live if o is not rule and o.action == rule.action and names.subject(o) in holds(rule)]
        if rule.effect != "deny":
            deny = next((o for o in same if o.effect == "deny" and _rule_covers(o, rule)), None)
            if deny is not None:
                add(WARNING, f"shadowed-{rule.effect}", rule,
                    f"never allows anything: {deny.origin} ({deny.text}) denies every namespace it matches")
                continue
        # Two rules that cover each other (same pattern, subjects holding each other through
        # a role cycle): only the later one is redundant, so removing every finding is safe.
        broader = next((o for o in same if _stands_in(o.effect, rule.effect) and _rule_covers(o, rule)
                        and not (_stands_in(rule.effect, o.effect) and _rule_covers(rule, o)
                                 and names.subject(rule) in holds(o) and _index(data, o) > _index(data, rule))),
                       None)
        if broader is not None:
            add(INFO, f"redundant-{rule.effect}", rule,
                f"{broader.origin} ({broader.text}) already covers everything this rule matches")
            continue
        if rule.effect == "deny" and not any(
                o.effect != "deny" and o.action == rule.action and overlaps(o.pattern, rule.pattern)
                and (o.condition or TRUE).overlaps(rule.condition) for o in live):
            add(INFO, "unused-deny", rule,
                f"no allow rule for {rule.action!r} overlaps {rule.pattern.text!r}; unmatched requests are denied anyway")

    for item in data.lifecycle:
        if not can_match(item.pattern):
            findings.append(LintFinding(
                ERROR, "never-matches", item.origin,
                f"pattern {item.pattern.text!r} needs more than {MAX_DEPTH} labels, the deepest namespace allowed",
                f"{item.what}, {item.pattern.text}"))

    seen_links: dict[tuple[str, str], RoleLink] = {}
    for link in data.links:
        key = (link.member, link.role)
        if key in seen_links:
            add(WARNING, "duplicate-link", link, f"duplicate of {seen_links[key].origin}")
            continue
        seen_links[key] = link
        member, role = names.link(link)
        if member == role or member in names.closure(seen_links.values()).get(role, ()):
            add(WARNING, "role-cycle", link, f"{link.role!r} already holds {link.member!r}: this line closes a cycle")
    return findings


def _rule_covers(outer: Rule, inner: Rule) -> bool:
    """True when ``outer`` matches every (namespace, record) that ``inner`` matches."""
    return covers(outer.pattern, inner.pattern) and (inner.condition or TRUE).implies(outer.condition)


def _stands_in(broader: str, narrower: str) -> bool:
    """True when a rule with effect ``broader`` decides at least what one with ``narrower`` would:
    a review rule also allows (review wins over allow), so it can stand in for an allow."""
    return broader == narrower or (narrower == "allow" and broader == "review")


def _index(data: PolicyData, rule: Rule) -> int:
    return next(i for i, r in enumerate(data.rules) if r is rule)
