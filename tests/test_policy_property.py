"""Property tests: the Casbin-backed engine against a tiny independent reference model.

Random small policies (a small label alphabet, ``*``, ``**``, allow and deny, ``g`` lines) and
random requests. The reference model below imports nothing from memwarden; it is the policy
semantics of DESIGN.md written out directly. Every property must hold with 0 disagreements.
"""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from memwarden.core.errors import InvalidRequest
from memwarden.policies.engine import PolicyEngine
from memwarden.policies.loading import parse_policy_text
from memwarden.policies.pushdown import outside_scope_filter, scope_filter
from memwarden.policies.tools import lint

pytestmark = pytest.mark.unit

# -- the reference model (pure Python, independent of memwarden) -------------------------------


def ref_principals(links):
    """Names the g lines declare as principals: members that no g line gives as a role."""
    return {m for m, _ in links} - {r for _, r in links}


def ref_name(name, links):
    """A rule's subject or a link's member, as (kind, name): a declared principal, else a role."""
    return ("principal" if name in ref_principals(links) else "role", name)


def ref_refused(given, links):
    """A given role that the policy declares as a principal is refused."""
    return bool(set(given) & ref_principals(links))


def ref_subjects(principal, given, links):
    """The principal (as a principal), its given roles, and every role reachable through g
    lines; a principal id never stands for a role. Empty when the request is refused."""
    if ref_refused(given, links):
        return set()
    found = {("principal", principal), *(("role", r) for r in given)}
    changed = True
    while changed:
        changed = False
        for member, role in links:
            if ref_name(member, links) in found and ("role", role) not in found:
                found.add(("role", role))
                changed = True
    return found


def ref_holds(subject, principal, given, links):
    """Whether a rule with this subject applies to the request."""
    return ref_name(subject, links) in ref_subjects(principal, given, links)


def engine_subjects(engine, principal, given, links):
    """engine.subjects, or None after checking that the engine refuses what the model refuses."""
    if ref_refused(given, links):
        with pytest.raises(InvalidRequest, match="is a principal in this policy"):
            engine.subjects(principal, given)
        return None
    return engine.subjects(principal, given)


def ref_match(pattern, namespace):
    """'*' is exactly one label; a trailing '**' is one or more further labels."""
    parts = pattern.split("/")
    deep = parts[-1] == "**"
    fixed = parts[:-1] if deep else parts
    if (len(namespace) <= len(fixed)) if deep else (len(namespace) != len(fixed)):
        return False
    return all(p == "*" or p == label for p, label in zip(fixed, namespace))


def ref_effects(rules, links, principal, given, action, namespace):
    return {eft for sub, pat, act, eft in rules
            if ref_holds(sub, principal, given, links) and act == action and ref_match(pat, namespace)}


def ref_decide(rules, links, principal, given, action, namespace):
    """Deny overrides allow; no matching allow means deny. A review rule allows (with review)."""
    effects = ref_effects(rules, links, principal, given, action, namespace)
    return bool(effects & {"allow", "review"}) and "deny" not in effects


def ref_review(rules, links, principal, given, action, namespace):
    """Allowed, and some matching review rule holds the result for review (review wins over allow)."""
    effects = ref_effects(rules, links, principal, given, action, namespace)
    return "review" in effects and "deny" not in effects


def ref_where(where, meta, ne_matches_missing):
    """Chroma's ``where`` dialect over one metadata dict, strict about the shape Chroma accepts."""
    if where == {}:
        return True
    assert isinstance(where, dict) and len(where) == 1, f"Chroma needs exactly one operator per dict: {where}"
    (key, value), = where.items()
    if key in ("$and", "$or"):
        assert isinstance(value, list) and len(value) >= 2, f"{key} needs two or more operands: {value}"
        results = [ref_where(w, meta, ne_matches_missing) for w in value]
        return all(results) if key == "$and" else any(results)
    assert not key.startswith("$"), key
    op, operand = next(iter(value.items())) if isinstance(value, dict) else ("$eq", value)
    assert not isinstance(value, dict) or len(value) == 1, value
    if key not in meta:
        return ne_matches_missing if op in ("$ne", "$nin") else False
    have = meta[key]
    ops = {
        "$eq": lambda: have == operand, "$ne": lambda: have != operand,
        "$gt": lambda: have > operand, "$gte": lambda: have >= operand,
        "$lt": lambda: have < operand, "$lte": lambda: have <= operand,
        "$in": lambda: have in operand, "$nin": lambda: have not in operand,
    }
    assert op in ops, f"operator {op} is not Chroma's"
    return ops[op]()


