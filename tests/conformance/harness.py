"""The harness of the LangGraph store conformance suite (tests/conformance/):
each backend's store for one test, below a root label of its own.

Backends: LangGraph's own ``InMemoryStore`` (which proves the suite), memwarden's
``as_store()`` on an embedded Memory, and ``as_store()`` on a Chroma server. The memwarden
stores run with an allow-all policy for one bound principal and no write validators, so that
only the store semantics are under test.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from langchain_core.embeddings import Embeddings
from langgraph.store.base import BaseStore
from langgraph.store.memory import InMemoryStore

from memwarden import Memory, Principal
from memwarden.integrations.binding import bind_principal
from memwarden.memory.embeddings import HashingEmbedding

class SuiteEmbeddings(Embeddings):
    """memwarden's hashing test embedding as a LangChain ``Embeddings``, which InMemoryStore
    needs; both kinds of store embed with this one object."""

    dim = 256
    _hashing = HashingEmbedding(dim=dim)
    # The same vectors, so the same model to a store: every server test shares one Chroma server
    # (and so one store), which refuses a second model (docs/embeddings.md).
    name = _hashing.name

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """Each text's vector."""
        return self._hashing.embed_documents(texts)

    def embed_query(self, text: str) -> list[float]:
        """The query's vector (the same as a document's)."""
        return self._hashing.embed_query(text)


TESTER = Principal("tester")
EMBED = SuiteEmbeddings()
BACKENDS = ["langgraph", "embedded", "server"]


def _policy(root: str) -> str:
    # The test's root, and its place below LangGraph's reserved root (which batch may write).
    return "".join(f"p, member, {place}/**, {action}\n" for place in (root, f"langgraph/{root}")
                   for action in ("read", "write", "update", "forget")) + "g, tester, member\n"


@dataclass
class Harness:
    """Builds the stores of one backend for one test, below the test's own root label."""

    kind: str
    tmp: Path
    server: tuple[str, int] | None
    root: str = field(default_factory=lambda: "t" + uuid.uuid4().hex[:10])
    opened: list[Memory] = field(default_factory=list)

    @property
    def memwarden(self) -> bool:
        """True for the two memwarden stores."""
        return self.kind != "langgraph"

    def ns(self, *labels: str) -> tuple[str, ...]:
        """A namespace below this test's root."""
        return (self.root, *labels)

    @contextmanager
    def store(self, *, index: dict[str, Any] | None = None, ttl: dict[str, Any] | None = None,
              **memory_options: Any) -> Iterator[BaseStore]:
        """A store with ``index`` (``embed`` is the suite's embedding, which memwarden's memory
        embeds with too) and ``ttl`` configs; for memwarden, with the tester bound for the block."""
        index = {"dims": EMBED.dim, "embed": EMBED, **(index or {})}
        if self.kind == "langgraph":
            yield InMemoryStore(index=index)  # type: ignore[arg-type]
            return
        policy = self.tmp / f"policy-{len(self.opened)}.csv"
        policy.write_text(_policy(self.root), encoding="utf-8")
        options = {"embedding": EMBED, "validators": [], **memory_options}
        if self.kind == "embedded":
            mem = Memory.open(self.tmp / f"data-{len(self.opened)}", policy=policy, **options)
        else:
            assert self.server is not None
            mem = Memory.connect(*self.server, policy=policy, state=self.tmp / f"state-{len(self.opened)}", **options)
        self.opened.append(mem)
        try:
            with bind_principal(TESTER):
                yield mem.as_store(index=index, ttl=ttl)
        finally:
            mem.close()


def langgraph_lacks(harness: Harness, feature: str) -> None:
    """Skip on InMemoryStore for a feature the installed LangGraph's InMemoryStore lacks
    (LangGraph's SQLite and Postgres stores have it; they are not installed here)."""
    if harness.kind == "langgraph":
        pytest.skip(f"LangGraph's InMemoryStore has no {feature}")


def cosine(a: list[float], b: list[float]) -> float:
    """The cosine similarity of two vectors."""
    x, y = np.asarray(a), np.asarray(b)
    return float(x @ y / (np.linalg.norm(x) * np.linalg.norm(y)))
