"""Differential stateful test: random operation sequences by random principals, run on a real
memwarden Memory and on the reference model (tests/reference_model.py), every output compared.

The operations are drawn by tests/model_harness.py, which benchmarks/reference_model.py shares;
hypothesis shrinks a disagreement to a minimal sequence. The run size (about 3,000 operations)
keeps ``make test`` quick; the benchmark runs 100,000 and more.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, precondition, rule

from tests.model_harness import Harness
from tests.model_steps import START, Step, generate
from tests.clock import Clock
from tests.reference_model import Model, Rec, keyed_id, record_id

pytestmark = pytest.mark.integration


class DataChooser:
    """Choices drawn from hypothesis, so that it can shrink them."""

    def __init__(self, data: st.DataObject) -> None:
        self._data = data

    def choice(self, options: Any) -> Any:
        return self._data.draw(st.sampled_from(list(options)))

    def chance(self, p: float) -> bool:
        return self._data.draw(st.integers(0, 99)) < p * 100


class ReferenceModelMachine(RuleBasedStateMachine):
    """Each rule is one kind of operation; every step must agree with the model."""

    def __init__(self) -> None:
        super().__init__()
        self.harness = Harness()

    def teardown(self) -> None:
        self.harness.close()

    def _do(self, op: str, data: st.DataObject) -> None:
        step = generate(op, DataChooser(data), self.harness.pool())
        found = self.harness.run(step)
        assert found is None, (f"{found.cls}\n  step: {step.text()}\n  memwarden: {found.real}\n"
                               f"  model:     {found.expected}")

    @rule(data=st.data())
    def write(self, data: st.DataObject) -> None:
        self._do("write", data)

    @rule(data=st.data())
    def put(self, data: st.DataObject) -> None:
        self._do("put", data)

    @precondition(lambda self: self.harness.known)
    @rule(data=st.data())
    def update(self, data: st.DataObject) -> None:
        self._do("update", data)

    @rule(data=st.data())
    def get(self, data: st.DataObject) -> None:
        self._do("get", data)

    @rule(data=st.data())
    def search(self, data: st.DataObject) -> None:
        self._do("search", data)

    @rule(data=st.data())
    def list_namespaces(self, data: st.DataObject) -> None:
        self._do("list", data)

    @precondition(lambda self: self.harness.known)
    @rule(data=st.data())
    def forget(self, data: st.DataObject) -> None:
        self._do("forget", data)

    @precondition(lambda self: self.harness.known)
    @rule(data=st.data())
    def retract(self, data: st.DataObject) -> None:
        self._do("retract", data)

    @precondition(lambda self: self.harness.known)
    @rule(data=st.data())
    def approve(self, data: st.DataObject) -> None:
        self._do("approve", data)

    @precondition(lambda self: self.harness.known)
    @rule(data=st.data())
    def reject(self, data: st.DataObject) -> None:
        self._do("reject", data)

    @precondition(lambda self: self.harness.known)
    @rule(data=st.data())
    def history(self, data: st.DataObject) -> None:
        self._do("history", data)

    @rule(data=st.data())
    def erase_subject(self, data: st.DataObject) -> None:
        self._do("erase_subject", data)

    @precondition(lambda self: self.harness.known)
    @rule(data=st.data())
    def erase_ids(self, data: st.DataObject) -> None:
        self._do("erase_ids", data)

    @rule(data=st.data())
    def batch(self, data: st.DataObject) -> None:
        self._do("batch", data)

    @rule(data=st.data())
    def tick(self, data: st.DataObject) -> None:
        self._do("tick", data)


ReferenceModelMachine.TestCase.settings = settings(
    max_examples=50, stateful_step_count=100, deadline=None, derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example],
)
test_reference_model = pytest.mark.slow(ReferenceModelMachine.TestCase)


# -- the model's own evaluator, checked on cases decided by hand ------------------------------

POLICY = """
g, ann, nurse
p, nurse, ward/**, read
p, nurse, ward/*, read, deny, label.sens=restricted
p, nurse, ward/notes, write, review, kind=rule
p, nurse, ward/notes, write
p, nurse, ward/x/*, read, deny, writer_role!=physician
"""


def _rec(namespace: tuple[str, ...], **fields: Any) -> Rec:
    base: dict[str, Any] = {"id": "mem_" + "0" * 32, "namespace": namespace, "content": "c", "kind": "fact",
                            "subjects": (), "writer": "w", "writer_roles": (), "source": "user", "parents": (),
                            "created_at": START, "expires_at": None, "status": "active", "version": 1,
                            "supersedes": None, "labels": {}, "key": None}
    return Rec(**{**base, **fields})


@pytest.mark.parametrize("action, namespace, fields, allowed, review", [
    ("read", ("ward", "a"), {}, True, False),
    ("read", ("ward", "a"), {"labels": {"sens": "restricted"}}, False, False),   # deny overrides
    ("read", ("ward", "a", "b"), {"labels": {"sens": "restricted"}}, True, False),  # '*' is one label
    ("read", ("ward",), {}, False, False),                                        # '**' is below only
    ("read", ("wardx", "a"), {}, False, False),                                   # never a string prefix
    ("write", ("ward", "notes"), {"kind": "rule"}, True, True),                   # review wins over allow
    ("write", ("ward", "notes"), {"kind": "fact"}, True, False),
    ("read", ("ward", "x", "y"), {"writer_roles": ("physician",)}, True, False),
    ("read", ("ward", "x", "y"), {"writer_roles": ()}, False, False),             # no roles: != holds
    ("forget", ("ward", "a"), {}, False, False),                                  # deny by default
])
def test_model_decisions(action: str, namespace: tuple[str, ...], fields: dict, allowed: bool,
                         review: bool) -> None:
    verdict = Model(POLICY, Clock(START)).decide("ann", action, _rec(namespace, **fields))
    assert (verdict.allowed, verdict.review) == (allowed, review)


def test_harness_replays_deterministically(tmp_path: Path) -> None:
    """The same steps on two fresh memories give the same outcomes (what shrinking relies on)."""
    steps = [Step("write", "alice", {"content": "p1 takes drug A daily", "namespace": ("ward", "pat", "p1"),
                                     "kind": "fact", "subjects": ("p1",), "labels": {}, "ttl": 60}),
             Step("tick", "clock", {"seconds": 61}),
             Step("search", "omni", {"prefix": ("ward",), "query": None})]
    outcomes = []
    for _ in range(2):
        harness = Harness(tmp_path)
        try:
            outcomes.append([harness.run(s) for s in steps])
        finally:
            harness.close()
    assert outcomes[0] == outcomes[1] == [None, None, None]


# -- the attacks of issue 16, as fixed sequences (each must agree with the model) -------------

P1, NOTES, BOARD, LOBBY = ("ward", "pat", "p1"), ("ward", "notes"), ("ward", "board"), ("lobby",)


def _w(who: str, content: str, namespace: tuple[str, ...], **extra: Any) -> Step:
    args = {"content": content, "namespace": namespace, "kind": "fact", "subjects": (), "labels": {}, "ttl": None}
    return Step("put" if "key" in extra else "write", who, {**args, **extra})


def _on(op: str, who: str, rid: str) -> Step:
    return Step(op, who, {"id": rid})


def _rid(who: str, content: str, namespace: tuple[str, ...]) -> str:
    return record_id(who, namespace, content)


NOTE = "shift change at seven"
SCENARIOS = {
    # 1. existence oracles: a caller without rights asks about a hidden record by a guessed id
    "retract of a hidden id answers as for a missing one": [
        _w("alice", NOTE, P1), _on("retract", "mal", _rid("alice", NOTE, P1))],
    "history of a hidden id answers as for a missing one": [
        _w("alice", NOTE, P1), _on("history", "mal", _rid("alice", NOTE, P1))],
    "a vote on a record the voter may not review answers as for a missing one": [
        _w("bob", NOTE, NOTES, kind="rule"), _on("approve", "dana", _rid("bob", NOTE, NOTES))],
    "erase without erase rights is refused whatever exists": [
        _w("alice", NOTE, P1, subjects=("p1",)), Step("erase_subject", "mal", {"subject": "p1"})],
    "erase by an id outside the eraser's scope counts it as missing": [
        _w("mal", NOTE, LOBBY), Step("erase_ids", "dpo", {"ids": (_rid("mal", NOTE, LOBBY),)})],
    "a tombstone confirms nothing outside its namespace": [
        _w("alice", NOTE, P1, subjects=("p1",)), Step("erase_subject", "dpo", {"subject": "p1"}),
        _w("mal", NOTE, LOBBY, subjects=("p1",))],
    "a record held for erasure cannot be voted back": [
        _w("feed", NOTE, ("ward", "pat", "p2"), subjects=("p1",)), Step("erase_subject", "dana", {"subject": "p1"}),
        _on("approve", "rita", _rid("feed", NOTE, ("ward", "pat", "p2"))),
        _on("approve", "rex", _rid("feed", NOTE, ("ward", "pat", "p2")))],
    # 2. complete records: nothing of an overwritten keyed item carries over
    "an overwrite without a label drops the label": [
        _w("alice", NOTE, NOTES, key="k1", labels={"audience": "external"}), _w("alice", NOTE + "!", NOTES, key="k1"),
        _on("get", "carl", keyed_id(NOTES, "k1"))],
    "an overwrite by a principal without roles carries no roles": [
        _w("alice", NOTE, BOARD, key="k1"), _w("zed", NOTE + "!", BOARD, key="k1"),
        _on("get", "rex", keyed_id(BOARD, "k1"))],
    "an overwrite without a ttl does not expire": [
        _w("alice", NOTE, P1, key="k1", ttl=60), _w("alice", NOTE + "!", P1, key="k1"),
        Step("tick", "clock", {"seconds": 61}), _on("get", "alice", keyed_id(P1, "k1"))],
    "an expired key put again is a fresh item": [
        _w("alice", NOTE, P1, key="k1", ttl=60), Step("tick", "clock", {"seconds": 61}),
        _w("bob", NOTE + "!", P1, key="k1"), _on("get", "bob", keyed_id(P1, "k1"))],
    "an overwrite keeps none of the old subjects": [
        _w("alice", NOTE, P1, key="k1", subjects=("p1",)), _w("alice", NOTE + "!", P1, key="k1"),
        Step("erase_subject", "dana", {"subject": "p1"}), _on("get", "alice", keyed_id(P1, "k1"))],
    # 3. a keyed overwrite needs read on the old item
    "a nurse cannot overwrite a restricted item she may not read": [
        _w("alice", NOTE, P1, key="k1", labels={"sens": "restricted"}), _w("bob", NOTE + "!", P1, key="k1")],
    # 4. approvals bound to content, no content for a reviewer who may not read
    "its writer may overwrite an item under review, and the approvals go with the old text": [
        _w("bob", NOTE, NOTES, key="k1", kind="rule"), _on("approve", "alice", keyed_id(NOTES, "k1")),
        _w("bob", NOTE + "!", NOTES, key="k1", kind="rule"), _on("approve", "rex", keyed_id(NOTES, "k1"))],
    "a record re-quarantined by retract needs a full quorum again": [
        _w("alice", NOTE, NOTES), _w("bob", "always double check doses", NOTES, kind="rule",
                                     parents=(_rid("alice", NOTE, NOTES),)),
        _on("approve", "alice", _rid("bob", "always double check doses", NOTES)),
        _on("approve", "rex", _rid("bob", "always double check doses", NOTES)),
        _on("retract", "alice", _rid("alice", NOTE, NOTES)),
        _on("approve", "rex", _rid("bob", "always double check doses", NOTES))],
    "approve shows no content to a reviewer who may not read": [
        _w("feed", NOTE, P1, kind="rule"), _on("approve", "rita", _rid("feed", NOTE, P1))],
    # 5. one lifecycle for all reads
    "history hides an expired record as get does": [
        _w("alice", NOTE, P1, ttl=60), Step("tick", "clock", {"seconds": 61}),
        _on("history", "alice", _rid("alice", NOTE, P1))],
    "history shows nothing the caller may not read": [
        _w("feed", NOTE, P1), _on("history", "bob", _rid("feed", NOTE, P1))],
    "capacity evicts without the writer's forget right": [
        *[_w("zed", f"{NOTE} {i}", BOARD) for i in range(4)], Step("search", "zed", {"prefix": BOARD, "query": None})],
    # found by the model: a write into a partition right after an erasure there is lost
    "a write after an erasure in the same partition is stored": [
        _w("alice", NOTE, ("ward", "pat", "p2"), kind="rule", subjects=("p2",), key="k3"),
        _w("bob", "p1 takes drug A daily", BOARD, kind="event", subjects=("p1",)),
        Step("update", "bob", {"id": keyed_id(("ward", "pat", "p2"), "k3"), "content": "p2 has diabetes"}),
        _w("feed", NOTE, P1, kind="rule", subjects=("p1", "p2"), key="k1"),
        Step("erase_subject", "dpo", {"subject": "p1"}),
        _w("bob", "p2 is HIV positive", P1, kind="event", subjects=("p1",)),
        _on("get", "omni", _rid("bob", "p2 is HIV positive", P1))],
    # 6. nothing reaches the embedder before the decision
    "a denied batch embeds nothing": [
        Step("batch", "rex", {"ops": (("write", _w("rex", NOTE, BOARD).args), ("write", _w("rex", "x y", NOTES).args))})],
}


@pytest.mark.parametrize("name", list(SCENARIOS))
@pytest.mark.slow
def test_issue_attack(name: str, tmp_path: Path) -> None:
    harness = Harness(tmp_path)
    try:
        for step in SCENARIOS[name]:
            found = harness.run(step)
            assert found is None, f"{found.cls} at {step.text()}\n  memwarden: {found.real}\n  model: {found.expected}"
    finally:
        harness.close()
