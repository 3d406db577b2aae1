"""LangChain memory tools bound to one memwarden Session: ``remember``, ``recall``, ``forget``.

``memory_tools(session)`` returns three ``BaseTool`` objects for any tool-calling model or
agent (``create_react_agent(model, memory_tools(session))``). Every call goes through the
session, so through the one governed path: the tools act as the session's principal and can
never see or touch more than that principal may.

What a model gets back is a short string. Refusals are short strings too, never stack traces
or policy internals: an access denial names the action and namespace the model asked for and
nothing else (not the rule, not whether any record exists there); a search never says how many
records it withheld. The tool message of a refusal has ``status="error"``.

``governed_tool(tool)`` does the same for a tool built on the LangGraph store by someone else
(LangMem's manage and search tools): a put held for review is told as "held for review", a
denial as "not allowed", where the tool itself would have said "created memory".

Errors that are not memwarden's (a crashed backend, a bug) are not caught: they fail the agent
as any other exception would. Nor is a call with no principal bound (``Unbound``): that is the
application's mistake, not something a model can act on.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any, Literal

from langchain_core.tools import BaseTool, StructuredTool, ToolException
from pydantic import BaseModel, Field, ValidationError

from memwarden.core.errors import AccessDenied, HeldForReview, InvalidRequest, MemwardenError, NotFound, WriteRejected
from memwarden.core.arguments import sequence_argument
from memwarden.core.records import AGENT, SearchHit, Status
from memwarden.memory.session import Session
from memwarden.core.namespace import canonical_namespace, namespace_text
from memwarden.integrations.binding import Unbound
from memwarden.integrations.store_outcomes import strict_outcomes

__all__ = ["HELD_TEXT", "ForgetArgs", "RecallArgs", "RememberArgs", "governed_tool", "held_text", "memory_tools"]

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


#: How a model is told of a write held for review (the validators' reasons are not told: an
#: attacker would learn from them how to word the next try).
HELD_TEXT = "held for review: {what} stored, but not visible to anyone until a reviewer approves it"


def held_text(what: str) -> str:
    """:data:`HELD_TEXT` about ``what`` (a memory's id or key, and where it is)."""
    return HELD_TEXT.format(what=what)


def _refusal(exc: MemwardenError, action: str, where: str | None) -> ToolException:
    if isinstance(exc, AccessDenied):
        place = f" in {where!r}" if where else ""
        return ToolException(f"not allowed: you may not {action}{place}")
    if isinstance(exc, WriteRejected):
        return ToolException("rejected: a write validator refused the memory; nothing was stored")
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
            return held_text(f"{record.id} in {where}")
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


def _told(exc: MemwardenError) -> str | ToolException:
    """What a wrapped store-backed tool tells its model of a governed outcome."""
    if isinstance(exc, HeldForReview):
        held = [r for r in exc.results if getattr(r, "id", None) in exc.ids]
        return held_text(", ".join(f"memory {r.key}" for r in held))
    if isinstance(exc, NotFound):
        # The store's words are the same for a missing item and a hidden one (no oracle).
        return ToolException(str(exc))
    if isinstance(exc, AccessDenied):
        # The store's own message names the rule that decided: the model hears only the verdict.
        return ToolException("not allowed: the memory policy does not let you do that here")
    return _refusal(exc, "do that", None)


def governed_tool(tool: BaseTool) -> BaseTool:
    """``tool`` (a StructuredTool that uses a LangGraph store, LangMem's
    ``create_manage_memory_tool`` or ``create_search_memory_tool`` for example), telling its
    model what memwarden did rather than what the tool assumes.

    The tool runs with the governed store strict (:func:`strict_outcomes`): a put held for
    review makes it answer "held for review: ...", a denial "not allowed: ..." (no rule, no
    hint whether anything exists), a delete that deleted nothing "nothing deleted: ...", a
    validator's refusal "rejected: ...". Refusals come back as the tool's message with
    ``status="error"``. The copy keeps the tool's class, name, description and schema.
    """
    if not isinstance(tool, StructuredTool):
        raise InvalidRequest(f"governed_tool wraps a StructuredTool, got {type(tool).__name__}")
    func, coroutine = tool.func, tool.coroutine

    def outcome(exc: MemwardenError) -> str:
        told = _told(exc)
        if isinstance(told, ToolException):
            raise told from None
        return told

    update: dict[str, Any] = {"handle_tool_error": True}
    if func is not None:
        @functools.wraps(func)
        def run(*args: Any, **kwargs: Any) -> Any:
            try:
                with strict_outcomes():
                    return func(*args, **kwargs)
            except Unbound:
                raise
            except MemwardenError as exc:
                return outcome(exc)

        update["func"] = run
    if coroutine is not None:
        @functools.wraps(coroutine)
        async def arun(*args: Any, **kwargs: Any) -> Any:
            try:
                with strict_outcomes():
                    return await coroutine(*args, **kwargs)
            except Unbound:
                raise
            except MemwardenError as exc:
                return outcome(exc)

        update["coroutine"] = arun
    return tool.model_copy(update=update)
