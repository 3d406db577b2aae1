"""The one table of operation kinds: what each is checked against, how it is traced, and
whether it changes anything.

Every other part of memwarden (the pipeline, spans, metrics, audit, the flows report) reads
these facts from here, so an operation kind is defined once.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class OpKind:
    """One kind of memory operation.

    ``action`` is the policy action it is decided on; ``span`` the OpenTelemetry GenAI
    memory operation name (``gen_ai.operation.name``); ``reads`` is True when it changes
    nothing (its audit entry is committed without waiting for the disk).
    """

    name: str
    action: str
    span: str
    reads: bool


OP_KINDS: dict[str, OpKind] = {k.name: k for k in (
    OpKind("write", "write", "create_memory", False),
    OpKind("search", "read", "search_memory", True),
    OpKind("list", "read", "search_memory", True),
    OpKind("get", "read", "search_memory", True),
    OpKind("history", "history", "search_memory", True),
    OpKind("update", "update", "update_memory", False),
    # a vote that releases or rejects a quarantined record
    OpKind("review", "approve", "update_memory", False),
    OpKind("forget", "forget", "delete_memory", False),
    OpKind("erase", "erase", "delete_memory", False),
    # a poisoned record goes; what derives from it is held
    OpKind("retract", "approve", "delete_memory", False),
    # forgotten, expired and stale quarantined records purged
    OpKind("sweep", "admin", "delete_memory", False),
    # capacity eviction: a system operation under the policy's cap rule
    OpKind("evict", "forget", "delete_memory", False),
    # finishing an erasure an interrupt left half done: a system operation
    OpKind("recover", "erase", "delete_memory", False),
    # what the storage repaired or migrated when the memory opened: a system operation
    OpKind("maintain", "admin", "update_memory", False),
)}

#: Where the core keeps its lesson records (it writes nowhere else).
LESSONS_NAMESPACE: tuple[str, ...] = ("memwarden", "lessons")

#: The label of a record an erasure reached but its officer may not erase (its value: the
#: subject, or "ids"): held, never returned, until someone who may erase it does.
HELD_LABEL = "erasure_pending"

#: A keyed write (a LangGraph store ``put``) creates or overwrites without the caller choosing.
UPSERT_SPAN = "upsert_memory"


def op_kind(name: str) -> OpKind:
    """The kind called ``name``; KeyError for anything else."""
    return OP_KINDS[name]
