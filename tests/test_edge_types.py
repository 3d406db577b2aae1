"""Strict types at the public edge: a string where a list belongs is refused, never split into
characters, and every bad argument of a public call is a memwarden error naming it.

The property tests call every Session method, the LangGraph store adapter (its convenience
methods, their async forms and ``batch``) with arbitrary junk in one argument at a time, the
others valid. The only exceptions allowed are memwarden's own; an InvalidRequest must name the
argument (NotFound is an outcome, not a validation error: it says no record has that id).
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langgraph.store.base import GetOp, ListNamespacesOp, MatchCondition, PutOp, SearchOp

from memwarden import AccessDenied, InvalidRequest, Memory, NotFound, Principal, WriteOp, WriteRejected
from memwarden.integrations.binding import bind_principal, to_principal
from memwarden.integrations.tools import memory_tools
from memwarden.memory.embeddings import HashingEmbedding
from memwarden.orchestrator import ReactAgent, Team, Worker
from tests.conftest import HOSPITAL

pytestmark = pytest.mark.integration

ALICE = Principal("alice", roles=["physician"])
MISSING = "mem_" + "0" * 32  # a well-formed id no record has
NOW = datetime(2025, 1, 1, tzinfo=timezone.utc)
ALLOWED = (InvalidRequest, AccessDenied, WriteRejected, NotFound)


class _Opaque:
    """An object of no type memwarden knows."""

    def __repr__(self) -> str:
        return "<opaque>"


_offsets = st.builds(timezone, st.timedeltas(min_value=timedelta(hours=-23), max_value=timedelta(hours=23)))
_small = st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=6), st.binary(max_size=4))
JUNK = st.one_of(
    st.none(), st.booleans(), st.integers(), st.integers(min_value=-2, max_value=2000),
    st.floats(allow_nan=True, allow_infinity=True), st.complex_numbers(max_magnitude=10),
    st.text(max_size=24), st.binary(max_size=8), st.builds(bytearray, st.binary(max_size=4)),
    st.lists(_small, max_size=4), st.tuples(_small, _small), st.sets(st.integers(), max_size=3),
    st.frozensets(st.text(max_size=4), max_size=3),
    st.dictionaries(st.text(max_size=6), _small, max_size=3),
    st.datetimes(), st.datetimes(timezones=_offsets), st.timedeltas(),
    st.just(Decimal("1.5")), st.just(_Opaque()), st.just(iter(["p12"])), st.just(object),
    st.sampled_from(["", " ", "p12", "ward3/patients/p12", "ward3/../x", MISSING, "mem_nope", "fact", "dense",
                     ("ward3", "patients"), ["p12"], ("p12", 5), [MISSING], {"a": "b"}, {"$gt": 1}, -1, 0, 1,
                     10**30, float("nan"), float("inf"), "\x00", "a\u200bb", "\ud800", "x" * 40_000]),
)


@pytest.fixture(scope="module")
def mem(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("edge")
    (root / "policy.csv").write_text(HOSPITAL, encoding="utf-8")
    memory = Memory.open(root / "data", policy=root / "policy.csv", embedding=HashingEmbedding())
    yield memory
    memory.close()


def _names(message: str, name: str) -> bool:
    return re.search(rf"(?<![A-Za-z0-9_]){re.escape(name)}(?![A-Za-z0-9_])", message) is not None


def _well_formed_ids(value: object) -> bool:
    ids = value if isinstance(value, (list, tuple)) else [value]
    return bool(ids) and all(isinstance(i, str) and re.fullmatch(r"mem_[0-9a-f]{32}", i) for i in ids)


def _check(call: Callable[[], Any], name: str, value: object) -> None:
    """Run ``call``; only memwarden's errors may escape, and a validation error names ``name``.

    Well-formed record ids are valid input: the error then says what became of the record
    ("no record ... is awaiting review"), naming the id itself rather than the argument.
    """
    try:
        call()
    except ALLOWED as exc:
        if isinstance(exc, InvalidRequest) and not isinstance(exc, NotFound) and not _well_formed_ids(value):
            assert _names(str(exc), name), f"{type(exc).__name__} for {name!r} does not name it: {exc}"


# Every Session method with valid arguments; each test replaces one of them with junk.
SESSION_CALLS: dict[str, dict[str, Any]] = {
    "write": {"content": "Patient 1 is stable", "namespace": ("ward3", "patients", "p1"), "kind": "fact",
              "subjects": ["p1"], "source": "agent", "parents": [], "valid_from": None, "valid_to": None,
              "ttl": None, "trust": 1.0, "labels": {}, "key": None, "allow_reingest": False},
    "search": {"query": "stable", "namespace": "ward3", "k": 5, "kinds": None, "offset": 0, "mode": "hybrid",
               "as_of": None, "time_range": None, "created_after": None, "created_before": None,
               "include_superseded": False, "budget_tokens": None, "consensus": False},
    "list_namespaces": {"prefix": "ward3", "max_depth": None, "limit": 10, "offset": 0},
    "get": {"id": MISSING},
    "update": {"id": MISSING, "content": "Patient 1 is better", "kind": None, "subjects": None, "labels": None},
    "forget": {"id": MISSING},
    "erase": {"subject": "p1", "ids": ()},
    "approve": {"id": MISSING},
    "reject": {"id": MISSING},
    "retract": {"id": MISSING},
    "history": {"id": MISSING},
    "sweep": {"namespace": "ward3"},
    "batch": {"ops": [WriteOp("Patient 2 is stable", "ward3/patients/p2")]},
}
_POSITIONAL = {"write": ("content", "namespace"), "search": ("query", "namespace"), "list_namespaces": ("prefix",),
               "erase": ("subject",), "sweep": ("namespace",), "batch": ("ops",)}


def _session_call(mem: Memory, method: str, args: dict[str, Any]) -> Callable[[], Any]:
    positional = _POSITIONAL.get(method, ("id",) if "id" in args else ())
    fn = getattr(mem.session(ALICE), method)
    return lambda: fn(*(args[p] for p in positional), **{k: v for k, v in args.items() if k not in positional})


@pytest.mark.parametrize("method", sorted(SESSION_CALLS))
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
@pytest.mark.slow
def test_session_methods_raise_only_memwarden_errors_naming_the_argument(mem: Memory, method: str,
                                                                         data: st.DataObject) -> None:
    name = data.draw(st.sampled_from(sorted(SESSION_CALLS[method])), label="argument")
    value = data.draw(JUNK, label="value")
    _check(_session_call(mem, method, {**SESSION_CALLS[method], name: value}), name, value)


STORE_CALLS: dict[str, dict[str, Any]] = {
    "get": {"namespace": ("ward3", "patients", "p1"), "key": "k", "refresh_ttl": None},
    "put": {"namespace": ("ward3", "patients", "p1"), "key": "k", "value": {"note": "stable"}, "index": None,
            "ttl": None},
    "delete": {"namespace": ("ward3", "patients", "p1"), "key": "k"},
    "search": {"namespace_prefix": ("ward3",), "query": None, "filter": None, "limit": 5, "offset": 0,
               "refresh_ttl": None},
    "list_namespaces": {"prefix": ("ward3",), "suffix": None, "max_depth": None, "limit": 10, "offset": 0},
    "batch": {"ops": [GetOp(("ward3", "patients", "p1"), "k")]},
}
_STORE_POSITIONAL = {"get": ("namespace", "key"), "put": ("namespace", "key", "value", "index"),
                     "delete": ("namespace", "key"), "search": ("namespace_prefix",), "batch": ("ops",)}


def _store_call(mem: Memory, method: str, args: dict[str, Any], *, asynchronous: bool) -> Callable[[], Any]:
    store = mem.as_store()
    positional = _STORE_POSITIONAL.get(method, ())
    fn = getattr(store, ("a" if asynchronous else "") + method)

    def call() -> Any:
        with bind_principal(ALICE):
            result = fn(*(args[p] for p in positional), **{k: v for k, v in args.items() if k not in positional})
            return asyncio.run(result) if asynchronous else result

    return call


@pytest.mark.parametrize("asynchronous", [False, True], ids=["sync", "async"])
@pytest.mark.parametrize("method", sorted(STORE_CALLS))
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_store_methods_raise_only_memwarden_errors_naming_the_argument(mem: Memory, method: str, asynchronous: bool,
                                                                       data: st.DataObject) -> None:
    name = data.draw(st.sampled_from(sorted(STORE_CALLS[method])), label="argument")
    value = data.draw(JUNK, label="value")
    _check(_store_call(mem, method, {**STORE_CALLS[method], name: value}, asynchronous=asynchronous), name, value)


# The LangGraph operations ``batch`` takes, field by field (a program may build them itself).
STORE_OPS: dict[type, dict[str, Any]] = {
    GetOp: {"namespace": ("ward3", "patients", "p1"), "key": "k", "refresh_ttl": True},
    PutOp: {"namespace": ("ward3", "patients", "p1"), "key": "k", "value": {"note": "stable"}, "index": None,
            "ttl": None},
    SearchOp: {"namespace_prefix": ("ward3",), "filter": None, "limit": 5, "offset": 0, "query": None,
               "refresh_ttl": True},
    ListNamespacesOp: {"match_conditions": (MatchCondition("prefix", ("ward3",)),), "max_depth": None, "limit": 10,
                       "offset": 0},
}


@pytest.mark.parametrize("kind", list(STORE_OPS), ids=lambda k: k.__name__)
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_store_batch_ops_with_junk_fields_raise_only_memwarden_errors(mem: Memory, kind: type,
                                                                      data: st.DataObject) -> None:
    name = data.draw(st.sampled_from(sorted(STORE_OPS[kind])), label="field")
    value = data.draw(JUNK, label="value")
    op = kind(**{**STORE_OPS[kind], name: value})
    _check(_store_call(mem, "batch", {"ops": [op]}, asynchronous=False), name, value)


# -- one string where a list belongs ---------------------------------------------------------

_TEXT = st.text(min_size=1, max_size=12)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=_TEXT, name=st.sampled_from(["subjects", "parents"]))
def test_a_string_for_a_list_of_a_write_is_refused_naming_it(mem: Memory, text: str, name: str) -> None:
    with pytest.raises(InvalidRequest) as info:
        mem.session(ALICE).write("Patient 3 is stable", "ward3/patients/p3", **{name: text})
    assert _names(str(info.value), name)


def test_write_with_one_subject_string_is_refused_not_split(mem: Memory) -> None:
    """The reported trap: ``subjects="p12"`` stored ('p', '1', '2'), so erasing p12 missed it."""
    alice = mem.session(ALICE)
    with pytest.raises(InvalidRequest, match=r"subjects must be a list of strings, not one string 'p12' "
                                             r"\(for one, write \['p12'\]\)"):
        alice.write("Patient 12 had a fall", "ward3/patients/p12", subjects="p12")
    with pytest.raises(InvalidRequest, match="subjects must be a list"):
        alice.update(MISSING, "Patient 12 fell twice", subjects="p12")
    with pytest.raises(InvalidRequest, match="ids must be a list of record ids, not one string"):
        alice.erase(ids=MISSING)
    with pytest.raises(InvalidRequest, match="kinds must be a list of kinds, not one string"):
        alice.search("fall", "ward3", kinds="fact")
    assert not any(h.record.content.startswith("Patient 12 had a fall")
                   for h in alice.search(None, "ward3/patients/p12", k=100))


@pytest.mark.parametrize("roles", ["physician", b"physician", 5, None, ["physician", 5]])
def test_principal_roles_must_be_a_list_of_role_names(roles: object) -> None:
    with pytest.raises(InvalidRequest, match=r"roles(\[1\])? must be"):
        Principal("zed", roles=roles)  # type: ignore[arg-type]
    with pytest.raises(InvalidRequest, match=r"roles(\[1\])? must be"):
        to_principal({"id": "zed", "roles": roles})


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(roles=JUNK)
def test_principal_roles_and_sessions_take_junk_as_memwarden_errors(mem: Memory, roles: object) -> None:
    _check(lambda: Principal("zed", roles=roles), "roles", roles)  # type: ignore[arg-type]
    _check(lambda: mem.session(roles), "principal", roles)  # type: ignore[arg-type]


def test_memory_tools_pass_lists_on_and_refuse_strings(mem: Memory) -> None:
    tools = {t.name: t for t in memory_tools(mem.session(ALICE))}
    # Called directly (as an agent framework might), not through the model-facing schema.
    with pytest.raises(Exception, match="subjects must be a list of strings, not one string"):
        tools["remember"].func(content="Patient 4 is stable", namespace="ward3/patients/p4", subjects="p4")
    out = tools["remember"].func(content="Patient 4 is stable", namespace="ward3/patients/p4", subjects=["p4"])
    rid = out.split()[1]
    assert mem.session(ALICE).get(rid).subjects == ("p4",)
    with pytest.raises(InvalidRequest, match="names must be a list of tool names, not one string"):
        memory_tools(mem.session(ALICE), names="recall")
    with pytest.raises(InvalidRequest, match="default_namespace"):
        memory_tools(mem.session(ALICE), default_namespace=("ward3",))  # type: ignore[arg-type]


def test_orchestrator_inputs_refuse_strings_for_lists(mem: Memory) -> None:
    def agent(task: str, session: object) -> dict:
        return {}

    from pydantic import BaseModel

    class Out(BaseModel):
        pass

    worker = Worker("w", ALICE, agent, Out)
    with pytest.raises(InvalidRequest, match="workers must be a list of Worker objects, not one string"):
        Team(lambda state: [], "w", mem)  # type: ignore[arg-type]
    with pytest.raises(InvalidRequest, match="router_attempts must be an integer"):
        Team(lambda state: [], [worker], mem, router_attempts="3")  # type: ignore[arg-type]
    with pytest.raises(InvalidRequest, match="memory_tools must be a list of memory tool names, not one string"):
        ReactAgent(object(), memory_tools="recall")
    with pytest.raises(InvalidRequest, match="tools must be a list"):
        ReactAgent(object(), tools="search")
    with pytest.raises(InvalidRequest, match="max_attempts must be an integer"):
        Worker("w", ALICE, agent, Out, max_attempts=True)
    team = Team(lambda state: [], [worker], mem)
    with pytest.raises(InvalidRequest, match="worker 'x' is not in this team"):
        team.session("x")


def test_store_keeps_langgraph_namespace_rules_as_invalid_requests(mem: Memory) -> None:
    store = mem.as_store()
    with bind_principal(ALICE):
        with pytest.raises(InvalidRequest, match="namespace label 1 'p.1' contains '.'"):
            store.put(("ward3", "p.1"), "k", {"a": 1})
        with pytest.raises(InvalidRequest, match="may not start with 'langgraph'"):
            store.put(("langgraph", "x"), "k", {"a": 1})
        with pytest.raises(InvalidRequest, match="namespace must be a tuple of labels"):
            store.get(None, "k")  # type: ignore[arg-type]
        # LangGraph's str(key) would have looked up the key "None".
        with pytest.raises(InvalidRequest, match="key must be a string, got NoneType"):
            store.get(("ward3", "patients", "p1"), None)  # type: ignore[arg-type]
        with pytest.raises(InvalidRequest, match="prefix must be a tuple of labels"):
            store.list_namespaces(prefix=5)  # type: ignore[arg-type]
        with pytest.raises(InvalidRequest, match="ops must be an iterable of operations, got one GetOp"):
            store.batch(GetOp(("ward3",), "k"))  # type: ignore[arg-type]


def test_memory_batch_refuses_what_is_not_a_list_of_operations(mem: Memory, tmp_path: Path) -> None:
    with pytest.raises(InvalidRequest, match="ops must be an iterable of operations, not one string"):
        mem.batch(ALICE, "write")  # type: ignore[arg-type]
    with pytest.raises(InvalidRequest, match="ops must be an iterable of operations, got int"):
        mem.batch(ALICE, 5)  # type: ignore[arg-type]
    with pytest.raises(InvalidRequest, match=r"ops\[1\] is not a memwarden operation"):
        mem.batch(ALICE, [WriteOp("Patient 5 is stable", "ward3/patients/p5"), "search"])  # type: ignore[list-item]
    # A generator of operations is an iterable of operations.
    assert len(mem.batch(ALICE, (WriteOp(f"Patient {i} is stable", f"ward3/patients/p{i}") for i in (6, 7)))) == 2


@pytest.mark.parametrize("validators", ["injection", [object()], 5])
def test_validators_that_are_no_validators_are_refused(tmp_path: Path, validators: object) -> None:
    """Not a chain that fails closed on every write, which would look like a policy problem."""
    (tmp_path / "policy.csv").write_text(HOSPITAL, encoding="utf-8")
    with pytest.raises(InvalidRequest, match=r"validators(\[0\])? (must be a list|is not a write validator)"):
        Memory.open(tmp_path / "data", policy=tmp_path / "policy.csv", embedding=HashingEmbedding(),
                    validators=validators)  # type: ignore[arg-type]
    Memory.open(tmp_path / "data", policy=tmp_path / "policy.csv", embedding=HashingEmbedding()).close()
