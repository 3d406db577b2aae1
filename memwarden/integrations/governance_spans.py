"""``ScorecardSpanProcessor``: the governance scorecard of a trace, on its local root span, for
any OTLP backend.

A span processor sees every span start and end. It remembers each trace's local root span (the
one with no parent, or a remote one) while it is open, and every time a memwarden memory span of
that trace ends, it counts the span's ``memwarden.*`` attributes and sets the trace's running
totals on the root (:meth:`Scorecard.as_attributes`). The root therefore leaves with the whole
scorecard of its trace: numbers a trace query can filter on, and a JSON row per principal.
Nothing but principals and counts is added. A memory span that is itself the root of its trace
carries its own figures already and gets nothing more.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any

from opentelemetry.sdk.trace import SpanProcessor  # the SDK: this module is only imported by setup_tracing

from memwarden.integrations.governance import Scorecard, op_from_span

__all__ = ["ScorecardSpanProcessor"]

#: Open traces remembered at once; the oldest is dropped first (a root that never ends must not
#: grow the processor without bound).
MAX_OPEN_TRACES = 10_000


class ScorecardSpanProcessor(SpanProcessor):
    """An OpenTelemetry SDK span processor (add it with ``provider.add_span_processor``, or
    ``setup_tracing(scorecard=True)``) that keeps each trace's scorecard on its root span."""

    def __init__(self, max_open_traces: int = MAX_OPEN_TRACES) -> None:
        self._open: OrderedDict[int, tuple[Any, Scorecard]] = OrderedDict()
        self._max = max_open_traces
        self._lock = threading.Lock()

    def on_start(self, span: Any, parent_context: Any = None) -> None:
        """Remember a local root span."""
        if span.parent is not None and not span.parent.is_remote:
            return
        with self._lock:
            self._open[span.context.trace_id] = (span, Scorecard())
            while len(self._open) > self._max:
                self._open.popitem(last=False)

    def on_end(self, span: Any) -> None:
        """Count an ended memory span on its trace's root; forget a root that ended."""
        trace_id = span.context.trace_id
        with self._lock:
            held = self._open.get(trace_id)
            if held is None:
                return
            root, card = held
            if root.context.span_id == span.context.span_id:
                del self._open[trace_id]
                return
            op = op_from_span(span.attributes or {})
            if op is None:
                return
            card.add(op)
            attributes = card.as_attributes()
        root.set_attributes(attributes)  # the root is still recording: it ends after its children

    def shutdown(self) -> None:
        """Forget every open trace."""
        with self._lock:
            self._open.clear()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        """Nothing is queued here."""
        return True
