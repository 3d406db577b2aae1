"""The policy matcher, table-driven: patterns, decisions, role inheritance, bundled policies,
``explain`` and ``lint``."""

from __future__ import annotations

from pathlib import Path

import pytest

from memwarden.core.errors import InvalidRequest, PolicyError
from memwarden.policies.engine import PolicyEngine
from memwarden.policies.loading import ACTIONS, BUNDLED_POLICIES, bundled_policy_path, parse_policy_text, read_policy
from memwarden.core.namespace import MAX_DEPTH, canonical_namespace
from memwarden.policies.patterns import NamespacePattern, parse_pattern
from memwarden.policies.subjects import Subjects
from memwarden.policies.tools import LintFinding, covers, explain, lint, lint_text, overlaps

pytestmark = pytest.mark.unit


def ns(text: str) -> tuple[str, ...]:
    return canonical_namespace(text)


# -- NamespacePattern.matches -----------------------------------------------------------------

MATCHES = [
    # pattern, namespace, expected
    ("a/b/c", "a/b/c", True),
    ("a/b/c", "a/b", False),
    ("a/b/c", "a/b/c/d", False),
    ("a/b/c", "a/b/x", False),
    ("a/b/c", "x/b/c", False),
    ("a", "a", True),
    ("a", "b", False),
    ("*", "a", True),
    ("*", "a/b", False),
    ("a/*", "a/b", True),
    ("a/*", "a", False),
    ("a/*", "a/b/c", False),
    ("a/*", "b/b", False),
    ("*/b", "x/b", True),
    ("*/b", "x/c", False),
    ("a/*/c", "a/zzz/c", True),
    ("a/*/c", "a/zzz/d", False),
    ("a/*/c", "a/c", False),
    ("*/*", "a/b", True),
    ("*/*", "a", False),
    ("a/**", "a/b", True),
    ("a/**", "a/b/c/d/e/f/g/h", True),
    ("a/**", "a", False),                      # ** is one or more further labels
    ("a/**", "b/c", False),
    ("a/**", "ab/c", False),                   # never a string prefix
    ("a/b/**", "a/b/c", True),
    ("a/b/**", "a/b", False),
    ("a/b/**", "a/bc/d", False),
    ("a/b/**", "a/c/d", False),
    ("*/**", "a", False),
    ("*/**", "a/b", True),
    ("*/**", "a/b/c", True),
    ("a/*/**", "a/b", False),
    ("a/*/**", "a/b/c", True),
    ("*/b/**", "x/b/y", True),
    ("*/b/**", "x/c/y", False),
    ("mem/alice/**", "mem/alice/x", True),
    ("mem/alice/**", "mem/alice_evil/x", False),
    ("mem/alice/**", "mem/alicex", False),
    ("mem/alice/**", "mem/ALICE/x", False),
    ("mem/alice/**", "mem/\u0430lice/x", False),
    ("mem/alice*", "mem/alice*", True),        # literal label
    ("mem/alice*", "mem/alice", False),
    ("mem/alice*", "mem/alice_evil", False),
    ("/".join("abcdefgh"), "/".join("abcdefgh"), True),
    ("/".join("abcdefg") + "/**", "/".join("abcdefgh"), True),
    ("/".join("abcdefgh") + "/**", "/".join("abcdefgh"), False),   # would need depth 9
]


@pytest.mark.parametrize(("pattern", "namespace", "expected"), MATCHES)
def test_pattern_matches(pattern: str, namespace: str, expected: bool) -> None:
    assert parse_pattern(pattern).matches(ns(namespace)) is expected


@pytest.mark.parametrize(("pattern", "labels", "deep"), [
    ("a/b", ("a", "b"), False),
    ("a/**", ("a",), True),
    ("*/*/**", ("*", "*"), True),
    ("alice*", ("alice*",), False),
    ("a/*b", ("a", "*b"), False),
])
def test_parse_pattern_structure(pattern: str, labels: tuple[str, ...], deep: bool) -> None:
    parsed = parse_pattern(pattern)
    assert parsed == NamespacePattern(labels, deep)
    assert parsed.text == pattern


