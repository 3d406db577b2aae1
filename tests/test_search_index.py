"""The derived in-RAM search index (memwarden/memory/derived.py, vectorindex.py).

- It never changes an answer: over random stores, states and scopes, a search answered from
  the index returns what the partition path returns (the same ids and scores in float32; in
  8-bit codes, scores within their error and the same ids above it).
- Erasure reaches it: after an erase, no text, vector or code of an erased row is left in any
  buffer it holds, also when the erasure runs while the index is loading.
- It follows Chroma: a change Chroma fails part-way is read back from Chroma; searches use the
  partition path until the index is loaded.
"""

from __future__ import annotations

import tempfile
import threading
from datetime import datetime, timezone
from pathlib import Path

import faiss
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memwarden import InvalidRequest, Memory, Principal
from memwarden.core.errors import MemwardenError
from memwarden.memory.derived import DerivedIndexBackend, derived_index
from memwarden.memory.embeddings import HashingEmbedding, embed_many
from memwarden.memory.partitioned import PartitionedBackend
from memwarden.memory.vectorindex import TRAIN_ROWS

from tests.conftest import HOSPITAL
from tests.ram_scan import ram_remnants

pytestmark = pytest.mark.integration

# The hospital policy, plus rules whose scopes cover partitions only in part (a residual
# filter per partition: the index's bitmap evaluates it on its copy of the metadata).
POLICY = HOSPITAL + """
p, physician, ward3/patients/p2, read, deny
p, auditor, ward3/*/p1, read
p, auditor, ward3/billing/inv, read
p, auditor, ward4/**, read
g, erin, auditor
"""
EMBEDDING = HashingEmbedding(dim=64)
ALICE = Principal("alice", roles=["physician"])
BOB = Principal("bob", roles=["nurse"])
CAROL = Principal("carol", roles=["billing_clerk"])
DPO = Principal("dpo", roles=["privacy_officer"])
ERIN = Principal("erin", roles=["auditor"])
WORDS = ["penicillin", "allergy", "invoice", "rash", "fever", "insulin", "ward", "night", "billing", "cardiac"]


def _open(root: Path, **settings) -> Memory:
    policy = root / "policy.csv"
    if not policy.exists():
        root.mkdir(parents=True, exist_ok=True)
        policy.write_text(POLICY, encoding="utf-8")
    return Memory.open(root / "data", policy=policy, embedding=EMBEDDING, lessons=False, validators=[], **settings)


def _loaded(mem: Memory) -> DerivedIndexBackend:
    index = derived_index(mem._backend)
    assert index is not None and index.wait_ready(60)
    return index


# -- the index never changes an answer -------------------------------------------------------

_writes = st.lists(st.tuples(
    st.sampled_from([("ward3", "patients", "p1"), ("ward3", "patients", "p2"), ("ward3", "patients", "p3", "x"),
                     ("ward3", "billing", "inv"), ("ward3", "billing", "inv", "q1"), ("ward4", "patients", "p9")]),
    st.lists(st.sampled_from(WORDS), min_size=1, max_size=4),
    st.sampled_from(["fact", "event", "rule"]),
    st.sampled_from(["keep", "keep", "forget", "update", "quarantine"])), min_size=1, max_size=40)
_searches = st.lists(st.tuples(
    st.sampled_from([ALICE, BOB, CAROL, DPO, ERIN]),
    st.sampled_from([(), ("ward3",), ("ward3", "patients"), ("ward3", "billing"), ("ward4",)]),
    st.lists(st.sampled_from(WORDS), min_size=1, max_size=3),
    st.sampled_from(["dense", "hybrid"]),
    st.integers(1, 12), st.sampled_from([None, ("fact",), ("event", "rule")]),
    # History and time windows: tested on the rows that come back, like visibility.
    st.sampled_from([{}, {}, {"include_superseded": True}, {"created_after": datetime(2000, 1, 1, tzinfo=timezone.utc)},
                     {"created_before": datetime(2000, 1, 1, tzinfo=timezone.utc)}])), min_size=1, max_size=8)


def _seed_random(mem: Memory, writes: list) -> None:
    """Write ``writes`` through the governed API (each namespace by a principal who may)."""
    for n, (ns, words, kind, fate) in enumerate(writes):
        writer = CAROL if ns[1] == "billing" else ALICE
        session = mem.session(writer)
        if ns[0] == "ward4" or len(ns) == 4 and ns[1] == "patients":
            # Nobody's policy lets a session write here: bulk-seed it (rows nobody may read,
            # or only some, right beside the ones they may).
            _seed(mem, [(ns, f"{' '.join(words)} seeded {n}")])
            continue
        try:
            record = session.write(f"{' '.join(words)} note {n}", ns, kind=kind)
        except Exception:  # noqa: BLE001 - a write the policy refuses changes nothing
            continue
        try:
            if fate == "forget":
                session.forget(record.id)
            elif fate == "update":
                session.update(record.id, content=f"{' '.join(reversed(words))} revised {n}")
        except MemwardenError:  # not allowed (a clerk; a record alice may not read): it stays
            pass


