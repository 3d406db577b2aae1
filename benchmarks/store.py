"""Benchmark: the LangGraph store (``Memory.as_store()``) on a mixed async workload, with raw
Chroma measured in the same run as the floor (issue 20, item 3).

One workload of ``--ops`` operations (default 6,000), the same for both arms, drawn with a fixed
seed over ``--users`` users, each with a namespace of its own under ``("users", id, "memories")``:

- 40% ``aput`` of a small JSON value (a new key, or an existing one overwritten),
- 25% ``aget`` of a key put earlier,
- 15% ``asearch`` with a query (limit 5),
- 10% ``asearch`` with a ``filter`` and no query (limit 10),
- 10% ``alist_namespaces`` under ``("users",)``.

The workload runs ``--concurrency`` operations at a time with ``asyncio.gather``, as a
LangGraph server's concurrent runs would. Arms:

- **governed**: ``Memory.open`` (embedded Chroma, default validators, an allow-all policy for
  every user) and ``as_store()``; each operation is bound to its user (``bind_principal``).
  Every operation goes through memwarden's pipeline.
- **raw**: one Chroma collection, called directly from the same coroutines through
  ``asyncio.to_thread``: ``upsert`` for a put, ``get(ids=...)`` for a get, ``query`` with a
  ``where`` on the namespace for a search, ``get(where=...)`` for a filtered search (the filter
  as a Chroma ``where`` on metadata) and a metadata scan for the listing. No policy, no audit, no
  validation: the floor.

Both arms embed with the same embedder (``--embedding hashing``, the default, a fast
deterministic test embedding, or ``minilm``, the bundled model). Reported: wall time of each
arm, operations per second, the ratio governed / raw, the target (at most 10 s for 6,000 ops)
met or not, and per-kind p50/p95 latencies; JSON in ``benchmarks/results/store.json``.

Usage: python benchmarks/store.py [--ops 6000] [--users 20] [--concurrency 8]
                                  [--embedding hashing|minilm] [--out DIR]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from memwarden import Memory, Principal  # noqa: E402 - after the path is set
from memwarden.integrations.binding import bind_principal  # noqa: E402
from memwarden.memory.embeddings import HashingEmbedding, default_embedder  # noqa: E402

KINDS = (("put", 0.40), ("get", 0.25), ("search", 0.15), ("filter", 0.10), ("list", 0.10))
TOPICS = ["coffee", "flights", "meetings", "invoices", "allergies", "music", "books", "running", "tea", "cities"]
TARGET_SECONDS = 10.0


def workload(ops: int, users: int, seed: int = 7) -> list[tuple[str, int, dict[str, Any]]]:
    """The operations, as (kind, user, arguments), the same for both arms."""
    rng = random.Random(seed)
    keys: dict[int, list[str]] = defaultdict(list)
    out = []
    for i in range(ops):
        kind = rng.choices([k for k, _ in KINDS], [w for _, w in KINDS])[0]
        user = rng.randrange(users)
        if kind in ("get", "filter", "search") and not keys[user]:
            kind = "put"
        if kind == "put":
            key = rng.choice(keys[user]) if keys[user] and rng.random() < 0.2 else f"m{i}"
            if key not in keys[user]:
                keys[user].append(key)
            topic = rng.choice(TOPICS)
            out.append((kind, user, {"key": key, "value": {"text": f"user {user} likes {topic} number {i}",
                                                           "topic": topic, "n": i}}))
        elif kind == "get":
            out.append((kind, user, {"key": rng.choice(keys[user])}))
        elif kind == "search":
            out.append((kind, user, {"query": f"what about {rng.choice(TOPICS)}"}))
        elif kind == "filter":
            out.append((kind, user, {"topic": rng.choice(TOPICS)}))
        else:
            out.append((kind, user, {}))
    return out


def _namespace(user: int) -> tuple[str, ...]:
    return ("users", f"u{user}", "memories")


def _policy(path: Path) -> Path:
    lines = [f"p, member, users/**, {action}" for action in ("read", "write", "update", "forget")]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


async def _run(ops: list[tuple[str, int, dict[str, Any]]], call: Any, concurrency: int) -> tuple[float, dict]:
    latencies: dict[str, list[float]] = defaultdict(list)
    semaphore = asyncio.Semaphore(concurrency)

    async def one(kind: str, user: int, args: dict[str, Any]) -> None:
        async with semaphore:
            start = time.perf_counter()
            await call(kind, user, args)
            latencies[kind].append(time.perf_counter() - start)

    start = time.perf_counter()
    # In order within a user (a put before the get that reads it), concurrent across users.
    by_user: dict[int, list] = defaultdict(list)
    for op in ops:
        by_user[op[1]].append(op)

    async def user_run(items: list) -> None:
        for kind, user, args in items:
            await one(kind, user, args)

    await asyncio.gather(*(user_run(items) for items in by_user.values()))
    return time.perf_counter() - start, latencies


def governed_arm(ops: list, embedder: Any, root: Path, concurrency: int) -> tuple[float, dict]:
    """The workload through ``as_store()``, each op bound to its user."""
    with Memory.open(root / "governed", policy=_policy(root / "policy.csv"), embedding=embedder) as mem:
        store = mem.as_store()
        principals = {}

        async def call(kind: str, user: int, args: dict[str, Any]) -> None:
            principal = principals.setdefault(user, Principal(f"u{user}", roles=["member"]))
            ns = _namespace(user)
            with bind_principal(principal):
                if kind == "put":
                    await store.aput(ns, args["key"], args["value"])
                elif kind == "get":
                    await store.aget(ns, args["key"])
                elif kind == "search":
                    await store.asearch(ns, query=args["query"], limit=5)
                elif kind == "filter":
                    await store.asearch(ns, filter={"topic": args["topic"]}, limit=10)
                else:
                    await store.alist_namespaces(prefix=("users",))

        return asyncio.run(_run(ops, call, concurrency))


def raw_arm(ops: list, embedder: Any, root: Path, concurrency: int) -> tuple[float, dict]:
    """The same workload on one plain Chroma collection: the floor."""
    import chromadb

    client = chromadb.PersistentClient(path=str(root / "raw"))
    collection = client.create_collection("raw", metadata={"hnsw:space": "cosine"}, embedding_function=None)

    def put(user: int, key: str, value: dict) -> None:
        text = json.dumps(value, sort_keys=True)
        vector = embedder.embed_documents([text])
        collection.upsert(ids=[f"u{user}/{key}"], documents=[text], embeddings=vector,
                          metadatas=[{"ns": "/".join(_namespace(user)), "topic": value["topic"]}])

    def search(user: int, query: str) -> None:
        collection.query(query_embeddings=[embedder.embed_query(query)], n_results=5,
                         where={"ns": "/".join(_namespace(user))})

    def list_namespaces() -> None:
        sorted({m["ns"] for m in collection.get(include=["metadatas"])["metadatas"]})

    async def call(kind: str, user: int, args: dict[str, Any]) -> None:
        if kind == "put":
            await asyncio.to_thread(put, user, args["key"], args["value"])
        elif kind == "get":
            await asyncio.to_thread(collection.get, ids=[f"u{user}/{args['key']}"])
        elif kind == "search":
            await asyncio.to_thread(search, user, args["query"])
        elif kind == "filter":
            await asyncio.to_thread(collection.get, where={"$and": [{"ns": "/".join(_namespace(user))},
                                                                    {"topic": args["topic"]}]}, limit=10)
        else:
            await asyncio.to_thread(list_namespaces)

    return asyncio.run(_run(ops, call, concurrency))


def _summary(latencies: dict[str, list[float]]) -> dict[str, dict[str, float]]:
    out = {}
    for kind, values in sorted(latencies.items()):
        ordered = sorted(values)
        out[kind] = {"n": len(values), "p50_ms": 1000 * statistics.median(ordered),
                     "p95_ms": 1000 * ordered[int(0.95 * (len(ordered) - 1))]}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ops", type=int, default=6000)
    parser.add_argument("--users", type=int, default=20)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--embedding", choices=("hashing", "minilm"), default="hashing")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results")
    args = parser.parse_args()
    embedder = HashingEmbedding(384) if args.embedding == "hashing" else default_embedder()
    ops = workload(args.ops, args.users)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        raw_s, raw_lat = raw_arm(ops, embedder, root, args.concurrency)
        gov_s, gov_lat = governed_arm(ops, embedder, root, args.concurrency)
    result = {
        "ops": args.ops, "users": args.users, "concurrency": args.concurrency, "embedding": args.embedding,
        "governed_s": gov_s, "raw_s": raw_s, "ratio": gov_s / raw_s, "target_s": TARGET_SECONDS,
        "target_met": gov_s <= TARGET_SECONDS * args.ops / 6000,
        "governed": _summary(gov_lat), "raw": _summary(raw_lat),
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "store.json").write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(f"{args.ops} mixed ops, {args.users} users, concurrency {args.concurrency}, {args.embedding} embedding")
    print(f"  governed as_store(): {gov_s:7.2f} s  ({args.ops / gov_s:7.0f} ops/s)")
    print(f"  raw Chroma (floor):  {raw_s:7.2f} s  ({args.ops / raw_s:7.0f} ops/s)")
    print(f"  ratio governed/raw:  {gov_s / raw_s:7.2f}x   target <= {TARGET_SECONDS:.0f} s per 6,000 ops: "
          f"{'met' if result['target_met'] else 'NOT met'}")
    for kind in result["governed"]:
        g, r = result["governed"][kind], result["raw"].get(kind, {})
        print(f"  {kind:<7} n={g['n']:<5} governed p50 {g['p50_ms']:7.2f} ms p95 {g['p95_ms']:7.2f} ms | "
              f"raw p50 {r.get('p50_ms', float('nan')):6.2f} ms p95 {r.get('p95_ms', float('nan')):6.2f} ms")


if __name__ == "__main__":
    main()
