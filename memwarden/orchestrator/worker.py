"""Workers: a name, a principal, an agent and a result schema, run in an isolated context.

An agent is one of

- a plain function ``(task, session) -> result`` (it may also take ``feedback=``, the reason
  its previous answer was refused, on a retry);
- a LangGraph graph (compiled, or a ``StateGraph`` that is compiled for you) or any other
  Runnable taking ``{"messages": [...]}``: for example ``create_react_agent(model, tools)``
  built with :func:`memwarden.integrations.tools.memory_tools`;
- :meth:`Worker.react`: a prebuilt ReAct agent that the team builds with memory tools bound
  to the worker's own session.

Isolation: a worker run starts from nothing but its task. A graph agent gets a fresh message
list, ``[system prompt, task]``, never the parent's messages nor another worker's. Its memory
session acts as the worker's own principal, and while the agent runs the same principal is
bound for a governed LangGraph store (:func:`memwarden.integrations.binding.bind_principal`)
and available as :func:`current_session`. Agents the team compiles (``Worker.react``, a
``StateGraph``) get ``checkpointer=False``, so a worker's transcript is not stored in the team's
checkpointer either. What the agent returns is validated against the
worker's pydantic result schema; only that validated result leaves the worker. Invalid output
is refused with the reason (field locations and messages, never values) and the agent is run
again, up to ``max_attempts`` times (tenacity); then the branch fails with
:class:`~memwarden.orchestrator.results.ResultRefused`.
"""

from __future__ import annotations

import inspect
import json
import re
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langchain_core.runnables import Runnable
from langgraph.errors import GraphBubbleUp
from langgraph.graph import END, START, MessagesState, StateGraph
from pydantic import BaseModel, ValidationError
from tenacity import Retrying, retry_if_exception_type, stop_after_attempt

from memwarden.core.errors import AccessDenied, InvalidRequest
from memwarden.integrations.binding import bind_principal
from memwarden.core.arguments import flag_argument, integer_argument, sequence_argument
from memwarden.core.records import Principal, Source
from memwarden.memory.session import Session
from memwarden.orchestrator.results import Assignment, ResultRefused, TaskResult

if TYPE_CHECKING:
    from memwarden.memory.memory import Memory

__all__ = ["BoundWorker", "ReactAgent", "Worker", "current_session", "validate_result"]

_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_-]{0,63}$")
#: Node names a team uses itself; a worker may not take them.
RESERVED = frozenset({"router", "finish", START, END})

WORKER_PROMPT = """You are {name}, a worker acting as principal {principal} (roles: {roles}).
{description}
You see only your task. You share a governed memory with other workers: recall what you need
and remember what others will need. The memory enforces a policy; if it denies you something,
that is final, do not try to work around it."""

JSON_INSTRUCTION = """When you are done, reply with only a JSON object (no prose, no code fence)
that matches this JSON schema:
{schema}"""

_session: ContextVar[Session | None] = ContextVar("memwarden_worker_session", default=None)


def current_session() -> Session:
    """The memory session of the worker running in this context (AccessDenied outside one)."""
    session = _session.get()
    if session is None:
        raise AccessDenied("no worker is running in this context, so there is no worker session")
    return session


@contextmanager
def _acting_as(session: Session) -> Iterator[None]:
    token = _session.set(session)
    try:
        with bind_principal(session.principal):
            yield
    finally:
        _session.reset(token)


class _Refusal(Exception):
    """One attempt's output was refused (internal; becomes ResultRefused when attempts run out)."""


def _field_errors(exc: ValidationError) -> str:
    return "; ".join(f"{'.'.join(str(p) for p in e['loc']) or '(root)'}: {e['msg']}" for e in exc.errors())


def _unfenced(text: str) -> str | None:
    r"""The body of a text that is one Markdown code fence (```, or ```json), or None: what
    ``^\s*```(?:json)?\s*(.*?)\s*```\s*$`` (DOTALL) captures, in linear time (that regex
    backtracks through whitespace in three places: cubic on a fence followed by blanks)."""
    text = text.strip()
    if len(text) < 6 or not (text.startswith("```") and text.endswith("```")):
        return None
    body = text[3:-3]
    return body.removeprefix("json").strip()