def _seed(mem: Memory, rows: list[tuple[tuple[str, ...], str]]) -> None:
    """Store ``rows`` (namespace, text) as alice's active records in one upsert, past the
    governed path (for rows no session may write, or many rows fast)."""
    from memwarden.core.records import MemoryRecord, record_id
    from memwarden.memory.codec import stored_metadata, to_metadata

    records = [MemoryRecord(id=record_id("alice", ns, text, None), namespace=ns, content=text, writer="alice")
               for ns, text in rows]
    mem._backend.upsert([r.id for r in records], embed_many(EMBEDDING, [r.content for r in records]),
                        [r.content for r in records], [stored_metadata(to_metadata(r)) for r in records])


def _answers(mem: Memory, searches: list) -> list[list[tuple[str, float | None]]]:
    out = []
    for who, prefix, words, mode, k, kinds, extra in searches:
        try:
            hits = mem.session(who).search(" ".join(words), prefix, k=k, mode=mode, kinds=kinds, **extra)
        except Exception as exc:  # noqa: BLE001 - a denial must be the same denial
            out.append([(type(exc).__name__, None)])
            continue
        out.append([(h.record.id, h.similarity) for h in hits])
    return out


def _same(index_side: list, partition_side: list, tolerance: float) -> None:
    for got, want in zip(index_side, partition_side, strict=True):
        assert len(got) == len(want), (got, want)
        if want and want[0][1] is None:  # a denial
            assert got == want
            continue
        scores = {i: s for i, s in want if s is not None}
        # Every row both sides rank is scored alike; rows only one side returns are at the
        # cut, within the codes' error of each other (ties and near ties may swap there).
        for rid, score in got:
            if rid in scores and score is not None:
                assert abs(score - scores[rid]) <= tolerance, (rid, score, scores[rid])
        cut = min((s for _, s in want if s is not None), default=1.0)
        assert all(s is None or s <= cut + 2 * tolerance for i, s in got if i not in scores), (got, want)


@pytest.mark.slow  # 50 fresh stores; the other tests of this module keep the index in make test-fast
@pytest.mark.parametrize(("encoding", "tolerance"), [("float32", 1e-5), ("sq8", 0.03)])
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                  HealthCheck.too_slow])
@given(writes=_writes, searches=_searches)
def test_index_answers_what_the_partition_path_answers(encoding: str, tolerance: float, writes: list,
                                                       searches: list) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        with _open(Path(tmp), search_index=encoding) as mem:
            index = _loaded(mem)
            _seed_random(mem, writes)
            from_index = _answers(mem, searches)
            # The same store, the same moment, answered by the partition path.
            index._ready.clear()
            assert not index.ready
            from_partitions = _answers(mem, searches)
            index._ready.set()
            _same(from_index, from_partitions, tolerance)


def test_a_reopened_store_loads_its_rows_and_answers_alike(tmp_path: Path) -> None:
    with _open(tmp_path, search_index="sq8") as mem:
        alice = mem.session(ALICE)
        # Seeded in one upsert, since what is under test is the reload, not the governed write.
        _seed(mem, [(("ward3", "patients", f"p{i % 9}"), f"{WORDS[i % 10]} {WORDS[(i * 7) % 10]} observation {i}")
                    for i in range(300)])
        before = [(h.record.id, round(h.similarity, 4)) for h in alice.search("penicillin fever", ("ward3",), k=10,
                                                                              mode="dense")]
    with _open(tmp_path, search_index="sq8") as mem:
        index = _loaded(mem).index
        assert len(index) == 300
        # Fewer rows than the 8-bit ranges are trained on: exact vectors, never a fixed
        # [-1, 1] range (training itself: tests/test_vectorindex_training.py).
        assert isinstance(index._inner, faiss.IndexFlatIP)
        again = [(h.record.id, round(h.similarity, 4)) for h in mem.session(ALICE).search(
            "penicillin fever", ("ward3",), k=10, mode="dense")]
    assert len(again) == 10 and again == before


# -- erasure reaches it --------------------------------------------------------------------------

# Canary records per test, and as many others beside them: a dozen erase and survive exactly as
# 40 did: one subject, one erasure, and no page, batch or threshold of memwarden's lies between
# 12 and 40 (the smallest, the partition sync threshold, is 100 rows).
CANARIES = 12

