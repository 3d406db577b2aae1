"""LangGraph store conformance (1 of 2: items, batches, search and filters, namespaces, vector
search and scores): one suite, run against LangGraph's own InMemoryStore (to prove the suite),
memwarden's ``as_store()`` on an embedded Memory, and ``as_store()`` on a Chroma server
(``chroma run``); the harness is tests/conformance/harness.py, its fixtures conftest.py.

The cases are those LangGraph's store tests cover (checkpoint, checkpoint-sqlite and
checkpoint-postgres: batches, CRUD, search and its filters, namespace matching, vector search
and scores, TTL), written anew for this project. TTL and the governance divergences are in
test_store_conformance_ttl.py. Each test works below its own root label, so that the tests
sharing one Chroma server never see each other's items.
"""

from __future__ import annotations

import asyncio
import json
import math
from typing import Any

import pytest
from langgraph.store.base import (
    BaseStore, GetOp, InvalidNamespaceError, Item, ListNamespacesOp, MatchCondition, PutOp, SearchOp,
)

from memwarden.core.errors import InvalidRequest
from tests.conformance.harness import EMBED, Harness, cosine, langgraph_lacks

pytestmark = pytest.mark.integration


# -- items: put, get, delete, batches ---------------------------------------------------------


def test_put_get_round_trip_and_misses(harness: Harness, store: BaseStore) -> None:
    ns = harness.ns("docs")
    value = {"title": "Doc", "body": {"text": "héllo", "n": 3, "tags": ["a", "b"]}, "ok": True, "none": None}
    store.put(ns, "k1", value)
    item = store.get(ns, "k1")
    assert isinstance(item, Item) and item.value == value and item.key == "k1" and item.namespace == ns
    assert item.created_at is not None and item.updated_at >= item.created_at
    assert store.get(ns, "missing") is None
    assert store.get(harness.ns("other"), "k1") is None


def test_put_again_replaces_the_value(harness: Harness, store: BaseStore) -> None:
    ns = harness.ns("docs")
    store.put(ns, "k", {"v": 1, "old": "field"})
    first = store.get(ns, "k")
    store.put(ns, "k", {"v": 2})
    second = store.get(ns, "k")
    assert second.value == {"v": 2} and second.updated_at >= first.updated_at
    assert [i.key for i in store.search(ns)] == ["k"]


def test_delete_and_delete_of_missing(harness: Harness, store: BaseStore) -> None:
    ns = harness.ns("docs")
    store.put(ns, "k", {"v": 1})
    store.delete(ns, "k")
    assert store.get(ns, "k") is None and store.search(ns) == []
    store.delete(ns, "k")
    store.delete(ns, "never")


def test_batch_results_follow_the_order_of_operations(harness: Harness, store: BaseStore) -> None:
    a, b = harness.ns("a"), harness.ns("b")
    store.put(a, "k1", {"data": "one"})
    results = store.batch([
        GetOp(a, "k1"),
        PutOp(b, "k2", {"data": "two"}),
        SearchOp((harness.root,), {"data": "one"}, 10, 0),
        ListNamespacesOp((MatchCondition("prefix", (harness.root,)),), None, 10, 0),
        GetOp(b, "k2"),
        PutOp(b, "k2", None),
        GetOp(b, "k2"),
        GetOp(a, "absent"),
    ])
    assert len(results) == 8
    assert results[0].value == {"data": "one"} and results[1] is None
    assert [i.key for i in results[2]] == ["k1"]
    assert a in results[3]
    # Whether a get sees a put earlier in the same batch is left open by LangGraph
    # (InMemoryStore applies a batch's puts at its end); after the batch, the last op holds.
    assert results[4] is None or results[4].value == {"data": "two"}
    assert results[5] is None and results[7] is None
    assert store.get(b, "k2") is None


