"""Attacks on namespace matching: traversal, look-alike labels, invisible characters, pattern
tricks in policy files. Checked at the matcher and end to end through a real Memory, where
bob's secrets must never reach alice, whatever namespace she asks for."""

from __future__ import annotations

from pathlib import Path

import pytest

from memwarden import AccessDenied, InvalidRequest, Memory, PolicyError, Principal
from memwarden.memory.embeddings import HashingEmbedding
from memwarden.policies.engine import PolicyEngine
from memwarden.policies.loading import parse_policy_text
from memwarden.core.namespace import MAX_LABEL_CHARS, canonical_namespace
from memwarden.policies.tools import explain

pytestmark = pytest.mark.unit

CYRILLIC_ALICE = "\u0430lice"          # 'а' is U+0430 CYRILLIC SMALL LETTER A
FULLWIDTH_ALICE = "\uff41\uff4c\uff49\uff43\uff45"   # ａｌｉｃｅ: as a label it folds to alice
FULLWIDTH_BOB = "\uff42\uff4f\uff42"                # ｂｏｂ folds to bob

# Requests that must be refused before any policy or storage work.
REFUSED = [
    "mem/alice/../bob/x",
    "mem/alice/../bob",
    "mem/alice/./x",
    ("mem", "alice", "..", "bob", "x"),
    ("mem", "alice/../bob", "x"),
    ("mem", "alice\\..\\bob"),
    "mem/alice/%2e%2e/bob/x",
    "mem/alice/%2E%2e/bob/x",
    "mem/alice/%2e%2E/bob",
    "mem/alice%2f..%2fbob/x",
    "mem/alice/%252e%252e/bob",
    "mem/alice/\uff0e\uff0e/bob",          # full-width '..'
    "mem/alice\uff0f..\uff0fbob",          # full-width '/' folds to a separator inside the label
    "mem//bob/x",
    "mem/alice/",
    "/mem/bob",
    "mem/ali\u200bce/x",
    "mem/alice\u200d/x",
    "mem/\ufeffalice/x",
    "mem/alice\u202e/x",
    "mem/alice\U000e0041/x",
    "mem/alice\ufe0f/x",
    "mem/alice\n",
    "mem/alice\n/x",
    ("mem", "alice\n", "x"),
    ("mem", "alice\x00", "x"),
    ("mem", "alice "),
    "mem/alice/" + "x" * (MAX_LABEL_CHARS + 1),
    ("mem", "a" * 100_000),
    ("mem", "alice", None),
    "mem/alice/x/x/x/x/x/x/x",                 # nine labels
]

# Requests that are well formed but name some label other than alice's.
ELSEWHERE = [
    "mem/alice_evil/x",
    "mem/alice_evil",
    "mem/alicex",
    "mem/ALICE/x",
    "mem/Alice/x",
    f"mem/{CYRILLIC_ALICE}/x",
    f"mem/{CYRILLIC_ALICE}",
    "mem/\uff21lice/x",                        # full-width capital A folds to 'Alice', not 'alice'
    f"mem/{FULLWIDTH_BOB}/x",                   # folds to bob: bob's namespace, not alice's
    "mem/bob/x",
    "mem/bob",
    "mem/alice*",
    "mem/*lice/x",
    "mem/" + "a" * MAX_LABEL_CHARS,
    "bob/x",
]

POLICY_DEEP = f"""
p, alice, mem/alice/**, read
p, alice, mem/alice/**, write
p, bob, mem/bob/**, read
p, bob, mem/bob/**, write
p, bob, mem/alice_evil/**, write
p, bob, mem/alice_evil, write
p, bob, mem/alicex, write
p, bob, mem/ALICE/**, write
p, bob, mem/{CYRILLIC_ALICE}/**, write
p, bob, mem/alice*, write
g, alice, user
g, bob, user
"""

