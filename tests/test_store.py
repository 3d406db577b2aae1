"""Tests of memwarden.integrations.store (GovernedStore) and memwarden.integrations.binding.

Three layers: LangGraph's store contract (checked against LangGraph's own InMemoryStore where
the two must agree), memwarden's governance on top of it, and real LangGraph graphs compiled
with ``store=mem.as_store()``. Every test uses a real embedded Memory with a policy written here.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import runpy
import time
from concurrent.futures import ThreadPoolExecutor
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any, TypedDict

import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.config import get_store
from langgraph.graph import END, START, StateGraph
from langgraph.store.base import BaseStore, GetOp, ListNamespacesOp, MatchCondition, PutOp, SearchOp
from langgraph.store.memory import InMemoryStore

from memwarden import AccessDenied, InvalidRequest, Memory, Principal, WriteOp
from memwarden.integrations import store as store_module
from memwarden.integrations.binding import (
    CONFIG_KEY, Unbound, as_principal, bind_principal, carry_principal, current_principal, governed_node,
    require_principal, to_principal,
)
from memwarden.integrations.store import GovernedStore
from memwarden.memory.embeddings import HashingEmbedding
from memwarden.core.records import keyed_id
from tests.clock import Clock

pytestmark = pytest.mark.integration

POLICY = """\
# notes: an owner role with every right, a read-only role, and one that may add but not change
p, owner, notes/**, read
p, owner, notes/**, write
p, owner, notes/**, update
p, owner, notes/**, forget
p, reader, notes/**, read
p, appender, notes/**, read
p, appender, notes/**, write
p, outsider, other/**, read
p, outsider, other/**, write
# a ward and its billing office, for the graph tests
p, clinician, ward/**, read
p, clinician, ward/**, write
p, clinician, ward/**, update
p, billing, billing/**, read
p, billing, billing/**, write
p, billing, billing/**, update
g, olga, owner
"""

OLGA = Principal("olga")  # the owner role comes from the policy's g line
RITA = Principal("rita", roles=["reader"])
ADAM = Principal("adam", roles=["appender"])
OSCAR = Principal("oscar", roles=["outsider"])
NINA = Principal("nina", roles=["clinician"])
CARL = Principal("carl", roles=["billing"])


def open_memory(root: Path) -> Memory:
    policy = root / "policy.csv"
    policy.write_text(POLICY, encoding="utf-8")
    return Memory.open(root / "data", policy=policy, embedding=HashingEmbedding())


@pytest.fixture
def mem(tmp_path: Path) -> Iterator[Memory]:
    with open_memory(tmp_path) as memory:
        yield memory


@pytest.fixture
def store(mem: Memory) -> GovernedStore:
    return mem.as_store()


def keys(items: list[Any]) -> list[tuple[tuple[str, ...], str]]:
    return [(item.namespace, item.key) for item in items]


def audit_tail(mem: Memory, since: int) -> list[dict[str, Any]]:
    return list(mem.audit_log.entries())[since:]


# Values for the contract suite: (namespace, key, value)
ROWS = [
    (("notes", "a", "x"), "k1", {"kind": "task", "n": 1, "tags": ["red"], "meta": {"lang": "en"}}),
    (("notes", "a", "x"), "k2", {"kind": "task", "n": 2, "tags": ["red", "blue"], "meta": {"lang": "fr"}}),
    (("notes", "a", "y"), "k3", {"kind": "idea", "n": 3, "tags": [], "meta": {"lang": "en"}}),
    (("notes", "b", "x"), "k4", {"kind": "task", "n": 4.5, "tags": ["blue"]}),
    (("notes", "b"), "k5", {"kind": "idea", "n": "5", "meta": {"lang": "en", "rtl": False}}),
    (("notes", "c"), "k6", {"kind": "note", "text": "no number here"}),
    (("notes", "c"), "k7", {"kind": "task", "n": -1, "tags": ["red"]}),
]


def fill(store: GovernedStore) -> tuple[GovernedStore, InMemoryStore]:
    reference = InMemoryStore()
    with bind_principal(OLGA):
        for namespace, key, value in ROWS:
            store.put(namespace, key, value)
            reference.put(namespace, key, value)
    return store, reference


@pytest.fixture
def filled(store: GovernedStore) -> tuple[GovernedStore, InMemoryStore]:
    """The governed store and an InMemoryStore holding the same rows, written as olga."""
    return fill(store)


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[GovernedStore, InMemoryStore]]:
    """Like ``filled``, shared by the tests that only read (opening a Memory takes a while)."""
    with open_memory(tmp_path_factory.mktemp("shared")) as memory:
        yield fill(memory.as_store())


# -- LangGraph's store contract -------------------------------------------------------------


def test_put_get_round_trips_nested_json(store: GovernedStore) -> None:
    value = {"name": "Zoë", "scores": [1, 2.5, None], "nested": {"deep": {"ok": True}}, "emoji": "🩺"}
    with bind_principal(OLGA):
        assert store.get(("notes", "a"), "k") is None
        store.put(("notes", "a"), "k", value)
        item = store.get(("notes", "a"), "k")
    assert item is not None
    assert (item.namespace, item.key, item.value) == (("notes", "a"), "k", value)
    assert item.created_at.tzinfo is not None and item.updated_at == item.created_at


def test_put_overwrites_the_same_key(store: GovernedStore) -> None:
    with bind_principal(OLGA):
        store.put(("notes", "a"), "k", {"v": 1})
        first = store.get(("notes", "a"), "k")
        store.put(("notes", "a"), "k", {"v": 2})
        second = store.get(("notes", "a"), "k")
        listed = store.search(("notes",))
    assert second.value == {"v": 2} and second.updated_at >= first.updated_at
    assert keys(listed) == [(("notes", "a"), "k")]


def test_delete_removes_and_deleting_again_is_a_no_op(store: GovernedStore) -> None:
    with bind_principal(OLGA):
        store.put(("notes", "a"), "k", {"v": 1})
        store.delete(("notes", "a"), "k")
        assert store.get(("notes", "a"), "k") is None
        assert store.search(("notes",)) == []
        store.delete(("notes", "a"), "k")
        store.delete(("notes", "a"), "never-written")
        store.put(("notes", "a"), "k", {"v": 3})
        assert store.get(("notes", "a"), "k").value == {"v": 3}


def test_a_keyed_record_with_plain_text_reads_as_content(mem: Memory, store: GovernedStore) -> None:
    mem.batch(OLGA, [WriteOp("just a sentence", ("notes", "a"), key="plain")])
    with bind_principal(OLGA):
        assert store.get(("notes", "a"), "plain").value == {"content": "just a sentence"}
        assert [i.value for i in store.search(("notes",))] == [{"content": "just a sentence"}]


def test_namespaces_are_canonicalised_so_lookalikes_address_one_item(store: GovernedStore) -> None:
    with bind_principal(OLGA):
        store.put(("ｎｏｔｅｓ", "a"), "k", {"v": 1})  # fullwidth letters, NFKC-equal to "notes"
        item = store.get(("notes", "a"), "k")
    assert item is not None and item.namespace == ("notes", "a")


def test_invalid_input_raises_value_errors_before_storage(store: GovernedStore) -> None:
    with bind_principal(OLGA):
        with pytest.raises(InvalidRequest, match="path separator"):
            store.put(("notes", "a/b"), "k", {"v": 1})
        with pytest.raises(InvalidRequest, match="JSON-serialisable"):
            store.put(("notes", "a"), "k", {"v": object()})
        with pytest.raises(InvalidRequest, match="minutes"):
            store.batch([PutOp(("notes", "a"), "k", {"v": 1}, ttl=-1)])
        with pytest.raises(InvalidRequest, match="limit"):
            store.search(("notes",), limit=0)
        with pytest.raises(InvalidRequest, match="max_depth"):
            store.list_namespaces(max_depth=0)
        with pytest.raises(ValueError):  # LangGraph's own check, before the store is reached
            store.put(("langgraph", "a"), "k", {"v": 1})
        assert store.search(("notes",)) == []


def test_search_without_query_lists_every_item_under_the_prefix(shared: tuple[GovernedStore, InMemoryStore]) -> None:
    store, reference = shared
    with bind_principal(OLGA):
        for prefix in [("notes",), ("notes", "a"), ("notes", "b"), ("notes", "a", "x"), ("notes", "zzz")]:
            got = store.search(prefix, limit=100)
            assert sorted(keys(got)) == sorted(keys(reference.search(prefix, limit=100))), prefix
            assert all(item.score is None for item in got)
            assert {item.key: item.value for item in got} == {k: v for ns, k, v in ROWS if ns[: len(prefix)] == prefix}


def test_search_with_query_ranks_the_closest_item_first(store: GovernedStore) -> None:
    with bind_principal(OLGA):
        store.put(("notes", "med"), "allergy", {"text": "patient is allergic to penicillin"})
        store.put(("notes", "med"), "diet", {"text": "vegetarian meals on Tuesdays"})
        store.put(("notes", "med"), "sleep", {"text": "sleeps badly after midnight"})
        hits = store.search(("notes",), query="penicillin allergy", limit=2)
    assert [h.key for h in hits][0] == "allergy" and len(hits) == 2
    assert all(isinstance(h.score, float) for h in hits) and hits[0].score >= hits[1].score


FILTERS = [
    {"kind": "task"},
    {"kind": "idea", "n": 3},
    {"n": {"$gt": 2}},
    {"n": {"$gte": 2, "$lt": 4.5}},
    {"n": {"$lte": 1}},
    {"n": {"$eq": 2}},
    {"kind": {"$ne": "task"}},
    {"tags": ["red", "blue"]},
    {"tags": []},
    {"meta": {"lang": "en"}},
    {"meta": {"lang": "en", "rtl": False}},
    {"missing": None},
    {"kind": "nothing-matches"},
]


@pytest.mark.parametrize("filter_by", FILTERS, ids=[str(f) for f in FILTERS])
def test_filters_select_what_in_memory_store_selects(shared: tuple[GovernedStore, InMemoryStore],
                                                     filter_by: dict[str, Any]) -> None:
    store, reference = shared
    # InMemoryStore raises on an ordering operator over a missing field, as in ("notes", "c");
    # that case has its own test below.
    ordering = any(isinstance(v, dict) and {"$gt", "$gte", "$lt", "$lte"} & set(v) for v in filter_by.values())
    prefixes = [("notes", "a"), ("notes", "b")] + ([] if ordering else [("notes",)])
    with bind_principal(OLGA):
        for prefix in prefixes:
            got = store.search(prefix, filter=filter_by, limit=100)
            assert sorted(keys(got)) == sorted(keys(reference.search(prefix, filter=filter_by, limit=100))), prefix


def test_ordering_operators_skip_missing_and_non_numeric_fields(shared: tuple[GovernedStore, InMemoryStore]) -> None:
    # InMemoryStore raises TypeError on k6 (no "n"); a governed store must not fail on one record.
    store, _ = shared
    with bind_principal(OLGA):
        got = store.search(("notes",), filter={"n": {"$gt": 0}}, limit=100)
    assert sorted(i.key for i in got) == ["k1", "k2", "k3", "k4", "k5"]  # "5" compares as a number, as in LangGraph


def test_unknown_filter_operator_is_rejected_up_front(shared: tuple[GovernedStore, InMemoryStore]) -> None:
    store, _ = shared
    with bind_principal(OLGA), pytest.raises(InvalidRequest, match=r"\$regex"):
        store.search(("notes",), filter={"kind": {"$regex": "ta.*"}})


def test_a_malformed_filter_key_is_refused_in_langgraphs_words(shared: tuple[GovernedStore, InMemoryStore]) -> None:
    # LangGraph's SQL stores raise ValueError("Invalid filter key ...") for a key that is no
    # path; code written for them matches on it.
    store, _ = shared
    for key in ("kind') = 'task' OR '1'='1' OR json_extract(value, '$.", "a..b", ""):
        with bind_principal(OLGA), pytest.raises(ValueError, match="Invalid filter key"):
            store.search(("notes",), filter={key: "x"})


def test_limit_and_offset_page_through_all_items(shared: tuple[GovernedStore, InMemoryStore]) -> None:
    store, _ = shared
    with bind_principal(OLGA):
        everything = keys(store.search(("notes",), limit=100))
        pages = [keys(store.search(("notes",), limit=3, offset=o)) for o in (0, 3, 6, 9)]
        filtered = keys(store.search(("notes",), filter={"kind": "task"}, limit=100))
        filtered_page = keys(store.search(("notes",), filter={"kind": "task"}, limit=2, offset=1))
    assert [len(p) for p in pages] == [3, 3, 1, 0]
    assert sum(pages, []) == everything and len(everything) == len(ROWS)
    assert filtered_page == filtered[1:3]


def test_search_skips_plain_memories_and_still_fills_the_page(mem: Memory, store: GovernedStore) -> None:
    olga = mem.session(OLGA)
    for i in range(6):  # stored first, so they lead the storage order
        olga.write(f"plain memory number {i}", ("notes", "a"))
    with bind_principal(OLGA):
        for i in range(3):
            store.put(("notes", "a"), f"k{i}", {"i": i})
        got = store.search(("notes",), limit=2)
        second = store.search(("notes",), limit=2, offset=2)
    assert len(got) == 2 and len(second) == 1
    assert sorted(i.key for i in got + second) == ["k0", "k1", "k2"]


def test_filter_only_search_is_one_governed_search(mem: Memory, store: GovernedStore) -> None:
    # The filter is tested inside the governed path, so offset and limit are the core's and
    # no page of non-matching records is read out to the adapter.
    with bind_principal(OLGA):
        store.batch([PutOp(("notes", "bulk"), f"k{i:02}", {"i": i, "rare": i >= 14}) for i in range(20)])
        before = len(list(mem.audit_log.entries()))
        got = store.search(("notes",), filter={"rare": True}, limit=2, offset=3)
        searches = audit_tail(mem, before)
        everything = store.search(("notes",), filter={"rare": True}, limit=50)
    assert len(everything) == 6 and keys(got) == keys(everything)[3:5]
    assert [e["op"] for e in searches] == ["search"] and searches[0]["returned"] == 2


def test_selective_filter_with_a_query_over_fetches_across_core_pages(
        mem: Memory, store: GovernedStore, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(store_module, "_FILTERED_PAGE", 4)  # so that a few records span several pages
    with bind_principal(OLGA):
        store.batch([PutOp(("notes", "bulk"), f"k{i:02}", {"i": i, "rare": i >= 14}) for i in range(20)])
        before = len(list(mem.audit_log.entries()))
        got = store.search(("notes",), query="rare", filter={"rare": True}, limit=2, offset=3)
        searches = len(audit_tail(mem, before))
        everything = store.search(("notes",), query="rare", filter={"rare": True}, limit=50)
    assert len(everything) == 6 and keys(got) == keys(everything)[3:5]
    assert searches > 1  # each core page is its own governed, audited search


def test_list_namespaces_matches_in_memory_store(shared: tuple[GovernedStore, InMemoryStore]) -> None:
    store, reference = shared
    cases = [
        {},
        {"prefix": ("notes", "a")},
        {"suffix": ("x",)},
        {"prefix": ("notes", "*", "x")},
        {"prefix": ("*", "b")},
        {"suffix": ("a", "*")},
        {"prefix": ("notes",), "suffix": ("x",)},
        {"max_depth": 2},
        {"prefix": ("notes", "a"), "max_depth": 2},
        {"suffix": ("x",), "max_depth": 2},
        {"limit": 2, "offset": 1},
        {"max_depth": 2, "limit": 1, "offset": 1},
        {"prefix": ("notes", "zzz")},
    ]
    with bind_principal(OLGA):
        for case in cases:
            assert store.list_namespaces(**case) == reference.list_namespaces(**case), case


def test_batch_mixes_operations_and_keeps_their_order(store: GovernedStore) -> None:
    ns = ("notes", "batch")
    with bind_principal(OLGA):
        results = store.batch([
            PutOp(ns, "a", {"v": 1}),
            PutOp(ns, "b", {"v": 2}),
            GetOp(ns, "a"),
            PutOp(ns, "a", None),
            GetOp(ns, "a"),
            SearchOp(ns, None, 10, 0),
            ListNamespacesOp((MatchCondition("prefix", ("notes",)),)),
        ])
    assert results[:2] == [None, None]
    assert results[2].value == {"v": 1}
    assert results[3] is None and results[4] is None
    assert keys(results[5]) == [(ns, "b")]
    assert results[6] == [ns]


def test_async_api_and_abatch(store: GovernedStore) -> None:
    ns = ("notes", "async")

    async def scenario() -> tuple[Any, ...]:
        await store.aput(ns, "a", {"v": 1})
        got = await store.aget(ns, "a")
        found = await store.asearch(ns, filter={"v": 1})
        listed = await store.alist_namespaces(prefix=("notes",))
        batched = await store.abatch([GetOp(ns, "a"), PutOp(ns, "a", None), GetOp(ns, "a")])
        await store.adelete(ns, "never-written")
        return got, found, listed, batched

    with bind_principal(OLGA):
        got, found, listed, batched = asyncio.run(scenario())
    assert got.value == {"v": 1} and keys(found) == [(ns, "a")] and listed == [ns]
    assert batched[0].value == {"v": 1} and batched[1:] == [None, None]


def test_ttl_is_in_minutes_and_expired_items_vanish(mem: Memory, store: GovernedStore, clock: Clock) -> None:
    ns = ("notes", "ttl")
    with bind_principal(OLGA):
        store.put(ns, "long", {"v": 1}, ttl=5)
        store.put(ns, "short", {"v": 2}, ttl=0.02)  # 1.2 seconds: room for the first read
        assert store.get(ns, "short") is not None
        clock.advance(1.5)
        assert store.get(ns, "short") is None
        assert [i.key for i in store.search(ns)] == ["long"]
    record = mem.session(OLGA).get(keyed_id(ns, "long"))
    # The reads above restarted its clock (refresh_on_read): the TTL runs from the last one.
    assert record.expires_at - record.last_access == timedelta(minutes=5) and record.last_access > record.created_at
    assert store.supports_ttl


# -- governance on top of the contract --------------------------------------------------


def test_no_bound_principal_fails_closed(mem: Memory, store: GovernedStore) -> None:
    before = len(list(mem.audit_log.entries()))
    assert current_principal.get() is None
    for call in (lambda: store.get(("notes", "a"), "k"), lambda: store.put(("notes", "a"), "k", {"v": 1}),
                 lambda: store.search(("notes",)), lambda: store.list_namespaces(), require_principal,
                 lambda: asyncio.run(store.abatch([GetOp(("notes", "a"), "k")]))):
        with pytest.raises(AccessDenied, match="no principal is bound"):
            call()
    assert len(list(mem.audit_log.entries())) == before


def test_reader_cannot_put_or_delete(filled: tuple[GovernedStore, InMemoryStore]) -> None:
    store, _ = filled
    with bind_principal(RITA):
        assert store.get(("notes", "a", "x"), "k1").value == ROWS[0][2]
        with pytest.raises(AccessDenied, match="may not write"):
            store.put(("notes", "a"), "mine", {"v": 1})
        with pytest.raises(AccessDenied, match="may not forget"):
            store.delete(("notes", "a", "x"), "k1")
        assert store.get(("notes", "a", "x"), "k1") is not None


def test_overwriting_an_item_needs_update_permission(filled: tuple[GovernedStore, InMemoryStore]) -> None:
    store, _ = filled
    with bind_principal(ADAM):
        store.put(("notes", "adam"), "new", {"v": 1})  # a new key needs only write
        with pytest.raises(AccessDenied, match="may not update"):
            store.put(("notes", "a", "x"), "k1", {"hijacked": True})
        assert store.get(("notes", "a", "x"), "k1").value == ROWS[0][2]
    with bind_principal(OLGA):
        store.put(("notes", "adam"), "new", {"v": 2})
        assert store.get(("notes", "adam"), "new").value == {"v": 2}


def test_a_principal_without_read_sees_nothing(filled: tuple[GovernedStore, InMemoryStore]) -> None:
    store, _ = filled
    with bind_principal(OSCAR):
        store.put(("other", "o"), "mine", {"v": 1})
        assert store.get(("notes", "a", "x"), "k1") is None
        assert keys(store.search((), limit=100)) == [(("other", "o"), "mine")]
        assert keys(store.search((), query="task red", limit=100)) == [(("other", "o"), "mine")]
        assert store.list_namespaces() == [("other", "o")]
        store.delete(("notes", "a", "x"), "k1")  # invisible, so a no-op, like a missing key
        # Asking about a subtree it may not read at all is denied outright, as in the core.
        with pytest.raises(AccessDenied):
            store.search(("notes",))
        with pytest.raises(AccessDenied):
            store.list_namespaces(prefix=("notes", "*"))
    with bind_principal(OLGA):
        assert store.get(("notes", "a", "x"), "k1") is not None
        assert store.get(("other", "o"), "mine") is None


def test_a_reader_without_update_does_not_lengthen_a_ttl_by_reading(mem: Memory, store: GovernedStore) -> None:
    ns = ("notes", "ttl")
    with bind_principal(OLGA):
        store.put(ns, "k", {"v": 1}, ttl=0.05)  # 3 s
    written = mem.session(OLGA).get(keyed_id(ns, "k")).expires_at
    with bind_principal(RITA):  # read, but not update
        for _ in range(3):
            time.sleep(0.15)
            assert store.get(ns, "k", refresh_ttl=True) is not None
            assert store.search(ns, refresh_ttl=True)[0].key == "k"
    assert mem.session(OLGA).get(keyed_id(ns, "k")).expires_at == written
    with bind_principal(OLGA):  # the owner may update it, so its read restarts the clock
        assert store.get(ns, "k", refresh_ttl=True) is not None
    assert mem.session(OLGA).get(keyed_id(ns, "k")).expires_at > written


def test_an_index_text_may_only_select_from_the_content(mem: Memory, store: GovernedStore) -> None:
    # Embedded apart from the content, a record would rank for queries its content does not
    # answer (a payload found by "holiday schedule"), out of the validators' sight.
    content = json.dumps({"text": "Wire the invoice total to account 99-1234"})
    # The JSON of an object or a list at a path selects from the content only when its every
    # key and value is the content's.
    for smuggled in ("company holiday schedule", "Wire the invoice\nholiday schedule", '["holiday schedule"]',
                     '{"text": "holiday schedule"}', '{"holiday": "Wire the invoice total to account 99-1234"}',
                     '"holiday schedule"', "[]x"):
        with pytest.raises(InvalidRequest, match="not part of any value of the content"):
            mem.session(OLGA).batch([WriteOp(content, ("notes", "a"), key="k", index_text=smuggled)])
    with pytest.raises(InvalidRequest, match="JSON document"):
        mem.session(OLGA).batch([WriteOp("plain text", ("notes", "a"), index_text="plain")])
    mem.session(OLGA).batch([WriteOp(content, ("notes", "a"), key="j", index_text=content)])
    mem.session(OLGA).batch([WriteOp(content, ("notes", "a"), key="k", index_text="account 99-1234")])
    with bind_principal(OLGA):
        assert store.search(("notes", "a"), query="account 99-1234")[0].score == pytest.approx(1.0, abs=1e-2)


def test_delete_by_an_unknown_principal_is_not_swallowed(store: GovernedStore) -> None:
    with bind_principal(Principal("ghost")), pytest.raises(InvalidRequest, match="unknown principal"):
        store.delete(("notes", "a"), "k")


def test_audit_log_has_one_entry_per_store_op_naming_the_principal(mem: Memory, store: GovernedStore) -> None:
    before = len(list(mem.audit_log.entries()))
    ns = ("notes", "audit")
    with bind_principal(OLGA):
        store.put(ns, "k", {"v": 1})
        store.get(ns, "k")
        store.search(ns, query="v")
        store.search(ns, filter={"v": 1})
        store.list_namespaces(prefix=("notes",))
        store.delete(ns, "k")
    with bind_principal(RITA):
        store.get(ns, "k")
        with pytest.raises(AccessDenied):
            store.put(ns, "k", {"v": 2})
    entries = audit_tail(mem, before)
    assert [(e["op"], e["principal"], e["outcome"]) for e in entries] == [
        ("write", "olga", "ok"), ("get", "olga", "ok"), ("search", "olga", "ok"), ("search", "olga", "ok"),
        ("list", "olga", "ok"), ("forget", "olga", "ok"), ("get", "rita", "ok"), ("write", "rita", "denied"),
    ]
    assert entries[0]["records"] == [keyed_id(ns, "k")] and entries[0]["namespace"] == "notes/audit"
    assert mem.audit_log.verify().ok


# -- principal binding --------------------------------------------------------------------


def test_bind_principal_nests_and_restores() -> None:
    with bind_principal({"id": "olga"}) as outer:
        assert outer == Principal("olga") and require_principal() == outer
        with bind_principal(RITA):
            assert require_principal() == RITA
        assert require_principal() == outer
    assert current_principal.get() is None


def test_to_principal_accepts_principals_and_strict_mappings() -> None:
    assert to_principal({"id": "nina", "roles": ["clinician"]}) == NINA
    assert to_principal(NINA) is NINA
    for bad in ({"id": "nina", "role": "clinician"}, {"roles": ["x"]}, {"id": "nina", "roles": "clinician"}, "nina"):
        with pytest.raises(InvalidRequest):
            to_principal(bad)


def test_as_principal_wraps_sync_and_async_functions_transparently() -> None:
    @as_principal(NINA)
    def sync_node(state: dict, config: RunnableConfig) -> Principal:
        """Sync doc."""
        return require_principal()

    @as_principal({"id": "carl", "roles": ["billing"]})
    async def async_node(state: dict) -> Principal:
        return require_principal()

    assert sync_node({}, {}) == NINA and sync_node.__doc__ == "Sync doc."
    assert asyncio.run(async_node({})) == CARL and inspect.iscoroutinefunction(async_node)
    assert current_principal.get() is None


# -- real LangGraph graphs ----------------------------------------------------------------


class WardState(TypedDict, total=False):
    nurse_saw: list[str]
    nurse_everywhere: list[str]
    clerk_saw: list[str]
    clerk_sees_vitals: bool
    config_seen: str


def test_graph_nodes_act_as_their_own_principals(mem: Memory) -> None:
    admin = Principal("admin", roles=["clinician", "billing"])
    store = mem.as_store()
    with bind_principal(admin):
        store.put(("ward", "p2"), "history", {"text": "appendectomy 2019"})
        store.put(("billing", "p0"), "old-invoice", {"amount": 80})

    @as_principal(NINA)
    def nurse(state: WardState, config: RunnableConfig, store: BaseStore) -> WardState:  # injected store
        store.put(("ward", "p1"), "vitals", {"bp": "120/80"})
        return {"nurse_saw": sorted(i.key for i in store.search(("ward",))),
                "nurse_everywhere": sorted(i.key for i in store.search(())),
                "config_seen": config["configurable"]["thread"]}

    @as_principal(CARL)
    def clerk(state: WardState) -> WardState:
        store = get_store()  # from the run context rather than injected
        store.put(("billing", "p1"), "invoice", {"amount": 120})
        return {"clerk_saw": sorted(i.key for i in store.search((), limit=50)),
                "clerk_sees_vitals": store.get(("ward", "p1"), "vitals") is not None}

    graph = StateGraph(WardState)
    graph.add_node("nurse", nurse)
    graph.add_node("clerk", clerk)
    graph.add_edge(START, "nurse")
    graph.add_edge("nurse", "clerk")
    graph.add_edge("clerk", END)
    before = len(list(mem.audit_log.entries()))
    out = graph.compile(store=mem.as_store()).invoke({}, {"configurable": {"thread": "t1"}})

    assert out["nurse_saw"] == ["history", "vitals"] and out["nurse_everywhere"] == ["history", "vitals"]
    assert out["clerk_saw"] == ["invoice", "old-invoice"] and out["clerk_sees_vitals"] is False
    assert out["config_seen"] == "t1"
    who = [(e["op"], e["principal"]) for e in audit_tail(mem, before)]
    assert who == [("write", "nina"), ("search", "nina"), ("search", "nina"),
                   ("write", "carl"), ("search", "carl"), ("get", "carl")]


class AskState(TypedDict, total=False):
    saw: list[str]


def test_governed_node_takes_the_principal_from_the_run_config(mem: Memory) -> None:
    @governed_node
    async def remember(state: AskState) -> AskState:
        store = get_store()
        me = require_principal()
        namespace = ("ward", "shared") if "clinician" in me.roles else ("billing", "shared")
        await store.aput(namespace, me.id, {"by": me.id})
        return {"saw": sorted(i.key for i in await store.asearch((), limit=50))}

    graph = StateGraph(AskState)
    graph.add_node("remember", remember)
    graph.add_edge(START, "remember")
    app = graph.compile(store=mem.as_store())

    def run(principal: Any) -> list[str]:
        return asyncio.run(app.ainvoke({}, {"configurable": {CONFIG_KEY: principal}}))["saw"]

    assert run({"id": "nina", "roles": ["clinician"]}) == ["nina"]
    assert run(CARL) == ["carl"]
    assert run(Principal("nick", roles=["clinician"])) == ["nick", "nina"]
    with pytest.raises(AccessDenied, match="no principal is bound"):
        asyncio.run(app.ainvoke({}, {}))


def test_the_langgraph_store_example_runs(capsys: pytest.CaptureFixture[str]) -> None:
    runpy.run_path(str(Path(__file__).resolve().parents[1] / "examples" / "langgraph_store.py"), run_name="__main__")
    out = capsys.readouterr().out
    assert "clerk carol sees: ward3/billing/p12:invoice\n" in out
    assert "clerk carol gets the vitals: False" in out
    assert "physician alice sees: ward3/patients/p12:vitals" in out and "chain intact: True" in out


def test_carry_principal_takes_the_binding_into_a_thread_pool(store: GovernedStore) -> None:
    ns = ("notes", "pool")
    with bind_principal(OLGA):
        for i in range(4):
            store.put(ns, f"k{i}", {"v": i})

    def read(key: str) -> int:
        return store.get(ns, key).value["v"]

    def rebind(_: int) -> str:
        with bind_principal(RITA):
            return require_principal().id

    with bind_principal(OLGA), ThreadPoolExecutor(max_workers=4) as pool:
        # A pool thread does not inherit the context: denied, with the line that binds one.
        with pytest.raises(Unbound, match=r"bind_principal\(Principal\("):
            pool.submit(read, "k0").result()
        assert list(pool.map(carry_principal(read), [f"k{i}" for i in range(4)] * 3)) == [0, 1, 2, 3] * 3
        # A binding made inside a carried call stays inside it.
        assert list(pool.map(carry_principal(rebind), range(4))) == ["rita"] * 4
        assert require_principal() == OLGA
        carried = carry_principal(require_principal)
    with bind_principal(RITA):  # later rebinding where it was wrapped does not change it
        assert carried() == OLGA


def test_the_quickstart_of_docs_langgraph_runs_in_at_most_ten_lines(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    doc = (Path(__file__).resolve().parents[1] / "docs" / "langgraph.md").read_text(encoding="utf-8")
    quickstart = doc.split("## Quickstart", 1)[1].split("```python\n", 1)[1].split("```", 1)[0]
    assert len(quickstart.splitlines()) <= 10
    monkeypatch.chdir(tmp_path)
    exec(compile(quickstart, "docs/langgraph.md", "exec"), {"__name__": "quickstart"})
    assert capsys.readouterr().out == "{'held': False}\n"