def test_batch_of_puts_and_a_delete(harness: Harness, store: BaseStore) -> None:
    ns = harness.ns("docs")
    store.put(ns, "gone", {"v": 0})
    assert store.batch([PutOp(ns, "k1", {"v": 1}), PutOp(ns, "k2", {"v": 2}), PutOp(ns, "gone", None)]) \
        == [None, None, None]
    assert [store.get(ns, k) and store.get(ns, k).value for k in ("k1", "k2", "gone")] == [{"v": 1}, {"v": 2}, None]


def test_async_methods(harness: Harness, store: BaseStore) -> None:
    ns = harness.ns("async")

    async def scenario() -> None:
        await store.aput(ns, "k", {"v": 1})
        assert (await store.aget(ns, "k")).value == {"v": 1}
        assert [i.key for i in await store.asearch((harness.root,))] == ["k"]
        assert await store.alist_namespaces(prefix=(harness.root,)) == [ns]
        assert (await store.abatch([GetOp(ns, "k")]))[0].value == {"v": 1}
        await store.adelete(ns, "k")
        assert await store.aget(ns, "k") is None

    asyncio.run(scenario())


# -- namespaces a put refuses ----------------------------------------------------------------


def test_put_refuses_bad_namespaces_with_langgraphs_error(harness: Harness, store: BaseStore) -> None:
    """Code written for LangGraph's stores catches InvalidNamespaceError around put and aput;
    memwarden's refusal must be one too (it is also an InvalidRequest)."""
    bad = [(), harness.ns("a.b"), harness.ns(""), harness.ns("ok", ""), ("langgraph", harness.root)]
    for ns in bad:
        with pytest.raises(InvalidNamespaceError):
            store.put(ns, "k", {"v": 1})
        with pytest.raises(InvalidNamespaceError):
            asyncio.run(store.aput(ns, "k", {"v": 1}))
    assert store.search((harness.root,)) == []


def test_the_langgraph_root_is_refused_by_put_only(harness: Harness, store: BaseStore) -> None:
    """LangGraph reserves the root label "langgraph" in put and aput, not in batch, which
    LangGraph's own code uses below that root."""
    ns = ("langgraph", harness.root, "internal")
    store.batch([PutOp(ns, "k", {"v": 1})])
    assert store.get(ns, "k").value == {"v": 1}
    assert [i.key for i in store.search(("langgraph", harness.root))] == ["k"]
    asyncio.run(store.abatch([PutOp(ns, "k2", {"v": 2})]))
    assert store.get(ns, "k2").value == {"v": 2}
    store.delete(ns, "k")
    assert store.get(ns, "k") is None


# -- search without a query -------------------------------------------------------------------


def test_search_prefix_matches_whole_labels(harness: Harness, store: BaseStore) -> None:
    for labels in [("foo",), ("foo", "child"), ("foo", "child", "deep"), ("foobar",), ("foobar", "baz"), ("foo2",)]:
        store.put(harness.ns(*labels), "k", {"v": 1})

    def found(*prefix: str) -> set[tuple[str, ...]]:
        return {i.namespace[1:] for i in store.search(harness.ns(*prefix), limit=100)}

    assert found("foo") == {("foo",), ("foo", "child"), ("foo", "child", "deep")}
    assert found("foobar") == {("foobar",), ("foobar", "baz")}
    assert found("foo2") == {("foo2",)}
    assert len(found()) == 6


def test_search_prefix_is_case_sensitive_and_literal(harness: Harness, store: BaseStore) -> None:
    labels = ["Foo", "foo", "user_1", "userX1", "a%b", "axxb", "star*", "starX", "q?m", "br[ack]et"]
    for label in labels:
        store.put(harness.ns(label), "k", {"v": label})
    for label in labels:
        assert [i.value["v"] for i in store.search(harness.ns(label), limit=100)] == [label]


