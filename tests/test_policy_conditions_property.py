"""Property tests of attribute conditions against a tiny independent reference model.

Random small policies whose rules carry conditions on kind, source, content, writer_role and labels,
random requests and random record attributes. The reference model below imports nothing from
memwarden: it is the semantics of docs/policies.md written out directly (a missing label never
satisfies ``label.x=v`` and always satisfies ``label.x!=v``; deny overrides allow; no match is
deny). Every property must hold with 0 disagreements.
"""

from __future__ import annotations

import pytest

import itertools
import random
from collections import Counter
from functools import partial

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memwarden.policies.conditions import RecordAttributes
from memwarden.policies.engine import PolicyEngine
from memwarden.policies.loading import parse_policy_text
from memwarden.policies.pushdown import outside_scope_filter, scope_filter
from memwarden.policies.tools import lint
# the same namespace and subject reference model
from tests.test_policy_property import each_lint_example, engine_subjects, ref_holds, ref_match, ref_name

pytestmark = pytest.mark.unit

# -- the reference model (pure Python) ----------------------------------------------------------

ALL_KINDS = ("fact", "event", "rule", "preference", "lesson")
ALL_SOURCES = ("user", "agent", "tool", "external")
ALL_CONTENT = ("statement", "directive")


def ref_term(term, record):
    """record = (kind, source, writer roles, labels dict, content class)."""
    attribute, negated, values = term
    kind, source, roles, labels, content = record
    if attribute == "kind":
        hit = kind in values
    elif attribute == "source":
        hit = source in values
    elif attribute == "content":
        hit = content in values
    elif attribute == "writer_role":
        hit = any(r in values for r in roles)
    else:
        value = labels.get(attribute.split(".", 1)[1])
        if value is None:
            return negated
        hit = value in values
    return hit != negated


def ref_effects(rules, links, principal, given, action, namespace, record):
    return {eft for sub, pat, act, eft, cond in rules
            if ref_holds(sub, principal, given, links) and act == action and ref_match(pat, namespace) and all(ref_term(t, record) for t in cond)}


def ref_decide(rules, links, principal, given, action, namespace, record):
    effects = ref_effects(rules, links, principal, given, action, namespace, record)
    return bool(effects & {"allow", "review"}) and "deny" not in effects


def ref_review(rules, links, principal, given, action, namespace, record):
    effects = ref_effects(rules, links, principal, given, action, namespace, record)
    return "review" in effects and "deny" not in effects


def ref_metadata(namespace, record):
    """What the codec stores: ns_i, ns_depth, kind, source, content_class, writer_roles (omitted
    when empty), lbl_*."""
    kind, source, roles, labels, content = record
    meta = {f"ns_{i}": label for i, label in enumerate(namespace)}
    meta.update(ns_depth=len(namespace), kind=kind, source=source, content_class=content)
    if roles:
        meta["writer_roles"] = list(roles)
    meta.update({f"lbl_{k}": v for k, v in labels.items()})
    return meta


def ref_where(where, meta, missing_matches_negations):
    """Chroma's ``where`` dialect, strict about its shape; ``missing_matches_negations`` is how
    $ne, $nin and $not_contains read a missing key (Chroma: True)."""
    if where == {}:
        return True
    assert isinstance(where, dict) and len(where) == 1, where
    (key, value), = where.items()
    if key in ("$and", "$or"):
        assert isinstance(value, list) and len(value) >= 2, where
        results = [ref_where(w, meta, missing_matches_negations) for w in value]
        return all(results) if key == "$and" else any(results)
    assert not key.startswith("$"), key
    op, operand = next(iter(value.items())) if isinstance(value, dict) else ("$eq", value)
    if key not in meta:
        return missing_matches_negations if op in ("$ne", "$nin", "$not_contains") else False
    have = meta[key]
    if op in ("$contains", "$not_contains"):
        assert isinstance(have, list), (key, have)
        return (operand in have) == (op == "$contains")
    assert op in ("$eq", "$ne", "$gt", "$gte", "$lt", "$lte", "$in", "$nin"), op
    if op in ("$in", "$nin"):
        assert isinstance(operand, list) and operand, operand
        return (have in operand) == (op == "$in")
    return {"$eq": have == operand, "$ne": have != operand, "$gt": have > operand, "$gte": have >= operand,
            "$lt": have < operand, "$lte": have <= operand}[op]