BAD_PATTERNS = [
    ("", "namespace pattern is empty"),
    ("**", "pattern '**': '**' needs at least one label before it"),
    ("mem/**/x", "pattern 'mem/**/x': '**' is only allowed as the last label"),
    ("**/x", "pattern '**/x': '**' is only allowed as the last label"),
    ("a/**/**", "pattern 'a/**/**': '**' is only allowed as the last label"),
    ("mem/./x", "pattern 'mem/./x': pattern label '.' is reserved"),
    ("mem/../x", "pattern 'mem/../x': pattern label '..' is reserved"),
    ("mem/%2e%2e/x", "pattern 'mem/%2e%2e/x': pattern label '%2e%2e' percent-decodes to '..'"),
    ("a//b", "pattern 'a//b': pattern label is empty"),
    ("a/b/", "pattern 'a/b/': pattern label is empty"),
    ("/a", "pattern '/a': pattern label is empty"),
    ("a/ b", "pattern 'a/ b': pattern label ' b' has leading or trailing whitespace"),
    ("ａ/b", "pattern 'ａ/b': label 'ａ' is not canonical (NFKC gives 'a')"),
    ("ali\u200bce/**", "pattern 'ali\\u200bce/**': pattern label 'ali\\u200bce' contains the control or invisible character U+200B"),
    ("/".join("abcdefghi"), f"pattern 'a/b/c/d/e/f/g/h/i' has 9 labels; the limit is {MAX_DEPTH}"),
    ("a/\\/b", "pattern 'a/\\\\/b': pattern label '\\\\' contains a path separator"),
]


@pytest.mark.parametrize(("pattern", "message"), BAD_PATTERNS)
def test_bad_patterns(pattern: str, message: str) -> None:
    with pytest.raises(PolicyError) as info:
        parse_pattern(pattern)
    assert str(info.value) == message


# -- PolicyEngine.decide ----------------------------------------------------------------------

POLICY = """
p, reader, docs/**, read
p, reader, docs/secret/**, read, deny
p, writer, docs/*, write
p, star, */inbox, read
p, alice, mem/alice/**, read
p, alice, mem/alice/**, write
p, auditor, logs/**, read
p, junior, wiki/**, read
p, senior, wiki/**, update
p, lead, wiki/private/**, read
p, banned, docs/**, read, deny
g, rita, reader
g, wendy, writer
g, junior_dev, junior
g, senior_dev, senior
g, senior, junior
g, lead, senior
g, tl, lead
g, bad, banned
g, alice, author
"""


@pytest.fixture(scope="module")
def engine() -> PolicyEngine:
    return PolicyEngine(data=parse_policy_text(POLICY))


DECISIONS = [
    # principal, given roles, action, namespace, allowed, deciding rule (None: default deny)
    ("rita", (), "read", "docs/a", True, "p, reader, docs/**, read, allow"),
    ("rita", (), "read", "docs/a/b/c", True, "p, reader, docs/**, read, allow"),
    ("rita", (), "read", "docs", False, None),                                  # ** excludes the namespace itself
    ("rita", (), "read", "docs/secret/x", False, "p, reader, docs/secret/**, read, deny"),   # deny overrides allow
    ("rita", (), "read", "docs/secret", True, "p, reader, docs/**, read, allow"),          # deny is below only
    ("rita", (), "read", "docsx/a", False, None),
    ("rita", (), "write", "docs/a", False, None),                               # action isolation
    ("rita", (), "update", "docs/a", False, None),
    ("rita", (), "erase", "docs/a", False, None),
    ("wendy", (), "write", "docs/a", True, "p, writer, docs/*, write, allow"),
    ("wendy", (), "write", "docs/a/b", False, None),                            # * is exactly one label
    ("wendy", (), "read", "docs/a", False, None),                               # write does not grant read
    ("nobody", (), "read", "docs/a", False, None),                              # default deny
    ("nobody", ("reader",), "read", "docs/a", True, "p, reader, docs/**, read, allow"),   # given role
    ("nobody", ("star",), "read", "x/inbox", True, "p, star, */inbox, read, allow"),
    ("nobody", ("star",), "read", "x/y/inbox", False, None),
    ("alice", (), "read", "mem/alice/x", True, "p, alice, mem/alice/**, read, allow"),     # a declared principal's rule
    ("alice", (), "read", "mem/bob/x", False, None),
    ("auditor", (), "read", "logs/x", False, None),      # a principal named like a role holds none of its rules
    ("senior", (), "update", "wiki/page", False, None),  # ... nor those of a role that g lines give
    ("lead", (), "read", "wiki/page", False, None),      # ... nor what that role inherits
    ("x", ("auditor",), "read", "logs/x", True, "p, auditor, logs/**, read, allow"),
    ("junior_dev", (), "read", "wiki/page", True, "p, junior, wiki/**, read, allow"),
    ("junior_dev", (), "update", "wiki/page", False, None),
    ("senior_dev", (), "update", "wiki/page", True, "p, senior, wiki/**, update, allow"),
    ("senior_dev", (), "read", "wiki/page", True, "p, junior, wiki/**, read, allow"),      # senior -> junior
    ("senior_dev", (), "read", "wiki/private/x", True, "p, junior, wiki/**, read, allow"),
    ("tl", (), "read", "wiki/page", True, "p, junior, wiki/**, read, allow"),              # tl -> lead -> senior -> junior
    ("tl", (), "update", "wiki/page", True, "p, senior, wiki/**, update, allow"),
    ("tl", (), "read", "wiki/private/x", True, None),
    ("nobody", ("lead",), "update", "wiki/x", True, "p, senior, wiki/**, update, allow"),  # given role's g lines apply
    ("rita", ("writer",), "write", "docs/a", True, "p, writer, docs/*, write, allow"),     # given roles ∪ g lines
    ("rita", ("writer",), "read", "docs/a", True, "p, reader, docs/**, read, allow"),
    ("bad", ("reader",), "read", "docs/a", False, "p, banned, docs/**, read, deny"),       # deny via g line wins
    ("rita", ("banned",), "read", "docs/a", False, "p, banned, docs/**, read, deny"),      # deny via given role wins
]