POLICY_ONE = POLICY_DEEP.replace("mem/alice/**", "mem/alice/*").replace("mem/bob/**", "mem/bob/*")

# Where bob plants secrets (each one also allowed by the one-label policy where possible).
BOB_NAMESPACES = [
    ("mem", "bob", "x"),
    ("mem", "bob", "x", "y"),
    ("mem", "alice_evil", "x"),
    ("mem", "alice_evil"),
    ("mem", "alicex"),
    ("mem", "ALICE", "x"),
    ("mem", CYRILLIC_ALICE, "x"),
    ("mem", "alice*"),
]


# -- at the matcher ---------------------------------------------------------------------------

@pytest.fixture(params=["deep", "one"])
def engine(request: pytest.FixtureRequest) -> PolicyEngine:
    return PolicyEngine(data=parse_policy_text(POLICY_DEEP if request.param == "deep" else POLICY_ONE))


@pytest.mark.parametrize("namespace", REFUSED, ids=[repr(n)[:40] for n in REFUSED])
def test_attack_namespaces_are_refused_at_canonicalisation(engine: PolicyEngine, namespace: object) -> None:
    with pytest.raises(InvalidRequest):
        canonical_namespace(namespace)
    with pytest.raises(InvalidRequest):
        explain(engine, "alice", [], "read", namespace)


@pytest.mark.parametrize("namespace", ELSEWHERE, ids=[repr(n)[:40] for n in ELSEWHERE])
@pytest.mark.parametrize("action", ["read", "write"])
def test_look_alike_namespaces_never_match_alice(engine: PolicyEngine, namespace: str, action: str) -> None:
    canonical = canonical_namespace(namespace)
    assert canonical[:2] != ("mem", "alice")
    assert not explain(engine, "alice", [], action, namespace).allowed


def test_alice_still_reaches_her_own_namespace(engine: PolicyEngine) -> None:
    # Without this the refusals above would prove nothing.
    assert explain(engine, "alice", [], "read", "mem/alice/x").allowed
    assert explain(engine, "alice", [], "read", f"mem/{FULLWIDTH_ALICE}/x").allowed   # folds to alice: same label
    assert explain(engine, "bob", [], "read", "mem/bob/x").allowed
    assert not explain(engine, "alice", [], "read", f"mem/{FULLWIDTH_BOB}/x").allowed


def test_deep_and_one_label_patterns_differ_only_in_depth() -> None:
    deep = PolicyEngine(data=parse_policy_text(POLICY_DEEP))
    one = PolicyEngine(data=parse_policy_text(POLICY_ONE))
    assert explain(deep, "alice", [], "read", "mem/alice/x/y").allowed
    assert not explain(one, "alice", [], "read", "mem/alice/x/y").allowed
    for e in (deep, one):
        assert not explain(e, "alice", [], "read", "mem/alice").allowed


# -- attacks written into the policy file -----------------------------------------------------

@pytest.mark.parametrize(("pattern", "hits", "misses"), [
    ("mem/alice*", ["mem/alice*"], ["mem/alice", "mem/alice_evil", "mem/alicex", "mem/alice/x"]),
    ("mem/alice*/**", ["mem/alice*/x"], ["mem/alice/x", "mem/alice_evil/x"]),
    ("mem/*lice", ["mem/*lice"], ["mem/alice", "mem/Alice"]),
    ("mem/.*", ["mem/.*"], ["mem/alice", "mem/x"]),                     # regex syntax is literal
    ("mem/[a-z]+", ["mem/[a-z]+"], ["mem/alice"]),
    ("mem/:user/x", ["mem/:user/x"], ["mem/alice/x"]),                 # keyMatch2 syntax is literal
    ("mem/{user}/x", ["mem/{user}/x"], ["mem/alice/x"]),               # keyMatch3 syntax is literal
    ("mem/alice/*", ["mem/alice/x"], ["mem/alice/x/y", "mem/alice", "mem/alice_evil/x"]),
    ("mem/alice", ["mem/alice"], ["mem/alice/x", "mem/alicex"]),
])
def test_policy_patterns_are_label_wise_never_glob_or_regex(pattern: str, hits: list[str], misses: list[str]) -> None:
    e = PolicyEngine(data=parse_policy_text(f"p, r, {pattern}, read\ng, u, r"))
    for n in hits:
        assert explain(e, "u", [], "read", n).allowed, n
    for n in misses:
        assert not explain(e, "u", [], "read", n).allowed, n


