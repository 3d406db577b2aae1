"""Routers: from the team's request to a plan, one task per worker branch.

A router is either

- a plain function ``state -> plan``, where the plan is an iterable of ``(worker, task)``
  pairs, ``{"worker": ..., "task": ...}`` dicts, :class:`Route` objects or a
  :class:`RoutingPlan`; or
- a chat model (anything with ``with_structured_output``). It is asked, with the workers'
  names and descriptions, for a :class:`RoutingPlan` whose ``worker`` field only admits the
  team's worker names. A plan that does not validate is sent back with the reason, a bounded
  number of times (tenacity), and then fails with :class:`RoutingError`.

Either way the plan is normalised into :class:`Assignment` entries with deterministic task
ids: ``<worker>-<n>``, n counting that worker's tasks in plan order.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, Literal

from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage
from pydantic import BaseModel, Field, ValidationError, create_model
from tenacity import Retrying, retry_if_exception_type, stop_after_attempt

from memwarden.core.errors import InvalidRequest
from memwarden.core.arguments import integer_argument
from memwarden.orchestrator.results import Assignment, RoutingError

if TYPE_CHECKING:
    from memwarden.orchestrator.worker import Worker

__all__ = ["Route", "Router", "RoutingPlan", "request_text", "routing_model"]

#: Longest task text the router may hand a worker, in characters.
MAX_TASK_CHARS = 8_000

ROUTER_PROMPT = """You are the router of a team of workers that share a governed memory.
Split the user's request into tasks and give each task to the worker best suited to it.
Workers see nothing but the task you write for them (not the request, not each other's work),
so every task must be self-contained. Give a worker a task only if the request needs it.

Workers:
{workers}"""


class Route(BaseModel):
    """One task for one worker."""

    worker: str = Field(description="The name of the worker that does this task.")
    task: str = Field(description="A self-contained instruction for that worker.")


class RoutingPlan(BaseModel):
    """The router's plan: the tasks to run in parallel, one branch each."""

    assignments: list[Route] = Field(default_factory=list, description="The tasks, one per worker branch.")


def routing_model(worker_names: Iterable[str]) -> type[RoutingPlan]:
    """A RoutingPlan whose ``worker`` field admits only ``worker_names`` (for LLM routers)."""
    names = tuple(sorted(worker_names))
    route = create_model("Route", __base__=Route,
                         worker=(Literal[names], Field(description="The name of the worker that does this task.")))
    return create_model("RoutingPlan", __base__=RoutingPlan,
                        assignments=(list[route], Field(default_factory=list,
                                                        description="The tasks, one per worker branch.")))


def request_text(state: Mapping[str, Any]) -> str:
    """The request a team run answers: ``state["request"]``, else the last human message."""
    request = state.get("request")
    if isinstance(request, str) and request.strip():
        return request
    for message in reversed(state.get("messages") or []):
        if isinstance(message, HumanMessage) and isinstance(message.content, str) and message.content.strip():
            return message.content
    raise RoutingError("the team was invoked without a request: pass {'request': ...} or a human message")


def _pairs(plan: Any) -> list[tuple[Any, Any]]:
    if plan is None:
        return []
    if isinstance(plan, RoutingPlan):
        plan = plan.assignments
    if isinstance(plan, Mapping) and "assignments" in plan:
        plan = plan["assignments"]
    if isinstance(plan, (str, bytes, Mapping)) or not isinstance(plan, Iterable):
        raise RoutingError(f"a router must return a list of (worker, task) pairs, got {type(plan).__name__}")
    pairs = []
    for item in plan:
        if isinstance(item, Route):
            pairs.append((item.worker, item.task))
        elif isinstance(item, Mapping) and set(item) >= {"worker", "task"}:
            pairs.append((item["worker"], item["task"]))
        elif isinstance(item, tuple) and len(item) == 2:
            pairs.append(item)
        else:
            raise RoutingError(f"a plan entry must be a (worker, task) pair, a Route or a dict with "
                               f"'worker' and 'task'; got {type(item).__name__}")
    return pairs


def normalise_plan(plan: Any, workers: Mapping[str, Worker]) -> list[Assignment]:
    """Check a plan against the team's workers and give every task its deterministic id."""
    counts: dict[str, int] = {}
    assignments: list[Assignment] = []
    for worker, task in _pairs(plan):
        if worker not in workers:
            raise RoutingError(f"the plan names worker {worker!r}, which is not in the team "
                               f"(workers: {', '.join(sorted(workers))})")
        if not isinstance(task, str) or not task.strip():
            raise RoutingError(f"the plan gives worker {worker!r} an empty or non-text task")
        if len(task) > MAX_TASK_CHARS:
            raise RoutingError(f"the task for {worker!r} is {len(task)} characters; the limit is {MAX_TASK_CHARS}")
        counts[worker] = counts.get(worker, 0) + 1
        assignments.append(Assignment(task_id=f"{worker}-{counts[worker]}", worker=worker,
                                      seq=counts[worker], task=task))
    return assignments


def _errors(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        return "; ".join(f"{'.'.join(str(p) for p in e['loc']) or 'plan'}: {e['msg']}" for e in exc.errors())
    return str(exc)


class Router:
    """Turns the team state into assignments, with a function or a chat model (see module)."""

    def __init__(self, router: Any, workers: Mapping[str, Worker], *, max_attempts: int = 3,
                 prompt: str | None = None) -> None:
        integer_argument(max_attempts, "max_attempts", minimum=1)
        if prompt is not None and not isinstance(prompt, str):
            raise InvalidRequest(f"prompt must be a string or None, got {type(prompt).__name__}")
        self._workers = dict(workers)
        self._max_attempts = max_attempts
        self._fn: Callable[[Mapping[str, Any]], Any] | None = None
        self._llm: Any = None
        if hasattr(router, "with_structured_output"):
            self._plan_model = routing_model(self._workers)
            self._llm = router.with_structured_output(self._plan_model)
            roster = "\n".join(f"- {w.name}: {w.description or 'no description'} "
                               f"(acts as {w.principal.id}, roles {', '.join(w.principal.roles) or '-'})"
                               for w in self._workers.values())
            self._prompt = (prompt or ROUTER_PROMPT).format(workers=roster)
        elif callable(router):
            self._fn = router
        else:
            raise InvalidRequest(f"router must be a function (state -> plan) or a chat model with "
                                 f"with_structured_output, got {type(router).__name__}")

    @property
    def uses_model(self) -> bool:
        """Whether a chat model makes the plan."""
        return self._llm is not None

    def __call__(self, state: Mapping[str, Any]) -> list[Assignment]:
        """The plan for this state."""
        if self._fn is not None:
            return normalise_plan(self._fn(state), self._workers)
        messages: list[BaseMessage] = [SystemMessage(self._prompt), HumanMessage(request_text(state))]
        reasons: list[str] = []
        try:
            for attempt in Retrying(stop=stop_after_attempt(self._max_attempts), reraise=True,
                                    retry=retry_if_exception_type((RoutingError, ValidationError))):
                with attempt:
                    asked = messages if not reasons else messages + [HumanMessage(
                        f"Your plan was refused: {reasons[-1]}. Answer again with a valid plan.")]
                    try:
                        return normalise_plan(self._llm.invoke(asked), self._workers)
                    except (RoutingError, ValidationError) as exc:
                        reasons.append(_errors(exc))
                        raise
        except (RoutingError, ValidationError):
            raise RoutingError(f"the router's plan was refused {len(reasons)} times: "
                               + " | ".join(reasons)) from None
        raise AssertionError("unreachable")  # pragma: no cover