@pytest.mark.parametrize(("principal", "roles", "action", "namespace", "allowed", "rule"), DECISIONS)
def test_decide(engine: PolicyEngine, principal: str, roles: tuple[str, ...], action: str, namespace: str,
                allowed: bool, rule: str | None) -> None:
    decision = engine.decide(engine.subjects(principal, roles), action, ns(namespace))
    assert decision.allowed is allowed
    if rule is not None:
        assert decision.rule is not None and decision.rule.text == rule
    elif not allowed:
        assert decision.rule is None
        assert decision.rule_text == "no matching rule (deny by default)"
    # the cache must give the same answer
    assert engine.decide(engine.subjects(principal, roles), action, ns(namespace)) == decision


def test_decision_explain_line(engine: PolicyEngine) -> None:
    d = engine.decide(engine.subjects("rita", ()), "read", ns("docs/secret/x"))
    assert d.explain() == "deny read on 'docs/secret/x': p, reader, docs/secret/**, read, deny"
    d = engine.decide(engine.subjects("rita", ()), "read", ns("elsewhere"))
    assert d.explain() == "deny read on 'elsewhere': no matching rule (deny by default)"
    assert d.rule is None


@pytest.mark.parametrize(("principal", "roles", "expected"), [
    ("rita", (), {"reader"}),
    ("tl", (), {"lead", "senior", "junior"}),
    ("x", ("senior",), {"senior", "junior"}),
    ("rita", ("writer", "lead"), {"reader", "writer", "lead", "senior", "junior"}),
    ("nobody", (), set()),
    ("senior", (), set()),  # a principal id never holds the role of the same name
])
def test_subjects_are_given_roles_union_g_lines(engine: PolicyEngine, principal: str, roles: tuple[str, ...],
                                                expected: set[str]) -> None:
    assert engine.subjects(principal, roles) == Subjects(principal, frozenset(expected))


def test_long_role_chain_and_cycles_are_resolved() -> None:
    lines = ["g, u, c0"] + [f"g, c{i}, c{i + 1}" for i in range(20)] + ["g, c20, c0", "p, c20, x/**, read"]
    e = PolicyEngine(data=parse_policy_text("\n".join(lines)))
    assert e.subjects("u", ()).roles == frozenset(f"c{i}" for i in range(21))
    assert e.decide(e.subjects("u", ()), "read", ns("x/y")).allowed


def test_knows(engine: PolicyEngine) -> None:
    assert engine.knows("rita", ())
    assert not engine.knows("reader", ())  # a role, not a principal
    assert not engine.knows("auditor", ())
    assert engine.knows("stranger", ("anything",))
    assert not engine.knows("stranger", ())


