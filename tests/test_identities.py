"""Exact identities: principal ids and role names are compared exactly after validation, never
folded, and a principal id never stands for a role of the same name."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from memwarden import AccessDenied, InvalidRequest, Memory, Principal
from memwarden.memory.embeddings import HashingEmbedding
from memwarden.policies.engine import PolicyEngine
from memwarden.policies.loading import PolicyError, parse_policy_text
from memwarden.policies.tools import explain

pytestmark = pytest.mark.unit

WARD = ("ward3", "patients", "p12")


# -- the attack: a look-alike of alice signs up -----------------------------------------------------

@pytest.mark.integration
def test_a_fullwidth_alice_is_refused_not_folded_into_alice(mem: Memory) -> None:
    rec = mem.session(Principal("alice")).write("Patient 12 is allergic to penicillin", WARD, subjects=["p12"])
    # Before: the id folded to "alice", and this session read (and could erase) alice's records.
    with pytest.raises(InvalidRequest, match=r"principal id 'ａｌｉｃｅ' is not in NFKC form at 'ａ' \(U\+FF41 "
                                             r"FULLWIDTH LATIN SMALL LETTER A\) at position 0"):
        mem.session(Principal("ａｌｉｃｅ")).get(rec.id)
    assert mem.session(Principal("alice")).get(rec.id) == rec


@pytest.mark.parametrize(("spoof", "message"), [
    ("\u0430lice", r"mixes Latin and Cyrillic letters: 'а' \(U\+0430 CYRILLIC SMALL LETTER A\) at position 0"),
    ("alic\u0435", r"mixes Latin and Cyrillic letters: 'е' \(U\+0435 CYRILLIC SMALL LETTER IE\) at position 4"),
    ("al\u200bice", r"invisible or control character U\+200B ZERO WIDTH SPACE at position 2"),
    ("alice\u202e", r"invisible or control character U\+202E RIGHT-TO-LEFT OVERRIDE at position 5"),
    ("alice\ufe0f", r"invisible or control character U\+FE0F VARIATION SELECTOR-16 at position 5"),
    ("\ufb01le", r"not in NFKC form at 'ﬁ' \(U\+FB01 LATIN SMALL LIGATURE FI\) at position 0 \(NFKC gives 'file'\)"),
    ("alice\u0301", r"not in NFKC form at U\+0301 COMBINING ACUTE ACCENT at position 5"),
    ("ali/ce", "contains a path separator"),
    ("alice ", "leading or trailing whitespace"),
])
def test_look_alike_ids_are_refused_naming_the_character(spoof: str, message: str) -> None:
    with pytest.raises(InvalidRequest, match=message):
        Principal(spoof)
    with pytest.raises(InvalidRequest, match=message.replace("principal id", "role")):
        Principal("zed", roles=[spoof])
    with pytest.raises(InvalidRequest, match=message):
        explain(PolicyEngine("hospital"), spoof, [], "read", WARD)


def test_a_policy_naming_a_look_alike_is_refused_with_its_line() -> None:
    with pytest.raises(PolicyError, match=r"<policy>:2: principal 'ａｌｉｃｅ' is not in NFKC form"):
        parse_policy_text("p, physician, ward3/**, read\ng, ａｌｉｃｅ, physician\n")
    with pytest.raises(PolicyError, match=r"<policy>:1: rule subject 'physicіan' mixes Latin and Cyrillic"):
        parse_policy_text("p, physicіan, ward3/**, read\n")


@settings(max_examples=300, deadline=None, database=None)
@given(st.text(min_size=1, max_size=12))
def test_an_id_is_either_kept_exactly_or_refused(text: str) -> None:
    try:
        principal = Principal(text, roles=[text])
    except InvalidRequest:
        return
    assert principal.id == text and principal.roles == (text,)


@pytest.mark.parametrize("call", [
    lambda: Principal(5),
    lambda: Principal(None),
    lambda: Principal("zed", roles="physician"),
    lambda: Principal("zed", roles=None),
    lambda: Principal("zed", roles=[None]),
    lambda: Principal("zed", roles=["ok", ""]),
    lambda: Principal(""),
    lambda: Principal(id="a" * 200),
])
def test_a_bad_principal_raises_invalid_request_never_a_validation_error(call) -> None:
    with pytest.raises(InvalidRequest) as info:
        call()
    assert not isinstance(info.value, ValidationError) and "validation error" not in str(info.value)


# -- the attack: a user named like a role -----------------------------------------------------------

@pytest.mark.integration
def test_a_principal_named_like_a_role_holds_none_of_its_rights(mem: Memory) -> None:
    rec = mem.session(Principal("alice")).write("Patient 12 is allergic to penicillin", WARD, subjects=["p12"])
    # Before: "privacy_officer" was a subject of its own, so this user erased everything about p12.
    with pytest.raises(InvalidRequest, match=r"unknown principal 'privacy_officer': it has no roles .*"
                                             r"'privacy_officer' is a role in this policy, and a principal id "
                                             r"never holds the role of the same name"):
        mem.session(Principal("privacy_officer")).erase(subject="p12")
    with pytest.raises(AccessDenied):
        mem.session(Principal("privacy_officer", roles=["nurse"])).erase(subject="p12")
    assert mem.session(Principal("alice")).get(rec.id) == rec
    receipt = mem.session(Principal("dpo")).erase(subject="p12")  # the real officer still can
    assert receipt.count == 1


@pytest.mark.parametrize(("principal", "roles", "action", "namespace"), [
    ("hr", ("employee",), "read", "office/hr/payroll/x"),          # hr is a role given at run time only
    ("manager", ("contractor",), "read", "office/hr/reviews/x"),   # manager is a role (g, frank, manager)
    ("manager", ("contractor",), "read", "office/handbook/x"),     # ... and g, manager, employee is the role's
    ("employee", ("contractor",), "read", "office/handbook/x"),
    ("it_admin", ("contractor",), "admin", "office/x"),
])
def test_a_principal_id_never_grants_the_rules_of_a_role_of_the_same_name(principal: str, roles: tuple[str, ...],
                                                                          action: str, namespace: str) -> None:
    engine = PolicyEngine("office")
    assert not explain(engine, principal, roles, action, namespace).allowed
    assert explain(engine, "someone", (principal,), action, namespace).allowed  # the role itself does


def test_a_declared_principal_keeps_its_own_rules_and_cannot_be_given_as_a_role() -> None:
    engine = PolicyEngine("household")
    # p, lena, home/kids/lena/**, read is lena's own rule: g, lena, kid declares her a principal
    assert explain(engine, "lena", [], "read", "home/kids/lena/diary").allowed
    assert not explain(engine, "tom", [], "read", "home/kids/lena/diary").allowed
    with pytest.raises(InvalidRequest, match=r"role 'lena' is a principal in this policy \(.*household\.csv:\d+: "
                                             r"'g, lena, kid' declares it"):
        explain(engine, "mallory", ["lena"], "read", "home/kids/lena/diary")


@pytest.mark.integration
def test_an_unknown_principal_is_told_how_to_get_roles(tmp_path) -> None:
    with Memory.open(tmp_path / "d", policy="hospital", embedding=HashingEmbedding()) as mem:
        with pytest.raises(InvalidRequest, match=r"unknown principal 'zoe': it has no roles .* Give it roles: "
                                                 r"Principal\('zoe', roles=\[\.\.\.\]\), --role ROLE on the command "
                                                 r"line, or a policy line 'g, zoe, ROLE'"):
            mem.session(Principal("zoe")).search("x", "ward3/patients")
