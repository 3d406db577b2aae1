"""``Team``: a router and isolated workers on one governed memory, as a LangGraph StateGraph.

::

    START -> router --Send--> <worker> (one branch per task, in parallel) --> [finish] -> END

- ``router`` turns the request into assignments (:mod:`memwarden.orchestrator.router`) and
  clears the previous run's results.
- Each assignment is sent (``Send``) to the node named after its worker. The node's input is
  the assignment alone, never the parent state, so a worker sees no other worker's messages,
  tool output or results (see :mod:`memwarden.orchestrator.worker`).
- Each branch returns one schema-validated :class:`TaskResult` (or raises); ``results`` merges
  them deterministically (:func:`merge_results`).
- ``finish``, if given, is a node ``state -> update`` that runs once after every branch.

With a checkpointer, LangGraph's persistence applies as usual: ``interrupt()`` inside a worker
(or ``interrupt_before``/``interrupt_after`` at compile time) pauses the run, and a run whose
branch raised resumes with ``invoke(None, config)``, re-running only the failed branches.
A re-run replays the branch's memory writes; memwarden ids are deterministic from writer,
namespace and content, so a replayed write is a no-op, audited as a replay.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Annotated, Any, Literal, TypedDict

from langchain_core.messages import AnyMessage
from langgraph.errors import GraphBubbleUp
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.types import Overwrite, RetryPolicy, Send
from pydantic import BaseModel

from memwarden.core.errors import InvalidRequest
from memwarden.memory.session import Session
from memwarden.orchestrator.results import (
    Assignment, ResultRefused, TaskFailure, TaskResult, merge_results,
)
from memwarden.orchestrator.router import Router
from memwarden.orchestrator.worker import BoundWorker, Worker

if TYPE_CHECKING:
    from langgraph.graph.state import CompiledStateGraph

    from memwarden.memory.memory import Memory

__all__ = ["Team", "TeamState", "WorkerInput"]


class TeamState(TypedDict, total=False):
    """The parent state. Workers never read it; they only add to ``results``/``failures``."""

    request: str
    messages: Annotated[list[AnyMessage], add_messages]
    assignments: list[Assignment]
    results: Annotated[list[TaskResult], merge_results]
    failures: Annotated[list[TaskFailure], merge_results]


class WorkerInput(TypedDict):
    """All a worker node receives: its assignment."""

    assignment: Assignment


class Team:
    """A router and named workers sharing one governed memory (see the module docstring).

    ``router`` is a function ``state -> [(worker, task), ...]`` or a chat model with
    ``with_structured_output``. ``workers`` each act as their own principal through their
    own session on ``memory``. ``on_failure="raise"`` (the default) lets a failed branch fail
    the run, so that a checkpointed run can be resumed; ``"record"`` turns it into a
    :class:`TaskFailure` in ``failures`` and lets the other branches' results stand.
    ``retry_policy`` is LangGraph's, applied to every worker node (for transient crashes;
    invalid output is retried by the worker itself).
    """

    def __init__(self, router: Any, workers: Sequence[Worker], memory: Memory, *,
                 finish: Callable[[TeamState], Mapping[str, Any] | None] | None = None,
                 on_failure: Literal["raise", "record"] = "raise", router_attempts: int = 3,
                 router_prompt: str | None = None, retry_policy: RetryPolicy | None = None,
                 name: str = "team") -> None:
        workers = list(workers)
        if not workers:
            raise InvalidRequest("a team needs at least one worker")
        names = [w.name for w in workers]
        if len(set(names)) != len(names):
            raise InvalidRequest(f"worker names must be unique: {names}")
        if not all(isinstance(w, Worker) for w in workers):
            raise InvalidRequest("workers must be memwarden Worker objects")
        if on_failure not in ("raise", "record"):
            raise InvalidRequest(f"on_failure must be 'raise' or 'record', got {on_failure!r}")
        self.memory = memory
        self.workers: dict[str, Worker] = {w.name: w for w in workers}
        self.bound: dict[str, BoundWorker] = {w.name: w.bind(memory) for w in workers}
        self.router = Router(router, self.workers, max_attempts=router_attempts, prompt=router_prompt)
        self.finish = finish
        self.on_failure = on_failure
        self.retry_policy = retry_policy
        self.name = name

    def session(self, worker: str) -> Session:
        """The memory session worker ``worker`` acts through."""
        return self.bound[worker].session

    # -- the graph ----------------------------------------------------------------------

    def _route(self, state: TeamState) -> dict[str, Any]:
        return {"assignments": self.router(state), "results": Overwrite([]), "failures": Overwrite([])}

    def _dispatch(self, state: TeamState) -> list[Send] | str:
        sends = [Send(a["worker"], {"assignment": a}) for a in state.get("assignments") or []]
        return sends or ("finish" if self.finish else END)

    def _worker_node(self, bound: BoundWorker) -> Callable[[WorkerInput], dict[str, Any]]:
        def run(payload: WorkerInput) -> dict[str, Any]:
            assignment = payload["assignment"]
            try:
                return {"results": [bound.run(assignment)]}
            except GraphBubbleUp:
                raise
            except Exception as exc:
                if self.on_failure == "raise":
                    raise
                attempts = exc.attempts if isinstance(exc, ResultRefused) else 1
                return {"failures": [TaskFailure(
                    task_id=assignment["task_id"], worker=bound.worker.name, seq=assignment["seq"],
                    principal=bound.session.principal.id, error=f"{type(exc).__name__}: {str(exc)[:500]}",
                    attempts=attempts)]}

        run.__name__ = f"worker_{bound.worker.name}"
        return run

    def builder(self) -> StateGraph:
        """The uncompiled StateGraph (to extend it before compiling)."""
        graph = StateGraph(TeamState)
        graph.add_node("router", self._route)
        after = "finish" if self.finish else END
        for name, bound in self.bound.items():
            graph.add_node(name, self._worker_node(bound), input_schema=WorkerInput,
                           retry_policy=self.retry_policy)
            graph.add_edge(name, after)
        if self.finish:
            finish = self.finish
            graph.add_node("finish", lambda state: dict(finish(state) or {}))
            graph.add_edge("finish", END)
        graph.add_edge(START, "router")
        graph.add_conditional_edges("router", self._dispatch, [*self.bound, after])
        return graph

    def compile(self, **kwargs: Any) -> CompiledStateGraph:
        """The compiled team; keyword arguments go to ``StateGraph.compile`` (checkpointer, ...)."""
        kwargs.setdefault("name", self.name)
        return self.builder().compile(**kwargs)

    # -- reading results ----------------------------------------------------------------

    def outputs(self, state: Mapping[str, Any]) -> dict[str, BaseModel]:
        """Every result in ``state`` as its worker's pydantic model, by task id, in merge order."""
        return {r["task_id"]: self.workers[r["worker"]].result.model_validate(r["output"])
                for r in state.get("results") or []}

    def output(self, state: Mapping[str, Any], worker: str) -> BaseModel | None:
        """The first result of ``worker`` in ``state`` as its pydantic model, or None."""
        for result in state.get("results") or []:
            if result["worker"] == worker:
                return self.workers[worker].result.model_validate(result["output"])
        return None
