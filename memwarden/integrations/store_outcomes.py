"""What a governed store put did, and how a caller learns it (docs/langgraph.md, "Quarantine").

LangGraph's ``BaseStore.put`` returns None, so a caller (LangMem's tools, say) cannot tell a
stored item from one held for review, and tells its model "created". The governed store
therefore says it in two ways:

- ``GovernedStore.put`` returns a :class:`PutResult` (``held`` is True for a quarantined put);
  ``batch`` keeps LangGraph's None for puts.
- In strict mode, a held put raises :class:`~memwarden.core.errors.HeldForReview` once its
  batch has run, and a delete that found no item the caller may see raises NotFound. A caller
  opts in for one store (``Memory.as_store(strict=True)``) or for a block of code
  (``with strict_outcomes():``), which is how :func:`memwarden.integrations.tools.governed_tool`
  makes a third-party tool tell its model the truth.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from pydantic import BaseModel, ConfigDict

from memwarden.core.errors import HeldForReview
from memwarden.core.namespace import Namespace, namespace_text
from memwarden.core.records import MemoryRecord, Status

__all__ = ["PutResult", "held_error", "strict_outcomes", "strict_requested"]

_strict: ContextVar[bool] = ContextVar("memwarden_strict_store", default=False)


class PutResult(BaseModel):
    """What one put stored: the item's record id, version and status.

    ``held`` is True when the put was stored quarantined: no ``get`` or ``search`` returns it
    until reviewers approve it (docs/policies.md, "Review").
    """

    model_config = ConfigDict(frozen=True)

    namespace: Namespace
    key: str
    id: str
    version: int
    status: Status

    @property
    def held(self) -> bool:
        """True when the item is held for review (stored, not visible yet)."""
        return self.status is Status.QUARANTINED

    @classmethod
    def of(cls, record: MemoryRecord) -> PutResult:
        """The result of the put that stored ``record``."""
        assert record.key is not None  # a store put is always keyed
        return cls(namespace=record.namespace, key=record.key, id=record.id, version=record.version,
                   status=record.status)


@contextmanager
def strict_outcomes() -> Iterator[None]:
    """Inside the block, every governed store is strict (see the module doc), whatever it was
    built with; the earlier setting comes back after it. Follows the context like the bound
    principal: asyncio tasks and ``asyncio.to_thread`` inherit it."""
    token = _strict.set(True)
    try:
        yield
    finally:
        _strict.reset(token)


def strict_requested() -> bool:
    """True inside :func:`strict_outcomes`."""
    return _strict.get()


def held_error(results: list[object]) -> HeldForReview | None:
    """The HeldForReview a strict store raises for these batch results, or None when no put
    among them was held."""
    held = [r for r in results if isinstance(r, PutResult) and r.held]
    if not held:
        return None
    where = ", ".join(f"{r.key!r} in {namespace_text(r.namespace)!r}" for r in held)
    return HeldForReview(f"held for review: {where} stored but not visible until a reviewer approves it",
                         ids=tuple(r.id for r in held), results=tuple(results))
