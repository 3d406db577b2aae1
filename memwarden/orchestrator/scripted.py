"""``ScriptedChatModel``: a chat model that plays a script, for offline examples and tests.

Each call to the model takes the next step of its script. A step is what the model says:

- a string (a plain answer), or an ``AIMessage`` (for example one with tool calls, see
  :func:`tool_call` and :func:`calls`);
- a dict or pydantic model: as a chat answer it becomes JSON text; through
  ``with_structured_output(schema)`` it is validated into ``schema``;
- a callable taking the messages the model received and returning one of the above, so a
  script can answer from what its tools returned.

The model records every list of messages it received (:attr:`ScriptedChatModel.received`), so
a test can check exactly what an agent saw. ``bind_tools`` binds nothing: the script decides
which tools are called. Give each agent its own scripted model; a shared one would hand its
steps to whichever agent happens to call first.
"""

from __future__ import annotations

import itertools
import json
import threading
from collections.abc import Sequence
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable, RunnableLambda
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr

__all__ = ["ScriptExhausted", "ScriptedChatModel", "calls", "tool_call"]

_ids = itertools.count(1)
_ids_lock = threading.Lock()


class ScriptExhausted(RuntimeError):
    """The model was called more often than its script has steps."""


def tool_call(name: str, /, **args: Any) -> dict[str, Any]:
    """One tool call, as it appears in ``AIMessage.tool_calls`` (with a fresh id)."""
    with _ids_lock:
        n = next(_ids)
    return {"name": name, "args": args, "id": f"call_{n}", "type": "tool_call"}


def calls(*tool_calls: dict[str, Any], content: str = "") -> AIMessage:
    """An ``AIMessage`` that makes the given tool calls (built with :func:`tool_call`)."""
    return AIMessage(content=content, tool_calls=list(tool_calls))


def _as_message(step: Any) -> AIMessage:
    if isinstance(step, AIMessage):
        return step
    if isinstance(step, str):
        return AIMessage(content=step)
    if isinstance(step, BaseModel):
        return AIMessage(content=step.model_dump_json())
    if isinstance(step, dict):
        return AIMessage(content=json.dumps(step, ensure_ascii=False))
    raise TypeError(f"a script step must be a str, AIMessage, dict or pydantic model, got {type(step).__name__}")


class ScriptedChatModel(BaseChatModel):
    """A chat model whose answers are a fixed script (see the module docstring)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    script: list[Any] = Field(default_factory=list)
    """The steps, in the order the model is called."""
    label: str = "scripted"
    """A name for error messages."""
    received: list[list[BaseMessage]] = Field(default_factory=list)
    """Every list of messages the model was called with, in order."""

    _cursor: int = PrivateAttr(default=0)
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)

    def __init__(self, script: Sequence[Any] = (), **kwargs: Any) -> None:
        super().__init__(script=list(script), **kwargs)

    @property
    def _llm_type(self) -> str:
        return "memwarden-scripted"

    @property
    def remaining(self) -> int:
        """How many steps are left."""
        return len(self.script) - self._cursor

    def _next(self, messages: list[BaseMessage]) -> Any:
        with self._lock:
            self.received.append(list(messages))
            if self._cursor >= len(self.script):
                raise ScriptExhausted(f"{self.label}: called {self._cursor + 1} times, but the script has "
                                      f"only {len(self.script)} steps")
            step = self.script[self._cursor]
            self._cursor += 1
        return step(list(messages)) if callable(step) and not isinstance(step, type) else step

    def _generate(self, messages: list[BaseMessage], stop: list[str] | None = None,
                  run_manager: CallbackManagerForLLMRun | None = None, **kwargs: Any) -> ChatResult:
        return ChatResult(generations=[ChatGeneration(message=_as_message(self._next(messages)))])

    def bind_tools(self, tools: Sequence[Any], *, tool_choice: str | None = None,
                   parallel_tool_calls: bool | None = None, **kwargs: Any) -> Runnable[LanguageModelInput, AIMessage]:
        """Return the model itself: the script, not the tool list, decides what is called."""
        return self

    def with_structured_output(self, schema: dict[str, Any] | type, *, include_raw: bool = False,
                               **kwargs: Any) -> Runnable[LanguageModelInput, Any]:
        """A runnable whose next step is validated into ``schema`` (a pydantic model class)."""

        def structured(value: LanguageModelInput) -> Any:
            step = self._next(self._convert_input(value).to_messages())
            if isinstance(step, AIMessage):
                step = step.content
            if isinstance(schema, type) and issubclass(schema, BaseModel):
                if isinstance(step, str):
                    parsed: Any = schema.model_validate_json(step)
                else:
                    parsed = schema.model_validate(step.model_dump() if isinstance(step, BaseModel) else step)
            else:
                parsed = json.loads(step) if isinstance(step, str) else step
            return {"raw": _as_message(step), "parsed": parsed, "parsing_error": None} if include_raw else parsed

        return RunnableLambda(structured, name=f"{self.label}.structured")

