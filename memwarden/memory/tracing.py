"""OpenTelemetry spans for memory operations, on the API only.

memwarden depends on ``opentelemetry-api`` alone. With no SDK configured the tracer is a
no-op and attributes are never even built (``is_recording`` is checked first), so tracing
costs next to nothing until an application installs a TracerProvider.

One span per memory operation, named and attributed after the OpenTelemetry GenAI memory
conventions (``gen_ai.memory.client`` spans in the GenAI semantic conventions):

- span name = ``gen_ai.operation.name``: ``create_memory``, ``upsert_memory`` (a keyed write,
  where the caller does not choose between create and update), ``update_memory`` (update,
  review), ``search_memory`` (search, list, get by id, history) or ``delete_memory`` (forget,
  erase, retract, sweep);
- ``gen_ai.operation.name`` is set when the span starts (the conventions want it available
  to samplers); ``gen_ai.memory.record.count``, ``gen_ai.memory.record.id`` (only when the
  operation targets one record) and ``error.type`` are derived when it ends;
- ``gen_ai.memory.query.text`` and ``gen_ai.memory.records`` (content) are opt-in: see
  :func:`capture_content`;
- memwarden's own ``memwarden.*`` attributes (principal, roles, decision, deciding rule,
  verdicts, records returned and withheld, audit sequence number) come from the pipeline;
- OpenInference's (span kind, retrieval documents, input and output) are derived from them in
  :mod:`memwarden.memory.openinference`, so that Phoenix shows a search as a retriever.

A denial (AccessDenied) or a validator's rejection (WriteRejected) is the governance working,
not a failure: its span keeps an unset status and has no ``error.type`` or exception event
(Recording Errors lets an instrumentation that knows the context classify an outcome, as HTTP
server spans do for 4xx); ``memwarden.outcome`` says ``denied`` or ``rejected``. Invalid input
and real failures set status ERROR. See docs/observability.md, "Denials are not errors".

The span is the current span while the operation runs. It nests under whatever span the
caller has open, or under the span of the LangGraph node (or tool, or worker) it is called
from when the application uses OpenInference's LangChain instrumentation, whose run spans
are never current (see :func:`_parent`).
"""

from __future__ import annotations

import json
import os
import traceback
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.trace import Span, SpanKind, Status, StatusCode, Tracer, TracerProvider

from memwarden.core import adapters
from memwarden.core.errors import AccessDenied, WriteRejected
from memwarden.core.schema import OP_KINDS, UPSERT_SPAN
from memwarden.memory.openinference import openinference_attributes

TRACER_NAME = "memwarden"

#: Span names follow the GenAI memory conventions (``gen_ai.operation.name`` values).
SPAN_NAMES = {name: kind.span for name, kind in OP_KINDS.items()}
#: A keyed write (a LangGraph store ``put``) creates or overwrites without the caller choosing.
UPSERT = UPSERT_SPAN

#: Environment switches for content capture. memwarden's own, and the one the GenAI
#: conventions name for instrumentations (any value but false/0/no/off/NO_CONTENT enables).
CAPTURE_ENV = "MEMWARDEN_CAPTURE_CONTENT"
OTEL_CAPTURE_ENV = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
_FALSE = {"", "0", "false", "no", "off", "no_content"}

#: Longest content string recorded per record when capture is on (spans are not a database).
MAX_CONTENT_CHARS = 4096

#: Governed outcomes, by the exception the caller gets: the policy or a validator decided, as
#: designed. Their spans are not errors (see the module docstring).
GOVERNED: dict[type[Exception], str] = {AccessDenied: "denied", WriteRejected: "rejected"}
#: Outcomes whose span status stays unset.
NOT_ERRORS = frozenset({"ok", *GOVERNED.values()})

_provider: TracerProvider | None = None
_tracer: Tracer = trace.get_tracer(TRACER_NAME)


# -- configuration ------------------------------------------------------------------------

def set_tracer_provider(provider: TracerProvider | None) -> None:
    """Send memwarden's spans to ``provider`` instead of the global one (None: back to global).

    Applications normally set the global provider (``trace.set_tracer_provider``) and need
    not call this; it exists for processes that host several pipelines, and for tests.
    """
    global _provider, _tracer
    _provider = provider
    _tracer = (provider.get_tracer(TRACER_NAME) if provider is not None else trace.get_tracer(TRACER_NAME))


def tracer() -> Tracer:
    """The tracer memwarden's spans come from."""
    return _tracer


