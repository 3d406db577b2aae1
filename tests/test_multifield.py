"""Several index texts per store item (memwarden/memory/facets.py, core/indextext.py).

As in LangGraph's stores, each text at each index path is embedded apart and an item is scored
by its best text. The first text's vector is the Chroma row's own; the others ("facets") live
in the row's metadata, so that they go with the row. Both search paths max-pool: the derived
index (search_index "sq8", loaded) and the partition path (search_index "off"). Every score
asserted is the exact cosine similarity of the query with one text, which one vector of all the
texts together (what the store did before) does not give.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from memwarden import InvalidRequest, Memory, Principal, WriteOp
from memwarden.core.fields import Meta
from memwarden.core.indextext import MAX_INDEX_TEXTS
from memwarden.core.records import keyed_id
from memwarden.integrations.binding import bind_principal
from memwarden.memory.compaction import find_remnants
from memwarden.memory.derived import derived_index
from memwarden.memory.embeddings import HashingEmbedding, embed_many
from memwarden.memory.facets import decoded

from tests.ram_scan import ram_remnants

pytestmark = pytest.mark.integration

POLICY = "".join(f"p, owner, notes/**, {a}\n" for a in ("read", "write", "update", "forget", "erase")) + \
    "g, olga, owner\np, reader, notes/a, read\ng, rita, reader\n"
OLGA = Principal("olga")
RITA = Principal("rita")  # may read notes/a only
EMBED = HashingEmbedding(dim=64)
NS = ("notes", "a")
FIELDS = ["title", "tags[*]"]
VALUE = {"title": "apple orchard harvest", "tags": ["zebra crossing signal", "violin lesson tuesday"],
         "body": "quarterly budget spreadsheet"}
PATHS = ["sq8", "off"]  # the derived index, and the partition path alone


def cos(a: str, b: str) -> float:
    x, y = (np.asarray(v, dtype=np.float64) for v in embed_many(EMBED, [a, b]))
    return float(x @ y / (np.linalg.norm(x) * np.linalg.norm(y)))


def best(query: str, texts: list[str]) -> float:
    return max(cos(query, t) for t in texts)


def open_memory(root: Path, search_index: str) -> Memory:
    policy = root / "policy.csv"
    policy.write_text(POLICY, encoding="utf-8")
    mem = Memory.open(root / "data", policy=policy, embedding=EMBED, validators=[], lessons=False,
                      search_index=search_index)
    index = derived_index(mem._backend)
    assert (index is None) == (search_index == "off")
    if index is not None:
        assert index.wait_ready(60)
    return mem


@pytest.fixture(params=PATHS)
def mem(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Memory]:
    with open_memory(tmp_path, request.param) as memory, bind_principal(OLGA):
        yield memory


def scores(store, query: str) -> dict[str, float | None]:
    return {h.key: h.score for h in store.search(NS, query=query, limit=50)}


def chroma_rows(mem: Memory) -> list:
    """Every row as Chroma holds it (its own metadata, not the derived index's copy)."""
    return derived_index(mem._backend)._inner.fetch() if derived_index(mem._backend) else mem._backend.fetch()


def row_meta(mem: Memory, key: str) -> dict:
    rid = keyed_id(NS, key)
    [row] = [r for r in chroma_rows(mem) if r.id == rid]
    return row.metadata


def test_each_text_at_each_path_scores_alone(mem: Memory) -> None:
    store = mem.as_store(index={"fields": FIELDS})
    store.put(NS, "doc", VALUE)
    store.put(NS, "other", {"title": "night shift roster", "tags": ["fire drill"]})
    texts = ["apple orchard harvest", *VALUE["tags"]]
    for query in ("violin lesson tuesday", "zebra crossing signal", "apple orchard harvest", "violin zebra"):
        got = scores(store, query)
        assert got["doc"] == pytest.approx(best(query, texts), abs=1e-4)
    # A text at a path that is not indexed is not a vector of the item.
    assert scores(store, "quarterly budget spreadsheet")["doc"] < 0.5
    # The first text is the row's own vector; the other two are its facets.
    meta = row_meta(mem, "doc")
    assert meta[Meta.FACET_COUNT] == 2
    np.testing.assert_allclose(decoded(meta), embed_many(EMBED, VALUE["tags"]), rtol=1e-6)


def test_a_per_put_field_list_and_index_false(mem: Memory) -> None:
    store = mem.as_store(index={"fields": ["title"]})
    store.put(NS, "by-tags", VALUE, index=["tags[*]", "body"])
    store.put(NS, "off", VALUE, index=False)
    got = scores(store, "quarterly budget spreadsheet")
    assert got["by-tags"] == pytest.approx(1.0, abs=1e-4)
    assert got["off"] is None
    assert scores(store, "violin lesson tuesday")["by-tags"] == pytest.approx(1.0, abs=1e-4)
    # The config's field is not one of this put's.
    assert scores(store, "apple orchard harvest")["by-tags"] == pytest.approx(
        best("apple orchard harvest", [*VALUE["tags"], VALUE["body"]]), abs=1e-4)
    assert row_meta(mem, "by-tags")[Meta.FACET_COUNT] == 2
    assert Meta.FACET_COUNT not in row_meta(mem, "off") and Meta.FACETS not in row_meta(mem, "off")


def test_a_wildcard_path_gives_a_vector_per_element(mem: Memory) -> None:
    store = mem.as_store(index={"fields": ["items[*].name"]})
    names = ["copper kettle", "wool blanket", "brass compass", "linen apron"]
    store.put(NS, "list", {"items": [{"name": n, "qty": i} for i, n in enumerate(names)]})
    for name in names:
        assert scores(store, name)["list"] == pytest.approx(1.0, abs=1e-4)
    assert row_meta(mem, "list")[Meta.FACET_COUNT] == len(names) - 1


def test_texts_per_item_are_bounded(mem: Memory) -> None:
    store = mem.as_store(index={"fields": ["tags[*]"]})
    tags = [f"tag number {i}" for i in range(MAX_INDEX_TEXTS + 1)]
    with pytest.raises(InvalidRequest, match=f"65 distinct texts.*limit is {MAX_INDEX_TEXTS}"):
        store.put(NS, "many", {"tags": tags})
    assert store.get(NS, "many") is None
    # Repeated texts count once; at the bound it is stored, every text a vector.
    store.put(NS, "many", {"tags": tags[:MAX_INDEX_TEXTS] + tags[:3]})
    assert row_meta(mem, "many")[Meta.FACET_COUNT] == MAX_INDEX_TEXTS - 1
    assert scores(store, tags[MAX_INDEX_TEXTS - 1])["many"] == pytest.approx(1.0, abs=1e-4)
    # The core's own bound, for a WriteOp given its texts directly.
    content = json.dumps({"tags": tags})
    with pytest.raises(InvalidRequest, match=f"limit is {MAX_INDEX_TEXTS}"):
        mem.session(OLGA).batch([WriteOp(content, NS, key="direct", index_text=tags)])


def test_each_text_given_must_select_from_the_value(mem: Memory) -> None:
    content = json.dumps({"a": "granite quarry", "b": "saffron market"})
    session = mem.session(OLGA)
    with pytest.raises(InvalidRequest, match=r"index_text\[1\] line 0 is not part of any value"):
        session.batch([WriteOp(content, NS, key="k", index_text=["granite quarry", "holiday schedule"])])
    with pytest.raises(InvalidRequest, match="empty list"):
        session.batch([WriteOp(content, NS, key="k", index_text=[])])
    with pytest.raises(InvalidRequest, match=r"index_text\[0\] must be a string"):
        session.batch([WriteOp(content, NS, key="k", index_text=[3])])
    assert session.get(keyed_id(NS, "k")) is None


def test_a_facet_never_reaches_past_the_callers_scope(mem: Memory) -> None:
    store = mem.as_store(index={"fields": FIELDS})
    store.put(("notes", "b"), "hidden", VALUE)
    store.put(NS, "shown", {"title": "night shift roster", "tags": ["fire drill practice"]})
    with bind_principal(RITA):
        hits = mem.as_store(index={"fields": FIELDS}).search(("notes",), query="violin lesson tuesday")
    assert [h.key for h in hits] == ["shown"]


def test_a_re_put_replaces_the_facets(mem: Memory) -> None:
    store = mem.as_store(index={"fields": FIELDS})
    store.put(NS, "doc", VALUE)
    assert scores(store, "violin lesson tuesday")["doc"] == pytest.approx(1.0, abs=1e-4)
    gone = embed_many(EMBED, VALUE["tags"])
    store.put(NS, "doc", {"title": "pear grove", "tags": ["oboe recital"]})
    assert scores(store, "violin lesson tuesday")["doc"] == pytest.approx(
        best("violin lesson tuesday", ["pear grove", "oboe recital"]), abs=1e-4)
    assert scores(store, "oboe recital")["doc"] == pytest.approx(1.0, abs=1e-4)
    meta = row_meta(mem, "doc")
    assert meta[Meta.FACET_COUNT] == 1
    np.testing.assert_allclose(decoded(meta), embed_many(EMBED, ["oboe recital"]), rtol=1e-6)
    # Fewer texts again: one, so no facets at all (Chroma merges metadata: they are removed).
    store.put(NS, "doc", {"title": "plum", "tags": []})
    meta = row_meta(mem, "doc")
    assert Meta.FACETS not in meta and Meta.FACET_COUNT not in meta
    index = derived_index(mem._backend)
    if index is not None:
        assert not index.index._facets
        assert ram_remnants(index.index, [], gone)["codes"] == 0


def test_an_erase_removes_the_facets_everywhere(mem: Memory, tmp_path: Path) -> None:
    store = mem.as_store(index={"fields": FIELDS})
    store.put(NS, "doc", VALUE)
    store.put(NS, "kept", {"title": "night shift roster", "tags": ["fire drill practice", "badge renewal"]})
    erased = embed_many(EMBED, VALUE["tags"])
    encoded, kept = (base64.b64encode(np.asarray(embed_many(EMBED, tags), dtype=np.float32).tobytes()).decode()
                     for tags in (VALUE["tags"], ["fire drill practice", "badge renewal"]))
    index = derived_index(mem._backend)
    # The scans find the facets while they are there (so that the zeros below mean something).
    assert any(r.metadata.get(Meta.FACETS) == encoded for r in chroma_rows(mem))
    assert find_remnants(tmp_path / "data", [encoded], exclude=[kept]).texts == 1
    if index is not None:
        assert ram_remnants(index.index, [], erased)["codes"] == len(erased)
    mem.session(OLGA).erase(ids=[keyed_id(NS, "doc")])
    for row in chroma_rows(mem):
        facets = decoded(row.metadata)
        assert facets is None or not any(np.allclose(f, e) for f in facets for e in erased)
    # Nor is any copy of their text left in Chroma's files (its log, free pages).
    assert find_remnants(tmp_path / "data", [encoded], exclude=[kept]).texts == 0
    if index is not None:
        assert ram_remnants(index.index, [], erased) == {"texts": 0, "vectors": 0, "codes": 0}
        assert len(index.index._facets) == 1  # the kept item's
    assert "doc" not in scores(store, "violin lesson tuesday")
    assert scores(store, "badge renewal")["kept"] == pytest.approx(1.0, abs=1e-4)


def test_a_deleted_or_updated_record_is_not_found_by_its_facets(mem: Memory) -> None:
    store = mem.as_store(index={"fields": FIELDS})
    store.put(NS, "doc", VALUE)
    store.delete(NS, "doc")
    assert "doc" not in scores(store, "violin lesson tuesday")
    # A plain record given its texts: an update's new version is embedded by its content.
    session = mem.session(OLGA)
    content = json.dumps({"a": "granite quarry", "b": "saffron market"})
    [old] = session.batch([WriteOp(content, NS, index_text=["granite quarry", "saffron market"])])
    [hit] = session.search("saffron market", NS, k=1, mode="dense")
    assert hit.record.id == old.id and hit.score == pytest.approx(1.0, abs=1e-4)
    new = session.update(old.id, content="ferry timetable")
    hits = session.search("saffron market", NS, k=5, mode="dense")
    assert [h.record.id for h in hits] == [new.id]
    assert hits[0].score == pytest.approx(cos("saffron market", "ferry timetable"), abs=1e-4)


def test_users_can_neither_write_nor_filter_the_reserved_fields(mem: Memory) -> None:
    store = mem.as_store(index={"fields": FIELDS})
    forged = base64.b64encode(np.asarray(embed_many(EMBED, ["violin lesson tuesday"]), dtype=np.float32)
                              .tobytes()).decode()
    # In a value: part of the document only.
    store.put(NS, "value", {"title": "pear grove", "facets": forged, "facet_count": 1})
    # As labels: stored under their own prefix.
    content = json.dumps({"title": "plum"})
    mem.session(OLGA).batch([WriteOp(content, NS, key="labelled",
                                     labels={"facets": forged[:100], "facet_count": "1"})])
    for key in ("value", "labelled"):
        meta = row_meta(mem, key)
        assert Meta.FACETS not in meta and Meta.FACET_COUNT not in meta
    got = scores(store, "violin lesson tuesday")
    assert got["value"] == pytest.approx(cos("violin lesson tuesday", "pear grove"), abs=1e-4)
    assert got["labelled"] == pytest.approx(cos("violin lesson tuesday", content), abs=1e-4)
    store.put(NS, "doc", VALUE)
    # A filter reads the item's value, never the row's metadata: the item with facets is not
    # matched by one on facet_count, the one whose value says so is.
    with bind_principal(OLGA):
        matched = [h.key for h in store.search(NS, filter={"facet_count": {"$gt": 0}})]
        ranked = [h.key for h in store.search(NS, query="violin", filter={"facet_count": 1})]
    assert matched == ["value"] and ranked == ["value"]


@pytest.mark.parametrize("search_index", PATHS)
def test_facets_score_after_a_restart(tmp_path: Path, search_index: str) -> None:
    with open_memory(tmp_path, search_index) as mem, bind_principal(OLGA):
        mem.as_store(index={"fields": FIELDS}).put(NS, "doc", VALUE)
    with open_memory(tmp_path, search_index) as mem, bind_principal(OLGA):
        store = mem.as_store(index={"fields": FIELDS})
        assert scores(store, "violin lesson tuesday")["doc"] == pytest.approx(1.0, abs=1e-4)
        assert scores(store, "zebra crossing signal")["doc"] == pytest.approx(1.0, abs=1e-4)


def test_hybrid_search_finds_an_item_by_any_of_its_texts(mem: Memory) -> None:
    store = mem.as_store(index={"fields": FIELDS}, search="hybrid")
    store.put(NS, "doc", VALUE)
    store.put(NS, "other", {"title": "night shift roster", "tags": ["fire drill practice"]})
    assert store.search(NS, query="violin lesson tuesday")[0].key == "doc"
    [hit, _] = mem.session(OLGA).search("violin lesson tuesday", NS, k=2, mode="hybrid")
    assert hit.record.key == "doc" and hit.similarity == pytest.approx(1.0, abs=1e-4) and hit.bm25


def test_the_partition_path_and_the_index_agree(tmp_path: Path) -> None:
    """Both paths score every item by its best text, exactly."""
    with open_memory(tmp_path, "float32") as mem, bind_principal(OLGA):
        store = mem.as_store(index={"fields": FIELDS})
        rng = np.random.default_rng(7)
        words = ["amber", "basalt", "cedar", "delta", "ember", "fjord", "garnet", "harbor", "iris", "jade"]
        values = {}
        for i in range(40):
            pick = lambda n: " ".join(rng.choice(words, n))  # noqa: E731
            values[f"k{i}"] = {"title": pick(2), "tags": [pick(3) for _ in range(int(rng.integers(0, 4)))]}
            store.put(NS, f"k{i}", values[f"k{i}"])
        queries = ["amber cedar", "fjord jade iris", "ember", "harbor basalt delta"]
        from_index = [store.search(NS, query=q, limit=8) for q in queries]
        index = derived_index(mem._backend)
        index._ready.clear()  # the same store, answered by the partition path
        from_partitions = [store.search(NS, query=q, limit=8) for q in queries]
        index._ready.set()
    for query, got, want in zip(queries, from_index, from_partitions):
        assert [h.score for h in got] == pytest.approx([h.score for h in want], abs=1e-4)
        for hit in got + want:
            value = values[hit.key]
            assert hit.score == pytest.approx(best(query, [value["title"], *value["tags"]]), abs=1e-4)
        # The best items are found, whichever of their texts is the best.
        everything = sorted((best(query, [v["title"], *v["tags"]]) for v in values.values()), reverse=True)
        assert [h.score for h in want] == pytest.approx(everything[:8], abs=1e-4)


@pytest.mark.parametrize("search_index", PATHS)
def test_an_approved_overwrite_keeps_the_held_puts_vectors(tmp_path: Path, search_index: str) -> None:
    # Every put waits for review: the approved overwrite takes over the key, and with it the
    # vectors the held put was embedded by (its index texts), not its whole value's.
    (tmp_path / "policy.csv").write_text(POLICY.replace("notes/**, write", "notes/**, write, review")
                                         + "p, reviewer, notes/**, approve\ng, rae, reviewer\n", encoding="utf-8")
    with Memory.open(tmp_path / "data", policy=tmp_path / "policy.csv", embedding=EMBED, validators=[],
                     lessons=False, search_index=search_index, quorum=1) as mem, bind_principal(OLGA):
        store = mem.as_store(index={"fields": FIELDS})
        first = store.put(NS, "doc", {"title": "night shift roster", "tags": ["fire drill"]})
        rae = mem.session(Principal("rae"))
        rae.approve(first.id)
        held = store.put(NS, "doc", VALUE)
        assert held.held and rae.approve(held.id).status.value == "active"
        texts = ["apple orchard harvest", *VALUE["tags"]]
        for query in ("violin lesson tuesday", "zebra crossing signal", "apple orchard harvest"):
            assert scores(store, query)["doc"] == pytest.approx(best(query, texts), abs=1e-4)
        assert row_meta(mem, "doc")[Meta.FACET_COUNT] == 2
        assert store.get(NS, "doc").value == VALUE