@pytest.mark.parametrize("pattern", [
    "mem/**/x", "**/x", "**", "mem/./x", "mem/../bob", "mem/%2e%2e/bob", "mem//x", "mem/x/", "/mem",
    "mem/ali\u200bce/**", "mem/alice\u202e/**", "mem/ａlice/**", "mem/alice /**", "mem/a\\b",
])
@pytest.mark.integration
def test_malformed_policy_patterns_are_policy_errors(pattern: str, tmp_path: Path) -> None:
    with pytest.raises(PolicyError):
        parse_policy_text(f"p, alice, {pattern}, read")
    path = tmp_path / "evil.csv"
    path.write_text(f"p, alice, mem/alice/**, read\np, alice, {pattern}, read\n", encoding="utf-8")
    # The whole file is refused; memwarden never runs with half a policy.
    with pytest.raises(PolicyError, match=r"evil\.csv:2"):
        Memory.open(tmp_path / "db", policy=path, embedding=HashingEmbedding())


# -- end to end through a real Memory --------------------------------------------------------

SECRET = "TOPSECRET-bob-{i}"


@pytest.fixture(scope="module", params=["deep", "one"])
def world(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp(f"attacks-{request.param}")
    policy = root / "policy.csv"
    policy.write_text(POLICY_DEEP if request.param == "deep" else POLICY_ONE, encoding="utf-8")
    mem = Memory.open(root / "db", policy=policy, embedding=HashingEmbedding())
    bob = mem.session(Principal("bob"))
    alice = mem.session(Principal("alice"))
    secrets = {}
    for i, namespace in enumerate(BOB_NAMESPACES):
        if not mem.policy.decide(mem.policy.subjects("bob", ()), "write", namespace).allowed:
            continue
        text = SECRET.format(i=i) + " alice bob secret password"
        secrets[bob.write(text, namespace=namespace).id] = text
    own = alice.write("alice's own note about the secret password", namespace=("mem", "alice", "x"))
    assert len(secrets) >= 6
    yield mem, alice, bob, secrets, own
    mem.close()


def _no_secret_in(value: object, secrets: dict[str, str]) -> None:
    text = repr(value)
    assert "TOPSECRET" not in text
    assert not any(rid in text for rid in secrets)


@pytest.mark.parametrize("namespace", REFUSED + ELSEWHERE + ["", (), "mem", "mem/alice"],
                         ids=[repr(n)[:40] for n in REFUSED + ELSEWHERE + ["", (), "mem", "mem/alice"]])
@pytest.mark.integration
@pytest.mark.slow
def test_no_leak_end_to_end(world, namespace: object) -> None:
    mem, alice, bob, secrets, own = world
    refused = namespace in REFUSED
    for call in (
        lambda: alice.search("secret password alice bob", namespace=namespace, k=50),
        lambda: alice.search(None, namespace=namespace, k=50),
        lambda: alice.list_namespaces(namespace),
    ):
        try:
            result = call()
        except InvalidRequest as exc:
            assert refused, f"{namespace!r} was refused but is well formed: {exc}"
            _no_secret_in(str(exc), secrets)
            continue
        except AccessDenied as exc:
            assert not refused, f"{namespace!r} reached the policy instead of being refused"
            _no_secret_in(str(exc), secrets)
            continue
        assert not refused, f"{namespace!r} was not refused"
        _no_secret_in(result, secrets)
        # anything alice sees is alice's own
        for item in result:
            ns = item.record.namespace if hasattr(item, "record") else item
            assert ns[:2] == ("mem", "alice"), ns
    # writes into attack namespaces never land outside alice's space
    try:
        rec = alice.write("alice tries to plant a note", namespace=namespace)
    except (InvalidRequest, AccessDenied) as exc:
        _no_secret_in(str(exc), secrets)
    else:
        assert rec.namespace[:2] == ("mem", "alice") and not refused


@pytest.mark.integration
def test_alice_sees_her_own_records_and_nothing_of_bobs(world) -> None:
    mem, alice, bob, secrets, own = world
    hits = alice.search("secret password alice bob", namespace=(), k=100)
    assert [h.record.id for h in hits] == [own.id]
    assert alice.list_namespaces() == [("mem", "alice", "x")]
    # bob sees his own: the secrets are really there to be leaked
    bob_hits = bob.search("secret password alice bob", namespace=("mem", "bob"), k=100)
    assert bob_hits and all(h.record.id in secrets for h in bob_hits)


@pytest.mark.integration
def test_get_update_forget_by_id_never_reveal_bobs_records(world) -> None:
    mem, alice, bob, secrets, own = world
    missing = "mem_" + "0" * 32
    with pytest.raises(InvalidRequest) as info:
        alice.update(missing, content="overwritten by alice")
    not_there = str(info.value)
    for rid in secrets:
        assert alice.get(rid) is None
        # the refusal is word for word the one for an id that does not exist: no existence oracle
        with pytest.raises(InvalidRequest) as info:
            alice.update(rid, content="overwritten by alice")
        assert str(info.value) == not_there.replace(missing, rid)
        assert "TOPSECRET" not in str(info.value)
        with pytest.raises(InvalidRequest):
            alice.forget(rid)
    # bob reads back what he may read: the secrets are really stored
    readable = [r for r in map(bob.get, secrets) if r is not None]
    assert len(readable) >= 1 and all(r.content == secrets[r.id] for r in readable)
    for bad in ["../" + next(iter(secrets)), next(iter(secrets)) + "\n", next(iter(secrets)).upper()]:
        with pytest.raises(InvalidRequest):
            alice.get(bad)


@pytest.mark.parametrize("principal", [
    lambda: Principal("ali\u200bce"),
    lambda: Principal("alice\n"),
    lambda: Principal("alice", roles=["bob\u200d"]),
    lambda: Principal("../bob"),
])
def test_spoofed_principals_are_refused(principal) -> None:
    with pytest.raises((InvalidRequest, ValueError)):
        principal()


@pytest.mark.integration
def test_look_alike_principal_is_refused(world) -> None:
    mem, alice, bob, secrets, own = world
    with pytest.raises(InvalidRequest, match="mixes Latin and Cyrillic letters"):
        mem.session(Principal(CYRILLIC_ALICE)).search(None, namespace=(), k=10)
    # full-width is not folded into alice any more: ids are exact, so it is refused
    with pytest.raises(InvalidRequest, match="not in NFKC form"):
        mem.session(Principal(FULLWIDTH_ALICE))
    with pytest.raises(InvalidRequest, match="unknown principal 'Alice'"):
        mem.session(Principal("Alice")).search(None, namespace=(), k=10)


def test_a_hash_inside_a_line_never_truncates_a_rule() -> None:
    """A trailing comment would let the typo below drop the deny and leave an allow."""
    from memwarden.core.errors import PolicyError
    from memwarden.policies.loading import parse_policy_text

    with pytest.raises(PolicyError, match="unknown action 'read#'"):
        parse_policy_text("p, clerk, ward/**, read#, deny\n")
    with pytest.raises(PolicyError, match="unknown effect"):
        parse_policy_text("p, clerk, ward/**, read, # deny\n")
