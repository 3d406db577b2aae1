"""Attribute conditions in policy rules: the language, the matcher, the tools, and every read
and write path of a real Memory on a real Chroma store.

The property tests against an independent reference model are in
``test_policy_conditions_property.py``.
"""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest

from memwarden import AccessDenied, Memory, Principal
from memwarden.core.errors import InvalidRequest, NotFound, PolicyError
from memwarden.memory.codec import stored_metadata, to_metadata
from memwarden.memory.embeddings import HashingEmbedding
from memwarden.core.records import Kind, MemoryRecord, Source
from memwarden.policies.conditions import (
    KINDS, SOURCES, TRUE, RecordAttributes, canonical_value, parse_condition, record_attributes,
)
from memwarden.policies.engine import PolicyEngine
from memwarden.policies.loading import parse_policy_text
from memwarden.policies.pushdown import outside_scope_filter, scope_filter
from memwarden.policies.subjects import Subjects
from memwarden.policies.tools import explain, lint

pytestmark = pytest.mark.unit

chromadb = pytest.importorskip("chromadb")


def attrs(kind: str = "fact", source: str = "agent", roles: tuple[str, ...] = (), **labels: str) -> RecordAttributes:
    return RecordAttributes(kind, source, frozenset(roles), labels)


def engine_for(text: str) -> PolicyEngine:
    return PolicyEngine(data=parse_policy_text(text))


# -- the language: what parses, in which normal form ---------------------------------------------

@pytest.mark.parametrize(("text", "normal"), [
    ("kind=fact", "kind=fact"),
    ("kind=event|fact", "kind=event|fact"),
    ("kind = fact | event", "kind=event|fact"),                      # spaces around tokens are cosmetic
    ("source!=external|tool", "source!=external|tool"),
    ("label.sensitivity=restricted", "label.sensitivity=restricted"),
    ("label.sensitivity!=restricted&kind=fact", "kind=fact&label.sensitivity!=restricted"),   # normal order
    ("writer_role=physician|nurse", "writer_role=nurse|physician"),
    ("label.x=日本", "label.x=日本"),
    ("label.x=a b", "label.x=a b"),                                   # an inner space is part of the value
    ("label.x=a*", "label.x=a*"),                                     # a literal value, never a wildcard
    ("label.Sens_1=v", "label.Sens_1=v"),
    ("kind=fact&kind=event", "kind=event&kind=fact"),                 # parses; lint calls it unsatisfiable
])
def test_conditions_parse_to_a_normal_form(text: str, normal: str) -> None:
    condition = parse_condition(text)
    assert condition.text == normal
    assert parse_condition(normal) == condition


@pytest.mark.parametrize(("field", "message"), [
    ("kindfact", "condition term 'kindfact' has no '=' or '!='; write ATTRIBUTE=VALUE or ATTRIBUTE!=VALUE"),
    ("=fact", "condition term '=fact' names no attribute"),
    ("Kind=fact", "unknown attribute 'Kind' in 'Kind=fact'; expected kind, source, content, writer_role or label.NAME"),
    ("owner=bob", "unknown attribute 'owner' in 'owner=bob'; expected kind, source, content, writer_role or label.NAME"),
    ("kind~=fact", "unknown attribute 'kind~' in 'kind~=fact'; expected kind, source, content, writer_role or label.NAME"),
    ("kind=facts", "unknown kind 'facts' in 'kind=facts'; expected one of " + ", ".join(KINDS)),
    ("kind=FACT", "unknown kind 'FACT' in 'kind=FACT'; expected one of " + ", ".join(KINDS)),
    ("source=human", "unknown source 'human' in 'source=human'; expected one of " + ", ".join(SOURCES)),
    ("kind==fact", "value '=fact' in 'kind==fact' contains '=', which the condition syntax reserves (= != & |)"),
    ("kind=!fact", "value '!fact' in 'kind=!fact' contains '!', which the condition syntax reserves (= != & |)"),
    ("label.x=a=b", "value 'a=b' in 'label.x=a=b' contains '=', which the condition syntax reserves (= != & |)"),
    ("kind=fact|", "condition term 'kind=fact|' has an empty value (a stray '|'?)"),
    ("kind=fact&", "condition 'kind=fact&': term 2 is empty (a stray '&'?)"),
    ("kind=fact&&source=user", "condition 'kind=fact&&source=user': term 2 is empty (a stray '&'?)"),
    ("kind=fact&kind=fact", "condition 'kind=fact&kind=fact': term 'kind=fact' appears twice"),
    ("kind=fact|fact", "value 'fact' appears twice in 'kind=fact|fact'"),
    ("label.=x", "label name '' in 'label.=x' must be ASCII letters, digits or '_'"),
    ("label.sens-itivity=x", "label name 'sens-itivity' in 'label.sens-itivity=x' must be ASCII letters, digits or '_'"),
    ("label.sensitivity=ｒｅｓｔｒｉｃｔｅｄ",
     "value 'ｒｅｓｔｒｉｃｔｅｄ' in 'label.sensitivity=ｒｅｓｔｒｉｃｔｅｄ' is not canonical (NFKC gives 'restricted')"),
    ("label.sensitivity=restr\u200bicted", "contains the control or invisible character U+200B"),
    ("label.sensitivity=restricted\u00a0&kind=fact", "has leading or trailing whitespace"),
    ("label.sensitivity=r\u0435stricted", "mixes Cyrillic and Latin letters (a look-alike of another value?)"),
    ("writer_role=physici\u0430n", "mixes Cyrillic and Latin letters"),
    ("label.x=*", "is reserved"),
    ("label.x=a/b", "contains a path separator"),
    ("label.x=%2e%2e", "percent-decodes to '..'"),
])
def test_bad_conditions_are_policy_errors_naming_the_line(field: str, message: str) -> None:
    with pytest.raises(PolicyError) as info:
        parse_policy_text(f"# header\np, r, a/**, read, allow, {field}\n", source="pol.csv")
    assert str(info.value).startswith("pol.csv:2: ")
    assert message in str(info.value)


