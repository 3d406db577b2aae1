"""The read-filter pushdown against a real embedded Chroma, and policy reload under concurrency.

1. For a few hundred random namespaces stored with memwarden's own codec, and several
   policies, ``collection.get(where=scope_filter(scope))`` returns exactly the records that
   ``PolicyEngine.decide`` allows (and ``outside_scope_filter`` exactly the rest).
2. Writers and searchers run through a real Memory while the policy is reloaded to revoke a
   namespace: no search that starts after ``reload`` returns sees a revoked record.
"""

from __future__ import annotations

import random
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from memwarden import AccessDenied, Memory, Principal
from memwarden.memory.codec import stored_metadata, to_metadata
from memwarden.memory.embeddings import HashingEmbedding
from memwarden.core.records import MemoryRecord
from memwarden.policies.engine import PolicyEngine
from memwarden.policies.loading import parse_policy_text
from memwarden.core.namespace import MAX_DEPTH
from memwarden.policies.pushdown import outside_scope_filter, scope_filter

pytestmark = pytest.mark.integration

chromadb = pytest.importorskip("chromadb")

# Labels include ones that look like numbers, booleans, operators and metadata keys, and
# non-ASCII ones: the filter must compare them as plain strings, label by label.
LABELS = ["a", "b", "c", "1", "true", "$ne", "ns_depth", "日本", "a b"]

FIXED_POLICIES = [
    """
    p, reader, a/**, read
    p, reader, a/b/**, read, deny
    p, reader, */c, read
    p, writer, a/*, write
    g, u0, reader
    g, u1, writer
    g, writer, reader
    """,
    """
    p, r0, */**, read
    p, r0, */*/1, read, deny
    p, r0, true/**, read, deny
    p, r1, $ne/**, read
    p, r1, ns_depth, read
    p, r1, 日本/a b/**, read
    p, r1, c/**, read, review
    p, r1, c/a/**, read, deny
    g, u0, r0
    g, u1, r1
    """,
    """
    p, r0, a/b/c/a/b/c/a/*, read
    p, r0, a/b/c/a/b/c/a/b, read, deny
    p, r0, 1/*/*/**, read
    p, r0, 1/a/*/**, read, deny
    g, u0, r0
    """,
]


def random_namespace(rnd: random.Random) -> tuple[str, ...]:
    depth = rnd.choice([1, 1, 2, 2, 3, 3, 4, 5, MAX_DEPTH])
    return tuple(rnd.choice(LABELS) for _ in range(depth))


_rnd = random.Random(20240607)
NAMESPACES = [random_namespace(_rnd) for _ in range(400)] + [
    # every namespace the fixed policies name, so their exact patterns are exercised too
    ("a", "b", "c", "a", "b", "c", "a", "b"), ("a", "b", "c", "a", "b", "c", "a", "c"),
    ("ns_depth",), ("$ne", "x"), ("日本", "a b", "c"), ("true", "c"), ("1", "a", "b", "c"), ("c", "a", "x"), ("c", "b"),
]


def random_policy(rnd: random.Random) -> str:
    """Rules whose patterns are stored namespaces with some labels turned into '*' and a tail
    cut off for '**', so that they match some records and miss others."""
    lines = []
    for i in range(rnd.randint(3, 8)):
        ns = rnd.choice(NAMESPACES)
        labels = [label if rnd.random() < 0.6 else "*" for label in ns[: rnd.randint(1, min(len(ns), 4))]]
        if rnd.random() < 0.5:
            labels.append("**")
        effect = rnd.choice(["allow", "allow", "allow", "deny", "deny", "review"]) if i >= 2 else "allow"
        action = rnd.choice(["read", "write"]) if i >= 2 else "read"
        lines.append(f"p, {rnd.choice(['r0', 'r1', 'u0'])}, {'/'.join(labels)}, {action}, {effect}")
    lines += ["g, u0, r0", "g, u1, r1"] + (["g, r1, r0"] if rnd.random() < 0.5 else [])
    return "\n".join(lines)


