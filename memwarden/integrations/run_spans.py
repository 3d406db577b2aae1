"""The span of the LangChain or LangGraph run a memory call is made from, for nesting.

OpenInference's LangChain instrumentation (openinference-instrumentation-langchain) starts a
span for every run (a graph, a node, a tool) from LangChain's callbacks, but never makes it
the OpenTelemetry current span: a callback system cannot guarantee the matching detach. So a
memory span started "under the current span" would land beside the node, at the trace root.
The instrumentation keeps the span of each run, and finds the current run from LangChain's
own context variable (``get_current_span``); memwarden asks it for the parent.

Nothing is imported here: when the application has not loaded the instrumentation, there is
no such span, and the lookup costs one dictionary read.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

from opentelemetry.trace import Span

INSTRUMENTATION = "openinference.instrumentation.langchain"


def current_run_span() -> Span | None:
    """The span of the LangChain run in progress in this context, or None."""
    module = sys.modules.get(INSTRUMENTATION)
    finder, instrumentor = getattr(module, "get_current_span", None), getattr(module, "LangChainInstrumentor", None)
    if finder is None or instrumentor is None:
        return None
    try:
        # Imported but not instrumenting (or no longer): the lookup would print a warning.
        if not instrumentor().is_instrumented_by_opentelemetry:
            return None
        span = finder()
    except Exception:  # noqa: BLE001 - nesting is a nicety: a failing lookup never fails an operation
        return None
    return span if isinstance(span, Span) and span.get_span_context().is_valid else None


def instrument_langchain(provider: object) -> Callable[[], None] | None:
    """Trace LangChain and LangGraph runs (graphs, nodes, tools, models) with OpenInference's
    instrumentation into ``provider``, when openinference-instrumentation-langchain is
    installed and nobody instrumented it yet; returns how to undo it (None: nothing done).

    For programs that set up tracing for a run of their own, such as ``memwarden demo
    --otlp``: memory spans then nest under the worker and node that made each call. Unless
    memwarden's content capture is on (memory.tracing.capture_content), the instrumentation
    hides every input and output (prompts, tool results): they hold memory content, which
    stays off spans by default.
    """
    try:
        from openinference.instrumentation import TraceConfig
        from openinference.instrumentation.langchain import LangChainInstrumentor
    except ImportError:
        return None
    from memwarden.memory.tracing import content_enabled

    instrumentor = LangChainInstrumentor()
    if instrumentor.is_instrumented_by_opentelemetry:
        return None  # the application's own instrumentation, to its own provider
    hidden = not content_enabled()
    instrumentor.instrument(tracer_provider=provider, config=TraceConfig(hide_inputs=hidden, hide_outputs=hidden))
    return instrumentor.uninstrument