def test_rule_lines_with_conditions() -> None:
    data = parse_policy_text('p, r, a/*, read, deny, label.note=x\np, r, a/*, read, allow, "label.note=a,b&kind=fact"\n'
                             "p, r, a/*, read\n")
    assert [r.text for r in data.rules] == ["p, r, a/*, read, deny, label.note=x",
                                            'p, r, a/*, read, allow, "kind=fact&label.note=a,b"',
                                            "p, r, a/*, read, allow"]
    # the normalised text is itself a valid policy line for the same rule
    again = parse_policy_text("\n".join(r.text for r in data.rules))
    assert [(r.condition, r.effect) for r in again.rules] == [(r.condition, r.effect) for r in data.rules]
    # a condition needs an explicit effect before it
    with pytest.raises(PolicyError, match=r"unknown effect 'kind=fact'; .* a condition goes after the effect"):
        parse_policy_text("p, r, a/*, read, kind=fact")
    with pytest.raises(PolicyError, match="condition is empty"):
        parse_policy_text("p, r, a/*, read, allow, ")


def test_kinds_and_sources_are_the_record_enums() -> None:
    assert KINDS == tuple(k.value for k in Kind)
    assert SOURCES == tuple(s.value for s in Source)


# -- the matcher, table-driven -------------------------------------------------------------------

MATCHES = [
    # condition, record attributes, holds
    ("kind=fact", attrs("fact"), True),
    ("kind=fact", attrs("event"), False),
    ("kind=fact|event", attrs("event"), True),
    ("kind!=fact|event", attrs("event"), False),
    ("kind!=fact|event", attrs("rule"), True),
    ("source=user", attrs(source="user"), True),
    ("source=user", attrs(source="agent"), False),
    ("source!=external|tool", attrs(source="tool"), False),
    ("label.s=r", attrs(s="r"), True),
    ("label.s=r", attrs(s="x"), False),
    ("label.s=r", attrs(), False),                              # missing label never satisfies '='
    ("label.s!=r", attrs(), True),                              # ... and always satisfies '!='
    ("label.s!=r", attrs(s="r"), False),
    ("label.s!=r", attrs(s="x"), True),
    ("label.s=r|q", attrs(s="q"), True),
    ("label.s!=r|q", attrs(s="q"), False),
    ("label.s=r", attrs(t="r"), False),                         # another label's value is not this label
    ("label.s=r", attrs(s="R"), False),                         # exact: case matters
    ("label.s=r", attrs(s="r "), False),                        # exact: no trimming at match time
    ("label.kind=fact", attrs("fact"), False),                  # a label named kind is not the kind
    ("kind=fact", RecordAttributes("event", "agent", frozenset(), {"kind": "fact"}), False),
    ("writer_role=physician", attrs(roles=("physician", "staff")), True),
    ("writer_role=physician", attrs(roles=("nurse",)), False),
    ("writer_role=physician", attrs(), False),                  # a writer without roles
    ("writer_role!=physician", attrs(), True),
    ("writer_role!=physician|nurse", attrs(roles=("staff", "nurse")), False),
    ("writer_role=a&writer_role=b", attrs(roles=("a", "b")), True),
    ("writer_role=a&writer_role=b", attrs(roles=("a",)), False),
    ("kind=fact&label.s!=r&source=user", attrs("fact", "user", s="q"), True),
    ("kind=fact&label.s!=r&source=user", attrs("fact", "agent", s="q"), False),
    ("label.s=restricted", attrs(s="restricted&kind=fact"), False),   # an injected value is one value
    ("label.s!=restricted", attrs(s="restricted&kind=fact"), True),
]


@pytest.mark.parametrize(("condition", "record", "holds"), MATCHES)
def test_condition_matches(condition: str, record: RecordAttributes, holds: bool) -> None:
    assert parse_condition(condition).holds(record) is holds
    # the same answer through the engine (Casbin's condMatch) for an allow and for a deny
    engine = engine_for(f"p, r, a, read, allow, {condition}\np, q, a, read\np, q, a, read, deny, {condition}")
    assert engine.decide(Subjects("u", frozenset({"r"})), "read", ("a",), record).allowed is holds
    assert engine.decide(Subjects("u", frozenset({"q"})), "read", ("a",), record).allowed is not holds


UNKNOWN_ATTRIBUTES = [
    # condition, partly known record, three-valued answer
    ("kind=fact", RecordAttributes(), None),
    ("kind=fact", RecordAttributes(kind="fact"), True),
    ("kind=fact&label.s=r", RecordAttributes(kind="event"), False),      # settled by the known part
    ("kind=fact&kind=event", RecordAttributes(), False),                 # nothing can satisfy it
    ("kind=fact|event|rule|preference|lesson", RecordAttributes(), True),  # everything satisfies it
    ("kind!=fact&kind!=event&kind!=rule&kind!=preference&kind!=lesson", RecordAttributes(), False),
    ("label.s!=r", RecordAttributes(kind="fact"), None),
    ("label.s!=r", RecordAttributes(labels={}), True),
    ("writer_role=a&writer_role!=a", RecordAttributes(), False),
    ("writer_role=a|b&writer_role!=a", RecordAttributes(), None),
]