def test_a_principal_declared_by_the_policy_cannot_be_given_as_a_role(engine: PolicyEngine) -> None:
    # Before: any name was a subject, so a role "alice" given to mallory got alice's own rules.
    with pytest.raises(InvalidRequest, match=r"role 'alice' is a principal in this policy \(<policy>:\d+: "
                                             r"'g, alice, author' declares it"):
        engine.subjects("mallory", ("alice",))


REVIEW_POLICY = """
p, editor, wiki/**, write
p, editor, wiki/drafts/**, write, review
p, editor, wiki/locked/**, write, deny
p, editor, wiki/locked/**, write, review
p, editor, wiki/**, read
p, editor, wiki/queue/**, read, review
g, ed, editor
"""


@pytest.mark.parametrize(("action", "namespace", "allowed", "review", "rule"), [
    ("write", "wiki/page", True, False, "p, editor, wiki/**, write, allow"),
    ("write", "wiki/drafts/x", True, True, "p, editor, wiki/drafts/**, write, review"),    # review wins over allow
    ("write", "wiki/locked/x", False, False, "p, editor, wiki/locked/**, write, deny"),   # deny wins over review
    ("read", "wiki/queue/x", True, True, "p, editor, wiki/queue/**, read, review"),
    ("update", "wiki/drafts/x", False, False, None),
])
def test_review_effect(action: str, namespace: str, allowed: bool, review: bool, rule: str | None) -> None:
    e = PolicyEngine(data=parse_policy_text(REVIEW_POLICY))
    d = explain(e, "ed", [], action, namespace)
    assert (d.allowed, d.review) == (allowed, review)
    assert (d.rule.text if d.rule else None) == rule
    assert d.explain().startswith("review " if review else "allow " if allowed else "deny ")
    # what decide allows, the read scope contains (review included), and vice versa
    scope = e.scope(e.subjects("ed", ()), action, ns(namespace)[:1])
    assert scope.contains(ns(namespace)) is allowed


def test_reload_replaces_decisions(engine: PolicyEngine) -> None:
    e = PolicyEngine(data=parse_policy_text("p, r, a/**, read"))
    s = e.subjects("u", ("r",))
    assert e.decide(s, "read", ns("a/b")).allowed
    version = e.version
    e.reload(data=parse_policy_text("p, r, a/**, read\np, r, a/b, read, deny"))
    assert e.version == version + 1
    assert not e.decide(s, "read", ns("a/b")).allowed
    assert e.decide(s, "read", ns("a/c")).allowed


# -- ReadScope ---------------------------------------------------------------------------------

@pytest.mark.parametrize(("prefix", "inside", "outside"), [
    ("docs", ["docs/a", "docs/a/b", "docs/secret"], ["docs", "docs/secret/x", "other/a"]),
    ("docs/secret", ["docs/secret"], ["docs/secret/x", "docs/a"]),
    ("docs/a", ["docs/a", "docs/a/b"], ["docs/b"]),
])
def test_scope_contains(engine: PolicyEngine, prefix: str, inside: list[str], outside: list[str]) -> None:
    subjects = engine.subjects("rita", ())
    scope = engine.scope(subjects, "read", ns(prefix))
    assert not scope.empty
    for n in inside:
        assert scope.contains(ns(n)), n
        assert engine.decide(subjects, "read", ns(n)).allowed
    for n in outside:
        assert not scope.contains(ns(n)), n


def test_scope_is_empty_without_any_allow(engine: PolicyEngine) -> None:
    assert engine.scope(engine.subjects("rita", ()), "read", ns("wiki")).empty
    assert engine.scope(engine.subjects("rita", ()), "write", ()).empty
    assert not engine.scope(engine.subjects("rita", ()), "read", ()).empty


# -- policy files --------------------------------------------------------------------------------

