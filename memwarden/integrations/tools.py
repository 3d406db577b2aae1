"""LangChain memory tools bound to one memwarden Session: ``remember``, ``recall``, ``forget``.

``memory_tools(session)`` returns three ``BaseTool`` objects for any tool-calling model or
agent (``create_react_agent(model, memory_tools(session))``). Every call goes through the
session, so through the one governed path: the tools act as the session's principal and can
never see or touch more than that principal may.

What a model gets back is a short string. Refusals are short strings too, never stack traces
or policy internals: an access denial names the action and namespace the model asked for and
nothing else (not the rule, not whether any record exists there); a search never says how many
records it withheld. The tool message of a refusal has ``status="error"``.

Errors that are not memwarden's (a crashed backend, a bug) are not caught: they fail the agent
as any other exception would.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from langchain_core.tools import BaseTool, StructuredTool, ToolException
from pydantic import BaseModel, Field, ValidationError

from memwarden.core.errors import AccessDenied, InvalidRequest, MemwardenError, WriteRejected
from memwarden.core.arguments import sequence_argument
from memwarden.core.records import AGENT, SearchHit, Status
from memwarden.memory.session import Session
from memwarden.core.namespace import canonical_namespace, namespace_text

__all__ = ["ForgetArgs", "RecallArgs", "RememberArgs", "memory_tools"]

#: Longest excerpt of one memory that ``recall`` returns, in characters.
EXCERPT_CHARS = 400


class RememberArgs(BaseModel):
    """Arguments of ``remember``."""

    content: str = Field(description="The memory to store: one self-contained statement.")
    namespace: str = Field(description="Where to store it, as labels separated by '/', e.g. 'ward3/patients/p12'.")
    kind: Literal["fact", "event", "rule", "preference"] = Field(
        default="fact", description="fact, event, rule (a procedure) or preference.")
    subjects: list[str] = Field(default_factory=list,
                                description="Ids of the people or things this memory is about.")
    derived_from: list[str] = Field(default_factory=list,
                                    description="Ids of the memories this one was derived from, if any.")


class RecallArgs(BaseModel):
    """Arguments of ``recall``."""

    query: str = Field(description="What to look for, in words.")
    namespace: str = Field(default="", description="Search at or below this namespace ('' for everywhere allowed).")
    k: int = Field(default=5, ge=1, le=50, description="How many memories to return at most.")


class ForgetArgs(BaseModel):
    """Arguments of ``forget``."""

    id: str = Field(description="The id of the memory to forget (mem_ followed by 32 hex digits).")


def _refusal(exc: MemwardenError, action: str, where: str | None) -> ToolException:
    if isinstance(exc, AccessDenied):
        place = f" in {where!r}" if where else ""
        return ToolException(f"error: access denied: you may not {action}{place}")
    if isinstance(exc, WriteRejected):
        return ToolException("error: the memory was rejected by a write validator and not stored")
    if isinstance(exc, InvalidRequest):
        return ToolException(f"error: invalid request: {exc}")
    return ToolException(f"error: {type(exc).__name__}")


def _bad_arguments(exc: ValidationError | Exception) -> str:
    if isinstance(exc, ValidationError):
        parts = [f"{'.'.join(str(p) for p in e['loc']) or 'input'}: {e['msg']}" for e in exc.errors()]
        return "error: invalid arguments: " + "; ".join(parts)
    return "error: invalid arguments"


def _excerpt(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= EXCERPT_CHARS else flat[: EXCERPT_CHARS - 1] + "…"


def _hit_line(hit: SearchHit) -> str:
    record = hit.record
    score = "" if hit.score is None else f" score={hit.score:.2f}"
    return f"- {record.id} [{namespace_text(record.namespace)}, {record.kind.value}{score}] {_excerpt(record.content)}"


def memory_tools(session: Session, *, default_namespace: str = "",
                 names: Sequence[str] = ("remember", "recall", "forget")) -> list[BaseTool]:
    """The memory tools, acting as ``session``'s principal.

    ``default_namespace`` is where ``recall`` searches when the model gives no namespace
    ('' means everything the principal may read). ``names`` picks a subset of the tools,
    for example ``("recall",)`` for a read-only agent.
    """
    if not isinstance(session, Session):
        raise InvalidRequest(f"memory_tools needs a memwarden Session, got {type(session).__name__}")
    names = sequence_argument(names, "names", of="tool names")
    if not isinstance(default_namespace, str):
        raise InvalidRequest(f"default_namespace must be an 'a/b/c' string, got {type(default_namespace).__name__}")
    canonical_namespace(default_namespace, allow_empty=True, what="default_namespace")
    unknown = set(map(str, names)) - {"remember", "recall", "forget"}
    if unknown:
        raise InvalidRequest(f"unknown memory tool(s) {sorted(unknown)}; expected remember, recall, forget")
    # What a model writes through the tools is an agent's, whatever the session was bound to.
    session = session.bound(AGENT)

    def remember(content: str, namespace: str, kind: str = "fact", subjects: list[str] | None = None,
                 derived_from: list[str] | None = None) -> str:
        try:
            # Passed on as given (None meaning none): the session refuses a string where a list
            # belongs, where list("p12") would have split it into three subjects.
            record = session.write(content, namespace=namespace, kind=kind,
                                   subjects=() if subjects is None else subjects,
                                   parents=() if derived_from is None else derived_from)
        except MemwardenError as exc:
            raise _refusal(exc, "write", namespace) from None
        where = namespace_text(record.namespace)
        if record.status is Status.QUARANTINED:
            return f"stored {record.id} in {where}, quarantined until reviewed (not searchable yet)"
        return f"stored {record.id} in {where}"

    def recall(query: str, namespace: str = "", k: int = 5) -> str:
        where = namespace or default_namespace
        try:
            hits = session.search(query, namespace=where, k=k)
        except MemwardenError as exc:
            raise _refusal(exc, "read", where or "(everywhere)") from None
        if not hits:
            return "no memories found"
        return "\n".join(_hit_line(h) for h in hits)

    def forget(id: str) -> str:  # the name the model sees
        try:
            session.forget(id)
        except MemwardenError as exc:
            raise _refusal(exc, "forget", None) from None
        return f"forgotten {id}"

    specs = {
        "remember": (remember, RememberArgs,
                     "Store one memory in the shared, governed memory. Returns the new memory's id."),
        "recall": (recall, RecallArgs,
                   "Search the shared memory for memories you are allowed to read. Returns one line per "
                   "memory: id, [namespace, kind, score] and the text."),
        "forget": (forget, ForgetArgs, "Forget a memory by id, if you are allowed to."),
    }
    return [
        StructuredTool.from_function(
            func=specs[name][0], name=name, description=specs[name][2], args_schema=specs[name][1],
            handle_tool_error=True, handle_validation_error=_bad_arguments,
        )
        for name in names
    ]