@pytest.mark.parametrize(("condition", "record", "expected"), UNKNOWN_ATTRIBUTES)
def test_conditions_on_partly_known_records_are_three_valued(condition: str, record: RecordAttributes,
                                                              expected: bool | None) -> None:
    assert parse_condition(condition).holds(record) is expected


def test_unknown_attributes_are_decided_fail_closed_and_say_so() -> None:
    engine = engine_for("""
    p, nurse, w/*, read, allow, label.s!=restricted
    p, nurse, w/*, write
    p, nurse, w/*, write, deny, kind=rule
    p, nurse, w/*, update, allow, kind=fact|event|rule|preference|lesson
    g, bob, nurse
    """)
    subjects = engine.subjects("bob", ())
    read = engine.decide(subjects, "read", ("w", "p"))
    assert not read.allowed and read.rule is None and read.depends.text.endswith("label.s!=restricted")
    assert "depends on the record" in read.explain()
    write = engine.decide(subjects, "write", ("w", "p"))
    assert not write.allowed and write.rule.effect == "deny" and write.depends.effect == "allow"
    assert engine.decide(subjects, "write", ("w", "p"), RecordAttributes(kind="fact")).allowed
    assert not engine.decide(subjects, "write", ("w", "p"), RecordAttributes(kind="rule")).allowed
    # a condition every record satisfies does not depend on anything
    update = engine.decide(subjects, "update", ("w", "p"))
    assert update.allowed and update.depends is None
    # the scope is fail-closed in the same way
    scope = engine.scope(subjects, "read", ())
    assert not scope.contains(("w", "p")) and scope.contains(("w", "p"), attrs())
    assert not scope.contains(("w", "p"), attrs(s="restricted"))


# -- the decision cache ------------------------------------------------------------------------

def test_namespace_only_policies_cache_one_decision_per_namespace() -> None:
    engine = engine_for("p, r, a/*, read\np, r, a/x, read, deny")
    subjects = Subjects("u", frozenset({"r"}))
    for record in (attrs(), attrs("event", "user", ("r",), s="q"), None, RecordAttributes(kind="rule")):
        assert engine.decide(subjects, "read", ("a", "b"), record).allowed
        assert not engine.decide(subjects, "read", ("a", "x"), record).allowed
    assert len(engine._decisions) == 2


def test_the_cache_keys_on_the_attributes_that_matter() -> None:
    engine = engine_for("p, r, a/*, read, allow, label.s!=restricted&kind!=rule")
    subjects = Subjects("u", frozenset({"r"}))
    ns = ("a", "b")
    # unmentioned labels, other values, sources and roles all share one entry ...
    for record in (attrs(), attrs(s="x"), attrs(s="y", t="z"), attrs(source="user", roles=("q",))):
        assert engine.decide(subjects, "read", ns, record).allowed
    assert len(engine._decisions) == 1
    # ... while the values the condition names get their own, with the right answer
    assert not engine.decide(subjects, "read", ns, attrs(s="restricted")).allowed
    assert not engine.decide(subjects, "read", ns, attrs("rule")).allowed
    assert engine.decide(subjects, "read", ns, attrs("event", s="x")).allowed
    assert len(engine._decisions) == 4
    # a reload drops every cached answer
    engine.reload(data=parse_policy_text("p, r, a/*, read, allow, label.s=restricted"))
    assert engine.decide(subjects, "read", ns, attrs(s="restricted")).allowed
    assert not engine.decide(subjects, "read", ns, attrs()).allowed


# -- bundled policies ------------------------------------------------------------------------------

NONE: dict = {}
BUNDLED_CONDITIONAL = [
    # policy, principal, action, namespace, record attributes (None: unknown), allowed
    ("hospital", "bob", "read", "ward3/patients/p12", dict(labels={}), True),
    ("hospital", "bob", "read", "ward3/patients/p12", dict(labels={"sensitivity": "normal"}), True),
    ("hospital", "bob", "read", "ward3/patients/p12", dict(labels={"sensitivity": "restricted"}), False),
    ("hospital", "bob", "read", "ward3/patients/p12", None, False),             # fail closed, depends
    ("hospital", "alice", "read", "ward3/patients/p12", dict(labels={"sensitivity": "restricted"}), True),
    ("hospital", "bob", "write", "ward3/patients/p12", dict(kind="event", source="agent", labels={}), True),
    ("hospital", "bob", "write", "ward3/patients/p12", dict(kind="rule", source="agent", labels={}), False),
    ("hospital", "alice", "write", "ward3/patients/p12", dict(kind="rule", source="agent", labels={}), True),
    ("hospital", "portal", "read", "ward3/patients/p12",
     dict(kind="fact", writer_roles=["physician"], labels={}), True),
    ("hospital", "portal", "read", "ward3/patients/p12", dict(kind="fact", writer_roles=["nurse"], labels={}), False),
    ("hospital", "portal", "read", "ward3/patients/p12", dict(kind="rule", writer_roles=["physician"], labels={}),
     False),
    ("hospital", "portal", "read", "ward3/patients/p12",
     dict(kind="event", writer_roles=["physician"], labels={"sensitivity": "restricted"}), False),
    ("office", "kim", "read", "office/projects/apollo/notes", dict(labels={"audience": "external"}), True),
    ("office", "kim", "read", "office/projects/apollo/notes", dict(labels={}), False),
    ("office", "hana", "write", "office/handbook/leave", dict(source="user"), True),
    ("office", "hana", "write", "office/handbook/leave", dict(source="external"), False),
    ("household", "lena", "read", "home/shared/calendar", dict(labels={}), True),
    ("household", "lena", "read", "home/shared/calendar", dict(labels={"audience": "adults"}), False),
    ("household", "maria", "read", "home/shared/calendar", dict(labels={"audience": "adults"}), True),
    ("household", "gus", "write", "home/guest/notes", dict(kind="preference"), True),
    ("household", "gus", "write", "home/guest/notes", dict(kind="fact"), False),
    ("household", "homebot", "read", "home/kids/tom/reminders", dict(writer_roles=["parent", "family"]), True),
    ("household", "homebot", "read", "home/kids/tom/reminders", dict(writer_roles=["kid", "family"]), False),
]