def _env_capture() -> bool:
    return any(os.environ.get(name, "").strip().lower() not in _FALSE for name in (CAPTURE_ENV, OTEL_CAPTURE_ENV))


_capture: bool = _env_capture()


def capture_content(enabled: bool | None = True) -> None:
    """Opt in (True) or out (False) of recording query text and record content on spans.

    None drops the override and reads the environment again: ``MEMWARDEN_CAPTURE_CONTENT=1``
    or ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true`` (read at import and on each
    ``capture_content(None)``). Off by default: memory content is personal data, and spans go
    to places the policy does not govern.
    """
    global _capture
    _capture = enabled if enabled is not None else _env_capture()


def content_enabled() -> bool:
    """Whether query text and record content go onto spans."""
    return _capture


# -- spans ---------------------------------------------------------------------------------

def operation_name(action: str, op: object | None = None) -> str:
    """The ``gen_ai.operation.name`` (and span name) of one memwarden operation."""
    if action == "write" and getattr(op, "key", None) is not None:
        return UPSERT
    return SPAN_NAMES.get(action, action)


def start_operation(op_name: str, op: object | None = None) -> Span:
    """Start the span of one memory operation, a child of the caller's current span. It is
    ended by :func:`finish_operation`, which may come after the operation returned: a write
    held for its batch's one store call ends its span after that call."""
    name = operation_name(op_name, op)
    return _tracer.start_span(name, context=_parent(), kind=SpanKind.INTERNAL,
                              attributes={"gen_ai.operation.name": name})


def _parent() -> Context | None:
    """The context to start a memory span in: the current one (None), unless the span of the
    LangChain run the call is made from (see integrations/run_spans.py) is more deeply nested.

    That run's span is never the OpenTelemetry current span, so each is a candidate: the
    current span may be an application's span around ``graph.invoke`` (outside the node) or a
    span opened inside the node (inside it). The one that started last encloses the call more
    closely; a span with no start time (not the SDK's) cannot be compared and wins as current.
    """
    finder = adapters.run_span
    run = finder() if finder is not None else None
    if run is None:
        return None
    current = trace.get_current_span()
    if current.get_span_context().is_valid:
        mine, theirs = getattr(current, "start_time", None), getattr(run, "start_time", None)
        if mine is None or theirs is None or mine >= theirs:
            return None
    return trace.set_span_in_context(run)


@contextmanager
def use_operation(span: Span) -> Iterator[None]:
    """Make ``span`` current while the operation runs (without ending it), so anything the
    operation starts nests under it; an exception is recorded on it (unless it is a governed
    outcome: a denial or a rejection) and re-raised."""
    with trace.use_span(span, end_on_exit=False, record_exception=False, set_status_on_exception=False):
        try:
            yield
        except BaseException as exc:
            if span.is_recording() and type(exc) not in GOVERNED:
                record_failure(span, exc)
            raise


#: The ``exception.message`` of a failed operation's span while content capture is off.
MESSAGE_WITHHELD = "withheld: content capture is off (the caller's exception has the message)"


def record_failure(span: Span, exc: BaseException) -> None:
    """Record ``exc`` on ``span`` as an ``exception`` event and ``error.type``.

    An exception's message can hold anything its raiser had at hand: the query an embedding
    API refused, a subject id or namespace label that failed validation. So unless content
    capture is on, the event keeps the exception's type and its frames (code, never values)
    and withholds the message and any chained exception.
    """
    span.set_attribute("error.type", type(exc).__qualname__)
    if content_enabled():
        span.record_exception(exc)
        return
    span.add_event("exception", {"exception.type": type(exc).__qualname__, "exception.message": MESSAGE_WITHHELD,
                                 "exception.stacktrace": "".join(traceback.format_tb(exc.__traceback__))})


def finish_operation(span: Span, attributes: Callable[[], Mapping[str, Any]], *, outcome: str,
                     op: object | None = None, result: object | None = None) -> None:
    """Attach the operation's attributes (see :func:`annotate`) and end its span."""
    annotate(span, attributes, error=outcome not in NOT_ERRORS, op=op, result=result)
    span.end()


@contextmanager
def operation_span(op_name: str, op: object | None = None) -> Iterator[Span]:
    """One span around one memory operation; errors are recorded and re-raised.

    ``op_name`` is the memwarden action ("write", "search", ...). Passing the operation
    itself lets a keyed write be named ``upsert_memory``.
    """
    name = operation_name(op_name, op)
    # Recorded here, not by the SDK: its event and status description carry the message.
    with _tracer.start_as_current_span(name, kind=SpanKind.INTERNAL, attributes={"gen_ai.operation.name": name},
                                       record_exception=False, set_status_on_exception=False) as span:
        try:
            yield span
        except Exception as exc:
            if span.is_recording():
                record_failure(span, exc)
                span.set_status(Status(StatusCode.ERROR))
            raise


