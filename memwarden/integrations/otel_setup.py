"""OpenTelemetry SDK and exporter setup for memwarden's CLI, examples and applications.

The library itself depends on ``opentelemetry-api`` only; this module imports the SDK (and an
exporter) when called, so importing memwarden never needs them. Typical use::

    from memwarden.integrations.otel_setup import setup_tracing

    telemetry = setup_tracing(otlp="http://127.0.0.1:6006/v1/traces", service_name="my-app")
    ...                               # run the graph; memory spans nest under its spans
    telemetry.shutdown()              # flush what is still queued, then stop

Any OTLP/HTTP receiver works: Phoenix, Jaeger, Grafana Tempo (or an OpenTelemetry
Collector in front of it), Langfuse; see docs/observability.md. The exporter is
``opentelemetry-exporter-otlp-proto-http`` when installed (``pip install 'memwarden[otlp]'``);
without it a small built-in OTLP/HTTP protobuf exporter is used, built on
``opentelemetry-exporter-otlp-proto-common``, which chromadb already brings in.
"""

from __future__ import annotations

import functools
import logging
import os
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

from memwarden.memory import metrics as mw_metrics
from memwarden.memory import tracing as mw_tracing

if TYPE_CHECKING:
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
    from opentelemetry.sdk.trace.export import SpanExporter

log = logging.getLogger(__name__)

#: Resource attribute Phoenix (OpenInference) files traces under as the project name.
PHOENIX_PROJECT_ATTRIBUTE = "openinference.project.name"