@pytest.mark.parametrize(("policy", "principal", "action", "namespace", "record", "allowed"), BUNDLED_CONDITIONAL)
def test_bundled_conditional_decisions(policy: str, principal: str, action: str, namespace: str,
                                       record: dict | None, allowed: bool) -> None:
    decision = explain(PolicyEngine(policy), principal, [], action, namespace, **(record or NONE))
    assert decision.allowed is allowed, decision.explain()


@pytest.mark.integration
def test_bundled_reviews_depend_on_the_source_and_kind() -> None:
    hospital, office, home = PolicyEngine("hospital"), PolicyEngine("office"), PolicyEngine("household")
    assert explain(hospital, "bob", [], "write", "ward3/patients/p1", kind="fact", source="external", labels={}).review
    assert not explain(hospital, "bob", [], "write", "ward3/patients/p1", kind="fact", source="user", labels={}).review
    assert explain(office, "erin", [], "write", "office/projects/a/notes", kind="rule").review
    assert not explain(office, "erin", [], "write", "office/projects/a/notes", kind="event", source="user").review
    assert explain(home, "homebot", [], "write", "home/shared/calendar/mon", source="external").review
    # An agent's statement goes in as written; its directive, or a text of unknown class
    # (which could be one), is held (the bundled content=directive review lines).
    assert not explain(home, "homebot", [], "write", "home/shared/calendar/mon", source="agent",
                       content="statement").review
    assert explain(home, "homebot", [], "write", "home/shared/calendar/mon", source="agent", content="directive").review
    assert explain(home, "homebot", [], "write", "home/shared/calendar/mon", source="agent").review


# -- lint --------------------------------------------------------------------------------------

def codes(text: str) -> dict[int, set[str]]:
    out: dict[int, set[str]] = {}
    for f in lint(text):
        out.setdefault(f.lineno, set()).add(f.code)
    return out


@pytest.mark.parametrize(("policy", "expected"), [
    ("p, r, a/*, read, allow, kind=fact&kind=event\ng, u, r", {1: {"unsatisfiable-condition"}}),
    ("p, r, a/*, read, allow, writer_role=x&writer_role!=x\ng, u, r", {1: {"unsatisfiable-condition"}}),
    ("p, r, a/*, read, allow, label.s=a&label.s=b\ng, u, r", {1: {"unsatisfiable-condition"}}),
    ("p, r, a/*, read, allow, label.s=a&label.s!=a\ng, u, r", {1: {"unsatisfiable-condition"}}),
    ("p, r, a/*, read, allow, kind=facts\ng, u, r", {1: {"parse-error"}}),
    ("p, r, a/*, read, allow, source=web\ng, u, r", {1: {"parse-error"}}),
    # shadowed: the deny's condition covers every record the allow's condition admits
    ("p, r, a/*, read, allow, kind=fact&label.s=x\np, r, a/**, read, deny, kind=fact|event\ng, u, r",
     {1: {"shadowed-allow"}}),
    # not shadowed: a fact without label s is allowed and not denied
    ("p, r, a/*, read, allow, kind=fact\np, r, a/*, read, deny, label.s!=x&kind=fact\ng, u, r", {}),
    ("p, r, a/*, read, allow, kind=fact\np, r, a/*, read, deny, label.s=x\ng, u, r",
     {2: {"deny-misses-unlabelled"}}),
    # redundant: a broader allow whose condition the narrower one implies
    ("p, r, a/**, read, allow, label.s!=x|y\np, r, a/*, read, allow, label.s=z\ng, u, r",
     {2: {"redundant-allow"}}),
    ("p, r, a/**, read, allow, label.s!=x\np, r, a/*, read, allow\ng, u, r", {}),
    ("p, r, a/*, read, allow, writer_role=p\np, r, a/*, read, allow, writer_role=p&writer_role=q\ng, u, r",
     {2: {"redundant-allow"}}),
    ("p, r, a/*, read, allow, kind=fact\np, r, a/*, read, allow, kind=fact\ng, u, r", {2: {"duplicate-rule"}}),
    ("p, r, a/*, read\np, r, a/**, read, deny, kind=rule\np, r, a/*, read, deny, kind=rule&source=user\ng, u, r",
     {3: {"redundant-deny"}}),
    ("p, r, a/*, read, review, kind=rule\np, r, a/*, read, allow, kind=rule&source=user\ng, u, r",
     {2: {"redundant-allow"}}),
    ("p, r, a/*, read, review, source=tool\np, r, a/*, read, deny, source=tool|external\np, r, a/*, read\ng, u, r",
     {1: {"shadowed-review"}}),
    ("p, r, a/*, read, allow, kind=fact&source=user\np, r, a/*, read, allow, source=user&kind=fact\ng, u, r",
     {2: {"duplicate-rule"}}),
    # unused deny: no allow can match the same record
    ("p, r, a/*, read, allow, kind=fact\np, r, a/*, read, deny, kind=event\ng, u, r", {2: {"unused-deny"}}),
    ("p, r, a/*, read, allow, label.s=x\np, r, a/*, read, deny, label.s!=x\ng, u, r", {2: {"unused-deny"}}),
])
def test_lint_understands_conditions(policy: str, expected: dict[int, set[str]]) -> None:
    assert codes(policy) == expected