@pytest.mark.parametrize(("text", "message"), [
    ("p, r, a/**", "<policy>:1: a p line has 3 to 5 fields after 'p' (role, pattern, action[, allow|deny|review"
                   "[, condition]]), got 2"),
    ("p, r, a/**, read, allow, kind=fact, x", "<policy>:1: a p line has 3 to 5 fields after 'p' (role, pattern, "
                                              "action[, allow|deny|review[, condition]]), got 6"),
    ("p, r, a/**, read, allow, extra", "<policy>:1: condition term 'extra' has no '=' or '!='; write "
                                       "ATTRIBUTE=VALUE or ATTRIBUTE!=VALUE"),
    ("\n\np, r, a/**, fly", f"<policy>:3: unknown action 'fly'; expected one of {', '.join(ACTIONS)}"),
    ("p, r, a/**, read, maybe", "<policy>:1: unknown effect 'maybe'; expected allow, deny or review"),
    ("p, r, a/**, READ", f"<policy>:1: unknown action 'READ'; expected one of {', '.join(ACTIONS)}"),
    ("g, alice", "<policy>:1: a g line has 2 fields after 'g' (principal, role), got 1"),
    ("x, alice, bob", "<policy>:1: a line starts with p, g, ttl, decay or cap, not 'x'"),
    ("p, a/b, x, read", "<policy>:1: rule subject 'a/b' contains a path separator"),
    ("g, ali\u200bce, r", "<policy>:1: principal 'ali\\u200bce' contains the invisible or control character "
                          "U+200B ZERO WIDTH SPACE at position 3"),
    ("g, ａｌｉｃｅ, r", "<policy>:1: principal 'ａｌｉｃｅ' is not in NFKC form at 'ａ' (U+FF41 FULLWIDTH LATIN SMALL "
                       "LETTER A) at position 0 (NFKC gives 'alice'); identities are compared exactly, so only "
                       "the NFKC spelling is accepted"),
    ("p, nurse, a/**, read\ng, bob, nurѕe", "<policy>:2: role 'nurѕe' mixes Latin and Cyrillic letters: 'ѕ' "
                                           "(U+0455 CYRILLIC SMALL LETTER DZE) at position 3 (a look-alike of another name?)"),
    ("p, r, mem/**/x, read", "<policy>:1: pattern 'mem/**/x': '**' is only allowed as the last label"),
    ("# c\np, r, mem/./x, read", "<policy>:2: pattern 'mem/./x': pattern label '.' is reserved"),
])
def test_policy_text_errors_name_the_line(text: str, message: str) -> None:
    with pytest.raises(PolicyError) as info:
        parse_policy_text(text)
    assert str(info.value) == message


def test_policy_comments_and_defaults() -> None:
    data = parse_policy_text("# header\n\n  # indented comment\np, reader, a/*, read\ng, u, reader\n")
    assert [r.text for r in data.rules] == ["p, reader, a/*, read, allow"]
    assert [(g.member, g.role) for g in data.links] == [("u", "reader")]
    assert data.rules[0].origin == "<policy>:4"
    with pytest.raises(PolicyError, match=r"<policy>:1: rule subject 'ｒｅａｄｅｒ' is not in NFKC form"):
        parse_policy_text("p, ｒｅａｄｅｒ, a/*, read\n")  # names are exact: no folding to 'reader'



def test_missing_policy_file_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(PolicyError, match="does not exist"):
        read_policy(tmp_path / "nope.csv")
    assert read_policy(None).rules == ()


# -- bundled policies and the examples in docs/policies.md -------------------------------------

@pytest.mark.parametrize("name", BUNDLED_POLICIES)
def test_bundled_policies_load_and_lint_clean(name: str) -> None:
    path = bundled_policy_path(name)
    assert path.is_file()
    data = read_policy(path)
    assert data.rules and data.links
    assert lint(path) == []
    assert lint(data) == []
    PolicyEngine(name)