def test_search_lists_all_items_and_pages(harness: Harness, store: BaseStore) -> None:
    for i in range(7):
        store.put(harness.ns("docs", f"d{i % 3}"), f"k{i}", {"i": i})
    everything = store.search((harness.root,), limit=100)
    assert sorted(i.key for i in everything) == [f"k{i}" for i in range(7)]
    assert all(i.score is None for i in everything)  # no query, no score
    pages = [store.search((harness.root,), limit=3, offset=o) for o in (0, 3, 6)]
    assert [len(p) for p in pages] == [3, 3, 1]
    keys = [i.key for p in pages for i in p]
    assert sorted(keys) == sorted(i.key for i in everything) and len(set(keys)) == 7
    assert store.search((harness.root,), offset=7) == []


def test_search_filters_equality_nested_and_lists(harness: Harness, store: BaseStore) -> None:
    ns = harness.ns("docs")
    store.put(ns, "d1", {"author": "John Doe", "tags": ["important"], "meta": {"lang": "en", "v": 1}})
    store.put(ns, "d2", {"author": "Jane", "tags": ["draft"], "meta": {"lang": "fr", "v": 1}})
    store.put(ns, "d3", {"author": "John Doe", "tags": ["draft", "final"], "meta": {"lang": "en", "v": 2}})

    def keys(**flt: Any) -> list[str]:
        return sorted(i.key for i in store.search((harness.root,), filter=flt))

    assert keys(author="John Doe") == ["d1", "d3"]
    assert keys(tags=["draft"]) == ["d2"]  # a list matches element by element
    assert keys(meta={"lang": "en"}) == ["d1", "d3"]  # a mapping matches field by field
    assert keys(author="John Doe", meta={"v": 2}) == ["d3"]
    assert keys(author="Nobody") == []


def test_search_filter_operators_compare_numbers(harness: Harness, store: BaseStore) -> None:
    ns = harness.ns("items")
    for key, price in (("i1", 10), ("i2", 20), ("i3", 30.5), ("i4", -10)):
        store.put(ns, key, {"price": price})

    def keys(condition: dict[str, Any]) -> list[str]:
        return sorted(i.key for i in store.search(ns, filter={"price": condition}))

    assert keys({"$gt": 15}) == ["i2", "i3"]
    assert keys({"$gte": 20, "$lt": 30.5}) == ["i2"]
    assert keys({"$lte": 10}) == ["i1", "i4"]
    assert keys({"$lt": 0}) == ["i4"]
    assert keys({"$eq": 20}) == ["i2"]
    assert keys({"$ne": 20}) == ["i1", "i3", "i4"]
    assert keys({"$lt": math.inf}) == ["i1", "i2", "i3", "i4"]
    assert keys({"$gt": -math.inf}) == ["i1", "i2", "i3", "i4"]
    assert keys({"$lt": 10**100}) == ["i1", "i2", "i3", "i4"]
    assert keys({"$eq": math.nan}) == []


def test_search_filter_booleans(harness: Harness, store: BaseStore) -> None:
    ns = harness.ns("flags")
    store.put(ns, "f1", {"active": True})
    store.put(ns, "f2", {"active": False})
    store.put(ns, "f3", {"active": True})
    assert sorted(i.key for i in store.search(ns, filter={"active": True})) == ["f1", "f3"]
    assert [i.key for i in store.search(ns, filter={"active": False})] == ["f2"]


def test_search_filter_dotted_paths_and_unusual_keys(harness: Harness, store: BaseStore) -> None:
    langgraph_lacks(harness, "dotted filter paths in this version")
    ns = harness.ns("docs")
    store.put(ns, "hyphen", {"access-level": "public", "user": {"access-level": "nested"}})
    store.put(ns, "digit", {"123abc": "ok", "user": {"123abc": "ok2", "deep": {"n": 5}}})
    assert [i.key for i in store.search(ns, filter={"access-level": "public"})] == ["hyphen"]
    assert [i.key for i in store.search(ns, filter={"user.access-level": "nested"})] == ["hyphen"]
    assert [i.key for i in store.search(ns, filter={"123abc": "ok"})] == ["digit"]
    assert [i.key for i in store.search(ns, filter={"user.123abc": "ok2"})] == ["digit"]
    assert [i.key for i in store.search(ns, filter={"user.deep.n": {"$gte": 5}})] == ["digit"]
    assert store.search(ns, filter={"user.missing.n": 5}) == []


