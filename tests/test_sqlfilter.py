"""The SQL compiler of Chroma's ``where`` dialect, and its Python twin (the derived index's
filter on partly covered partitions), against a real Chroma collection.

The lexical leg of hybrid search filters with ``compile_where``; the dense leg sends the same
filter to Chroma. For random metadata (memwarden's own codec, plus keys of every type and
odd values) and random filters (policy scopes from the pushdown, visibility, kinds, time,
and arbitrary operator trees), the set of rows SQLite selects must equal the set Chroma
returns, with the JSON path and with the generated scalar columns alike.
"""

from __future__ import annotations

import json
import random
import sqlite3
from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np
import pytest

from memwarden.guards.visibility import visible_filter
from memwarden.memory.codec import stored_metadata, to_metadata
from memwarden.memory.lexical import _HOT_KEYS, _SCALARS
from memwarden.core.records import MemoryRecord, Status
from memwarden.memory.retrieval import time_filter
from memwarden.policies.engine import PolicyEngine
from memwarden.policies.loading import parse_policy_text
from memwarden.policies.pushdown import all_of, any_of, outside_scope_filter, scope_filter
from memwarden.policies.metafilter import compile_predicate
from memwarden.policies.sqlfilter import compile_where, scalar_column

pytestmark = pytest.mark.unit

chromadb = pytest.importorskip("chromadb")

LABELS = ["a", "b", "c", "1", "true", "$ne", "ns_depth", "日本"]
NOW = datetime(2025, 6, 1, tzinfo=timezone.utc)
POLICY = """
p, r0, a/**, read
p, r0, a/b/**, read, deny
p, r0, */c, read
p, r1, */*/1, read
p, r1, 日本/**, read
p, r1, 日本/a/**, read, deny
g, u0, r0
g, u1, r1
g, u2, r0
g, u2, r1
"""


def _records(rng: random.Random, n: int) -> list[dict]:
    metas = []
    for i in range(n):
        ns = tuple(rng.choice(LABELS) for _ in range(rng.randint(1, 4)))
        created = NOW - timedelta(days=rng.randint(0, 400))
        valid_from = created - timedelta(days=rng.randint(0, 30)) if rng.random() < 0.5 else None
        record = MemoryRecord(
            id=f"r{i}", namespace=ns, content="x", writer=rng.choice(["w1", "w2"]),
            kind=rng.choice(["fact", "event", "rule", "preference"]), subjects=tuple(rng.sample(["s1", "s2", "s3"], rng.randint(0, 2))),
            status=rng.choice(list(Status)), created_at=created, valid_from=valid_from,
            valid_to=valid_from + timedelta(days=rng.randint(1, 60)) if valid_from and rng.random() < 0.5 else None,
            expires_at=NOW + timedelta(days=rng.randint(-10, 10)) if rng.random() < 0.3 else None,
            labels={"sens": rng.choice(["low", "high", "1"])} if rng.random() < 0.5 else {},
        )
        meta = stored_metadata(to_metadata(record))
        # Keys of every type and clashes memwarden itself never writes, to pin the semantics.
        extra = rng.random()
        if extra < 0.15:
            meta["x"] = rng.choice([1, 1.0, 2.5, True, False, "1", "a"])
        elif extra < 0.25:
            meta["x"] = rng.choice([[1, 2], [1.0], ["a", "b"], [True]])
        metas.append(meta)
    return metas


def _random_leaf(rng: random.Random) -> dict:
    key = rng.choice(["x", "status", "kind", "ns_0", "ns_1", "ns_depth", "trust", "subjects", "lbl_sens",
                      "created_at", "missing"])
    value = rng.choice([1, 1.0, 2, 2.5, True, False, "1", "a", "active", "fact", "s1", "high", 3])
    op = rng.choice(["$eq", "$ne", "$gt", "$gte", "$lt", "$lte", "$in", "$nin", "$contains", "$not_contains", None])
    if op in ("$gt", "$gte", "$lt", "$lte") and not (isinstance(value, (int, float)) and not isinstance(value, bool)):
        value = rng.choice([0, 1, 2.5, NOW.timestamp() - 86400 * 100])
    if op in ("$in", "$nin"):
        same = [v for v in [1, 2.5, 3, "a", "1", "active", "fact", True, False] if type(v) is type(value)]
        value = rng.sample(same, min(len(same), rng.randint(1, 3)))
    return {key: value} if op is None else {key: {op: value}}


def _random_tree(rng: random.Random, depth: int = 0) -> dict:
    if depth >= 2 or rng.random() < 0.4:
        return _random_leaf(rng)
    parts = [_random_tree(rng, depth + 1) for _ in range(rng.randint(2, 3))]
    return {rng.choice(["$and", "$or"]): parts}


