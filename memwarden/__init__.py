"""memwarden: governed shared memory for multi-agent LangGraph systems.

Every memory operation passes Casbin access control, guards and validators, is traced with
OpenTelemetry and written to a hash-chained audit log.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from memwarden.core.errors import (
    AccessDenied, AuditError, HeldForReview, InvalidRequest, MemwardenError, NotFound, PolicyError, ProofError,
    ReadOnlyError, SignatureInvalid, StoreFormatError, StoreLocked, WriteRejected,
)
from memwarden.memory.memory import Memory
from memwarden.memory.settings import Settings
from memwarden.core.ops import (
    EraseOp, ForgetOp, GetOp, HistoryOp, ListNamespacesOp, RetractOp, ReviewOp, SearchOp, SweepOp, UpdateOp, WriteOp,
)
from memwarden.core.records import (
    Binding, ErasureReceipt, Kind, MemoryRecord, Principal, ReviewResult, SearchHit, Source, Status,
)
from memwarden.memory.session import Session

if TYPE_CHECKING:
    from langgraph.store.base import BaseStore

__version__ = "0.1.0"


def _governed_store(memory: Memory, **options: Any) -> BaseStore:
    # Imported when first asked for: LangGraph's store module takes seconds to import, and the
    # CLI and most programs never build a store.
    from memwarden.integrations.store import GovernedStore

    return GovernedStore(memory, **options)


# The composition root wires the layers together: Memory.as_store builds the integrations
# layer's LangGraph store, which the memory layer cannot import (see Memory.store_adapter).
Memory.store_adapter = _governed_store

__all__ = [
    "AccessDenied", "AuditError", "Binding", "EraseOp", "ErasureReceipt", "ForgetOp", "GetOp", "HeldForReview",
    "InvalidRequest", "Kind", "ListNamespacesOp", "HistoryOp", "Memory", "MemoryRecord", "MemwardenError", "NotFound",
    "PolicyError", "Principal",
    "ProofError", "ReadOnlyError", "RetractOp", "ReviewOp", "ReviewResult", "SearchHit", "SearchOp", "Session",
    "Settings", "SignatureInvalid", "Source", "Status", "StoreFormatError", "StoreLocked", "SweepOp", "UpdateOp",
    "WriteOp", "WriteRejected",
]
