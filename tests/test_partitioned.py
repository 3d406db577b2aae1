"""The partitioned store under the governed API, on a real embedded Chroma.

Searches over several partitions return exactly what one brute-force pass over the visible,
in-scope records returns; invisible rows nearer the query never cost results; residual
filters work on Chroma as planned; old single-collection stores and stores at another
partition depth are migrated (and an interrupted migration resumes); an erasure spanning
partitions interrupted halfway is finished on the next open with no copy left anywhere.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest

from memwarden import InvalidRequest, Memory, Principal
from memwarden.memory import compaction
from memwarden.memory.backends import ChromaBackend
from memwarden.memory.codec import stored_metadata, to_metadata
from memwarden.memory.compaction import find_remnants
from memwarden.memory.embeddings import HashingEmbedding, embed_many, embed_one
from memwarden.memory.derived import derived_index
from memwarden.memory.partitioned import LAYOUT, PartitionedBackend, collection_name
from memwarden.core.records import MemoryRecord, Status, record_id
from memwarden.policies.partitions import Coverage, Partition, Target

pytestmark = pytest.mark.integration

POLICY = """
p, parent, home/**, read
p, parent, home/**, write
p, parent, home/**, update
p, parent, home/**, forget
p, parent, home/**, erase
p, kid, home/shared/**, read
p, kid, home/kids/*/*, read
p, kid, home/kids/*/diary, read, deny
p, kid, home/shared/**, write
g, maria, parent
g, tom, kid
"""

MARIA, TOM = Principal("maria"), Principal("tom")
EMBEDDING = HashingEmbedding()
WORDS = "apple bread milk school homework diary football piano dentist garden rain sunday".split()


def _open(root: Path, policy: Path, **settings) -> Memory:
    return Memory.open(root, policy=policy, embedding=EMBEDDING, **settings)


@pytest.fixture
def policy(tmp_path: Path) -> Path:
    path = tmp_path / "policy.csv"
    path.write_text(POLICY, encoding="utf-8")
    return path


def _namespaces() -> list[tuple[str, ...]]:
    return [("home", "shared", "shopping"), ("home", "shared", "calendar"), ("home", "kids", "tom", "diary"),
            ("home", "kids", "tom", "school"), ("home", "kids", "lena", "school"), ("home", "finance", "bank"),
            ("home", "shared")]


def _texts(n: int, rng: np.random.Generator) -> list[str]:
    return [" ".join(rng.choice(WORDS, 4)) + f" note {i}" for i in range(n)]


def _seed(mem: Memory, rng: np.random.Generator, n: int) -> list[MemoryRecord]:
    """n records through the public API, spread over the namespaces (and so partitions)."""
    maria = mem.session(MARIA)
    spaces = _namespaces()
    return [maria.write(text, spaces[i % len(spaces)], subjects=[f"s{i % 3}"])
            for i, text in enumerate(_texts(n, rng))]


def _store(mem: Memory) -> PartitionedBackend:
    """The partitioned store beneath a Memory's wrappers (coalescing, lexical index)."""
    backend = mem._backend  # the tests inspect the layout
    while not isinstance(backend, PartitionedBackend):
        backend = backend._inner
    return backend


def _exact(mem: Memory, principal: Principal, query: str, prefix: tuple[str, ...], k: int) -> list[tuple[str, float]]:
    """The exact top k a search must return, with scores: brute force over every stored row."""
    engine = mem.policy
    scope = engine.scope(engine.subjects(principal.id, principal.roles), "read", prefix)
    rows = [r for r in mem._backend.fetch() if r.metadata["status"] == Status.ACTIVE.value]
    rows = [r for r in rows if scope.contains(tuple(r.metadata[f"ns_{i}"] for i in range(r.metadata["ns_depth"])))]
    vectors = embed_many(EMBEDDING, [r.document for r in rows])
    q = embed_one(EMBEDDING, query, query=True)
    scores = vectors @ q
    return sorted(((r.id, float(x)) for r, x in zip(rows, scores)), key=lambda p: -p[1])[:k]


@pytest.mark.parametrize(("search_index", "tolerance"), [("off", 1e-4), ("float32", 1e-4), ("sq8", 0.02)])
def test_records_are_stored_by_partition_and_searches_merge_them_exactly(tmp_path: Path, policy: Path,
                                                                        search_index: str, tolerance: float) -> None:
    """The partition path and the derived index (exact in float32, within the 8-bit codes'
    error in sq8) return the exact top k."""
    rng = np.random.default_rng(5)
    with _open(tmp_path / "m", policy, search_index=search_index) as mem:
        index = derived_index(mem._backend)
        assert (index is None) == (search_index == "off") and (index is None or index.wait_ready(60))
        records = _seed(mem, rng, 42)
        backend = _store(mem)
        names = {c.name: c for c in backend._client.list_collections()}
        for rec in records[:7]:
            part = backend.partition_of(rec.namespace)
            assert part == Partition(rec.namespace[:2], len(rec.namespace))
            col = names[collection_name(2, part)]
            assert col.get(ids=[rec.id])["ids"] == [rec.id]
            assert sum(c.get(ids=[rec.id])["ids"] == [rec.id] for c in names.values()) == 1
        # an update, a forget and a TTL'd record put invisible rows among the nearest ones
        maria = mem.session(MARIA)
        maria.update(records[0].id, records[0].content + " again")
        maria.forget(records[1].id)
        for query in ("apple bread note", "school homework", "diary piano", "football rain sunday"):
            for who, prefix in ((MARIA, ()), (TOM, ()), (TOM, ("home", "kids")), (MARIA, ("home", "kids", "tom"))):
                got = [(h.record.id, h.score) for h in mem.session(who).search(query, prefix, k=8, mode="dense")]
                exact = _exact(mem, who, query, prefix, 8)
                # the same scores in the same order, and the same records up to ties at the cut
                assert len(got) == len(exact) and all(abs(x - y) <= tolerance for (_, x), (_, y) in zip(got, exact)), \
                    (who.id, prefix, query)
                cut = exact[-1][1] + 2 * tolerance
                assert {i for i, x in got if x > cut} <= {i for i, _ in exact}
                assert {i for i, x in exact if x > cut} <= {i for i, _ in got}
        assert records[1].id not in {h.record.id for h in maria.search(records[1].content, k=50)}


def test_tom_never_gets_a_diary_or_the_finances_and_withheld_counts_them(tmp_path: Path, policy: Path) -> None:
    with _open(tmp_path / "m", policy, count_withheld=True) as mem:
        maria, tom = mem.session(MARIA), mem.session(TOM)
        diary = maria.write("Tom's diary: piano lesson went badly", ("home", "kids", "tom", "diary"))
        school = maria.write("Tom's school: piano recital on friday", ("home", "kids", "tom", "school"))
        bank = maria.write("Bank: piano teacher paid", ("home", "finance", "bank"))
        gone = maria.write("Tom's diary: old piano entry", ("home", "kids", "tom", "diary"))
        maria.forget(gone.id)
        hits = tom.search("piano", ("home",), k=10)
        assert [h.record.id for h in hits] == [school.id]
        entry = list(mem.audit_log.entries())[-1]
        # the diary (inside a partition he reads in part) and the bank note (a partition he
        # may not read); the forgotten entry is not counted: it is not there for anyone
        assert entry["withheld"] == 2 and diary.id not in entry["records"] and bank.id not in entry["records"]
        assert tom.get(diary.id) is None and maria.get(diary.id) == diary


@pytest.mark.parametrize("search_index", ["off", "float32"])
def test_invisible_rows_nearest_to_the_query_never_cost_results(tmp_path: Path, policy: Path,
                                                                search_index: str) -> None:
    """Exact order among near ties: the partition path, and the index in float32 (8-bit codes
    may swap rows whose scores differ by less than their error)."""
    with _open(tmp_path / "m", policy, search_index=search_index) as mem:
        maria = mem.session(MARIA)
        ns = ("home", "shared", "calendar")
        near = [maria.write(f"garden rain sunday piano {i}", ns) for i in range(12)]
        far = [maria.write(f"school homework {i} football", ns) for i in range(6)]
        for rec in near[:8]:
            maria.forget(rec.id)
        query = embed_one(EMBEDDING, "garden rain sunday piano", query=True)
        hits = maria.search("garden rain sunday piano", ("home",), k=5, mode="dense")
        nearest = sorted(near[8:], key=lambda r: -float(embed_one(EMBEDDING, r.content) @ query))
        assert [h.record.id for h in hits][:4] == [r.id for r in nearest]
        # More hidden rows near the query than any over-fetch: the filtered query decides.
        hidden = [MemoryRecord(id=record_id("maria", ns, f"garden rain sunday piano old {i}"), namespace=ns,
                               content=f"garden rain sunday piano old {i}", writer="maria", status=Status.FORGOTTEN)
                  for i in range(260)]
        backend = mem._backend  # bulk seeding, as the erasure tests do
        backend.upsert([r.id for r in hidden], embed_many(EMBEDDING, [r.content for r in hidden]),
                       [r.content for r in hidden], [stored_metadata(to_metadata(r)) for r in hidden])
        for rec in near[8:]:
            maria.forget(rec.id)
        filtered = []
        store = _store(mem)
        real = store._query

        def spy(part, embedding, n, where):
            filtered.append(bool(where))
            return real(part, embedding, n, where)

        store._query = spy
        hits = maria.search("garden rain sunday piano", ("home",), k=5, mode="dense")
        assert len(hits) == 5 and {h.record.id for h in hits} <= {r.id for r in far}
        if search_index == "off":  # the partition path: widened unfiltered, then the filter
            assert filtered[-1] and not any(filtered[:-1])
        else:  # the index widens its scan of the scope's rows and never queries Chroma
            assert filtered == []


def test_a_store_from_before_partitions_is_migrated_on_open_and_leaves_no_copy(tmp_path: Path, policy: Path) -> None:
    root = tmp_path / "m"
    old = ChromaBackend.embedded(str(root / "chroma"))  # the single-collection layout
    texts = [f"Lena's secret {i:03d} about the birthday surprise party" for i in range(30)]
    keep = [f"Shopping list item {i:03d} oat milk and rye bread" for i in range(30)]
    records = [MemoryRecord(id=record_id("maria", ns, t), namespace=ns, content=t, writer="maria",
                            subjects=(subj,))
               for t, ns, subj in [(t, ("home", "kids", "lena", "secrets"), "lena") for t in texts]
               + [(t, ("home", "shared", "shopping"), "shop") for t in keep]]
    old.upsert([r.id for r in records], embed_many(EMBEDDING, [r.content for r in records]),
               [r.content for r in records], [stored_metadata(to_metadata(r)) for r in records])
    old.close()
    with _open(root, policy) as mem:
        names = {c.name for c in _store(mem)._client.list_collections()}
        assert "memwarden-records" not in names and LAYOUT in names
        maria = mem.session(MARIA)
        assert maria.get(records[0].id) == records[0]
        assert len(maria.search(None, ("home", "kids"), k=100)) == 30
        assert maria.erase(subject="lena").count == 30
    vectors = embed_many(EMBEDDING, texts)
    assert find_remnants(root / "chroma", texts, vectors, exclude=keep).clean
    with _open(root, policy) as mem:
        assert len(mem.session(MARIA).search(None, ("home",), k=100)) == 30


def test_another_depth_is_refused_unless_repartitioned_and_an_interrupted_migration_resumes(
        tmp_path: Path, policy: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "m"
    with _open(root, policy) as mem:
        records = _seed(mem, np.random.default_rng(9), 21)
    with pytest.raises(InvalidRequest, match="partitioned at depth 2.*repartition=True"):
        _open(root, policy, partition_depth=3)

    import chromadb.api.client as client_module

    real = client_module.Client.delete_collection
    calls = []

    def power_cut(self, name):  # the copy is done, the first source is being dropped
        calls.append(name)
        raise KeyboardInterrupt("power cut")

    monkeypatch.setattr(client_module.Client, "delete_collection", power_cut)
    with pytest.raises(KeyboardInterrupt):
        _open(root, policy, partition_depth=3, repartition=True)
    monkeypatch.setattr(client_module.Client, "delete_collection", real)
    assert calls
    with _open(root, policy) as mem:  # resumes the migration to depth 3, whatever is asked now
        assert _store(mem).depth == 3
        maria = mem.session(MARIA)
        listed = [h.record for h in maria.search(None, ("home",), k=100)]
        assert sorted(r.id for r in listed) == sorted(r.id for r in records)  # none lost, none twice
        assert all(maria.get(r.id) == r for r in records)
        names = [c.name for c in _store(mem)._client.list_collections()]
        assert not [n for n in names if n.startswith("mw2-")]


@pytest.mark.slow
def test_an_erasure_across_partitions_cut_short_is_finished_on_the_next_open(
        tmp_path: Path, policy: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "m"
    texts = {ns: [f"Tom secret {ns[-1]} number {i:03d} about the broken window" for i in range(8)]
             for ns in (("home", "kids", "tom", "diary"), ("home", "shared", "notes"), ("home", "finance", "bank"))}
    keep = [f"Unrelated family note {i:03d} on the weekly chores rota" for i in range(12)]
    with _open(root, policy) as mem:
        maria = mem.session(MARIA)
        for ns, group in texts.items():
            for t in group:
                maria.write(t, ns, subjects=["tom"])
        for t in keep:
            maria.write(t, ("home", "shared", "notes"), subjects=["rota"])
        real = compaction.purge_collection
        done = []

        def cut(*args, **kwargs):
            if done:
                raise KeyboardInterrupt("power cut after the first partition")
            done.append(1)
            return real(*args, **kwargs)

        monkeypatch.setattr(compaction, "purge_collection", cut)
        with pytest.raises(KeyboardInterrupt):
            maria.erase(subject="tom")
        monkeypatch.setattr(compaction, "purge_collection", real)
        # Every erased row was deleted before any file work began: none is readable now.
        assert maria.search(None, ("home",), k=100) and not [
            h for h in maria.search(None, ("home",), k=100) if "Tom secret" in h.record.content]
    erased = [t for group in texts.values() for t in group]
    with _open(root, policy) as mem:  # finishes the physical part in the other partitions
        assert len(mem.session(MARIA).search(None, ("home",), k=100)) == len(keep)
    assert find_remnants(root / "chroma", erased, embed_many(EMBEDDING, erased), exclude=keep).clean


@contextmanager
def _two_memories(tmp_path: Path, policy: Path, server: tuple[str, int]) -> Iterator[tuple[Memory, Memory, str]]:
    """Two memories on one store, and a label no other test uses. The store is a Chroma server:
    an embedded directory has one writer at a time (docs/deployment.md)."""
    host, port = server
    first, second = (Memory.connect(host, port, policy=policy, state=tmp_path / state, embedding=EMBEDDING)
                     for state in ("a", "b"))
    with first, second:
        yield first, second, "t" + uuid.uuid4().hex[:12]


def test_ids_written_through_another_memory_on_the_store_are_found(tmp_path: Path, policy: Path,
                                                                   chroma_server: tuple[str, int]) -> None:
    with _two_memories(tmp_path, policy, chroma_server) as (first, second, tag):
        rec = first.session(MARIA).write("Dentist on tuesday at nine", ("home", tag, "calendar"))
        assert second.session(MARIA).get(rec.id) == rec  # a partition new to `second`
        assert second.session(MARIA).get("mem_" + "0" * 32) is None


def test_listing_pages_over_partitions_skip_hidden_rows(tmp_path: Path, policy: Path, monkeypatch) -> None:
    from memwarden.memory import partitioned

    monkeypatch.setattr(partitioned, "_PAGE", 4)  # several pages per partition
    with _open(tmp_path / "m", policy) as mem:
        maria = mem.session(MARIA)
        spaces = _namespaces()
        written = [maria.write(f"list item {i}", spaces[i % 3], kind="event" if i % 4 == 0 else "fact")
                   for i in range(30)]
        for rec in written[::3]:
            maria.forget(rec.id)
        visible = {r.id for r in written} - {r.id for r in written[::3]}
        pages = [[h.record.id for h in maria.search(None, ("home",), k=7, offset=o)] for o in range(0, 28, 7)]
        flat = [i for page in pages for i in page]
        assert len(flat) == len(set(flat)) == len(visible) and set(flat) == visible
        events = {h.record.id for h in maria.search(None, ("home",), k=50, kinds=["event"])}
        assert events == {r.id for i, r in enumerate(written) if i % 4 == 0} & visible


@pytest.mark.parametrize("settings", [{"partition_depth": 0}, {"partition_depth": 9}, {"partition_depth": "2"},
                                      {"partition_depth": True}, {"repartition": "yes"}, {"search_threads": 0},
                                      {"search_breadth": 0}, {"search_breadth": True}, {"search_breadth": "100"},
                                      {"search_breadth": 10_001}])
def test_bad_settings_are_refused_before_anything_is_stored(tmp_path: Path, policy: Path, settings: dict) -> None:
    with pytest.raises(InvalidRequest):
        _open(tmp_path / "m", policy, **settings)
    assert not (tmp_path / "m" / "chroma").exists()


@pytest.mark.slow
@pytest.mark.parametrize("search_index", ["off", "float32"])
def test_subject_look_ups_read_only_the_partitions_that_hold_the_subject(tmp_path: Path, policy: Path,
                                                                        search_index: str) -> None:
    """The write path's subject index loads a subject through the lexical index: one Chroma
    read per partition that holds it (none once the derived index is loaded: it holds every
    row, and answers reads by id), the same rows as a filtered read of every partition, and
    nothing erased."""
    with _open(tmp_path / "m", policy, search_index=search_index) as mem:
        maria = mem.session(MARIA)
        _seed(mem, np.random.default_rng(3), 30)
        health, school = ("home", "shared", "health"), ("home", "kids", "lena", "school")
        lena = [maria.write(f"Lena likes {w}", health, subjects=["lena"]) for w in WORDS[:3]]
        lena.append(maria.write("Lena has a piano lesson", school, subjects=["lena", "piano"]))
        maria.write("Tom likes rain", health, subjects=["tom"])
        maria.forget(lena[0].id)  # forgotten rows are returned: visibility is the caller's test
        store = _store(mem)
        derived = derived_index(mem._backend)
        assert (derived is None) == (search_index == "off") and (derived is None or derived.wait_ready(30))
        read: list[Partition] = []
        real = store._get

        def spy(part, **kwargs):
            read.append(part)
            return real(part, **kwargs)

        store._get = spy
        got = mem._backend.about("lena", 100)
        assert sorted(r.id for r in got) == sorted(r.id for r in lena)
        holding = [] if derived is not None else [store.partition_of(health), store.partition_of(school)]
        assert sorted(read) == sorted(holding)
        assert sorted(r.id for r in store.about("lena", 100)) == sorted(r.id for r in got)
        assert len(store.partitions()) > 2  # the filtered read would have asked every one
        maria.erase(ids=[lena[3].id])
        assert sorted(r.id for r in mem._backend.about("lena", 100)) == sorted(r.id for r in lena[:3])
        assert mem._backend.about("nobody", 100) == []


def _breadth(backend: PartitionedBackend, part: Partition) -> int | None:
    col = backend._client.get_collection(collection_name(backend.depth, part))
    return compaction.hnsw_config(col).get("ef_search")


def test_search_breadth_is_set_on_new_partitions_and_on_existing_ones_when_opened(tmp_path: Path, policy: Path) -> None:
    with _open(tmp_path / "m", policy, search_breadth=300) as mem:
        record = mem.session(MARIA).write("apple bread", ("home", "shared", "shopping"))
        part = _store(mem).partition_of(record.namespace)
        assert _breadth(_store(mem), part) == 300
    with _open(tmp_path / "m", policy) as mem:   # None leaves what the store has
        assert mem.session(MARIA).get(record.id) is not None
        assert _breadth(_store(mem), part) == 300
    with _open(tmp_path / "m", policy, search_breadth=40) as mem:
        assert mem.session(MARIA).search("apple", k=1, mode="dense")
        assert _breadth(_store(mem), part) == 40


@pytest.mark.slow
def test_a_wider_search_breadth_finds_more_of_the_true_nearest_rows(tmp_path: Path) -> None:
    """Random 384-d vectors are the hard case for HNSW: at a narrow breadth many of the true
    nearest rows are missed; the setting is what makes them found."""
    rng = np.random.default_rng(3)
    vectors = rng.standard_normal((1500, 384)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    queries = vectors[rng.choice(1500, 25, replace=False)] + 0.9 * rng.standard_normal((25, 384)).astype(np.float32)
    part = Partition(("home", "shared"), 3)
    ids = [f"mem_{i:032x}" for i in range(1500)]
    metas = [{"ns": "home/shared/x", "ns_depth": 3, "ns_0": "home", "ns_1": "shared", "ns_2": "x", "status": "active"}
             for _ in ids]
    recall = {}
    for breadth in (10, 1000):
        backend = PartitionedBackend.embedded(str(tmp_path / f"b{breadth}"), breadth=breadth, workers=1)
        backend.upsert(ids, vectors, ["x"] * len(ids), metas)
        found = 0
        for q in queries:
            exact = set(np.array(ids)[np.argsort(-(vectors @ (q / np.linalg.norm(q))))[:10]])
            hits = backend.query_targets(q, 10, [Target(part, Coverage.COVERED)], accept=lambda m: True, fallback={})
            found += len(exact & {row.id for row, _ in hits})
        recall[breadth] = found / (10 * len(queries))
        backend.close()
    assert recall[1000] >= 0.97 and recall[1000] > recall[10] + 0.1, recall


def test_a_retry_into_a_partition_new_to_this_memory_is_still_a_replay(tmp_path: Path, policy: Path,
                                                                      chroma_server: tuple[str, int]) -> None:
    """The write path looks its id up in the namespace's partition only; a partition another
    Memory (or process) created a moment ago must still be read, never taken as empty."""
    with _two_memories(tmp_path, policy, chroma_server) as (first, second, tag):
        # second's view of the partitions is fresh
        assert second.session(MARIA).search("anything", ("home", tag), k=1) == []
        namespace = ("home", tag, "tom", "school")
        rec = first.session(MARIA).write("Parents' evening on friday", namespace)
        again = second.session(MARIA).write("Parents' evening on friday", namespace)
        assert again == rec                      # the stored record, not a second write over it
        last = list(second.audit_log.entries())[-1]
        assert last["op"] == "write" and last["replay"] is True
        second.session(MARIA).forget(rec.id)
        assert first.session(MARIA).get(rec.id) is None
