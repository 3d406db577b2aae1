"""Differential stateful test: random operation sequences by random principals, run on a real
memwarden Memory and on the reference model (tests/reference_model.py), every output compared.

The operations are drawn by tests/model_harness.py, which benchmarks/reference_model.py shares;
hypothesis shrinks a disagreement to a minimal sequence. The run size (about 3,000 operations)
keeps ``make test`` quick; the benchmark runs 100,000 and more.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, precondition, rule

sys.path.insert(0, str(Path(__file__).resolve().parent))
from model_harness import Harness  # noqa: E402
from model_steps import START, Step, generate  # noqa: E402
from reference_model import Clock, Model, Rec  # noqa: E402


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
test_reference_model = ReferenceModelMachine.TestCase


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