# -- the CLI -----------------------------------------------------------------------------------

def test_policy_check_takes_record_attributes(capsys: pytest.CaptureFixture) -> None:
    from memwarden.cli import main

    base = ["policy", "check", "--policy", "hospital", "--principal", "bob", "--action", "read",
            "--namespace", "ward3/patients/p12"]
    assert main(base + ["--label", "sensitivity=restricted"]) == 1
    out = capsys.readouterr().out
    assert "deny read on 'ward3/patients/p12' for a record with label.sensitivity=restricted" in out
    assert main(base + ["--no-labels", "--kind", "fact"]) == 0
    assert "p, nurse, ward3/patients/*, read, allow, label.sensitivity!=restricted" in capsys.readouterr().out
    assert main(base) == 1
    assert "depends on the record" in capsys.readouterr().out
    assert main(["policy", "check", "--policy", "hospital", "--principal", "portal", "--action", "read",
                 "--namespace", "ward3/patients/p12", "--kind", "fact", "--writer-role", "physician",
                 "--no-labels"]) == 0
    capsys.readouterr()
    assert main(base + ["--label", "sensitivity"]) == 2
    assert "--label takes NAME=VALUE" in capsys.readouterr().out
    assert main(base + ["--kind", "Fact"]) == 2
    assert main(base + ["--label", "sensitivity=r\u0435stricted"]) == 2


# -- adversarial values at the write edge ------------------------------------------------------

def test_label_values_are_canonicalised_or_refused_at_the_write_edge() -> None:
    assert canonical_value("ｒｅｓｔｒｉｃｔｅｄ", what="v") == "restricted"
    assert canonical_value("日本語abc", what="v") == "日本語abc"              # not look-alike scripts
    assert canonical_value("рестрикт", what="v") == "рестрикт"                # one script is fine
    for bad in ("r\u0435stricted", "restr\u200bicted", "restricted\u202e", "\u00adrestricted", " restricted"):
        with pytest.raises(InvalidRequest):
            canonical_value(bad, what="v")
    with pytest.raises(InvalidRequest, match="writer role"):
        record_attributes(writer_roles=["physici\u0430n"])


# -- the algebra lint relies on, against brute force -------------------------------------------

UNIVERSE = [RecordAttributes(k, s, frozenset(r), lab)
            for k in KINDS for s in ("user", "external")
            for r in ((), ("a",), ("b",), ("a", "b"), ("z",))
            for lab in ({}, {"s": "x"}, {"s": "y"}, {"s": "other"})]
TERMS = ["kind=fact", "kind!=fact|event", "kind=event|rule", "source=user", "source!=user", "label.s=x",
         "label.s!=x", "label.s=x|y", "label.s!=y", "writer_role=a", "writer_role!=a", "writer_role=a|b",
         "writer_role!=b", "writer_role=b"]


def test_satisfiable_implies_and_overlaps_agree_with_brute_force() -> None:
    rnd = random.Random(5)
    conditions = [TRUE] + [parse_condition("&".join(rnd.sample(TERMS, rnd.randint(1, 4)))) for _ in range(160)]
    truth = {c: frozenset(i for i, r in enumerate(UNIVERSE) if c.holds(r)) for c in conditions}
    seen = {"sat": 0, "unsat": 0, "implies": 0}
    for a in conditions:
        assert a.satisfiable == bool(truth[a]), a.text
        seen["sat" if truth[a] else "unsat"] += 1
        for b in conditions[:40]:
            assert a.implies(b) == (truth[a] <= truth[b]), (a.text, b.text)
            assert a.overlaps(b) == bool(truth[a] & truth[b]), (a.text, b.text)
            seen["implies"] += a.implies(b) and a is not b
    assert min(seen.values()) > 10, seen


# -- end to end: a real Memory on a real Chroma store ------------------------------------------

@pytest.fixture
def ward(tmp_path: Path):
    memory = Memory.open(tmp_path / "data", policy="hospital", embedding=HashingEmbedding(), count_withheld=True)
    yield memory
    memory.close()


QUERY = "psychiatric assessment of mood and medication"


@pytest.mark.integration
def test_restricted_records_never_leave_the_store_and_k_authorised_hits_come_back(ward: Memory) -> None:
    alice, bob = ward.session(Principal("alice")), ward.session(Principal("bob"))
    restricted = [alice.write(f"{QUERY} note {i}", "ward3/patients/p12", labels={"sensitivity": "restricted"})
                  for i in range(12)]
    alone = alice.write(QUERY, "ward3/patients/p13", labels={"sensitivity": "restricted"})
    normal = [alice.write(f"routine vitals check {i}, mood fine", "ward3/patients/p12") for i in range(6)]
    normal += [alice.write(f"medication round {i}", "ward3/patients/p12", labels={"sensitivity": "normal"})
               for i in range(4)]
    secret_ids = {r.id for r in restricted} | {alone.id}

    hits = bob.search(QUERY, "ward3/patients", k=5)
    assert len(hits) == 5 and not {h.record.id for h in hits} & secret_ids
    # the physician gets the nearer, restricted ones: they really are nearer the query
    assert {h.record.id for h in alice.search(QUERY, "ward3/patients", k=5)} <= secret_ids
    assert len(bob.search(QUERY, "ward3/patients", k=10)) == 10
    assert len(bob.search(None, "ward3", k=100)) == len(normal)
    # the filter did the work inside the store: nothing was dropped by the re-check
    entry = list(ward.audit_log.entries())[-1]
    assert entry["op"] == "search" and entry["returned"] == len(normal) and entry["withheld"] == len(secret_ids)
    assert "scope: ward3/patients/* if label.sensitivity!=restricted" in entry["rules"]
    # list and get
    assert ("ward3", "patients", "p13") not in bob.list_namespaces("ward3")
    assert ("ward3", "patients", "p13") in alice.list_namespaces("ward3")
    assert bob.get(alone.id) is None and bob.get(restricted[0].id) is None
    assert alice.get(alone.id).id == alone.id and bob.get(normal[0].id).id == normal[0].id
    # a restricted record is no parent, update or forget target for the nurse either
    with pytest.raises(InvalidRequest, match="not a record visible"):
        bob.write("derived from the assessment", "ward3/patients/p12", parents=[alone.id])
    with pytest.raises(NotFound):
        bob.forget(alone.id)