def test_search_filter_values_are_literal(harness: Harness, store: BaseStore) -> None:
    ns = harness.ns("docs")
    store.put(ns, "pub", {"access": "public", "title": "O'Brien's Document"})
    store.put(ns, "priv", {"access": "private", "password": "123"})
    for value in ("public' OR '1'='1", "public'; --", "public' UNION SELECT * FROM store --", "''''",
                  "public' OR 'א'='א", "public\\"):
        assert store.search(ns, filter={"access": value}) == []
    assert [i.key for i in store.search(ns, filter={"title": "O'Brien's Document"})] == ["pub"]
    # A key that tries to escape its path matches nothing (or is refused): never the private item.
    try:
        leaked = store.search(ns, filter={"access') = 'public' OR '1'='1' OR json_extract(value, '$.": "x"})
    except ValueError:
        leaked = []
    assert leaked == []


# -- namespaces -------------------------------------------------------------------------------

NAMESPACES = [
    ("test", "documents", "public"),
    ("test", "documents", "private"),
    ("test", "images", "public"),
    ("test", "images", "private"),
    ("prod", "documents", "public"),
    ("prod", "documents", "some", "nesting", "public"),
    ("prod", "documents", "private"),
]


def test_list_namespaces_prefix_suffix_wildcards_depth_and_pages(harness: Harness, store: BaseStore) -> None:
    r = harness.root
    for labels in NAMESPACES:
        store.put(harness.ns(*labels), "dummy", {"content": "dummy"})
    full = {harness.ns(*labels) for labels in NAMESPACES}

    def listed(**kw: Any) -> list[tuple[str, ...]]:
        return store.list_namespaces(limit=100, **kw)

    assert set(listed(prefix=(r,))) == full and len(listed(prefix=(r,))) == 7
    assert len(listed(prefix=(r, "test"))) == 4
    assert set(listed(prefix=(r, "test", "documents"))) == {harness.ns("test", "documents", "public"),
                                                            harness.ns("test", "documents", "private")}
    assert set(listed(prefix=(r,), suffix=("public",))) == {n for n in full if n[-1] == "public"}
    assert len(listed(prefix=(r, "test"), suffix=("public",))) == 2
    assert len(listed(prefix=(r, "*", "documents"))) == 5
    assert listed(prefix=(r,), suffix=("some", "*", "public")) == [harness.ns(*NAMESPACES[5])]
    depth = listed(prefix=(r,), max_depth=3)
    assert set(depth) == {n[:3] for n in full} and len(depth) == len(set(depth))
    assert len(listed(prefix=(r, "*", "documents"), max_depth=4)) == 5
    assert len(store.list_namespaces(prefix=(r,), limit=3)) == 3
    assert len(store.list_namespaces(prefix=(r,), offset=3)) == 4
    pages = store.list_namespaces(prefix=(r,), limit=4) + store.list_namespaces(prefix=(r,), limit=4, offset=4)
    assert set(pages) == full


def test_list_namespaces_matches_whole_labels(harness: Harness, store: BaseStore) -> None:
    r = harness.root
    for labels in [("foo",), ("foo", "child"), ("foobar",), ("uid", "users", "alice"), ("uid", "users", "malice"),
                   ("uid", "a", "b", "alice")]:
        store.put(harness.ns(*labels), "k", {"v": 1})
    assert set(store.list_namespaces(prefix=(r, "foo"))) == {harness.ns("foo"), harness.ns("foo", "child")}
    assert set(store.list_namespaces(prefix=(r,), suffix=("alice",))) == {
        harness.ns("uid", "users", "alice"), harness.ns("uid", "a", "b", "alice")}
    assert store.list_namespaces(prefix=(r, "uid", "*", "alice")) == [harness.ns("uid", "users", "alice")]
    assert len(store.list_namespaces(prefix=(r, "uid"))) == 3