def _json_candidates(text: str) -> list[str]:
    fenced = _unfenced(text)
    body = fenced if fenced is not None else text.strip()
    found = [body]
    start, end = body.find("{"), body.rfind("}")
    if 0 <= start < end and (start, end) != (0, len(body) - 1):
        found.append(body[start: end + 1])
    return found


def validate_result(schema: type[BaseModel], raw: Any) -> BaseModel:
    """``raw`` validated into ``schema``; raises ``ValueError`` with a value-free reason.

    Accepts an instance (re-validated: ``model_construct`` skips validation), another pydantic
    model or a mapping (validated from its fields), or JSON text (a code fence or prose around
    one JSON object is tolerated).
    """
    try:
        if isinstance(raw, BaseModel):
            return schema.model_validate(raw.model_dump(warnings=False))
        if isinstance(raw, Mapping):
            return schema.model_validate(dict(raw))
        if isinstance(raw, str):
            last: ValidationError | None = None
            for candidate in _json_candidates(raw):
                try:
                    return schema.model_validate_json(candidate)
                except ValidationError as exc:
                    last = exc
            assert last is not None
            if all(e["type"] == "json_invalid" for e in last.errors()):
                raise _Refusal(f"the answer is not a JSON object for {schema.__name__}")
            raise last
    except ValidationError as exc:
        raise _Refusal(f"{schema.__name__} validation failed: {_field_errors(exc)}") from None
    raise _Refusal(f"expected a {schema.__name__}, a mapping or JSON text, got {type(raw).__name__}")


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(part if isinstance(part, str) else str(part.get("text", ""))
                       for part in content if isinstance(part, (str, dict)))
    return str(content)


def _graph_answer(output: Any) -> Any:
    """The answer in a graph agent's final state: its structured response or its last AI text."""
    if not isinstance(output, Mapping):
        return output
    if output.get("structured_response") is not None:
        return output["structured_response"]
    for message in reversed(output.get("messages") or []):
        if isinstance(message, AIMessage):
            return _text(message.content)
    raise _Refusal("the agent finished without an answer (no AI message and no structured response)")


class ReactAgent:
    """A prebuilt ReAct agent, built per worker with memory tools bound to its session."""

    def __init__(self, model: Any, tools: Sequence[Any] = (), *, memory_tools: Sequence[str] | None = None,
                 structured: bool = False, persist_transcript: bool = False, **kwargs: Any) -> None:
        self.model = model
        self.tools = list(sequence_argument(tools, "tools", of="tools"))
        self.memory_tools = sequence_argument(memory_tools, "memory_tools", of="memory tool names") \
            if memory_tools is not None else ("remember", "recall", "forget")
        self.structured = flag_argument(structured, "structured")
        self.persist_transcript = flag_argument(persist_transcript, "persist_transcript")
        self.kwargs = kwargs

    def build(self, session: Session, worker: Worker) -> Runnable:
        """The compiled agent for ``worker``, acting through ``session``."""
        from langgraph.prebuilt import create_react_agent

        from memwarden.integrations.tools import memory_tools

        tools = [*memory_tools(session, names=self.memory_tools), *self.tools] if self.memory_tools else self.tools
        extra: dict[str, Any] = {"response_format": worker.result} if self.structured else {}
        if not self.persist_transcript:
            # Without this the agent, run inside a team node, would store its whole transcript
            # (tool output included) in the team's checkpointer, beyond the reach of erasure.
            extra["checkpointer"] = False
        with warnings.catch_warnings():
            # Deprecated in LangGraph 1.0 in favour of langchain.agents.create_agent, which
            # needs the separate `langchain` package; the prebuilt one still works unchanged.
            warnings.filterwarnings("ignore", message=".*create_react_agent has been moved.*")
            return create_react_agent(self.model, tools, name=worker.name, **{**extra, **self.kwargs})


