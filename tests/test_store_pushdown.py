"""The store's fast path (issue 20, item 3): filter-only searches and namespace listings answered
inside the governed path (from the derived index once it is loaded), and batches of puts and
gets run as one core batch.

The property tests run the same random stores through two memories, one with the derived
index and one without it (the partition path, which reads Chroma as the store always did):
both must return the same items in the same order, equal to the visible items the old
adapter-side filter (:func:`memwarden.core.valuefilter.matches`) selects, and a namespace the
caller may not read must be as missing from a listing as one that holds nothing.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from langgraph.store.base import GetOp, PutOp
from langgraph.store.memory import InMemoryStore

from memwarden import AccessDenied, Memory, Principal
from memwarden.core.ops import ListNamespacesOp
from memwarden.core.valuefilter import matches
from memwarden.integrations.binding import bind_principal
from memwarden.memory.context import OpContext
from memwarden.memory.derived import derived_index
from memwarden.memory.embeddings import HashingEmbedding

pytestmark = pytest.mark.integration

WRITER = Principal("writer")
READER = Principal("reader")
ROOT = "pd"
# The reader may read everything below the root except what lies below a "hidden" label.
POLICY = "".join(f"p, owner, {ROOT}/**, {a}\n" for a in ("read", "write", "update", "forget")) + (
    f"p, member, {ROOT}/**, read\np, member, {ROOT}/*/hidden/**, read, deny\n"
    "g, writer, owner\ng, reader, member\n")
_examples = itertools.count()


def _open(path: Path, policy: Path, search_index: str) -> Memory:
    mem = Memory.open(path, policy=policy, embedding=HashingEmbedding(64), validators=[], search_index=search_index)
    index = derived_index(mem._backend)
    assert (index is None) == (search_index == "off")
    assert index is None or index.wait_ready(60)
    return mem


@pytest.fixture(scope="module")
def memories(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Memory]]:
    """One memory with the derived index, one with the partition path only."""
    root = tmp_path_factory.mktemp("pushdown")
    policy = root / "policy.csv"
    policy.write_text(POLICY, encoding="utf-8")
    opened = {name: _open(root / name, policy, name) for name in ("sq8", "off")}
    yield opened
    for mem in opened.values():
        mem.close()


scalars = st.one_of(st.integers(-3, 3), st.sampled_from(["x", "y", "Ｘ"]), st.booleans(), st.none())
values = st.fixed_dictionaries({}, optional={
    "a": scalars, "b": scalars, "c": st.fixed_dictionaries({"x": scalars}), "l": st.lists(st.integers(0, 2), max_size=2)})
puts = st.lists(st.tuples(st.sampled_from(["open", "hidden", "other"]), st.sampled_from(["p", "q"]),
                          st.sampled_from([f"k{i}" for i in range(5)]), st.one_of(values, values, st.none())),
                min_size=1, max_size=12)
plain = st.lists(st.tuples(st.sampled_from(["open", "hidden"]), st.sampled_from(['{"a": 1}', "a note"])), max_size=2)
operand = st.one_of(scalars, st.dictionaries(st.sampled_from(["$eq", "$ne", "$gt", "$gte", "$lt", "$lte"]),
                                             st.integers(-3, 3), min_size=1, max_size=2))
filters = st.dictionaries(st.sampled_from(["a", "b", "c.x", "c", "l", "missing"]), operand, max_size=2)


def _seed(mem: Memory, ex: str, items: list, notes: list) -> None:
    store = mem.as_store()
    with bind_principal(WRITER):
        # In two batches: a key put again in a later batch overwrites a stored row (within one
        # batch the core stores the last version only), which keeps its place in storage order.
        half = len(items) // 2
        for part in (items[:half], items[half:]):
            if part:
                store.batch([PutOp((ROOT, ex, sub, leaf), key, value) for sub, leaf, key, value in part])
    writer = mem.session(WRITER)
    for sub, text in notes:
        writer.write(text, namespace=(ROOT, ex, sub, "p"))


def _visible(ex: str, items: list, principal: Principal) -> dict[tuple, dict[str, Any]]:
    """The items ``principal`` may see after ``items`` ran in order: (namespace, key) -> value."""
    final: dict[tuple, dict[str, Any]] = {}
    for sub, leaf, key, value in items:
        if value is None:
            final.pop(((ROOT, ex, sub, leaf), key), None)
        else:
            final[((ROOT, ex, sub, leaf), key)] = value
    return {k: v for k, v in final.items() if principal is WRITER or k[0][2] != "hidden"}


def _search(mem: Memory, principal: Principal, prefix: tuple, **kwargs: Any) -> list[tuple] | str:
    with bind_principal(principal):
        try:
            found = mem.as_store().search(prefix, **kwargs)
        except AccessDenied:
            return "denied"
    return [(i.namespace, i.key, json.dumps(i.value, sort_keys=True)) for i in found]


@pytest.mark.slow  # the differential properties: make test runs them, test-fast leaves them out
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(items=puts, notes=plain, filter_by=filters, where=st.sampled_from([(), ("open",), ("hidden",), ("open", "p")]),
       window=st.tuples(st.integers(0, 3), st.integers(1, 4)), who=st.sampled_from([WRITER, READER]))
def test_filter_only_search_is_the_same_on_both_paths_and_the_old_filter(
        memories: dict[str, Memory], items: list, notes: list, filter_by: dict, where: tuple,
        window: tuple[int, int], who: Principal) -> None:
    ex = f"e{next(_examples)}"
    for mem in memories.values():
        _seed(mem, ex, items, notes)
    prefix = (ROOT, ex, *where)
    offset, limit = window
    full = {name: _search(mem, who, prefix, filter=filter_by, limit=100) for name, mem in memories.items()}
    page = {name: _search(mem, who, prefix, filter=filter_by, limit=limit, offset=offset)
            for name, mem in memories.items()}
    assert full["sq8"] == full["off"] and page["sq8"] == page["off"]
    if full["sq8"] == "denied":
        assert who is READER and "hidden" in where
        return
    expected = {(ns, key, json.dumps(value, sort_keys=True)) for (ns, key), value in _visible(ex, items, who).items()
                if ns[: len(prefix)] == prefix and matches(value, filter_by)}
    assert set(full["sq8"]) == expected and len(full["sq8"]) == len(expected)
    assert page["sq8"] == full["sq8"][offset: offset + limit]


@pytest.mark.slow  # the differential properties: make test runs them, test-fast leaves them out
@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(items=puts, notes=plain, depth=st.sampled_from([None, 3, 4]), suffix=st.sampled_from([None, ("p",), ("*",)]),
       window=st.tuples(st.integers(0, 2), st.integers(1, 5)), who=st.sampled_from([WRITER, READER]))
def test_listing_is_the_same_on_both_paths_and_hidden_is_missing(
        memories: dict[str, Memory], items: list, notes: list, depth: int | None, suffix: tuple | None,
        window: tuple[int, int], who: Principal) -> None:
    ex = f"n{next(_examples)}"
    for mem in memories.values():
        _seed(mem, ex, items, notes)
    offset, limit = window
    listed = {}
    for name, mem in memories.items():
        with bind_principal(who):
            listed[name] = mem.as_store().list_namespaces(prefix=(ROOT, ex), suffix=suffix, max_depth=depth,
                                                          limit=limit, offset=offset)
    assert listed["sq8"] == listed["off"]
    held = {ns for ns, _ in _visible(ex, items, who)}
    held |= {(ROOT, ex, sub, "p") for sub, _ in notes if who is WRITER or sub != "hidden"}
    if suffix == ("p",):
        held = {ns for ns in held if ns[-1] == "p"}
    expected = sorted({ns[:depth] if depth else ns for ns in held})[offset: offset + limit]
    assert listed["sq8"] == expected
    if who is READER:  # hidden = missing: no listed namespace reaches below a hidden label
        assert all(ns[2] != "hidden" for ns in listed["sq8"])


def test_an_overwritten_item_keeps_its_place_in_storage_order(memories: dict[str, Memory]) -> None:
    # Storage order as Chroma keeps it (and as InMemoryStore lists an overwritten item), on
    # both paths. A deleted item's row stays, forgotten (forgetting is logical), so putting
    # its key again also keeps its place.
    reference = InMemoryStore()
    ns = (ROOT, "order", "open", "p")
    steps = [("k0", {"a": 1}), ("k1", {"a": 1}), ("k2", {"a": 1}), ("k0", {"a": 2}), ("k1", None), ("k1", {"a": 3})]
    for key, value in steps[:4]:
        reference.put(ns, key, value)
    assert [i.key for i in reference.search(ns, limit=10)] == ["k0", "k1", "k2"]
    for mem in memories.values():
        with bind_principal(WRITER):
            store = mem.as_store()
            for key, value in steps:
                store.put(ns, key, value) if value is not None else store.delete(ns, key)
    for mem in memories.values():
        assert [k for _, k, _ in _search(mem, WRITER, ns, limit=10)] == ["k0", "k1", "k2"]
        assert [k for _, k, _ in _search(mem, WRITER, ns, limit=1, offset=1)] == ["k1"]


def test_a_hidden_item_a_filter_matches_is_not_found(memories: dict[str, Memory]) -> None:
    mem = memories["sq8"]
    _seed(mem, "secret", [("hidden", "p", "k", {"a": "needle"}), ("open", "p", "k", {"a": "hay"})], [])
    found = _search(mem, READER, (ROOT, "secret"), filter={"a": "needle"}, limit=10)
    assert found == []
    assert _search(mem, WRITER, (ROOT, "secret"), filter={"a": "needle"}, limit=10) == [
        ((ROOT, "secret", "hidden", "p"), "k", '{"a": "needle"}')]


def test_with_the_index_loaded_searches_and_listings_read_no_row_from_chroma(
        memories: dict[str, Memory], monkeypatch: pytest.MonkeyPatch) -> None:
    mem = memories["sq8"]
    _seed(mem, "quiet", [("open", "p", f"k{i}", {"a": i % 3}) for i in range(12)], [])
    index = derived_index(mem._backend)
    assert index is not None

    def no_read(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a row was read from Chroma")

    monkeypatch.setattr(index._inner, "_get", no_read)
    with bind_principal(READER):
        store = mem.as_store()
        assert [i.key for i in store.search((ROOT, "quiet"), filter={"a": 1}, limit=10)] == ["k1", "k4", "k7", "k10"]
        assert store.list_namespaces(prefix=(ROOT, "quiet")) == [(ROOT, "quiet", "open", "p")]


def test_a_batch_of_puts_and_gets_is_one_core_batch_run_in_order(memories: dict[str, Memory],
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    mem = memories["sq8"]
    calls: list[list[Any]] = []
    real = mem.batch

    def counted(principal: Principal, ops: list, **kwargs: Any) -> list[Any]:
        calls.append(list(ops))
        return real(principal, ops, **kwargs)

    monkeypatch.setattr(mem, "batch", counted)
    ns = (ROOT, "batched", "open", "p")
    with bind_principal(WRITER):
        results = mem.as_store().batch([
            GetOp(ns, "k"), PutOp(ns, "k", {"v": 1}), GetOp(ns, "k"), PutOp(ns, "k", {"v": 2}),
            PutOp(ns, "j", {"v": 3}), GetOp(ns, "k"), GetOp(ns, "j")])
    assert len(calls) == 1 and len(calls[0]) == 7
    assert [r.value if r is not None else None for r in results] == [None, None, {"v": 1}, None, None,
                                                                        {"v": 2}, {"v": 3}]


def test_a_bad_operation_in_a_batch_leaves_the_ones_before_it_done(memories: dict[str, Memory]) -> None:
    mem = memories["sq8"]
    ns = (ROOT, "badbatch", "open", "p")
    with bind_principal(WRITER):
        store = mem.as_store()
        with pytest.raises(ValueError, match="key must be a string"):
            store.batch([PutOp(ns, "k", {"v": 1}), GetOp(ns, None)])  # type: ignore[arg-type]
        assert store.get(ns, "k").value == {"v": 1}


@pytest.mark.parametrize("name", ["sq8", "off"])
def test_a_listing_whose_first_row_the_recheck_refuses_reads_that_namespace_again(
        memories: dict[str, Memory], monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    # The first visible row of a namespace stands for it; should the re-check refuse it, the
    # namespace is listed only through another row that passes, never through the refused one.
    mem = memories[name]
    ex = f"refuse{name}"
    _seed(mem, ex, [("open", "p", "first", {"v": 1}), ("open", "p", "second", {"v": 2}),
                    ("open", "q", "only", {"v": 3})], [])
    refused = {"first", "only"}
    real = OpContext.sees
    monkeypatch.setattr(OpContext, "sees", lambda ctx, record: record is not None and record.key not in refused
                        and real(ctx, record))
    listed = mem.batch(READER, [ListNamespacesOp((ROOT, ex))])[0]
    assert listed == [(ROOT, ex, "open", "p")]