def test_list_namespaces_drops_emptied_namespaces(harness: Harness, store: BaseStore) -> None:
    if harness.kind == "langgraph":
        pytest.skip("InMemoryStore keeps an emptied namespace listed; the SQLite and Postgres stores drop it")
    store.put(harness.ns("keep"), "k", {"v": 1})
    store.put(harness.ns("drop"), "k", {"v": 1})
    store.delete(harness.ns("drop"), "k")
    assert store.list_namespaces(prefix=(harness.root,)) == [harness.ns("keep")]


# -- search with a query: ranking and scores --------------------------------------------------


def test_query_ranks_the_closest_item_first(harness: Harness, store: BaseStore) -> None:
    ns = harness.ns("docs")
    store.put(ns, "zebra", {"text": "zany zebra Xerxes"})
    store.put(ns, "dogs", {"text": "something about dogs"})
    store.put(ns, "birds", {"text": "text about birds"})
    results = store.search(ns, query="zany zebra xerxes")
    assert [r.key for r in results][0] == "zebra" and len(results) == 3
    assert all(r.score is not None for r in results)


def test_query_score_is_the_cosine_similarity(harness: Harness, store: BaseStore) -> None:
    ns = harness.ns("docs")
    value = {"key0": "aaa bbb", "key1": "ccc"}
    store.put(ns, "doc", value)
    text = json.dumps(value, sort_keys=True, ensure_ascii=False)  # LangGraph's text for the field "$"
    for query in ("aaa", "bbb ccc", "poisson", "aaa bbb"):
        [result] = store.search(ns, query=query)
        assert result.score == pytest.approx(cosine(EMBED.embed_query(query), EMBED.embed_documents([text])[0]),
                                             abs=1e-2)


def test_query_scores_descend_across_pages(harness: Harness, store: BaseStore) -> None:
    ns = harness.ns("docs")
    for i in range(6):
        store.put(ns, f"doc{i}", {"text": "test document " + "number " * i + str(i)})
    everything = store.search(ns, query="test document", limit=10)
    scores = [r.score for r in everything]
    assert len(everything) == 6 and scores == sorted(scores, reverse=True)
    first, second = store.search(ns, query="test document", limit=3), store.search(ns, query="test document",
                                                                                    limit=3, offset=3)
    assert [r.key for r in first + second] == [r.key for r in everything]
    assert min(r.score for r in first) >= max(r.score for r in second)


def test_query_follows_a_changed_value(harness: Harness, store: BaseStore) -> None:
    ns = harness.ns("docs")
    store.put(ns, "doc1", {"text": "zany zebra Xerxes"})
    store.put(ns, "doc2", {"text": "something about dogs"})
    before = next(r.score for r in store.search(ns, query="zany xerxes") if r.key == "doc1")
    store.put(ns, "doc1", {"text": "new text about dogs"})
    after = next(r.score for r in store.search(ns, query="zany xerxes") if r.key == "doc1")
    assert after < before
    assert store.search(ns, query="new text about dogs")[0].key == "doc1"