class Worker:
    """A named worker: principal, agent, result schema (see the module docstring)."""

    def __init__(self, name: str, principal: Principal, agent: Any, result: type[BaseModel], *,
                 description: str = "", prompt: str | None = None, max_attempts: int = 3) -> None:
        if not isinstance(name, str) or not _NAME.match(name) or name in RESERVED:
            raise InvalidRequest(f"worker name {name!r} must be a letter then letters, digits, '_' or '-' "
                                 f"(at most 64), and not one of {sorted(RESERVED)}")
        if not isinstance(principal, Principal):
            raise InvalidRequest(f"worker {name!r}: principal must be a memwarden Principal")
        if not (isinstance(result, type) and issubclass(result, BaseModel)):
            raise InvalidRequest(f"worker {name!r}: result must be a pydantic model class")
        integer_argument(max_attempts, f"worker {name!r}: max_attempts", minimum=1)
        for what, text in (("description", description), ("prompt", prompt)):
            if text is not None and not isinstance(text, str):
                raise InvalidRequest(f"worker {name!r}: {what} must be a string, got {type(text).__name__}")
        if isinstance(agent, StateGraph):
            agent = agent.compile(checkpointer=False)  # its transcript stays out of the team's checkpointer
        if not (isinstance(agent, (Runnable, ReactAgent)) or callable(agent)):
            raise InvalidRequest(f"worker {name!r}: agent must be a function, a LangGraph graph or Runnable, "
                                 f"or Worker.react(...); got {type(agent).__name__}")
        if inspect.iscoroutinefunction(agent):
            raise InvalidRequest(f"worker {name!r}: async function agents are not supported; wrap it in a "
                                 "graph node instead")
        self.name = name
        self.principal = principal
        self.agent = agent
        self.result = result
        self.description = description
        self.prompt = prompt
        self.max_attempts = max_attempts

    @classmethod
    def react(cls, name: str, principal: Principal, model: Any, result: type[BaseModel], *,
              description: str = "", prompt: str | None = None, tools: Sequence[Any] = (),
              memory_tools: Sequence[str] | None = None, structured: bool = False, max_attempts: int = 3,
              persist_transcript: bool = False, **agent_kwargs: Any) -> Worker:
        """A worker whose agent is ``create_react_agent(model, memory tools + tools)``.

        The memory tools (all three, or the names in ``memory_tools``) are bound to the
        worker's own session when the team is built. With ``structured=True`` the agent's
        final answer comes from ``model.with_structured_output(result)``; otherwise the model
        is told to answer with JSON matching the schema.

        The agent's transcript is not checkpointed (``checkpointer=False``): after an interrupt
        or a crash the worker runs again from its task, its model calls are made again and its
        memory writes replay as no-ops. ``persist_transcript=True`` keeps LangGraph's default
        instead (the agent resumes mid-way, and its messages and tool output are stored in the
        team's checkpointer, where memwarden's erasure does not reach).
        """
        return cls(name, principal, ReactAgent(model, tools, memory_tools=memory_tools, structured=structured,
                                               persist_transcript=persist_transcript, **agent_kwargs),
                   result, description=description, prompt=prompt, max_attempts=max_attempts)

    @property
    def kind(self) -> str:
        """``function`` or ``graph``: how the agent is called."""
        return "graph" if isinstance(self.agent, (Runnable, ReactAgent)) else "function"

    def system_prompt(self) -> str:
        """The system message a graph agent starts with."""
        roles = ", ".join(self.principal.roles) or "-"
        base = self.prompt if self.prompt is not None else WORKER_PROMPT.format(
            name=self.name, principal=self.principal.id, roles=roles, description=self.description).strip()
        if isinstance(self.agent, ReactAgent) and self.agent.structured:
            return base
        schema = json.dumps(self.result.model_json_schema(), separators=(",", ":"))
        return base + "\n\n" + JSON_INSTRUCTION.format(schema=schema)

    def bind(self, memory: Memory) -> BoundWorker:
        """This worker with its own session on ``memory`` (and its agent built, if prebuilt).
        The session's writes come from an agent (``source=agent``), as the LangGraph store's
        and the memory tools' do: what a worker writes is an agent's, so the policy's
        ``source=agent`` rules hold it, not a user's."""
        return BoundWorker(self, memory.session(self.principal, source=Source.AGENT))

    def as_agent(self, memory: Memory, *, task_from: Callable[[list[BaseMessage]], str] | None = None) -> Runnable:
        """This worker as an isolated agent graph named after it, for other multi-agent setups.

        The graph takes ``{"messages": [...]}`` (for example from a langgraph-supervisor or
        langgraph-swarm parent), gives the worker only the task (``task_from(messages)``, by
        default the last human message) and adds a single AI message, named after the worker,
        holding the validated result as JSON. The parent's messages never reach the agent.
        """
        bound = self.bind(memory)
        pick = task_from or _last_human_text
        runs = {"n": 0}

        def run(state: MessagesState) -> dict[str, Any]:
            runs["n"] += 1
            task = pick(list(state["messages"]))
            result = bound.run(Assignment(task_id=f"{self.name}-{runs['n']}", worker=self.name,
                                          seq=runs["n"], task=task))
            return {"messages": [AIMessage(content=json.dumps(result["output"], ensure_ascii=False),
                                           name=self.name)]}

        graph = StateGraph(MessagesState)
        graph.add_node(self.name, run)
        graph.add_edge(START, self.name)
        graph.add_edge(self.name, END)
        return graph.compile(name=self.name)

    def __repr__(self) -> str:
        return f"Worker({self.name!r}, principal={self.principal.id!r}, result={self.result.__name__})"