def _canaries(mem: Memory, n: int) -> tuple[list[str], list[str]]:
    rng = np.random.default_rng(3)
    alice = mem.session(ALICE)
    canary = [f"Canary patient {rng.bytes(12).hex()} has a rare allergy" for _ in range(n)]
    other = [f"Unrelated note {rng.bytes(12).hex()} about ward routine" for _ in range(n)]
    for c, o in zip(canary, other):
        alice.write(c, ("ward3", "patients", "p-canary"), subjects=["p-canary"])
        alice.write(o, ("ward3", "patients", "p-other"), subjects=["p-other"])
    return canary, other


@pytest.mark.parametrize("encoding", ["sq8", "float32"])
def test_an_erased_row_leaves_no_text_vector_or_code_in_the_ram_index(tmp_path: Path, encoding: str) -> None:
    with _open(tmp_path, search_index=encoding) as mem:
        index = _loaded(mem)
        canary, other = _canaries(mem, CANARIES)
        vectors, kept = embed_many(EMBEDDING, canary), embed_many(EMBEDDING, other)
        # The scan finds what is there (so that 0 below means something).
        held = ram_remnants(index.index, canary, vectors, exclude=other)
        # Exact vectors are held in float32, and in sq8 until TRAIN_ROWS rows train its ranges
        # (trained codes: tests/test_vectorindex_training.py).
        exact = isinstance(index.index._inner, faiss.IndexFlatIP)
        assert exact == (encoding == "float32" or len(index.index) < TRAIN_ROWS)
        assert held["texts"] == held["codes"] == CANARIES and (held["vectors"] >= CANARIES) == exact
        mem.session(DPO).erase(subject="p-canary")
        assert ram_remnants(index.index, canary, vectors, exclude=other) == {"texts": 0, "vectors": 0, "codes": 0}
        assert ram_remnants(index.index, other, kept, exclude=canary)["texts"] == CANARIES
        hits = mem.session(ALICE).search("Canary patient rare allergy", ("ward3",), k=100)
        assert len(hits) == CANARIES and all(h.record.content in other for h in hits)


def test_an_erasure_while_the_index_loads_never_reaches_it(tmp_path: Path, monkeypatch) -> None:
    with _open(tmp_path) as mem:
        canary, other = _canaries(mem, CANARIES)
    vectors = embed_many(EMBEDDING, canary)
    first_page, release = threading.Event(), threading.Event()
    real = PartitionedBackend.vectors

    def slow(self, ids=None, *, page=1000):
        # The whole load, one row a page, pausing after the first page until the erasure ran.
        for n, item in enumerate(real(self, ids, page=1 if ids is None else page)):
            yield item
            if ids is None and n == 0:
                first_page.set()
                assert release.wait(60)

    monkeypatch.setattr(PartitionedBackend, "vectors", slow)
    with _open(tmp_path) as mem:
        index = derived_index(mem._backend)
        assert first_page.wait(60) and not index.ready
        # Served by the partition path meanwhile.
        assert len(mem.session(ALICE).search("Canary patient", ("ward3", "patients"), k=100)) == 2 * CANARIES
        mem.session(DPO).erase(subject="p-canary")
        assert ram_remnants(index.index, canary, vectors, exclude=other) == {"texts": 0, "vectors": 0, "codes": 0}
        release.set()
        assert index.wait_ready(60)
        assert ram_remnants(index.index, canary, vectors, exclude=other) == {"texts": 0, "vectors": 0, "codes": 0}
        assert len(index.index) == CANARIES
        hits = mem.session(ALICE).search("Canary patient rare allergy", ("ward3",), k=100)
        assert len(hits) == CANARIES and all(h.record.content in other for h in hits)


# -- it follows Chroma ----------------------------------------------------------------------------

def test_a_change_chroma_fails_part_way_is_read_back_from_chroma(tmp_path: Path, monkeypatch) -> None:
    with _open(tmp_path) as mem:
        index = _loaded(mem)
        alice = mem.session(ALICE)
        record = alice.write("fever at night", ("ward3", "patients", "p1"))
        store = index._inner
        real = type(store).update_metadata

        def applied_then_failed(self, ids, metadatas):
            real(self, ids, metadatas)
            raise ConnectionError("the reply was lost")

        monkeypatch.setattr(type(store), "update_metadata", applied_then_failed)
        with pytest.raises(ConnectionError):
            alice.forget(record.id)
        monkeypatch.undo()
        stored = store.fetch(ids=[record.id])[0].metadata
        assert stored["status"] == "forgotten" and index.index.metadata(record.id) == stored
        assert mem.session(ALICE).search("fever at night", ("ward3",), k=5) == []


def test_no_index_for_search_index_off_and_a_bad_setting_is_refused(tmp_path: Path) -> None:
    with _open(tmp_path / "a", search_index="off") as mem:
        assert derived_index(mem._backend) is None
    with pytest.raises(InvalidRequest, match="search_index must be one of"):
        _open(tmp_path / "b", search_index="hnsw")
