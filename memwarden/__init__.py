"""memwarden: governed shared memory for multi-agent LangGraph systems.

Every memory operation passes Casbin access control, guards and validators, is traced with
OpenTelemetry and written to a hash-chained audit log.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from memwarden.core import adapters
from memwarden.core.errors import (
    AccessDenied, AuditError, HeldForReview, InvalidRequest, MemwardenError, NotFound, PolicyError, ProofError,
    ReadOnlyError, SignatureInvalid, StoreFormatError, StoreLocked, WriteRejected,
)

if TYPE_CHECKING:
    from langgraph.store.base import BaseStore
    from opentelemetry.trace import Span

    from memwarden.core.ops import (
        EraseOp, ForgetOp, GetOp, HistoryOp, ListNamespacesOp, OpRunner, RetractOp, ReviewOp, SearchOp, SweepOp,
        UpdateOp, WriteOp,
    )
    from memwarden.core.records import (
        Binding, ErasureReceipt, Kind, MemoryRecord, Principal, ReviewResult, SearchHit, Source, Status,
    )
    from memwarden.memory.memory import Memory
    from memwarden.memory.session import Session
    from memwarden.memory.settings import Settings

__version__ = "0.1.0"

#: Where each public name that is not an error lives. They load when first used, not at
#: ``import memwarden``: storage, policy and guard modules take most of a second to import, and
#: ``memwarden --help`` or a program that only catches our errors should not pay for them.
_LAZY: dict[str, str] = {
    **dict.fromkeys(["EraseOp", "ForgetOp", "GetOp", "HistoryOp", "ListNamespacesOp", "RetractOp", "ReviewOp",
                     "SearchOp", "SweepOp", "UpdateOp", "WriteOp"], "memwarden.core.ops"),
    **dict.fromkeys(["Binding", "ErasureReceipt", "Kind", "MemoryRecord", "Principal", "ReviewResult", "SearchHit",
                     "Source", "Status"], "memwarden.core.records"),
    "Memory": "memwarden.memory.memory",
    "Session": "memwarden.memory.session",
    "Settings": "memwarden.memory.settings",
}


def __getattr__(name: str) -> Any:
    """A public name loaded on first use (PEP 562); cached in the package afterwards."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'memwarden' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


def _governed_store(memory: OpRunner, **options: Any) -> BaseStore:
    # Imported when first asked for: LangGraph's store module takes seconds to import, and the
    # CLI and most programs never build a store.
    from memwarden.integrations.store import GovernedStore

    return GovernedStore(memory, **options)


def _run_span() -> Span | None:
    from memwarden.integrations.run_spans import current_run_span

    return current_run_span()


# The composition root wires the layers together: Memory.as_store builds the integrations
# layer's LangGraph store, and memory spans nest under the LangGraph node's span, neither of
# which the memory layer can import (see core/adapters.py).
adapters.store_adapter = _governed_store
adapters.run_span = _run_span

__all__ = [
    "AccessDenied", "AuditError", "Binding", "EraseOp", "ErasureReceipt", "ForgetOp", "GetOp", "HeldForReview",
    "InvalidRequest", "Kind", "ListNamespacesOp", "HistoryOp", "Memory", "MemoryRecord", "MemwardenError", "NotFound",
    "PolicyError", "Principal",
    "ProofError", "ReadOnlyError", "RetractOp", "ReviewOp", "ReviewResult", "SearchHit", "SearchOp", "Session",
    "Settings", "SignatureInvalid", "Source", "Status", "StoreFormatError", "StoreLocked", "SweepOp", "UpdateOp",
    "WriteOp", "WriteRejected",
]