def _last_human_text(messages: list[BaseMessage]) -> str:
    for message in reversed(messages):
        if isinstance(message, HumanMessage):
            return _text(message.content)
    raise InvalidRequest("no human message to take the task from")


class BoundWorker:
    """A worker bound to its session; :meth:`run` does one task in an isolated context."""

    def __init__(self, worker: Worker, session: Session) -> None:
        self.worker = worker
        self.session = session
        agent = worker.agent
        self._agent = agent.build(session, worker) if isinstance(agent, ReactAgent) else agent
        self._takes_feedback = False
        if worker.kind == "function":
            try:
                params = inspect.signature(agent).parameters
            except (TypeError, ValueError):
                params = {}
            self._takes_feedback = "feedback" in params or any(
                p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())

    @property
    def agent(self) -> Any:
        """The agent as it is called (built, for prebuilt ReAct workers)."""
        return self._agent

    def _attempt(self, task: str, feedback: str | None) -> Any:
        worker = self.worker
        if worker.kind == "function":
            extra = {"feedback": feedback} if self._takes_feedback else {}
            return self._agent(task, self.session, **extra)
        messages: list[BaseMessage] = [SystemMessage(worker.system_prompt()), HumanMessage(task)]
        if feedback:
            messages.append(HumanMessage(f"Your previous answer was refused: {feedback}. "
                                         "Do the task again and answer in the required form."))
        return _graph_answer(self._agent.invoke({"messages": messages}))

    def run(self, assignment: Assignment) -> TaskResult:
        """Do one task: run the agent, validate its answer, retry refusals; the TaskResult."""
        worker = self.worker
        reasons: list[str] = []
        try:
            with _acting_as(self.session):
                for attempt in Retrying(stop=stop_after_attempt(worker.max_attempts), reraise=True,
                                        retry=retry_if_exception_type(_Refusal)):
                    with attempt:
                        try:
                            raw = self._attempt(assignment["task"], reasons[-1] if reasons else None)
                            output = validate_result(worker.result, _unwrap(raw))
                        except _Refusal as exc:
                            reasons.append(str(exc))
                            raise
                        return TaskResult(
                            task_id=assignment["task_id"], worker=worker.name, seq=assignment["seq"],
                            principal=self.session.principal.id, schema=worker.result.__name__,
                            output=output.model_dump(mode="json"), attempts=attempt.retry_state.attempt_number,
                        )
        except _Refusal:
            raise ResultRefused(
                f"worker {worker.name!r} (task {assignment['task_id']}): its result was refused "
                f"{len(reasons)} time(s), the limit: " + " | ".join(reasons),
                worker=worker.name, task_id=assignment["task_id"], attempts=len(reasons), reasons=reasons,
            ) from None
        except GraphBubbleUp:
            raise  # interrupts and parent commands are LangGraph control flow, not failures
        except Exception as exc:
            exc.add_note(f"in memwarden worker {worker.name!r} (task {assignment['task_id']}, "
                         f"principal {self.session.principal.id!r})")
            raise
        raise AssertionError("unreachable")  # pragma: no cover


def _unwrap(raw: Any) -> Any:
    # A graph answer may itself be a message; plain functions may return one too.
    if isinstance(raw, BaseMessage):
        return _text(raw.content)
    return raw
