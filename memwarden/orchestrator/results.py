"""What crosses from a worker back to the team: task results and failures, and how they merge.

A worker's output enters the parent state only as a :class:`TaskResult`, after it has been
validated against the worker's pydantic result schema. It is stored in its JSON form (the
validated model's ``model_dump(mode="json")``) so that any checkpointer can persist it,
including one that refuses to deserialise unregistered classes; :meth:`Team.outputs` turns it
back into the pydantic model.

Parallel branches finish in any order; :func:`merge_results` keys entries by task id (a
retried or resumed task replaces its earlier entry) and keeps them sorted by worker name, then
by the task's position among that worker's tasks, so the merged state is the same whatever
the order in which branches finished.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypedDict

from memwarden.core.errors import MemwardenError

__all__ = [
    "Assignment", "ResultRefused", "RoutingError", "TaskFailure", "TaskResult", "merge_results", "sort_key",
]


class Assignment(TypedDict):
    """One task the router gave one worker (JSON-safe; lives in the parent state)."""

    task_id: str
    worker: str
    seq: int
    task: str


class TaskResult(TypedDict):
    """A schema-validated worker result, the only thing a worker returns to the parent."""

    task_id: str
    worker: str
    seq: int
    principal: str
    schema: str
    output: dict[str, Any]
    attempts: int


class TaskFailure(TypedDict):
    """A branch that failed, recorded instead of raised (``Team(on_failure="record")``)."""

    task_id: str
    worker: str
    seq: int
    principal: str
    error: str
    attempts: int


class RoutingError(MemwardenError, ValueError):
    """The router produced a plan the team cannot run (unknown worker, malformed plan)."""


class ResultRefused(MemwardenError, ValueError):
    """A worker's output failed schema validation on every allowed attempt; the branch fails.

    ``reasons`` holds one line per refused attempt: field locations and messages only, never
    the refused values, so the error itself carries no worker content to the parent.
    """

    def __init__(self, message: str, *, worker: str, task_id: str, attempts: int, reasons: Sequence[str]) -> None:
        super().__init__(message)
        self.worker = worker
        self.task_id = task_id
        self.attempts = attempts
        self.reasons = tuple(reasons)


def sort_key(entry: TaskResult | TaskFailure | Assignment) -> tuple[str, int, str]:
    """Deterministic order: worker name, then the task's position among its tasks."""
    return (entry["worker"], entry["seq"], entry["task_id"])


def merge_results(left: list[Any] | None, right: list[Any] | None) -> list[Any]:
    """Reducer for ``results`` and ``failures``: union by task id (right wins), sorted."""
    merged = {entry["task_id"]: entry for entry in (left or [])}
    merged.update((entry["task_id"], entry) for entry in (right or []))
    return sorted(merged.values(), key=sort_key)
