"""The orchestrator: a router dispatching isolated workers over one governed memory.

``Team(router, workers, memory).compile(checkpointer=...)`` builds a LangGraph StateGraph in
which the router fans tasks out with ``Send``, each worker runs in its own context (its own
messages, a memory session bound to its own principal) and only schema-validated results
return to the parent state. See ``docs/orchestrator.md``.
"""

from memwarden.orchestrator.results import (
    Assignment, ResultRefused, RoutingError, TaskFailure, TaskResult, merge_results,
)
from memwarden.orchestrator.router import Route, Router, RoutingPlan, request_text, routing_model
from memwarden.orchestrator.scorecard import RoleRow, Scorecard, scorecard
from memwarden.orchestrator.scripted import ScriptedChatModel, calls, tool_call
from memwarden.orchestrator.team import Team, TeamState, WorkerInput
from memwarden.orchestrator.worker import BoundWorker, ReactAgent, Worker, current_session, validate_result

__all__ = [
    "Assignment", "BoundWorker", "ReactAgent", "RoleRow", "Route", "Router", "RoutingError", "RoutingPlan",
    "ResultRefused", "Scorecard", "ScriptedChatModel", "TaskFailure", "TaskResult", "Team", "TeamState",
    "Worker", "WorkerInput", "calls", "current_session", "merge_results", "request_text", "routing_model",
    "scorecard", "tool_call", "validate_result",
]