@pytest.fixture(scope="module")
def collection(tmp_path_factory: pytest.TempPathFactory):
    from chromadb.config import Settings

    client = chromadb.PersistentClient(path=str(tmp_path_factory.mktemp("chroma")),
                                       settings=Settings(anonymized_telemetry=False))
    col = client.get_or_create_collection("pushdown", embedding_function=None)
    namespaces = NAMESPACES
    records = {}
    for i, ns in enumerate(namespaces):
        record = MemoryRecord(id=f"mem_{i:032x}", namespace=ns, content=f"record {i}", writer="w")
        records[record.id] = ns
    ids = list(records)
    vectors = np.random.default_rng(7).normal(size=(len(ids), 8)).astype(np.float32)
    metadatas = [stored_metadata(to_metadata(MemoryRecord(id=i, namespace=records[i], content="x", writer="w"))) for i in ids]
    col.add(ids=ids, embeddings=vectors, documents=[f"doc {i}" for i in ids], metadatas=metadatas)
    return col, records


def prefixes_for(rnd: random.Random, records: dict[str, tuple[str, ...]]) -> list[tuple[str, ...]]:
    picks = [(), ("a",), ("a", "b"), ("1",), ("日本", "a b")]
    for ns in rnd.sample(sorted(records.values()), 3):
        picks.append(ns[: rnd.randint(1, len(ns))])
    return picks


POLICIES = FIXED_POLICIES + [random_policy(random.Random(seed)) for seed in range(4)]


@pytest.mark.parametrize("policy", POLICIES, ids=[f"policy{i}" for i in range(len(POLICIES))])
@pytest.mark.slow
def test_chroma_returns_exactly_what_decide_allows(collection, policy: str) -> None:
    col, records = collection
    engine = PolicyEngine(data=parse_policy_text(policy))
    rnd = random.Random(policy)
    checked = nonempty = 0
    for principal, roles in [("u0", ()), ("u1", ()), ("x", ("r0", "r1")), ("x", ())]:
        subjects = engine.subjects(principal, roles)
        for action in ("read", "write"):
            for prefix in prefixes_for(rnd, records):
                allowed = {rid for rid, ns in records.items()
                           if ns[: len(prefix)] == prefix and engine.decide(subjects, action, ns).allowed}
                under = {rid for rid, ns in records.items() if ns[: len(prefix)] == prefix}
                scope = engine.scope(subjects, action, prefix)
                if scope.empty:
                    assert allowed == set(), (policy, principal, action, prefix)
                    got_outside = set(col.get(where=outside_scope_filter(scope) or None)["ids"])
                    assert got_outside == under
                    continue
                where = scope_filter(scope)
                got = set(col.get(where=where or None)["ids"])
                assert got == allowed, (policy, principal, roles, action, prefix, where,
                                        sorted(records[i] for i in got ^ allowed))
                outside = set(col.get(where=outside_scope_filter(scope) or None)["ids"])
                assert outside == under - allowed, (policy, prefix, sorted(records[i] for i in outside ^ (under - allowed)))
                checked += 1
                nonempty += bool(allowed)
    assert checked >= 5 and nonempty >= 3, (checked, nonempty)


def test_vector_query_with_the_pushed_down_filter(collection) -> None:
    col, records = collection
    engine = PolicyEngine(data=parse_policy_text(FIXED_POLICIES[0]))
    subjects = engine.subjects("u0", ())
    scope = engine.scope(subjects, "read", ())
    allowed = {rid for rid, ns in records.items() if engine.decide(subjects, "read", ns).allowed}
    assert allowed
    got = col.query(query_embeddings=[np.ones(8, dtype=np.float32)], n_results=len(records), where=scope_filter(scope))
    assert set(got["ids"][0]) == allowed


# -- policy reload under concurrency --------------------------------------------------------------