def annotate(span: Span, attributes: Callable[[], Mapping[str, Any]], *, error: bool = False,
             op: object | None = None, result: object | None = None) -> None:
    """Attach attributes at the end of an operation, built lazily so a non-recording span
    costs nothing.

    ``attributes`` returns the pipeline's attributes (``memwarden.*``); the ``gen_ai.memory.*``
    ones are derived from them here. ``op`` and ``result`` (the operation and what it
    returned) are only read for the opt-in content attributes and for the id of the record
    an operation targets.
    """
    if not span.is_recording():
        return
    attrs = {k: v for k, v in attributes().items() if v is not None}
    # Set at span start by operation_span, where it can tell create from upsert.
    attrs.pop("gen_ai.operation.name", None)
    attrs.update(memory_attributes(attrs, op))
    capture = content_enabled()
    if capture:
        attrs.update(content_attributes(op, result))
    attrs.update(openinference_attributes(attrs, op, result, clip=_clip if capture else None))
    span.set_attributes(attrs)
    if error:
        span.set_status(Status(StatusCode.ERROR))


def memory_attributes(attrs: Mapping[str, Any], op: object | None = None) -> dict[str, Any]:
    """The ``gen_ai.memory.*`` attributes implied by the pipeline's ``memwarden.*`` ones.

    ``gen_ai.memory.record.count``: search, list, get, history: records returned; write,
    update, review: the one record it attempted to create or modify; forget: every version it
    forgets; retract: the record and the derived records it holds; erase, sweep: records
    removed. ``gen_ai.memory.record.id``: the one record a write, get, update, review,
    forget, retract or history is about. Erase never names a record (its ids are logged only
    as hashes), nor does a sweep (it has no one target).
    """
    action = attrs.get("memwarden.operation")
    ids = list(attrs.get("memwarden.record_ids") or ())
    returned = attrs.get("memwarden.records.returned")
    out: dict[str, Any] = {}
    if action in ("search", "list", "get", "history", "erase", "sweep"):
        count = returned
    elif action in ("write", "update", "review"):
        count = 1
    elif action in ("forget", "retract"):
        count = len(ids) if ids else None
    else:
        count = None
    if count is not None:
        out["gen_ai.memory.record.count"] = int(count)
    if action in ("get", "update", "forget", "review", "retract", "history"):
        target = getattr(op, "id", None) or (ids[-1] if action == "update" and ids else ids[0] if len(ids) == 1 else None)
        if target:
            out["gen_ai.memory.record.id"] = str(target)
    elif action == "write" and ids:
        out["gen_ai.memory.record.id"] = str(ids[0])
    return out


def content_attributes(op: object | None, result: object | None) -> dict[str, Any]:
    """Opt-in content: ``gen_ai.memory.query.text`` and ``gen_ai.memory.records`` (a JSON
    string following the conventions' memory-records schema: id, content, score).

    Only what the caller supplied or was given back is recorded: withheld records never
    reach a result, so they never reach a span either.
    """
    out: dict[str, Any] = {}
    query = getattr(op, "query", None)
    if isinstance(query, str):
        out["gen_ai.memory.query.text"] = query
    records = _records_of(result)
    if not records and isinstance(getattr(op, "content", None), str):
        records = [{"content": _clip(op.content)}]  # a write or update that did not complete
    if records:
        out["gen_ai.memory.records"] = json.dumps(records, ensure_ascii=False, separators=(",", ":"))
    return out


def _records_of(result: object | None) -> list[dict[str, Any]]:
    items = result if isinstance(result, list) else [result] if result is not None else []
    records: list[dict[str, Any]] = []
    for item in items:
        record, score = getattr(item, "record", item), getattr(item, "score", None)
        content = getattr(record, "content", None)
        if not isinstance(content, str):
            continue
        entry: dict[str, Any] = {"id": str(getattr(record, "id", "")), "content": _clip(content)}
        if score is not None:
            entry["score"] = round(float(score), 6)
        records.append(entry)
    return records


def _clip(text: str) -> str:
    return text if len(text) <= MAX_CONTENT_CHARS else text[:MAX_CONTENT_CHARS] + "…"
