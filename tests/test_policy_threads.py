"""The policy engine under parallel workers: no ``ast`` parse runs concurrently.

CPython 3.11's ast module fails with ``SystemError: AST constructor recursion depth mismatch``
when two threads parse at once (cpython#106905); pycasbin parsed its matcher on every enforce
call, so Team workers deciding in parallel hit it. Before the fix, the stress below failed in
about 1 round in 7 (6 of 40 rounds of 16 threads; 2 of 6 runs of this test), and the parse
count at the end fails on it every time.
"""

from __future__ import annotations

import ast
import threading

import pytest

from memwarden.policies.engine import PolicyEngine
from memwarden.policies.loading import read_policy

pytestmark = pytest.mark.unit

THREADS = 16
ROUNDS = 12
# (principal, given roles, action, namespace prefix); each request adds a label of its own.
REQUESTS = [("alice", (), "read", ("ward3", "patients")), ("bob", (), "read", ("ward3", "notes")),
            ("carol", (), "read", ("ward3", "patients")), ("dpo", (), "erase", ("ward3", "x")),
            ("zed", ("nurse", "billing_clerk"), "read", ("ward3", "billing"))]


def _stress(data, expected: dict, rounds: int) -> list[str]:
    errors: list[str] = []

    def work(i: int, barrier: threading.Barrier) -> None:
        try:
            engine = PolicyEngine(data=data)  # fresh engine: every decision builds a narrowed enforcer
            barrier.wait()
            for j in range(8):
                principal, roles, action, namespace = REQUESTS[(i + j) % len(REQUESTS)]
                decision = engine.decide(engine.subjects(principal, roles), action, namespace + (f"t{i}_{j}",))
                if decision.allowed != expected[(principal, action)]:
                    errors.append(f"thread {i}: wrong decision for {principal} {action}")
        except Exception as exc:  # noqa: BLE001 - collected and asserted on below
            errors.append(repr(exc))

    for _ in range(rounds):
        barrier = threading.Barrier(THREADS)
        threads = [threading.Thread(target=work, args=(i, barrier)) for i in range(THREADS)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    return errors


def test_many_threads_deciding_at_once_on_fresh_engines(monkeypatch: pytest.MonkeyPatch) -> None:
    data = read_policy("hospital")
    reference = PolicyEngine(data=data)
    expected = {(p, a): reference.decide(reference.subjects(p, r), a, n + ("t",)).allowed for p, r, a, n in REQUESTS}
    assert sorted(expected.values()) == [False, True, True, True, True]

    # Unpatched first: before the fix this raised the SystemError in about 1 round in 7.
    assert _stress(data, expected, ROUNDS) == []

    parses = []
    real_parse = ast.parse

    def counting_parse(*args, **kwargs):
        parses.append(args[0] if args else kwargs.get("source"))
        return real_parse(*args, **kwargs)

    monkeypatch.setattr(ast, "parse", counting_parse)
    assert _stress(data, expected, 2) == []
    # 16 x 2 x 8 decisions, each on an enforcer of its own, and the matcher is not parsed again
    # (it was parsed once, at the latest by the reference engine above): no two parses overlap.
    assert parses == []
