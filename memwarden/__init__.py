"""memwarden: governed shared memory for multi-agent LangGraph systems.

Every memory operation passes Casbin access control, guards and validators, is traced with
OpenTelemetry and written to a hash-chained audit log.
"""

from memwarden.errors import (
    AccessDenied, AuditError, InvalidRequest, MemwardenError, NotFound, PolicyError, ReadOnlyError, StoreFormatError,
    StoreLocked, WriteRejected,
)
from memwarden.memory.memory import Memory
from memwarden.memory.memory import Settings
from memwarden.memory.ops import (
    EraseOp, ForgetOp, GetOp, HistoryOp, ListNamespacesOp, RetractOp, ReviewOp, SearchOp, SweepOp, UpdateOp, WriteOp,
)
from memwarden.memory.records import ErasureReceipt, Kind, MemoryRecord, Principal, SearchHit, Source, Status
from memwarden.memory.session import Session

__version__ = "0.1.0"

__all__ = [
    "AccessDenied", "AuditError", "EraseOp", "ErasureReceipt", "ForgetOp", "GetOp", "InvalidRequest", "Kind", "ListNamespacesOp",
    "HistoryOp", "Memory", "MemoryRecord", "MemwardenError", "NotFound", "PolicyError", "Principal", "ReadOnlyError",
    "RetractOp", "ReviewOp", "SearchHit", "SearchOp", "Session", "Settings", "Source", "Status", "StoreFormatError",
    "StoreLocked", "SweepOp", "UpdateOp", "WriteOp", "WriteRejected",
]