BUNDLED = [
    # policy, principal, roles, action, namespace, allowed
    ("hospital", "alice", (), "read", "ward3/patients/p12", True),
    ("hospital", "alice", (), "read", "ward3/patients/p12/labs", True),
    ("hospital", "alice", (), "write", "ward3/patients/p12", True),
    ("hospital", "alice", (), "write", "ward3/patients/p12/labs", False),
    # bob's (nurse) reads depend on the record's labels: see BUNDLED_CONDITIONAL in test_policy_conditions.py
    ("hospital", "bob", (), "read", "ward3/patients/p12/labs", False),
    ("hospital", "carol", (), "read", "ward3/patients/p12", False),
    ("hospital", "carol", ("physician",), "read", "ward3/patients/p12", False),
    ("hospital", "carol", (), "read", "ward3/billing/p12", True),
    ("hospital", "alice", (), "read", "ward3/patients", False),
    ("hospital", "dpo", (), "erase", "ward3/patients/p12", True),
    ("office", "frank", (), "read", "office/handbook/leave", True),
    ("office", "frank", (), "read", "office/hr/reviews/erin", True),
    ("office", "frank", (), "read", "office/hr/payroll/erin", False),
    ("office", "erin", (), "read", "office/hr/reviews/erin", False),
    ("office", "erin", (), "write", "office/projects/apollo/notes", True),
    ("office", "erin", (), "write", "office/projects/apollo/plan", False),
    ("office", "hana", (), "read", "office/hr/payroll/erin", True),
    ("office", "hana", (), "erase", "office/projects/apollo/notes", True),
    ("office", "ivan", (), "admin", "office/projects/apollo", True),
    ("office", "ivan", (), "read", "office/hr/payroll/erin", False),
    ("office", "ivan", ("hr",), "read", "office/hr/payroll/erin", False),
    ("office", "ivan", (), "read", "office/handbook/it", True),
    # lena's shared reads depend on label audience: see BUNDLED_CONDITIONAL in test_policy_conditions.py
    ("household", "lena", (), "read", "home/kids/lena/diary", True),
    ("household", "lena", (), "read", "home/kids/tom/diary", False),
    ("household", "lena", ("parent",), "read", "home/finance/budget", False),
    ("household", "maria", (), "read", "home/finance/budget", True),
    ("household", "maria", (), "read", "home/kids/tom/diary", True),
    ("household", "gus", (), "read", "home/shared/wifi", True),
    ("household", "gus", (), "read", "home/shared/calendar", False),
    ("household", "homebot", (), "write", "home/shared/calendar/monday", True),
    ("household", "homebot", (), "write", "home/shared/calendar", False),
    ("household", "homebot", (), "write", "home/kids/tom/reminders", True),
    ("household", "homebot", (), "read", "home/health/jon", False),
    ("household", "homebot", ("parent",), "read", "home/health/jon", False),
    ("household", "lena", (), "write", "home/shared/calendar", True),      # allowed, with review (below)
]


@pytest.mark.parametrize(("policy", "principal", "roles", "action", "namespace", "allowed"), BUNDLED)
def test_bundled_policy_decisions(policy: str, principal: str, roles: tuple[str, ...], action: str,
                                  namespace: str, allowed: bool) -> None:
    e = PolicyEngine(policy)
    assert explain(e, principal, roles, action, namespace).allowed is allowed


def test_bundled_review_and_lifecycle_lines() -> None:
    house = PolicyEngine("household")
    assert explain(house, "lena", [], "write", "home/shared/calendar").review
    # A parent's own write is not held; an agent's directive there is (and a write of unknown
    # source and content class might be one: held, fail closed).
    assert not explain(house, "maria", [], "write", "home/shared/calendar", source="user").review
    assert not explain(house, "maria", [], "write", "home/shared/calendar", content="statement").review
    assert explain(house, "maria", [], "write", "home/shared/calendar", source="agent", content="directive").review
    assert explain(house, "maria", [], "write", "home/shared/calendar").review
    assert house.lifecycle(ns("home/guest/notes"), "fact").ttl == 7 * 86400
    assert house.lifecycle(ns("home/shared/shopping/week1"), "fact").capacity == 200
    office = PolicyEngine("office")
    assert office.lifecycle(ns("office/projects/apollo/notes"), "event").ttl == 90 * 86400
    assert office.lifecycle(ns("office/projects/apollo/notes"), "fact").ttl is None


# -- explain -------------------------------------------------------------------------------------