@pytest.mark.integration
def test_rechecks_catch_what_the_filter_would_let_through(ward: Memory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Defence in depth: with the pushdown disabled, the engine still withholds restricted records."""
    import memwarden.memory.handlers.search as memory_module

    alice, bob = ward.session(Principal("alice")), ward.session(Principal("bob"))
    secret = alice.write(QUERY, "ward3/patients/p12", labels={"sensitivity": "restricted"})
    plain = alice.write("routine vitals check", "ward3/patients/p12")
    monkeypatch.setattr(memory_module, "scope_filter", lambda scope: {"ns_0": "ward3"})
    hits = bob.search(QUERY, "ward3/patients", k=5)
    assert [h.record.id for h in hits] == [plain.id]
    assert secret.id in {h.record.id for h in alice.search(QUERY, "ward3/patients", k=5)}


@pytest.mark.integration
def test_writes_are_checked_on_the_record_being_written(ward: Memory) -> None:
    bob, alice, portal = (ward.session(Principal(p)) for p in ("bob", "alice", "portal"))
    with pytest.raises(AccessDenied) as info:
        bob.write("Give 2 mg every 4 hours", "ward3/patients/p12", kind="rule")
    assert info.value.rule == "p, nurse, ward3/patients/*, write, deny, kind=rule"
    assert bob.write("Temperature 37.9", "ward3/patients/p12", kind="event").status.value == "active"
    held = bob.write("Lab system says potassium 5.9", "ward3/patients/p12", kind="fact", source="tool")
    assert held.status.value == "quarantined"
    assert held.id not in {h.record.id for h in alice.search("potassium", "ward3/patients", k=5)}
    # writer_role: the portal reads only what physicians wrote, facts and events, not restricted
    by_alice = alice.write("Discharge planned for Friday", "ward3/patients/p12", kind="fact")
    by_bob = bob.write("Patient asked about discharge", "ward3/patients/p12", kind="event")
    rule = alice.write("Discharge only after a normal potassium", "ward3/patients/p12", kind="rule")
    hidden = alice.write("Discharge mood assessment", "ward3/patients/p12", kind="fact",
                         labels={"sensitivity": "restricted"})
    seen = {h.record.id for h in portal.search("discharge", "ward3/patients", k=10)}
    assert seen == {by_alice.id}
    assert portal.get(by_bob.id) is None and portal.get(rule.id) is None and portal.get(hidden.id) is None


POLICY = """
p, clerk, docs/*, read
p, clerk, docs/*, write
p, clerk, docs/*, update, allow, label.level!=secret
p, clerk, docs/*, update, deny, kind=rule
p, clerk, docs/*, forget, allow, kind!=rule
p, clerk, docs/*, history, allow, label.level!=secret
p, boss, docs/*, read
p, boss, docs/*, write
p, boss, docs/*, update
p, boss, docs/*, history
p, boss, docs/*, approve, allow, kind=fact
p, boss, docs/*, write, review, source=external
p, dpo, docs/**, erase, allow, label.hold!=legal
p, intern, docs/*, write, allow, label.level=public|restricted
g, cid, clerk
g, bea, boss
g, ben, boss
g, dee, dpo
g, ian, intern
"""


@pytest.fixture
def office(tmp_path: Path):
    path = tmp_path / "policy.csv"
    path.write_text(POLICY, encoding="utf-8")
    memory = Memory.open(tmp_path / "data", policy=path, embedding=HashingEmbedding())
    yield memory
    memory.close()


@pytest.mark.integration
def test_an_update_cannot_escape_a_condition(office: Memory) -> None:
    cid, bea = office.session(Principal("cid")), office.session(Principal("bea"))
    mine = cid.write("Quarterly figures draft", "docs/q3")
    # into a condition: the new version would be secret
    with pytest.raises(AccessDenied, match="may not update"):
        cid.update(mine.id, "Quarterly figures, final", labels={"level": "secret"})
    # out of one: the old version is secret (clerks may read it, not update it), even if the
    # update would drop the label
    secret = bea.write("Merger plan", "docs/q3", labels={"level": "secret"})
    assert cid.get(secret.id).id == secret.id
    with pytest.raises(AccessDenied, match="may not update"):
        cid.update(secret.id, "Merger plan (public summary)", labels={})
    # kind counts on both sides too
    with pytest.raises(AccessDenied, match="kind=rule"):
        cid.update(mine.id, "Figures are due on the 5th", kind="rule")
    assert cid.update(mine.id, "Quarterly figures, final").version == 2
    # a keyed overwrite is an update, checked on the old and the new record
    bea.write("Office closes at 6", "docs/hours", key="closing", labels={"level": "secret"})
    with pytest.raises(AccessDenied, match="may not update"):
        cid.write("Office closes at 7", "docs/hours", key="closing")
    # history shows only the versions the condition allows
    public = bea.write("Holiday list v1", "docs/hol")
    bea.update(public.id, "Holiday list v2", labels={"level": "secret"})
    newest = bea.update(bea.history(public.id)[-1].id, "Holiday list v3", labels={})
    assert [v.content for v in bea.history(newest.id)] == ["Holiday list v1", "Holiday list v2", "Holiday list v3"]
    assert [v.content for v in cid.history(newest.id)] == ["Holiday list v1", "Holiday list v3"]


@pytest.mark.integration
def test_forget_erase_and_approve_apply_to_the_target_records(office: Memory) -> None:
    cid, bea, ben, dee, ian = (office.session(Principal(p)) for p in ("cid", "bea", "ben", "dee", "ian"))
    rule = bea.write("Expenses need two signatures", "docs/policy", kind="rule")
    with pytest.raises(AccessDenied, match="may not forget"):
        cid.forget(rule.id)
    fact = bea.write("Expenses go to Ann", "docs/policy")
    cid.forget(fact.id)
    assert bea.get(fact.id) is None
    # erase goes by the records' attributes, every version included; what the officer may not
    # erase (a legal hold) is held: kept, but restricted (hidden from everyone), never a veto
    bea.write("Ann's salary is 50k", "docs/pay", subjects=["ann"])
    held = bea.write("Ann's dispute file", "docs/pay", subjects=["ann"], labels={"hold": "legal"})
    receipt = dee.erase(subject="ann")
    assert (receipt.count, receipt.held) == (1, 1)
    assert bea.get(held.id) is None and bea.search(None, "docs/pay", k=10) == []
    bea.write("Joe's salary is 40k", "docs/pay", subjects=["joe"])
    old = bea.write("Joe's old address", "docs/pay", subjects=["joe"], labels={"hold": "none"})
    bea.update(old.id, "Joe's new address", labels={})
    assert dee.erase(subject="joe").count == 3
    # approve: a quarantined rule is not a fact, so the boss cannot release it
    pending_rule = ben.write("Always copy legal", "docs/policy", kind="rule", source="external")
    pending_fact = ben.write("Legal is on floor 3", "docs/policy", kind="fact", source="external")
    assert pending_rule.status.value == pending_fact.status.value == "quarantined"
    with pytest.raises(NotFound, match="is visible to"):  # what she may not approve, she cannot know of
        bea.approve(pending_rule.id)
    assert bea.approve(pending_fact.id).approvals == ("bea",)
    # an allow with '=' fails closed: a write must carry one of the named values
    assert ian.write("Canteen menu", "docs/menu", labels={"level": "public"}).labels == {"level": "public"}
    for labels in ({}, {"level": "PUBLIC"}, {"level": "secret"}):
        with pytest.raises(AccessDenied):
            ian.write("Canteen menu, again", "docs/menu", labels=labels)
    assert ian.write("Canteen prices", "docs/menu", labels={"level": "ｐｕｂｌｉｃ"}).labels == {"level": "public"}


@pytest.mark.integration
def test_a_deny_on_not_equal_fails_closed_and_a_deny_on_equal_does_not(tmp_path: Path) -> None:
    """For deny rules the fail-closed spelling is '!=': records without the label, or with a
    misspelt value, are denied too. A deny on '=' lets them through (lint says so)."""
    policy = tmp_path / "policy.csv"
    policy.write_text("""
    p, staff, docs/*, read
    p, staff, docs/*, read, deny, label.clearance!=public
    p, guest, docs/*, read
    p, guest, docs/*, read, deny, label.clearance=secret
    p, author, docs/*, write
    g, sam, staff
    g, gil, guest
    g, ada, author
    """, encoding="utf-8")
    assert [f.code for f in lint(policy)] == ["deny-misses-unlabelled"]
    with Memory.open(tmp_path / "data", policy=policy, embedding=HashingEmbedding()) as mem:
        ada, sam, gil = (mem.session(Principal(p)) for p in ("ada", "sam", "gil"))
        public = ada.write("Canteen opening hours", "docs/a", labels={"clearance": "public"})
        unlabelled = ada.write("Canteen supplier contract", "docs/a")
        misspelt = ada.write("Canteen audit findings", "docs/a", labels={"clearance": "Secret"})
        secret = ada.write("Canteen tender bids", "docs/a", labels={"clearance": "secret"})
        for who, expected in ((sam, {public.id}), (gil, {public.id, unlabelled.id, misspelt.id})):
            assert {h.record.id for h in who.search("canteen", "docs", k=10)} == expected
            assert {r.id for r in (public, unlabelled, misspelt, secret) if who.get(r.id) is not None} == expected


@pytest.mark.integration
def test_adversarial_label_values_and_names_at_the_memory_edge(ward: Memory) -> None:
    alice, bob = ward.session(Principal("alice")), ward.session(Principal("bob"))
    # full width folds to the real value, so it is restricted like the plain spelling
    folded = alice.write("Full-width label", "ward3/patients/p12", labels={"sensitivity": "ｒｅｓｔｒｉｃｔｅｄ"})
    assert folded.labels == {"sensitivity": "restricted"} and bob.get(folded.id) is None
    # invisible characters and look-alike letters are refused, not stored as "another" value
    for value in ("restr\u200bicted", "r\u0435stricted", "restricted\u2060", "restricted\ufe0f"):
        with pytest.raises(InvalidRequest):
            alice.write("Sneaky label", "ward3/patients/p12", labels={"sensitivity": value})
    # label-name injection is not a label name
    with pytest.raises(InvalidRequest, match="label key"):
        alice.write("Injected", "ward3/patients/p12", labels={"sensitivity=restricted&kind": "fact"})
    # an injected value is one opaque value: it is not 'restricted', and it smuggles in nothing
    odd = alice.write("Odd label", "ward3/patients/p12", labels={"sensitivity": "restricted&kind=fact|x"})
    assert bob.get(odd.id).id == odd.id
    # case is part of the value: this policy's '!=' allow does not treat RESTRICTED as restricted
    # (the fail-closed way, an allow on '=', is shown in test_forget_erase_and_approve_...)
    upper = alice.write("Upper-case label", "ward3/patients/p12", labels={"sensitivity": "RESTRICTED"})
    assert bob.get(upper.id).id == upper.id
    assert {h.record.id for h in bob.search(None, "ward3/patients", k=50)} == {odd.id, upper.id}


@pytest.mark.integration
def test_conditions_hold_against_a_chroma_server(chroma_server, tmp_path: Path) -> None:
    host, port = chroma_server
    with Memory.connect(host, port, policy="hospital", state=tmp_path / "state", embedding=HashingEmbedding()) as mem:
        alice, bob = mem.session(Principal("alice")), mem.session(Principal("bob"))
        secret = [alice.write(f"{QUERY} server {i}", "ward3/patients/p40", labels={"sensitivity": "restricted"})
                  for i in range(4)]
        plain = [alice.write(f"server vitals {i}", "ward3/patients/p40") for i in range(3)]
        hits = bob.search(QUERY, "ward3/patients/p40", k=3)
        assert {h.record.id for h in hits} == {r.id for r in plain}
        assert bob.get(secret[0].id) is None


# -- the pushdown on a real collection: Chroma returns exactly what decide allows ----------------

ATTRIBUTE_POLICIES = [
    """
    p, r0, a/**, read, allow, label.s!=x
    p, r0, a/*, read, deny, kind=rule|lesson
    p, r0, b/*, read, allow, writer_role=w1|w2&source!=external
    p, r1, */**, read, allow, label.s=x|y&kind!=event
    p, r1, a/b/**, read, deny, writer_role!=w1
    p, r1, b/**, read, review, label.t=x
    g, u0, r0
    g, u1, r1
    """,
    """
    p, r0, */**, read
    p, r0, */**, read, deny, label.s=y&label.t!=x
    p, r0, a/**, read, deny, writer_role=w2&kind=fact|event
    p, r0, b/*, read, deny, source=user|agent&label.s!=x|y
    g, u0, r0
    """,
]
NAMESPACES = [("a",), ("a", "b"), ("a", "c"), ("a", "b", "c"), ("b", "a"), ("b", "b", "x"), ("c", "a")]
VALUES = [None, "x", "y", "X", "x y", "$nin", "x&kind=fact"]


@pytest.fixture(scope="module")
def attribute_collection(tmp_path_factory: pytest.TempPathFactory):
    from chromadb.config import Settings

    client = chromadb.PersistentClient(path=str(tmp_path_factory.mktemp("chroma")),
                                       settings=Settings(anonymized_telemetry=False))
    col = client.get_or_create_collection("conditions", embedding_function=None)
    rnd = random.Random(20240612)
    records = {}
    for i in range(500):
        labels = {name: v for name in ("s", "t") if (v := rnd.choice(VALUES)) is not None}
        record = MemoryRecord(id=f"mem_{i:032x}", namespace=rnd.choice(NAMESPACES), content="x", writer="w",
                              kind=rnd.choice(KINDS), source=rnd.choice(SOURCES), labels=labels,
                              writer_roles=tuple(rnd.sample(["w1", "w2", "w3"], rnd.randint(0, 2))))
        records[record.id] = record
    vectors = np.random.default_rng(3).normal(size=(len(records), 8)).astype(np.float32)
    col.add(ids=list(records), embeddings=vectors, documents=["x"] * len(records),
            metadatas=[stored_metadata(to_metadata(r)) for r in records.values()])
    return col, records


@pytest.mark.parametrize("policy", ATTRIBUTE_POLICIES, ids=["policy0", "policy1"])
@pytest.mark.integration
def test_chroma_returns_exactly_what_decide_allows_with_conditions(attribute_collection, policy: str) -> None:
    col, records = attribute_collection
    engine = engine_for(policy)
    nonempty = 0
    for principal in ("u0", "u1"):
        subjects = engine.subjects(principal, ())
        for prefix in [(), ("a",), ("a", "b"), ("b",)]:
            under = {rid for rid, r in records.items() if r.namespace[: len(prefix)] == prefix}
            allowed = {rid for rid in under
                       if engine.decide(subjects, "read", records[rid].namespace,
                                        RecordAttributes.of(records[rid])).allowed}
            scope = engine.scope(subjects, "read", prefix)
            if scope.empty:
                assert not allowed
                continue
            got = set(col.get(where=scope_filter(scope) or None)["ids"])
            assert got == allowed, (principal, prefix, sorted(got ^ allowed)[:5])
            assert set(col.get(where=outside_scope_filter(scope) or None)["ids"]) == under - allowed
            assert all(scope.contains(records[i].namespace, RecordAttributes.of(records[i])) for i in allowed)
            nonempty += 0 < len(allowed) < len(under)
    assert nonempty >= 4