def test_query_with_filter(harness: Harness, store: BaseStore) -> None:
    ns = harness.ns("docs")
    for key, value in (("doc1", {"text": "red apple", "color": "red", "rank": 4.5}),
                       ("doc2", {"text": "red car", "color": "red", "rank": 3.0}),
                       ("doc3", {"text": "green apple", "color": "green", "rank": 4.0}),
                       ("doc4", {"text": "blue car", "color": "blue", "rank": 3.5})):
        store.put(ns, key, value)
    apples = store.search(ns, query="apple", filter={"color": "red"})
    assert [r.key for r in apples] == ["doc1", "doc2"]
    assert store.search(ns, query="car", filter={"color": "red"})[0].key == "doc2"
    ranked = store.search(ns, query="blue car", filter={"rank": {"$gt": 3.2}})
    assert ranked[0].key == "doc4" and sorted(r.key for r in ranked) == ["doc1", "doc3", "doc4"]
    assert store.search(ns, query="apple", filter={"rank": {"$gte": 4.0}, "color": "green"})[0].key == "doc3"


def test_query_edge_cases(harness: Harness, store: BaseStore) -> None:
    ns = harness.ns("docs")
    store.put(ns, "doc1", {"text": "test document"})
    for query in ("", None, "test " * 100, "test!@#$%^&*()"):
        assert [r.key for r in store.search(ns, query=query)] == ["doc1"]
    assert store.search(ns, query="")[0].score is None  # an empty query is no query


def test_query_in_several_scripts(harness: Harness, store: BaseStore) -> None:
    ns = harness.ns("memories")
    texts = ["这是中文", "これは日本語です", "이건 한국어야", "Это русский", "यह रूसी है"]
    for i, text in enumerate(texts):
        store.put(ns, str(i), {"text": text})
    for i, text in enumerate(texts):
        assert store.search(ns, query=text)[0].key == str(i)


def test_index_false_items_are_listed_but_not_ranked(harness: Harness, store: BaseStore) -> None:
    ns = harness.ns("docs")
    for i in range(3):
        store.put(ns, f"doc{i}", {"text": f"text about dogs {i}"})
    store.put(ns, "hidden", {"text": "new text about dogs"}, index=False)
    assert "hidden" not in [r.key for r in store.search(ns, query="new text about dogs", limit=3)]
    assert "hidden" in [r.key for r in store.search(ns)]  # found by a search without a query
    # When the ranked items do not fill the page, the unindexed one follows them, unscored.
    tail = store.search(ns, query="new text about dogs", limit=10)
    assert [r.key for r in tail][-1] == "hidden" and tail[-1].score is None


def test_index_fields_choose_what_is_embedded(harness: Harness) -> None:
    with harness.store(index={"fields": ["text"]}) as store:
        ns = harness.ns("docs")
        store.put(ns, "doc", {"text": "aaa", "note": "bbb ccc ddd eee"})
        store.put(ns, "other", {"text": "fff", "note": "aaa aaa aaa"})
        [first, second] = store.search(ns, query="aaa")
        assert first.key == "doc" and first.score == pytest.approx(1.0, abs=1e-2)
        assert second.score < 0.5  # its "aaa" is in a field that is not embedded
        # A per-put field list overrides the config's; a put with nothing at its fields is
        # ranked by no query, like index=False.
        store.put(ns, "by-note", {"text": "zzz", "note": "ggg"}, index=["note"])
        store.put(ns, "nothing", {"note": "ggg"})
        ranked = store.search(ns, query="ggg", limit=10)
        assert ranked[0].key == "by-note" and ranked[0].score == pytest.approx(1.0, abs=1e-2)
        assert ranked[-1].key == "nothing" and ranked[-1].score is None


def test_an_index_path_at_an_object_or_a_list_embeds_its_json(harness: Harness) -> None:
    with harness.store() as store:
        ns = harness.ns("docs")
        value = {"meta": {"topic": "apple orchard", "year": 2024}, "tags": ["ripe", 3], "note": "zebra"}
        store.put(ns, "obj", value, index=["meta"])
        store.put(ns, "list", value, index=["tags"])
        for key, part in (("obj", value["meta"]), ("list", value["tags"])):
            query = json.dumps(part)  # LangGraph's text for a path that holds an object or a list
            hits = {h.key: h.score for h in store.search(ns, query=query)}
            assert hits[key] == pytest.approx(cosine(EMBED.embed_query(query), EMBED.embed_documents([query])[0]),
                                              abs=1e-2)
        # An empty path is the whole value, as "$" is.
        whole = {"a": "kiwi", "b": "lime"}
        store.put(ns, "empty", whole, index=[""])
        query = json.dumps(whole)
        hits = {h.key: h.score for h in store.search(ns, query=query)}
        assert hits["empty"] == pytest.approx(1.0, abs=1e-2)