def test_explain_canonicalises_like_the_governed_path() -> None:
    e = PolicyEngine("hospital")
    d = explain(e, "carol", [], "read", "ｗａｒｄ３/patients/p12")
    assert d.namespace == ("ward3", "patients", "p12")
    assert d.explain() == "deny read on 'ward3/patients/p12': p, billing_clerk, ward3/patients/*, read, deny"
    d = explain(e, "zed", ["physician"], "read", ("ward3", "patients", "p1"))
    assert d.allowed and d.rule.text == "p, physician, ward3/patients/**, read, allow"
    with pytest.raises(InvalidRequest, match=r"role 'ｐｈｙｓｉｃｉａｎ' is not in NFKC form"):
        explain(e, "zed", ["ｐｈｙｓｉｃｉａｎ"], "read", ("ward3", "patients", "p1"))
    with pytest.raises(InvalidRequest, match=r"principal id 'ａｌｉｃｅ' is not in NFKC form"):
        explain(e, "ａｌｉｃｅ", [], "read", ("ward3", "patients", "p1"))
    with pytest.raises(InvalidRequest, match="'..' is reserved"):
        explain(e, "alice", [], "read", "ward3/../billing/x")
    with pytest.raises(InvalidRequest, match="unknown action 'peek'"):
        explain(e, "alice", [], "peek", "ward3/patients/p1")
    with pytest.raises(InvalidRequest, match="principal id"):
        explain(e, "al/ice", [], "read", "ward3/patients/p1")
    with pytest.raises(InvalidRequest, match="not one string"):
        explain(e, "alice", "physician", "read", "ward3/patients/p1")


# -- lint ------------------------------------------------------------------------------------------

def codes(findings: list[LintFinding]) -> list[tuple[int | None, str]]:
    return [(f.lineno, f.code) for f in findings]


LINT_CASES = [
    # policy text, expected (line, code) findings, in lint's order (errors, warnings, info; by line)
    ("p, r, a/**, read\ng, u, r", []),
    ("p, r, a/**, read\np, r, a/**, read\ng, u, r", [(2, "duplicate-rule")]),
    ("p, r, a/**, read\np, r, a/**, read, deny\ng, u, r", [(1, "shadowed-allow")]),
    ("p, r, a/b, read\np, r, a/*, read, deny\ng, u, r", [(1, "shadowed-allow")]),
    ("p, r, a/b, read\np, r, a/b, write, deny\ng, u, r", [(2, "unused-deny")]),          # different action
    ("p, r, a/*, read\np, r, a/b, read, deny\ng, u, r", []),                                # deny is narrower
    ("p, r, a/**, read\np, r, a/*, read, deny\ng, u, r", []),                               # a/x/y still allowed
    ("p, r, a/b/**, read\np, r, a/*/**, read, deny\ng, u, r", [(1, "shadowed-allow")]),
    ("p, r, a/*, read\np, r, a/**, read\ng, u, r", [(1, "redundant-allow")]),
    ("p, r, a/b, read\np, r, */b, read\ng, u, r", [(1, "redundant-allow")]),
    ("p, r, a/*, read\np, r, */b, read\ng, u, r", []),                                      # overlap, no cover
    ("p, r, a/*, read\np, s, a/**, read\ng, u, r\ng, u, s", []),                            # different subjects
    ("p, r, a/*, read\np, s, a/**, read\ng, r, s\ng, u, r", [(1, "redundant-allow")]),      # r always holds s
    ("p, s, a/*, read\np, r, a/**, read\ng, r, s\ng, u, r", []),                            # s does not hold r
    ("p, r, a/*, read\np, s, a/**, read, deny\ng, r, s\ng, u, r", [(1, "shadowed-allow")]),
    ("p, r, a/b, read\np, r, a/**, read, deny\np, s, a/b, read\ng, u, r\ng, u, s", [(1, "shadowed-allow")]),
    ("p, r, a/**, read\np, r, a/b, read, deny\np, r, a/*, read, deny\ng, u, r", [(2, "redundant-deny")]),
    ("p, r, a/**, read\np, r, x/**, read, deny\ng, u, r", [(2, "unused-deny")]),
    ("p, ghost, a/**, read\ng, u, r", [(1, "unknown-subject")]),
    ("p, u, a/**, read\ng, u, r", []),                                                      # principal named in g
    ("p, r, a/b/c/d/e/f/g/h/**, read\ng, u, r", [(1, "never-matches")]),
    ("p, r, a/b/c/d/e/f/g/**, read\ng, u, r", []),
    ("g, u, r\ng, u, r\np, r, a, read", [(2, "duplicate-link")]),
    ("g, a, b\ng, b, a\np, a, x, read", [(2, "role-cycle")]),
    ("g, a, a\np, a, x, read", [(1, "role-cycle")]),
    # role cycle with identical rules: only the later one is redundant
    ("g, a, b\ng, b, a\np, a, x/**, read\np, b, x/**, read", [(2, "role-cycle"), (4, "redundant-allow")]),
    # review: it allows, so it shadows nothing but is shadowed by a deny; it makes an allow redundant
    ("p, r, a/**, write, review\np, r, a/b, write\ng, u, r", [(2, "redundant-allow")]),
    ("p, r, a/**, write\np, r, a/b, write, review\ng, u, r", []),                          # review wins: not redundant
    ("p, r, a/**, write, review\np, r, a/b, write, review\ng, u, r", [(2, "redundant-review")]),
    ("p, r, a/b, write, review\np, r, a/**, write, deny\ng, u, r", [(1, "shadowed-review")]),
    ("p, r, a/**, write, review\np, r, a/b, write, deny\ng, u, r", []),                     # the deny is used
    ("p, r, a/**, write, review\np, r, a/**, write\ng, u, r", [(2, "redundant-allow")]),
    ("p, r, a/**, write\np, r, a/**, write, review\ng, u, r", [(1, "redundant-allow")]),
    # lifecycle lines are parsed, and a pattern that can never match is reported
    ("ttl, a/**, *, 7d\ndecay, a/*, 1h\ncap, a/b, 10\np, r, a/**, read\ng, u, r", []),
    ("ttl, a/b/c/d/e/f/g/h/**, *, 7d\np, r, a/**, read\ng, u, r", [(1, "never-matches")]),
    ("ttl, a/**, *, soon\np, r, a/**, read\ng, u, r", [(1, "parse-error")]),
    # several parse errors are all reported, with their line numbers, and the rest is still linted
    ("p, r, mem/**/x, read\np, r, mem/./x, read\np, r, a, read\np, r, a, read\ng, u, r\np, r, a, fly\nq",
     [(1, "parse-error"), (2, "parse-error"), (6, "parse-error"), (7, "parse-error"), (4, "duplicate-rule")]),
]


