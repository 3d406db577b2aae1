"""Hooks that a higher layer installs for a lower one, so that the lower one never imports it.

``store_adapter`` builds ``Memory.as_store``'s LangGraph store around a Memory;
``run_span`` finds the span of the LangChain run (a LangGraph node) a memory call is made
from, which memory spans nest under. Both belong to integrations/, above the memory layer;
the package root (memwarden/__init__.py, which runs before any module of memwarden) installs
them. This module is here, in core, so that installing them costs nothing: ``import
memwarden`` loads no storage, policy or guard module.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from langgraph.store.base import BaseStore
    from opentelemetry.trace import Span


#: Builds the LangGraph store around a Memory (an OpRunner); None until the package root runs.
store_adapter: Callable[..., BaseStore] | None = None

#: The span of the LangChain run in progress in this context (None: there is none).
run_span: Callable[[], Span | None] | None = None