ROLES = ("r0", "r1")
PRINCIPALS = ("u0", "u1")
SUBJECTS = ROLES + PRINCIPALS
ACTIONS = ("read", "write")
EFFECTS = ("allow", "allow", "deny", "deny", "review")
TERM_VALUES = {
    "kind": ("fact", "event", "rule"),
    "source": ("user", "agent", "external"),
    "content": ("statement", "directive"),
    "writer_role": ("w0", "w1"),
    "label.s": ("x", "y"),
    "label.t": ("x",),
}
ATTRIBUTES = tuple(TERM_VALUES)
# The record universe: every value a condition names, plus values none names ("z", "w9",
# preference, lesson, tool) and, for labels, absence.
RECORD_ROLES = tuple(frozenset(c) for n in range(4) for c in itertools.combinations(("w0", "w1", "w9"), n))
S_VALUES = (None, "x", "y", "z")
T_VALUES = (None, "x", "z")


# -- strategies ----------------------------------------------------------------------------------
# Each rule and each request is one integer, used as the seed of its own pseudo-random decoder:
# a handful of draws per example keeps Hypothesis fast on a small machine, and every integer
# (small ones included) decodes to a fully random rule, so conditions are never starved.


def random_term(rnd):
    attribute = rnd.choice(ATTRIBUTES)
    pool = TERM_VALUES[attribute]
    return attribute, rnd.random() < 0.5, tuple(rnd.sample(pool, rnd.randint(1, len(pool))))


def decode_rule(code):
    rnd = random.Random(code)
    labels = [rnd.choice(("a", "b", "*")) for _ in range(rnd.randint(1, 2))]
    pattern = "/".join(labels + (["**"] if rnd.random() < 0.5 else []))
    terms = []
    for _ in range(rnd.choice((0, 1, 1, 2))):
        term = random_term(rnd)
        if all((term[0], term[1], frozenset(term[2])) != (a, n, frozenset(v)) for a, n, v in terms):
            terms.append(term)
    return rnd.choice(SUBJECTS), pattern, rnd.choice(ACTIONS), rnd.choice(EFFECTS), tuple(terms)