V1 = """
p, writer, team/**, write
p, reader, team/**, read
g, w, writer
g, r, reader
"""
V2 = V1 + "p, reader, team/b/**, read, deny\n"


@pytest.mark.slow
def test_reload_revokes_for_every_search_started_afterwards(tmp_path: Path) -> None:
    policy = tmp_path / "policy.csv"
    policy.write_text(V1, encoding="utf-8")
    mem = Memory.open(tmp_path / "db", policy=policy, embedding=HashingEmbedding())
    writer = mem.session(Principal("w"))
    b_ids = [writer.write(f"team b note {i} about the launch", namespace=("team", "b", f"n{i}")).id for i in range(5)]
    for i in range(5):
        writer.write(f"team a note {i} about the launch", namespace=("team", "a", f"n{i}"))

    reloaded = threading.Event()
    stop = threading.Event()
    errors: list[BaseException] = []
    leaks: list[str] = []
    counts = {"before_saw_b": 0, "after": 0, "writes": 0}
    lock = threading.Lock()

    def write_loop(label: str) -> None:
        i = 0
        try:
            while not stop.is_set():
                writer.write(f"{label} live note {i} about the launch", namespace=("team", label, f"live{i % 7}"))
                i += 1
                with lock:
                    counts["writes"] += 1
        except BaseException as exc:  # noqa: BLE001 - reported by the main thread
            errors.append(exc)

    def search_loop(seed: int) -> None:
        reader = mem.session(Principal("r"))
        rnd = random.Random(seed)
        try:
            while not stop.is_set():
                started_after = reloaded.is_set()
                kind = rnd.randrange(4)
                if kind == 0:
                    namespaces = [h.record.namespace for h in reader.search("launch note", namespace=("team",), k=50)]
                elif kind == 1:
                    namespaces = [h.record.namespace for h in reader.search(None, namespace=(), k=100)]
                elif kind == 2:
                    namespaces = reader.list_namespaces(("team",))
                else:
                    found = [reader.get(rid) for rid in b_ids]
                    namespaces = [r.namespace for r in found if r is not None]
                saw_b = any(ns[:2] == ("team", "b") for ns in namespaces)
                with lock:
                    if started_after:
                        counts["after"] += 1
                        if saw_b:
                            leaks.append(f"op {kind} started after reload returned {namespaces}")
                    elif saw_b:
                        counts["before_saw_b"] += 1
                # a search at the revoked prefix itself is refused once reloaded
                if started_after and kind == 0:
                    try:
                        hits = reader.search("launch", namespace=("team", "b"), k=10)
                    except AccessDenied:
                        hits = []
                    if hits:
                        leaks.append(f"search at team/b returned {len(hits)} hits after reload")
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=write_loop, args=(label,)) for label in ("a", "b")]
    threads += [threading.Thread(target=search_loop, args=(seed,)) for seed in (1, 2)]
    for t in threads:
        t.start()
    try:
        deadline = time.monotonic() + 20
        while counts["before_saw_b"] < 5 and time.monotonic() < deadline and not errors:
            time.sleep(0.05)
        mem.policy.reload(data=parse_policy_text(V2))
        reloaded.set()
        deadline = time.monotonic() + 20
        while counts["after"] < 40 and time.monotonic() < deadline and not errors:
            time.sleep(0.05)
    finally:
        stop.set()
        for t in threads:
            t.join(timeout=60)
    try:
        assert not errors, errors
        assert counts["before_saw_b"] >= 5, counts      # the revoked records were visible before
        assert counts["after"] >= 40, counts            # and many searches ran afterwards
        assert counts["writes"] > 0
        assert leaks == []
        # and they are still stored: revocation is a policy change, not a deletion
        assert len(mem.session(Principal("w", roles=["reader"])).search(None, namespace=("team", "a"), k=5)) > 0
        assert all(mem.session(Principal("r")).get(rid) is None for rid in b_ids)
    finally:
        mem.close()
