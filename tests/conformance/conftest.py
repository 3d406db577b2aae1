"""The fixtures of the LangGraph store conformance suite (this folder): for each test, a
``harness`` per backend (tests/conformance/harness.py) and its default ``store``. They live in this folder's conftest so that only the suite's modules see them.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from langgraph.store.base import BaseStore

from tests.conformance.harness import BACKENDS, Harness


# The server arm runs in ``make test``; ``make test-fast`` keeps the embedded arm, which runs
# the same store code over a local Chroma (the server arm alone took a quarter of its time).
@pytest.fixture(params=[pytest.param(b, marks=pytest.mark.slow) if b == "server" else b for b in BACKENDS])
def harness(request: pytest.FixtureRequest, tmp_path: Path) -> Harness:
    """The harness of one backend for one test (the server backend uses the session's Chroma server)."""
    server = request.getfixturevalue("chroma_server") if request.param == "server" else None
    return Harness(request.param, tmp_path, server)


@pytest.fixture
def store(harness: Harness) -> Iterator[BaseStore]:
    """The harness's store with the default index and no TTL config, open for the test."""
    with harness.store() as built:
        yield built