def ref_metadata(namespace):
    """What memwarden's codec stores for a namespace: ns_0..ns_{d-1} and ns_depth."""
    meta = {f"ns_{i}": label for i, label in enumerate(namespace)}
    meta["ns_depth"] = len(namespace)
    return meta


# -- strategies ----------------------------------------------------------------------------------
# Rules, links and requests are each drawn as one integer and decoded: a handful of draws per
# example instead of dozens keeps Hypothesis fast on a small machine, and shrinking still
# works (smaller integers decode to simpler rules: r0, read, allow, pattern "a").

LABELS = ("a", "b", "c")
NS_LABELS = ("a", "b", "c", "d")            # 'd' is never named by a pattern
ROLES = ("r0", "r1", "r2")
PRINCIPALS = ("u0", "u1")
SUBJECTS = ROLES + PRINCIPALS
ACTIONS = ("read", "write")
REQUESTERS = PRINCIPALS + ("u9", "r0")    # u9 is in no g line; r0 is named like a role


def decode_pattern(code):
    length = 1 + code % 3
    code //= 3
    deep = code % 2 == 1
    code //= 2
    labels = []
    for _ in range(length):
        labels.append((LABELS + ("*",))[code % 4])
        code //= 4
    return "/".join(labels + (["**"] if deep else []))


EFFECTS = ("allow", "allow", "allow", "deny", "deny", "review")
RULE_CODES = 5 * 2 * len(EFFECTS) * 3 * 2 * 4 ** 3


def decode_rule(code):
    subject = SUBJECTS[code % 5]
    code //= 5
    action = ACTIONS[code % 2]
    code //= 2
    effect = EFFECTS[code % len(EFFECTS)]
    code //= len(EFFECTS)
    return (subject, decode_pattern(code), action, effect)