def decode_link(code):
    return ((PRINCIPALS + ROLES)[code % 4], ROLES[code // 4 % 2])


def random_record(rnd):
    labels = {k: v for k, v in (("s", rnd.choice(S_VALUES)), ("t", rnd.choice(T_VALUES))) if v is not None}
    return rnd.choice(ALL_KINDS), rnd.choice(ALL_SOURCES), rnd.choice(RECORD_ROLES), labels, rnd.choice(ALL_CONTENT)


def instantiate(pattern, rnd):
    """A namespace that ``pattern`` matches ('*' and '**' filled in at random)."""
    labels = [rnd.choice(("a", "b", "c")) if part in ("*", "**") else part for part in pattern.split("/")]
    return tuple(labels)


def decode_request(code, rules, links):
    """Half the requests aim at one rule (its subject, action and a namespace it matches), so
    that conditions, not subjects or patterns, decide them; the rest are random."""
    rnd = random.Random(code)
    if rules and rnd.random() < 0.5:
        subject, pattern, action, _, _ = rnd.choice(rules)
        # the rule's own principal when the links declare it one, else a holder of the role
        who, given_roles = (subject, ()) if ref_name(subject, links)[0] == "principal" else ("u9", (subject,))
        return who, given_roles, action, instantiate(pattern, rnd), random_record(rnd)
    namespace = tuple(rnd.choice(("a", "b", "c")) for _ in range(rnd.randint(1, 3)))
    given_roles = tuple(r for r in ROLES if rnd.random() < 0.5)
    return rnd.choice(PRINCIPALS + ("u9", "r0")), given_roles, rnd.choice(ACTIONS), namespace, random_record(rnd)


rules_st = st.integers(0, 2 ** 32).map(decode_rule)
terms_st = st.integers(0, 2 ** 32).map(lambda code: random_term(random.Random(code)))
links_st = st.integers(0, 7).map(decode_link)
policies = st.tuples(st.lists(rules_st, min_size=1, max_size=6), st.lists(links_st, max_size=3))
codes = st.integers(0, 2 ** 32)

# derandomize: the same examples on every run, so the coverage checks at the end of each
# property (enough allows, reviews, revocations, findings) cannot flake.
FAST = dict(deadline=None, database=None, derandomize=True,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def condition_text(cond):
    return "&".join(f"{a}{'!=' if n else '='}{'|'.join(v)}" for a, n, v in cond)


def policy_text(rules, links):
    lines = [f"p, {s}, {p}, {a}, {e}" + (f", {condition_text(c)}" if c else "") for s, p, a, e, c in rules]
    return "\n".join(lines + [f"g, {m}, {r}" for m, r in links])


def engine_for(rules, links):
    return PolicyEngine(data=parse_policy_text(policy_text(rules, links)))


def attributes(record):
    kind, source, roles, labels, content = record
    return RecordAttributes(kind, source, roles, labels, content)


# -- properties ------------------------------------------------------------------------------------

@pytest.mark.slow
def test_decide_agrees_with_the_reference_model_on_10000_requests() -> None:
    stats = Counter()

    @settings(max_examples=650, **FAST)
    @given(policy=policies, reqs=st.lists(codes, min_size=16, max_size=16))
    def prop(policy, reqs):
        rules, links = policy
        engine = engine_for(rules, links)
        for code in reqs:
            principal, given_roles, action, namespace, record = decode_request(code, rules, links)
            subjects = engine_subjects(engine, principal, given_roles, links)
            if subjects is None:
                stats["refused"] += 1
                continue
            decision = engine.decide(subjects, action, namespace, attributes(record))
            expected = ref_decide(rules, links, principal, given_roles, action, namespace, record)
            review = ref_review(rules, links, principal, given_roles, action, namespace, record)
            context = (policy_text(rules, links), principal, given_roles, action, namespace, record)
            assert decision.allowed == expected and decision.review == review, context
            if decision.rule is not None:
                r = decision.rule
                terms = frozenset((t.attribute, t.negated, frozenset(t.values)) for t in r.condition.terms) \
                    if r.condition is not None else frozenset()
                conds = [c for s, p, a, e, c in rules if (s, p, a, e) == (r.subject, r.pattern.text, r.action, r.effect)
                         and frozenset((x, n, frozenset(v)) for x, n, v in c) == terms]
                assert conds, context
                assert ref_holds(r.subject, principal, given_roles, links) and r.action == action, context
                assert ref_match(r.pattern.text, namespace), context
                assert all(ref_term(t, record) for t in conds[0]), context
                assert r.effect == ("review" if review else "allow" if expected else "deny"), context
            else:
                assert not expected, context
            stats["allow" if expected else "deny"] += 1
            stats["review"] += review
            stats["conditional"] += any(c for s, p, a, e, c in rules if ref_holds(s, principal, given_roles, links)
                                        and a == action and ref_match(p, namespace))

    prop()
    total = stats["allow"] + stats["deny"]
    assert total + stats["refused"] >= 10_000, stats
    assert stats["allow"] > total * 0.1 and stats["deny"] > total * 0.3 and stats["review"] > 100, stats
    assert stats["conditional"] > total * 0.2, stats


@pytest.mark.slow
def test_removing_a_rule_or_narrowing_an_allow_never_grants() -> None:
    """Removing an allow or review rule, adding a deny, or adding a term to an allow's
    condition never grants anything that was denied."""
    stats = Counter()

    @settings(max_examples=150, **FAST)
    @given(policy=policies, index=st.integers(0, 5), extra=rules_st, term=terms_st,
           reqs=st.lists(codes, min_size=4, max_size=8))
    def prop(policy, index, extra, term, reqs):
        rules, links = policy
        before = engine_for(rules, links)
        variants = [rules + [(*extra[:3], "deny", extra[4])]]
        allows = [i for i, r in enumerate(rules) if r[3] != "deny"]
        if allows:
            i = allows[index % len(allows)]
            variants.append(rules[:i] + rules[i + 1:])
            same = {(a, n, frozenset(v)) for a, n, v in rules[i][4]}
            narrower = rules[i][4] + tuple(t for t in [term] if (t[0], t[1], frozenset(t[2])) not in same)
            variants.append(rules[:i] + [(*rules[i][:4], narrower)] + rules[i + 1:])
        for variant in variants:
            after = engine_for(variant, links)
            for code in reqs:
                principal, given_roles, action, namespace, record = decode_request(code, rules, links)
                if engine_subjects(before, principal, given_roles, links) is None:
                    continue
                a = attributes(record)
                was = before.decide(before.subjects(principal, given_roles), action, namespace, a).allowed
                now = after.decide(after.subjects(principal, given_roles), action, namespace, a).allowed
                assert now <= was, (policy_text(rules, links), policy_text(variant, links), namespace, record)
                stats["revoked" if was and not now else "same"] += 1

    prop()
    assert stats["revoked"] > 50, stats


@pytest.mark.slow
def test_pushdown_filter_agrees_with_the_reference_model() -> None:
    stats = Counter()

    @settings(max_examples=350, **FAST)
    @given(policy=policies, who=codes, prefix_len=st.integers(0, 2), req_codes=st.lists(codes, min_size=8, max_size=20))
    def prop(policy, who, prefix_len, req_codes):
        rules, links = policy
        engine = engine_for(rules, links)
        principal, given_roles, action, namespace, _ = decode_request(who, rules, links)
        subjects = engine_subjects(engine, principal, given_roles, links)
        if subjects is None:
            return
        requests = [decode_request(c, rules, links) for c in req_codes]
        prefix = namespace[:prefix_len]
        scope = engine.scope(subjects, action, prefix)
        if scope.empty:
            assert not any(ns[: len(prefix)] == prefix and ref_decide(rules, links, principal, given_roles, action, ns, rec)
                           for *_, ns, rec in requests)
            stats["empty"] += 1
            return
        where, outside = scope_filter(scope), outside_scope_filter(scope)
        for *_, ns, record in requests:
            meta = ref_metadata(ns, record)
            under = ns[: len(prefix)] == prefix
            expected = under and ref_decide(rules, links, principal, given_roles, action, ns, record)
            context = (policy_text(rules, links), prefix, ns, record, where)
            assert ref_where(where, meta, True) == expected, context
            assert ref_where(outside, meta, True) == (under and not expected), context
            assert scope.contains(ns, attributes(record)) == expected, context
            # read the other way, missing keys only ever narrow the filter: it never leaks
            assert ref_where(where, meta, False) <= expected, context
            stats["in" if expected else "out"] += 1

    prop()
    assert stats["in"] > 100 and stats["out"] > 200, stats


#: Rule and link codes of one policy per finding the coverage check below asks for.
LINT_EXAMPLES = [
    ([2095328386], [6, 0, 7]),  # unused-deny
    ([1083869816, 3519356806, 2449336412, 2185596104, 1623363792], [1, 3]),  # unsatisfiable-condition
    ([338668373, 2063295586, 3817494954, 841316587, 2774739477], []),  # redundant-allow
    ([2300466123, 674446862, 1590649181, 2238011570, 418244291], [2, 1]),  # shadowed-allow
    ([3431114560, 1629640503, 4280149366], [1, 6, 4]),  # duplicate-rule
]


@pytest.mark.slow
def test_lint_findings_with_conditions_are_safe_to_remove() -> None:
    removable = {"duplicate-rule", "shadowed-allow", "shadowed-review", "redundant-allow", "redundant-review",
                 "redundant-deny", "unused-deny", "unsatisfiable-condition"}
    stats = Counter()

    @settings(max_examples=400, **FAST)
    @given(policy=st.tuples(st.lists(rules_st, max_size=8), st.lists(links_st, max_size=3)),
           reqs=st.lists(codes, min_size=4, max_size=12))
    @partial(each_lint_example, examples=LINT_EXAMPLES, decode_rule=decode_rule, decode_link=decode_link)
    def prop(policy, reqs):
        rules, links = policy
        text = policy_text(rules, links)
        findings = lint(text)
        assert not any(f.severity == "error" and f.code != "unsatisfiable-condition" for f in findings), findings
        drop = {f.lineno for f in findings if f.code in removable}
        kept = [r for i, r in enumerate(rules, start=1) if i not in drop]
        for code in reqs:
            request = decode_request(code, rules, links)
            assert ref_decide(rules, links, *request) == ref_decide(kept, links, *request), (text, sorted(drop), request)
            assert ref_review(rules, links, *request) == ref_review(kept, links, *request), (text, sorted(drop), request)
        stats["dropped"] += len(drop)
        stats.update(f.code for f in findings if f.code in removable)

    prop()
    assert stats["dropped"] > 200, stats
    # redundant-deny and the review codes are rarer; the table in test_policy_conditions.py has them,
    # LINT_EXAMPLES the rest on every run
    assert all(stats[c] > 0 for c in ("duplicate-rule", "unused-deny", "redundant-allow", "shadowed-allow",
                                      "unsatisfiable-condition")), stats


def _completions(record, unknown):
    """Every record that agrees with ``record`` on the known attributes (over the universe)."""
    kind, source, roles, labels, content = record
    options = {
        "kind": ALL_KINDS if "kind" in unknown else (kind,),
        "source": ALL_SOURCES if "source" in unknown else (source,),
        "roles": RECORD_ROLES if "roles" in unknown else (roles,),
        "labels": [{k: v for k, v in (("s", s), ("t", t)) if v is not None} for s in S_VALUES for t in T_VALUES]
        if "labels" in unknown else [labels],
        "content": ALL_CONTENT if "content" in unknown else (content,),
    }
    return list(itertools.product(options["kind"], options["source"], options["roles"], options["labels"],
                                  options["content"]))


@pytest.mark.slow
def test_unknown_attributes_are_decided_fail_closed() -> None:
    """With some attributes unknown (the policy tools), an allow holds for every record that
    could be meant; a deny that names no rule it depends on holds for every such record too."""
    stats = Counter()
    fields = ("kind", "source", "roles", "labels", "content")

    @settings(max_examples=200, **FAST)
    @given(policy=policies, reqs=st.lists(st.tuples(codes, st.integers(1, 31)), min_size=4, max_size=6))
    def prop(policy, reqs):
        rules, links = policy
        engine = engine_for(rules, links)
        for code, mask in reqs:
            principal, given_roles, action, namespace, record = decode_request(code, rules, links)
            unknown = {f for i, f in enumerate(fields) if mask >> i & 1}
            kind, source, roles, labels, content = record
            partial = RecordAttributes(None if "kind" in unknown else kind, None if "source" in unknown else source,
                                       None if "roles" in unknown else roles, None if "labels" in unknown else labels,
                                       None if "content" in unknown else content)
            subjects = engine_subjects(engine, principal, given_roles, links)
            if subjects is None:
                continue
            decision = engine.decide(subjects, action, namespace, partial)
            outcomes = {ref_decide(rules, links, principal, given_roles, action, namespace, r)
                        for r in _completions(record, unknown)}
            context = (policy_text(rules, links), principal, given_roles, action, namespace, partial)
            if decision.allowed:
                assert outcomes == {True}, context
            elif decision.depends is None:
                assert outcomes == {False}, context
            if True in outcomes:    # and when some such record would be allowed, the answer says so
                assert decision.allowed or decision.depends is not None, context
            stats["mixed" if len(outcomes) == 2 else "settled"] += 1
            stats["depends"] += decision.depends is not None

    prop()
    assert stats["mixed"] > 50 and stats["depends"] > 50, stats