def test_several_index_fields_are_embedded_apart(harness: Harness) -> None:
    """LangGraph's test_embed_with_path: each text at each index path is embedded apart (a
    missing path gives none), and an item is scored by its best text (max-pooling): the
    scores are exactly the largest cosine similarity of the query with one of its texts."""
    fields = ["key0", "key1", "key3"]
    docs = {"doc1": {"key1": "xxx", "key2": "yyy", "key3": "zzz"},  # no key0: two vectors
            "doc2": {"key0": "uuu", "key1": "vvv", "key2": "www", "key3": "xxx"}}  # three

    def best(key: str, query: str) -> float:
        texts = [docs[key][f] for f in fields if f in docs[key]]
        return max(cosine(EMBED.embed_query(query), vector) for vector in EMBED.embed_documents(texts))

    with harness.store(index={"fields": fields}) as store:
        ns = harness.ns("docs")
        for key, value in docs.items():
            store.put(ns, key, value)
        for query in ("xxx", "uuu", "www", "vvv zzz"):
            hits = store.search(ns, query=query)
            expected = sorted(docs, key=lambda key: -best(key, query))
            assert {h.key for h in hits} == set(docs)
            assert {h.key: h.score for h in hits} == pytest.approx({key: best(key, query) for key in docs}, abs=1e-4)
            if abs(best("doc1", query) - best("doc2", query)) > 1e-3:
                assert [h.key for h in hits] == expected
        # LangGraph's own expectations: both items match "xxx" by one field; "uuu" only doc2;
        # "www" is at a field that is not embedded.
        assert all(h.score > 0.9 for h in store.search(ns, query="xxx"))
        first, second = store.search(ns, query="uuu")
        assert first.key == "doc2" and first.score > second.score
        assert all(h.score < 0.9 for h in store.search(ns, query="www"))


def test_distance_types_score_as_langgraphs_postgres_store(harness: Harness) -> None:
    """LangGraph's Postgres store reports the cosine similarity, the dot product ("inner_product")
    or minus the Euclidean distance ("l2"). memwarden normalises every vector it stores, so it
    reports those of the unit vectors: LangGraph's own for embeddings of unit length (the
    divergence for others is in docs/langgraph.md). Nearest first in each."""
    langgraph_lacks(harness, "distance_type option")
    texts = {"fox": "the quick brown fox", "dog": "a lazy dog sleeps", "dogs": "quick brown dogs run"}
    query = "quick brown fox"
    cos = {key: cosine(EMBED.embed_query(query), EMBED.embed_documents([text])[0]) for key, text in texts.items()}
    nearest = sorted(texts, key=lambda key: -cos[key])
    reported = {"cosine": lambda c: c, "inner_product": lambda c: c, "l2": lambda c: -math.sqrt(max(0.0, 2 - 2 * c))}
    for distance, score in reported.items():
        with harness.store(index={"distance_type": distance, "fields": ["text"]}) as store:
            ns = harness.ns(distance)
            for key, text in texts.items():
                store.put(ns, key, {"text": text})
            hits = store.search(ns, query=query)
            assert [h.key for h in hits] == nearest
            assert [h.score for h in hits] == pytest.approx([score(cos[key]) for key in nearest], abs=1e-4)
    for refused in ("hamming", "dot", None):
        with pytest.raises(InvalidRequest, match="distance_type"):
            with harness.store(index={"distance_type": refused}):
                pass