def decode_link(code):
    return ((PRINCIPALS + ROLES)[code % 5], ROLES[code // 5 % 3])


def take(code, n):
    return code % n, code // n


def decode_namespace(code, rules):
    """Half the namespaces are random; half instantiate a rule's pattern (so rules do match)."""
    derived, code = take(code, 2)
    if derived and rules:
        index, code = take(code, len(rules))
        parts = rules[index][1].split("/")
        labels = []
        for part in parts:
            if part == "**":
                extra, code = take(code, 2)
                for _ in range(1 + extra):
                    i, code = take(code, 4)
                    labels.append(NS_LABELS[i])
            elif part == "*":
                i, code = take(code, 4)
                labels.append(NS_LABELS[i])
            else:
                labels.append(part)
        return tuple(labels)
    depth, code = take(code, 4)
    labels = []
    for _ in range(depth + 1):
        i, code = take(code, 4)
        labels.append(NS_LABELS[i])
    return tuple(labels)


def decode_request(code, rules, links):
    """Half the requests act as the subject of one rule (the declared principal itself, or a
    requester given that role) with its action, so that rules do apply; the rest are random."""
    aim, code = take(code, 2)
    principal, code = take(code, len(REQUESTERS))
    if aim and rules:
        index, code = take(code, len(rules))
        subject, _, action, _ = rules[index]
        if ref_name(subject, links)[0] == "principal":
            return subject, (), action, decode_namespace(code, rules)
        return REQUESTERS[principal], (subject,), action, decode_namespace(code, rules)
    mask, code = take(code, 8)
    action, code = take(code, 2)
    given_roles = tuple(r for i, r in enumerate(ROLES) if mask >> i & 1)
    return REQUESTERS[principal], given_roles, ACTIONS[action], decode_namespace(code, rules)


rules_st = st.integers(0, RULE_CODES - 1).map(decode_rule)
links_st = st.integers(0, 14).map(decode_link)
policies = st.tuples(st.lists(rules_st, max_size=6), st.lists(links_st, max_size=4))
codes = st.integers(0, 2 ** 40)
patterns = st.integers(0, 3 * 2 * 4 ** 3 - 1).map(decode_pattern)

FAST = dict(deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def policy_text(rules, links):
    return "\n".join([f"p, {s}, {p}, {a}, {e}" for s, p, a, e in rules] + [f"g, {m}, {r}" for m, r in links])


def engine_for(rules, links):
    return PolicyEngine(data=parse_policy_text(policy_text(rules, links)))


# -- properties -----------------------------------------------------------------------------------

@pytest.mark.slow
def test_decide_agrees_with_reference_model() -> None:
    stats = Counter()

    @settings(max_examples=1_700, **FAST)
    @given(policy=policies, reqs=st.lists(codes, min_size=6, max_size=8))
    def prop(policy, reqs):
        rules, links = policy
        engine = engine_for(rules, links)
        for code in reqs:
            principal, given_roles, action, namespace = decode_request(code, rules, links)
            subjects = engine_subjects(engine, principal, given_roles, links)
            if subjects is None:
                stats["refused"] += 1
                continue
            decision = engine.decide(subjects, action, namespace)
            expected = ref_decide(rules, links, principal, given_roles, action, namespace)
            review = ref_review(rules, links, principal, given_roles, action, namespace)
            assert decision.allowed == expected, (policy_text(rules, links), principal, given_roles, action, namespace)
            assert decision.review == review, (policy_text(rules, links), principal, given_roles, action, namespace)
            # the deciding rule is one that matched, with the effect that decided
            if decision.rule is not None:
                r = decision.rule
                assert (r.subject, r.pattern.text, r.action, r.effect) in set(rules)
                assert ref_holds(r.subject, principal, given_roles, links) and r.action == action
                assert ref_match(r.pattern.text, namespace)
                assert r.effect == ("review" if review else "allow" if expected else "deny")
            else:
                assert not expected
                assert not any(ref_holds(s, principal, given_roles, links) and a == action and ref_match(p, namespace)
                               for s, p, a, _ in rules)
            stats["allow" if expected else "deny"] += 1
            stats["review"] += review
            stats["named like a role"] += principal == "r0" and not given_roles

    prop()
    assert stats["review"] > 100 and stats["refused"] > 100 and stats["named like a role"] > 100, stats
    total = stats["allow"] + stats["deny"]
    assert total >= 10_000, stats
    # the generated requests exercise both outcomes substantially
    assert stats["allow"] > total * 0.1 and stats["deny"] > total * 0.3, stats


@pytest.mark.slow
def test_scope_contains_agrees_with_decide() -> None:
    stats = Counter()

    @settings(max_examples=600, **FAST)
    @given(policy=policies, who=codes, prefix_len=st.integers(0, 4), ns_codes=st.lists(codes, min_size=1, max_size=8))
    def prop(policy, who, prefix_len, ns_codes):
        rules, links = policy
        engine = engine_for(rules, links)
        principal, given_roles, _, _ = decode_request(who, rules, links)
        subjects = engine_subjects(engine, principal, given_roles, links)
        if subjects is None:
            return
        nss = [decode_namespace(c, rules) for c in ns_codes]
        prefix = nss[0][:prefix_len]
        scope = engine.scope(subjects, "read", prefix)
        for namespace in nss:
            under = namespace[: len(prefix)] == prefix
            allowed = ref_decide(rules, links, principal, given_roles, "read", namespace)
            assert scope.contains(namespace) == (under and allowed), (policy_text(rules, links), prefix, namespace)
            assert engine.decide(subjects, "read", namespace).allowed == allowed
            if scope.empty:
                assert not (under and allowed)
            stats["in" if scope.contains(namespace) else "out"] += 1

    prop()
    assert stats["in"] > 100 and stats["out"] > 100, stats


@pytest.mark.slow
def test_removing_an_allow_or_review_rule_never_grants_and_adding_a_deny_never_grants() -> None:
    stats = Counter()

    @settings(max_examples=500, **FAST)
    @given(policy=policies, index=st.integers(0, 5), extra=st.tuples(st.sampled_from(SUBJECTS), patterns,
                                                                     st.sampled_from(ACTIONS)),
           reqs=st.lists(codes, min_size=1, max_size=8))
    def prop(policy, index, extra, reqs):
        rules, links = policy
        before = engine_for(rules, links)
        variants = [rules + [(*extra, "deny")]]
        allows = [i for i, r in enumerate(rules) if r[3] != "deny"]     # allow or review
        if allows:
            drop = allows[index % len(allows)]
            variants.append(rules[:drop] + rules[drop + 1:])
        for variant in variants:
            after = engine_for(variant, links)
            for code in reqs:
                principal, given_roles, action, namespace = decode_request(code, rules, links)
                if engine_subjects(before, principal, given_roles, links) is None:
                    continue
                was = before.decide(before.subjects(principal, given_roles), action, namespace).allowed
                now = after.decide(after.subjects(principal, given_roles), action, namespace).allowed
                assert now <= was, (policy_text(rules, links), policy_text(variant, links), principal, namespace)
                stats["revoked" if was and not now else "same"] += 1

    prop()
    assert stats["revoked"] > 50, stats


@pytest.mark.slow
def test_pushdown_filter_agrees_with_decide() -> None:
    stats = Counter()

    @settings(max_examples=600, **FAST)
    @given(policy=policies, who=codes, prefix_len=st.integers(0, 3), ns_codes=st.lists(codes, min_size=1, max_size=10))
    def prop(policy, who, prefix_len, ns_codes):
        rules, links = policy
        engine = engine_for(rules, links)
        principal, given_roles, action, _ = decode_request(who, rules, links)
        subjects = engine_subjects(engine, principal, given_roles, links)
        if subjects is None:
            return
        nss = [decode_namespace(c, rules) for c in ns_codes]
        prefix = nss[0][:prefix_len]
        scope = engine.scope(subjects, action, prefix)
        if scope.empty:
            # memwarden refuses the search before filtering; nothing may be in scope
            assert not any(n[: len(prefix)] == prefix and ref_decide(rules, links, principal, given_roles, action, n)
                           for n in nss)
            stats["empty"] += 1
            return
        where = scope_filter(scope)
        outside = outside_scope_filter(scope)
        for namespace in nss:
            meta = ref_metadata(namespace)
            under = namespace[: len(prefix)] == prefix
            expected = under and ref_decide(rules, links, principal, given_roles, action, namespace)
            # both readings of $ne on a missing key must give the same, correct answer
            for ne_missing in (True, False):
                assert ref_where(where, meta, ne_missing) == expected, (policy_text(rules, links), prefix, namespace, where)
                assert ref_where(outside, meta, ne_missing) == (under and not expected), (prefix, namespace, outside)
            stats["in" if expected else "out"] += 1

    prop()
    assert stats["in"] > 100 and stats["out"] > 100, stats


#: Rule and link codes of one policy per removable finding, so that every code is exercised on
#: every run: the random draw alone left ``redundant-deny`` out of some runs of 1,000 (a coverage
#: check that depends on the draw is a flaky test).
LINT_EXAMPLES = [
    ([15474, 21351, 12439, 6879], []),  # unused-deny
    ([11266, 18933, 11576, 15044, 8823], []),  # shadowed-allow
    ([16538, 13546], [13, 5, 6]),  # redundant-deny
    ([13059, 2063, 2103], [9, 7]),  # redundant-allow
    ([5412, 22979, 22979], [9, 1, 13]),  # duplicate-rule
]


def each_lint_example(prop, examples=LINT_EXAMPLES, decode_rule=decode_rule, decode_link=decode_link):
    """Adds one explicit example per entry of ``examples`` to a lint property."""
    for rule_codes, link_codes in examples:
        policy = ([decode_rule(c) for c in rule_codes], [decode_link(c) for c in link_codes])
        prop = example(policy=policy, reqs=[i * 7_919_104_033 for i in range(12)])(prop)
    return prop


@pytest.mark.slow
def test_lint_findings_are_safe_to_remove() -> None:
    """Removing every line lint calls duplicate, shadowed, redundant or unused never changes a
    decision (allowed or not, review or not), and a shadowed rule never allows anything."""
    removable = {"duplicate-rule", "shadowed-allow", "shadowed-review", "redundant-allow", "redundant-review",
                 "redundant-deny", "unused-deny"}
    stats = Counter()

    @settings(max_examples=1_000, **FAST)
    @given(policy=st.tuples(st.lists(rules_st, max_size=8), st.lists(links_st, max_size=4)),
           reqs=st.lists(codes, min_size=1, max_size=12))
    @each_lint_example
    def prop(policy, reqs):
        rules, links = policy
        text = policy_text(rules, links)
        findings = lint(text)
        assert not any(f.severity == "error" for f in findings), findings
        drop = {f.lineno for f in findings if f.code in removable}
        kept = [r for i, r in enumerate(rules, start=1) if i not in drop]
        shadowed = [rules[f.lineno - 1] for f in findings if f.code.startswith("shadowed-")]
        for code in reqs:
            principal, given_roles, action, namespace = decode_request(code, rules, links)
            decision = ref_decide(rules, links, principal, given_roles, action, namespace)
            assert decision == ref_decide(kept, links, principal, given_roles, action, namespace), \
                (text, sorted(drop), principal, given_roles, action, namespace)
            assert ref_review(rules, links, principal, given_roles, action, namespace) == \
                ref_review(kept, links, principal, given_roles, action, namespace), (text, sorted(drop), namespace)
            for s, p, a, _ in shadowed:
                if ref_holds(s, principal, given_roles, links) and a == action and ref_match(p, namespace):
                    assert not decision, (text, s, p, namespace)
        stats["dropped"] += len(drop)
        stats.update(f.code for f in findings if f.code in removable)

    prop()
    assert stats["dropped"] > 200, stats
    # the rarer review codes are covered by the table in test_policy_matcher.py
    assert all(stats[code] > 0 for code in ("duplicate-rule", "unused-deny", "redundant-allow", "shadowed-allow",
                                            "redundant-deny")), stats