def traces_endpoint(url: str) -> str:
    """The OTLP/HTTP traces URL for ``url``: a bare base URL gets ``/v1/traces`` appended
    (as the OTLP exporter spec does for ``OTEL_EXPORTER_OTLP_ENDPOINT``); a URL with a path
    is used as given."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError(f"not an http(s) URL for an OTLP/HTTP receiver: {url!r}")
    if parts.path in ("", "/"):
        parts = parts._replace(path="/v1/traces")
    return urlunsplit(parts)


def env_headers() -> dict[str, str]:
    """Headers from ``OTEL_EXPORTER_OTLP_TRACES_HEADERS`` or ``OTEL_EXPORTER_OTLP_HEADERS``
    (``key=value,key2=value2``, values URL-encoded), e.g. the Authorization a Langfuse needs."""
    raw = os.environ.get("OTEL_EXPORTER_OTLP_TRACES_HEADERS") or os.environ.get("OTEL_EXPORTER_OTLP_HEADERS", "")
    out: dict[str, str] = {}
    for item in raw.split(","):
        key, sep, value = item.partition("=")
        if sep and key.strip():
            out[urllib.parse.unquote(key.strip()).lower()] = urllib.parse.unquote(value.strip())
    return out


def otlp_http_exporter(url: str, *, headers: Mapping[str, str] | None = None, timeout: float = 10.0) -> SpanExporter:
    """An OTLP/HTTP (protobuf) span exporter to ``url``."""
    endpoint = traces_endpoint(url)
    try:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    except ImportError:
        pass
    else:
        return OTLPSpanExporter(endpoint=endpoint, headers=dict(headers or {}), timeout=timeout)
    try:
        return _exporter_classes()[0](endpoint, headers=headers, timeout=timeout)
    except ImportError as exc:  # pragma: no cover - chromadb brings the encoder in
        raise RuntimeError("exporting over OTLP/HTTP needs opentelemetry-exporter-otlp-proto-http: "
                           "pip install 'memwarden[otlp]'") from exc


@functools.cache
def _exporter_classes() -> tuple[type, type]:
    """The two exporter classes, defined on first use so that importing this module does not
    import the SDK."""
    from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

    class ProtobufHttpExporter(SpanExporter):
        """Minimal OTLP/HTTP protobuf exporter (stdlib HTTP), used when the official one is
        absent. Retries transient failures (connection errors, 429, 502, 503, 504) with backoff."""

        _RETRY = frozenset({429, 502, 503, 504})

        def __init__(self, endpoint: str, *, headers: Mapping[str, str] | None = None, timeout: float = 10.0,
                     attempts: int = 4) -> None:
            from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

            self._encode = encode_spans
            self._endpoint = endpoint
            # Like the official exporter: OTEL_EXPORTER_OTLP_(TRACES_)HEADERS, then explicit ones.
            self._headers = {"Content-Type": "application/x-protobuf", **env_headers(), **dict(headers or {})}
            self._timeout = timeout
            self._attempts = attempts
            self._shutdown = False

        def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
            if self._shutdown:
                return SpanExportResult.FAILURE
            data = self._encode(spans).SerializeToString()
            delay, reason = 0.5, ""
            for attempt in range(self._attempts):
                request = urllib.request.Request(self._endpoint, data=data, headers=self._headers, method="POST")
                try:
                    with urllib.request.urlopen(request, timeout=self._timeout) as response:
                        response.read()
                    return SpanExportResult.SUCCESS
                except urllib.error.HTTPError as exc:
                    if exc.code not in self._RETRY:
                        log.warning("OTLP export to %s failed: HTTP %s", self._endpoint, exc.code)
                        return SpanExportResult.FAILURE
                    reason = f"HTTP {exc.code}"
                except (urllib.error.URLError, OSError) as exc:
                    reason = str(getattr(exc, "reason", exc))
                if attempt + 1 < self._attempts and not self._shutdown:
                    time.sleep(delay)
                    delay *= 2
            log.warning("OTLP export to %s failed: %s", self._endpoint, reason)
            return SpanExportResult.FAILURE

        def shutdown(self) -> None:
            self._shutdown = True

        def force_flush(self, timeout_millis: int = 30000) -> bool:
            return True

    class Tally(SpanExporter):
        """Wraps an exporter and counts the spans it exported and failed to export."""

        def __init__(self, inner: SpanExporter) -> None:
            self.inner = inner
            self.exported = 0
            self.failed = 0
            self._lock = threading.Lock()

        def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
            try:
                result = self.inner.export(spans)
            except Exception:  # an exporter must never break the application
                log.exception("span exporter raised")
                result = SpanExportResult.FAILURE
            with self._lock:
                if result == SpanExportResult.SUCCESS:
                    self.exported += len(spans)
                else:
                    self.failed += len(spans)
            return result

        def shutdown(self) -> None:
            self.inner.shutdown()

        def force_flush(self, timeout_millis: int = 30000) -> bool:
            return bool(self.inner.force_flush(timeout_millis))

    return ProtobufHttpExporter, Tally


@dataclass
class Telemetry:
    """What :func:`setup_tracing` configured; flush and shut it down when the work is done."""

    tracer_provider: TracerProvider
    exporters: list[Any] = field(default_factory=list)
    is_global: bool = False
    meter_provider: MeterProvider | None = None
    _closed: bool = False

    @property
    def exported(self) -> int:
        """Spans exported successfully so far."""
        return sum(t.exported for t in self.exporters)

    @property
    def failed(self) -> int:
        """Spans an exporter failed to deliver so far."""
        return sum(t.failed for t in self.exporters)

    @contextmanager
    def span(self, name: str, **attributes: Any) -> Iterator[Any]:
        """A span from this provider (e.g. a root span around a whole run)."""
        tracer = self.tracer_provider.get_tracer("memwarden.app")
        with tracer.start_as_current_span(name, attributes=attributes or None) as span:
            yield span

    def flush(self, timeout_s: float = 10.0) -> bool:
        """Export everything queued; False if that did not finish in time."""
        ok = bool(self.tracer_provider.force_flush(int(timeout_s * 1000)))
        if self.meter_provider is not None:
            ok = bool(self.meter_provider.force_flush(int(timeout_s * 1000))) and ok
        return ok

    def shutdown(self, timeout_s: float = 10.0) -> bool:
        """Flush, stop the providers, and point memwarden back at the global providers."""
        if self._closed:
            return True
        self._closed = True
        ok = self.flush(timeout_s)
        self.tracer_provider.shutdown()
        if self.meter_provider is not None:
            self.meter_provider.shutdown()
        if not self.is_global:
            mw_tracing.set_tracer_provider(None)
            if self.meter_provider is not None:
                mw_metrics.set_meter_provider(None)
        return ok

    def __enter__(self) -> Telemetry:
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()


def setup_tracing(*, otlp: str | None = None, exporters: Sequence[SpanExporter] = (), console: bool = False,
                  service_name: str = "memwarden", project: str | None = None,
                  resource_attributes: Mapping[str, Any] | None = None, headers: Mapping[str, str] | None = None,
                  batch: bool = True, set_global: bool = True, metric_readers: Sequence[Any] = (),
                  scorecard: bool = False) -> Telemetry:
    """Create an SDK TracerProvider exporting memwarden's spans (and, if global, everyone's).

    ``otlp``: an OTLP/HTTP receiver URL (``http://127.0.0.1:6006/v1/traces`` for Phoenix; a
    bare ``http://host:4318`` gets ``/v1/traces``). ``exporters``: more span exporters.
    ``console``: also print spans. ``project``: the Phoenix project to file traces under
    (resource attribute ``openinference.project.name``; other backends ignore it).
    ``batch``: BatchSpanProcessor (default) or SimpleSpanProcessor. ``set_global``: install
    as the global TracerProvider when none is set yet, so the application's own spans
    (LangGraph nodes) and memwarden's share one trace; otherwise, or when a global provider
    already exists, only memwarden's spans go to this provider. ``metric_readers``: SDK
    metric readers; given any, a MeterProvider for memwarden's metrics is set up the same way.
    ``scorecard``: keep each trace's governance scorecard (records returned, withheld and denied
    per principal) on its root span (:class:`~memwarden.integrations.governance_spans.ScorecardSpanProcessor`).
    """
    from opentelemetry import metrics, trace
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter, SimpleSpanProcessor

    attrs: dict[str, Any] = {"service.name": service_name, **dict(resource_attributes or {})}
    if project:
        attrs[PHOENIX_PROJECT_ATTRIBUTE] = project
    resource = Resource.create(attrs)
    provider = TracerProvider(resource=resource)
    if scorecard:
        from memwarden.integrations.governance_spans import ScorecardSpanProcessor

        provider.add_span_processor(ScorecardSpanProcessor())
    chosen: list[SpanExporter] = list(exporters)
    if otlp:
        chosen.append(otlp_http_exporter(otlp, headers=headers))
    if console:
        chosen.append(ConsoleSpanExporter())
    tally = _exporter_classes()[1]
    tallies = [tally(e) for e in chosen]
    for tally in tallies:
        provider.add_span_processor(BatchSpanProcessor(tally) if batch else SimpleSpanProcessor(tally))

    is_global = False
    if set_global and type(trace.get_tracer_provider()).__name__ == "ProxyTracerProvider":
        trace.set_tracer_provider(provider)
        is_global = trace.get_tracer_provider() is provider
    if is_global:
        mw_tracing.set_tracer_provider(None)
    else:
        mw_tracing.set_tracer_provider(provider)

    meter_provider = None
    if metric_readers:
        from opentelemetry.sdk.metrics import MeterProvider

        meter_provider = MeterProvider(metric_readers=list(metric_readers), resource=resource)
        if is_global and not mw_metrics.enabled():
            metrics.set_meter_provider(meter_provider)
            mw_metrics.set_meter_provider(None)
        else:
            mw_metrics.set_meter_provider(meter_provider)
    return Telemetry(provider, tallies, is_global, meter_provider)
