"""memwarden: governed shared memory for multi-agent LangGraph systems.

Every memory operation passes Casbin access control, guards and validators, is traced with
OpenTelemetry and written to a hash-chained audit log.
"""

from memwarden.core.errors import (
    AccessDenied, AuditError, InvalidRequest, MemwardenError, NotFound, PolicyError, ProofError, SignatureInvalid,
    WriteRejected,
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

__version__ = "0.1.0"

__all__ = [
    "AccessDenied", "AuditError", "Binding", "EraseOp", "ErasureReceipt", "ForgetOp", "GetOp", "InvalidRequest", "Kind",
    "ListNamespacesOp", "HistoryOp", "Memory", "MemoryRecord", "MemwardenError", "NotFound", "PolicyError", "Principal",
    "ProofError", "RetractOp", "ReviewOp", "ReviewResult", "SearchHit", "SearchOp", "Session", "Settings",
    "SignatureInvalid", "Source", "Status", "SweepOp", "UpdateOp", "WriteOp",
    "WriteRejected",
]