@pytest.mark.parametrize(("text", "expected"), LINT_CASES)
def test_lint(text: str, expected: list[tuple[int, str]]) -> None:
    assert codes(lint(text)) == expected


def test_lint_messages_and_sources(tmp_path: Path) -> None:
    path = tmp_path / "p.csv"
    path.write_text("# my policy\np, r, mem/**/x, read\np, r, a/**, read\np, r, a/**, read, deny\ng, u, r\n", encoding="utf-8")
    findings = lint(path)
    assert [str(f) for f in findings] == [
        f"{path}:2: error: pattern 'mem/**/x': '**' is only allowed as the last label [parse-error]",
        f"{path}:3: warning: never allows anything: {path}:4 (p, r, a/**, read, deny) denies every namespace it matches [shadowed-allow]",
    ]
    assert findings[0].line == "p, r, mem/**/x, read"
    assert findings[1].line == "p, r, a/**, read, allow"
    # lint never raises on a bad policy, where loading it does
    with pytest.raises(PolicyError):
        read_policy(path)
    missing = lint(tmp_path / "missing.csv")
    assert [f.code for f in missing] == ["parse-error"]
    assert lint_text("p, r, a, read", source="x.csv")[0].origin == "x.csv:1"


@pytest.mark.parametrize(("outer", "inner", "expected"), [
    ("a/**", "a/b", True),
    ("a/**", "a/**", True),
    ("a/**", "a", False),
    ("a/*/**", "a/**", False),
    ("a/**", "a/*/**", True),
    ("*/**", "a/b/**", True),
    ("*", "a", True),
    ("a", "*", False),
    ("a/*", "a/b/**", False),
    ("a/b", "a/b", True),
    ("/".join("abcdefg") + "/**", "/".join("abcdefgh"), True),
])
def test_covers(outer: str, inner: str, expected: bool) -> None:
    assert covers(parse_pattern(outer), parse_pattern(inner)) is expected


@pytest.mark.parametrize(("a", "b", "expected"), [
    ("a/**", "a/b", True),
    ("a/*", "*/b", True),
    ("a/*", "b/*", False),
    ("a", "a/**", False),
    ("a/b/**", "a/*/c", True),
    ("a/b/**", "a/c/**", False),
    ("*/*", "*", False),
])
def test_overlaps(a: str, b: str, expected: bool) -> None:
    assert overlaps(parse_pattern(a), parse_pattern(b)) is expected
    assert overlaps(parse_pattern(b), parse_pattern(a)) is expected
