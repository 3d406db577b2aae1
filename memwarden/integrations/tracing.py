"""OpenTelemetry spans for memory operations, on the API only.

memwarden depends on ``opentelemetry-api`` alone. With no SDK configured the tracer is a
no-op and attributes are never even built (``is_recording`` is checked first), so tracing
costs nothing until an application installs a TracerProvider.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from opentelemetry import trace
from opentelemetry.trace import Span, SpanKind, Status, StatusCode

_tracer = trace.get_tracer("memwarden")

#: Span names follow the GenAI memory conventions where one exists.
SPAN_NAMES = {
    "write": "create_memory",
    "update": "update_memory",
    "search": "search_memory",
    "list": "search_memory",
    "get": "get_memory",
    "forget": "delete_memory",
    "erase": "delete_memory",
}


@contextmanager
def operation_span(op_name: str) -> Iterator[Span]:
    """One span around one memory operation; errors are recorded and re-raised."""
    with _tracer.start_as_current_span(SPAN_NAMES[op_name], kind=SpanKind.INTERNAL,
                                       record_exception=True, set_status_on_exception=True) as span:
        yield span


def annotate(span: Span, attributes: Callable[[], Mapping[str, Any]], *, error: bool = False) -> None:
    """Attach attributes, built lazily so a non-recording span costs nothing."""
    if not span.is_recording():
        return
    span.set_attributes({k: v for k, v in attributes().items() if v is not None})
    if error:
        span.set_status(Status(StatusCode.ERROR))
