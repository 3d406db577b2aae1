"""The operation handlers: one small module per family of operations.

A handler is two functions. ``need(op, ctx)`` declares what the operation needs (a
namespace, a record or a scope, with the action: :mod:`memwarden.memory.needs`), from the
operation alone. ``run(op, got, ctx)`` gets what the pipeline resolved for that need and
returns the result and the effects (:mod:`memwarden.memory.effects`) the pipeline is to apply.
Handlers import neither the policy engine nor a backend: everything goes through ``ctx``
(:class:`~memwarden.memory.context.OpContext`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from memwarden.memory.context import OpContext
from memwarden.memory.effects import Effect
from memwarden.memory.needs import Need

Result = tuple[Any, list[Effect]]


@dataclass(frozen=True, slots=True)
class Handler:
    """One operation kind's handler (see the package docstring). ``need`` returns None only
    for the core's own maintenance operations, which no session can run."""

    need: Callable[[Any, OpContext], Need | None]
    run: Callable[[Any, Any, OpContext], Result]


def handlers() -> dict[str, Handler]:
    """Every handler, by operation kind (:data:`memwarden.core.schema.OP_KINDS`)."""
    from memwarden.memory.handlers import erasure, lifecycle, reads, search, system, writes

    return {
        "write": writes.WRITE, "update": writes.UPDATE,
        "get": reads.GET, "history": reads.HISTORY, "list": reads.LIST,
        "search": search.SEARCH,
        "forget": lifecycle.FORGET, "retract": lifecycle.RETRACT, "review": lifecycle.REVIEW,
        "sweep": lifecycle.SWEEP,
        "erase": erasure.ERASE,
        "evict": system.EVICT, "recover": system.RECOVER, "maintain": system.MAINTAIN,
    }