def _filters(rng: random.Random) -> list[dict]:
    engine = PolicyEngine(data=parse_policy_text(POLICY))
    filters = []
    for user in ("u0", "u1", "u2"):
        subjects = engine.subjects(user, ())
        for prefix in [(), ("a",), ("日本",), ("a", "b"), ("c",)]:
            scope = engine.scope(subjects, "read", prefix)
            if scope.empty:
                continue
            filters.append(scope_filter(scope))
            filters.append(outside_scope_filter(scope))
            filters.append(all_of([visible_filter(NOW), scope_filter(scope), {"kind": {"$in": ["fact", "rule"]}},
                                   time_filter(as_of=NOW - timedelta(days=50))]))
    filters.append(time_filter(time_range=(NOW - timedelta(days=200), NOW - timedelta(days=100)),
                               created_after=NOW - timedelta(days=300), created_before=NOW))
    filters.append(any_of([{"subjects": {"$contains": "s1"}}, {"subjects": {"$contains": "s3"}}]))
    filters += [_random_tree(rng) for _ in range(250)]
    return filters


@pytest.fixture(scope="module")
def stores(tmp_path_factory: pytest.TempPathFactory):
    rng = random.Random(7)
    metas = _records(rng, 300)
    root = tmp_path_factory.mktemp("sqlfilter")
    client = chromadb.PersistentClient(path=str(root / "chroma"))
    col = client.get_or_create_collection("equivalence", embedding_function=None)
    ids = [f"r{i}" for i in range(len(metas))]
    col.add(ids=ids, embeddings=np.zeros((len(ids), 2), dtype=np.float32) + 0.5, metadatas=metas)
    db = sqlite3.connect(":memory:")
    hot = ", ".join(f"k_{key} GENERATED ALWAYS AS ({scalar_column(key)}) STORED" for key in _HOT_KEYS)
    db.execute(f"CREATE TABLE docs (id TEXT, meta TEXT, {hot})")
    db.executemany("INSERT INTO docs(id, meta) VALUES (?, ?)", [(i, json.dumps(m)) for i, m in zip(ids, metas)])
    yield col, db, rng, dict(zip(ids, metas))
    client.close()


@pytest.mark.integration
@pytest.mark.slow
def test_sql_selects_exactly_what_chroma_returns(stores) -> None:
    col, db, rng, _ = stores
    checked = 0
    for where in _filters(rng):
        try:
            expected = set(col.get(where=where, include=[])["ids"])
        except Exception:  # noqa: BLE001 - Chroma refuses it (e.g. mixed types): so must we
            with pytest.raises(ValueError):
                compile_where(where)
            continue
        for scalars in ({}, {k: v.replace("d.", "") for k, v in _SCALARS.items()}):
            sql, params = compile_where(where, "meta", scalars)
            got = {r[0] for r in db.execute(f"SELECT id FROM docs WHERE {sql}", params)}
            assert got == expected, (where, scalars != {})
        checked += 1
    assert checked > 200


def test_the_python_predicate_selects_exactly_what_chroma_returns(stores) -> None:
    col, _, _, metas = stores
    checked = 0
    for where in _filters(random.Random(11)):
        try:
            expected = set(col.get(where=where, include=[])["ids"])
        except Exception:  # noqa: BLE001 - Chroma refuses it: so must the predicate
            with pytest.raises(ValueError):
                compile_predicate(where)
            continue
        test = compile_predicate(where)
        assert {i for i, meta in metas.items() if test(meta)} == expected, where
        checked += 1
    assert checked > 200


@pytest.mark.parametrize("where", [
    {"a": 1, "b": 2},                      # two keys at once: Chroma refuses it
    {"$not": {"a": 1}},                    # an operator Chroma does not have
    {"a": {"$regex": "x"}},
    {"a": {"$gt": "x"}},                   # ordering is numeric only
    {"a": {"$in": []}},
    {"a": {"$in": [1, "x"]}},
    {"a'; DROP TABLE docs; --": 1},        # never a key memwarden writes; never spliced into SQL
    {"a": None},
    {"$and": []},
])
def test_anything_outside_the_dialect_is_refused(where: dict) -> None:
    with pytest.raises(ValueError):
        compile_where(where)
    with pytest.raises(ValueError):
        compile_predicate(where)


def test_an_empty_filter_selects_everything() -> None:
    assert compile_predicate(None)({}) and compile_predicate({})({"a": 1})
    assert compile_where(None) == ("1", [])
    assert compile_where({}) == ("1", [])


def test_values_are_parameters_not_sql(tmp_path: Path) -> None:
    sql, params = compile_where({"ns_0": "x' OR '1'='1"})
    assert "OR '1'" not in sql and params == ["x' OR '1'='1"]
