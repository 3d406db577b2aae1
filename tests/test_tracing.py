"""Spans, metrics and OTLP export of memory operations.

Each test routes memwarden's spans to its own SDK TracerProvider (in-memory exporter) through
``tracing.set_tracer_provider``, so no global provider is ever installed and tests stay
independent of each other and of other test files.
"""

from __future__ import annotations

import gzip
import json
import threading
import zlib
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from types import SimpleNamespace

import pytest
from opentelemetry import trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from memwarden import AccessDenied, Memory, Principal
from memwarden.memory import metrics as mw_metrics
from memwarden.integrations import otel_setup
from memwarden.memory import tracing
from memwarden.core.ops import WriteOp

pytestmark = pytest.mark.integration

ALICE = Principal("alice", roles=["physician"])
BOB = Principal("bob")
CAROL = Principal("carol")
DPO = Principal("dpo")

SECRET = "Patient 7 is allergic to latex"
QUERY = "which allergies does patient 7 have"


@pytest.fixture
def provider() -> Iterator[TracerProvider]:
    p = TracerProvider()
    tracing.set_tracer_provider(p)
    yield p
    tracing.set_tracer_provider(None)
    tracing.capture_content(None)
    p.shutdown()


@pytest.fixture
def spans(provider: TracerProvider) -> InMemorySpanExporter:
    exporter = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return exporter


def by_name(exporter: InMemorySpanExporter) -> list[tuple[str, dict]]:
    return [(s.name, dict(s.attributes or {})) for s in exporter.get_finished_spans()]


# -- one span per operation, named after the GenAI memory conventions ----------------------------

def test_one_span_per_operation_with_convention_names(mem: Memory, spans: InMemorySpanExporter) -> None:
    alice, dpo = mem.session(ALICE), mem.session(DPO)
    rec = alice.write(SECRET, "ward3/patients/p7", subjects=["p7"])
    alice.search(QUERY, "ward3/patients")
    alice.get(rec.id)
    new = alice.update(rec.id, SECRET + " and nuts")
    alice.list_namespaces("ward3")
    alice.forget(new.id)
    other = alice.write("Patient 8 is fine", "ward3/patients/p8", subjects=["p8"])
    dpo.erase(subject="p8")
    names = [s.name for s in spans.get_finished_spans()]
    assert names == ["create_memory", "search_memory", "search_memory", "update_memory", "search_memory",
                     "delete_memory", "create_memory", "delete_memory"]
    for span in spans.get_finished_spans():
        attrs = dict(span.attributes or {})
        assert attrs["gen_ai.operation.name"] == span.name
        assert attrs["memwarden.principal"] in ("alice", "dpo")
        assert attrs["memwarden.decision"] == "allow" and attrs["memwarden.rule"]
        assert attrs["memwarden.outcome"] == "ok"
        assert isinstance(attrs["memwarden.audit.seq"], int)
        assert span.kind is trace.SpanKind.INTERNAL
    attrs = [dict(s.attributes or {}) for s in spans.get_finished_spans()]
    assert attrs[0]["gen_ai.memory.record.id"] == rec.id and attrs[0]["gen_ai.memory.record.count"] == 1
    assert attrs[1]["gen_ai.memory.record.count"] == 1 and attrs[1]["memwarden.record_ids"] == (rec.id,)
    assert attrs[2]["gen_ai.memory.record.count"] == 1 and attrs[2]["gen_ai.memory.record.id"] == rec.id
    assert attrs[3]["gen_ai.memory.record.id"] == rec.id  # the record the caller asked to update
    assert attrs[5]["gen_ai.memory.record.count"] == 2  # both versions forgotten
    assert attrs[7]["gen_ai.memory.record.count"] == 1 and "gen_ai.memory.record.id" not in attrs[7]
    assert other.id not in json.dumps([list(a.values()) for a in attrs[7:]], default=str)  # erase: hashes only
    # The audit log and the spans agree, entry for span.
    seqs = [a["memwarden.audit.seq"] for a in attrs]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)


def test_memory_spans_nest_under_the_callers_span(mem: Memory, provider: TracerProvider,
                                                  spans: InMemorySpanExporter) -> None:
    node = provider.get_tracer("langgraph-app")
    with node.start_as_current_span("worker: nurse") as parent:
        mem.session(BOB).write("Bed 4 call bell is broken", "ward3/patients/p4")
        mem.session(BOB).search("call bell", "ward3/patients")
    finished = spans.get_finished_spans()
    memory_spans = [s for s in finished if s.name != "worker: nurse"]
    assert len(memory_spans) == 2
    for span in memory_spans:
        assert span.parent is not None and span.parent.span_id == parent.get_span_context().span_id
        assert span.context.trace_id == parent.get_span_context().trace_id


def test_a_denial_is_a_governed_outcome_not_an_error_span(mem: Memory, spans: InMemorySpanExporter) -> None:
    with pytest.raises(AccessDenied):
        mem.session(CAROL).search("allergies", "ward3/patients")
    (span,) = spans.get_finished_spans()
    attrs = dict(span.attributes or {})
    # The policy did its job: the trace does not turn red (docs/observability.md, denials).
    assert span.name == "search_memory" and span.status.status_code is StatusCode.UNSET
    assert "error.type" not in attrs and not any(e.name == "exception" for e in span.events)
    assert attrs["memwarden.outcome"] == "denied" and attrs["memwarden.decision"] == "deny"
    assert attrs["memwarden.namespace"] == "ward3/patients" and attrs["memwarden.rule"] == "no matching rule (deny by default)"


def test_invalid_input_and_failures_are_error_spans(mem: Memory, spans: InMemorySpanExporter) -> None:
    from memwarden import InvalidRequest

    with pytest.raises(InvalidRequest):
        mem.session(ALICE).write("x", "ward3/../billing")
    (span,) = spans.get_finished_spans()
    assert span.status.status_code is StatusCode.ERROR and span.attributes["error.type"] == "InvalidRequest"
    assert span.attributes["memwarden.outcome"] == "invalid" and any(e.name == "exception" for e in span.events)


def test_withheld_records_are_counted_not_named(mem: Memory, spans: InMemorySpanExporter) -> None:
    mem.session(ALICE).write(SECRET, "ward3/patients/p7")
    billing = mem.session(CAROL).write("Invoice 12 for patient 7", "ward3/billing/p7")
    hits = mem.session(ALICE).search("patient 7", "ward3", k=5)
    assert billing.id not in {h.record.id for h in hits}
    attrs = dict(spans.get_finished_spans()[-1].attributes or {})
    assert attrs["memwarden.records.withheld"] == 1
    assert billing.id not in attrs["memwarden.record_ids"]


# -- content is off by default, opt-in ------------------------------------------------------

def _all_values(exporter: InMemorySpanExporter) -> str:
    return json.dumps([[list((s.attributes or {}).items()), [dict(e.attributes or {}) for e in s.events]]
                       for s in exporter.get_finished_spans()], default=str)


def test_no_content_or_query_text_on_spans_by_default(mem: Memory, spans: InMemorySpanExporter,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(tracing.CAPTURE_ENV, raising=False)
    monkeypatch.delenv(tracing.OTEL_CAPTURE_ENV, raising=False)
    tracing.capture_content(None)
    alice = mem.session(ALICE)
    rec = alice.write(SECRET, "ward3/patients/p7")
    alice.search(QUERY, "ward3/patients")
    alice.get(rec.id)
    alice.update(rec.id, SECRET + " and to nuts")
    dump = _all_values(spans)
    assert "latex" not in dump and "allergies" not in dump
    assert not any(k in dump for k in ("gen_ai.memory.query.text", "gen_ai.memory.records"))


def test_content_capture_is_opt_in(mem: Memory, spans: InMemorySpanExporter) -> None:
    tracing.capture_content(True)
    alice = mem.session(ALICE)
    rec = alice.write(SECRET, "ward3/patients/p7")
    mem.session(CAROL).write("Invoice 99 for patient 7", "ward3/billing/p7")
    alice.search(QUERY, "ward3", k=5)
    write_attrs, _, search_attrs = (dict(s.attributes or {}) for s in spans.get_finished_spans())
    assert json.loads(write_attrs["gen_ai.memory.records"]) == [{"id": rec.id, "content": SECRET}]
    assert search_attrs["gen_ai.memory.query.text"] == QUERY
    returned = json.loads(search_attrs["gen_ai.memory.records"])
    assert [r["id"] for r in returned] == [rec.id] and returned[0]["content"] == SECRET
    assert isinstance(returned[0]["score"], float)
    assert "Invoice 99" not in search_attrs["gen_ai.memory.records"]  # withheld stays withheld


def test_capture_switch_follows_env_unless_overridden(monkeypatch: pytest.MonkeyPatch) -> None:
    def env(**values: str) -> bool:
        for name in (tracing.CAPTURE_ENV, tracing.OTEL_CAPTURE_ENV):
            monkeypatch.delenv(name, raising=False)
        for name, value in values.items():
            monkeypatch.setenv(getattr(tracing, name), value)
        tracing.capture_content(None)  # re-read the environment
        return tracing.content_enabled()

    try:
        assert not env()
        assert env(CAPTURE_ENV="1")
        assert env(CAPTURE_ENV="0", OTEL_CAPTURE_ENV="true")
        assert not env(OTEL_CAPTURE_ENV="NO_CONTENT")
        assert not env(CAPTURE_ENV="off")
        env(CAPTURE_ENV="yes")
        tracing.capture_content(False)  # an explicit call wins over the environment
        assert not tracing.content_enabled()
        env()
        tracing.capture_content(True)
        assert tracing.content_enabled()
    finally:
        monkeypatch.undo()
        tracing.capture_content(None)


def test_content_attributes_follow_the_memory_records_schema() -> None:
    class Rec:
        id, content = "mem_1", "x" * (tracing.MAX_CONTENT_CHARS + 10)

    class Hit:
        record, score = Rec(), 0.5

    class Search:
        query = "q"

    out = tracing.content_attributes(Search(), [Hit()])
    assert out["gen_ai.memory.query.text"] == "q"
    (entry,) = json.loads(out["gen_ai.memory.records"])
    assert entry["id"] == "mem_1" and entry["score"] == 0.5
    assert len(entry["content"]) == tracing.MAX_CONTENT_CHARS + 1  # clipped, with an ellipsis


# -- upsert, no-SDK cost ----------------------------------------------------------------------

def test_keyed_write_is_an_upsert() -> None:
    assert tracing.operation_name("write", WriteOp("x", ("a",), key="k")) == "upsert_memory"
    assert tracing.operation_name("write", WriteOp("x", ("a",))) == "create_memory"
    assert tracing.operation_name("write") == "create_memory"
    assert set(tracing.SPAN_NAMES.values()) <= {"create_memory", "update_memory", "search_memory", "delete_memory"}


def test_store_put_spans_are_upserts(mem: Memory, spans: InMemorySpanExporter) -> None:
    from memwarden.integrations.binding import bind_principal

    with bind_principal(ALICE):
        mem.as_store().put(("ward3", "patients", "p9"), "note", {"text": "Patient 9 is fine"})
    assert [s.name for s in spans.get_finished_spans()] == ["upsert_memory"]


def test_without_an_sdk_attributes_are_never_built() -> None:
    if not isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider):
        pytest.skip("a global TracerProvider is installed in this process")
    tracing.set_tracer_provider(None)

    def explode() -> dict:
        raise AssertionError("attributes built for a non-recording span")

    with tracing.operation_span("search") as span:
        assert not span.is_recording()
        tracing.annotate(span, explode, error=True)


# -- metrics ----------------------------------------------------------------------------------

@pytest.fixture
def reader() -> Iterator[InMemoryMetricReader]:
    r = InMemoryMetricReader()
    p = MeterProvider(metric_readers=[r])
    mw_metrics.set_meter_provider(p)
    yield r
    mw_metrics.set_meter_provider(None)
    p.shutdown()


def _points(reader: InMemoryMetricReader) -> dict[str, list]:
    data = reader.get_metrics_data()
    out: dict[str, list] = {}
    for rm in data.resource_metrics if data else ():
        for sm in rm.scope_metrics:
            for metric in sm.metrics:
                out[metric.name] = list(metric.data.data_points)
    return out


def test_metrics_count_operations_denials_quarantines_erasures(reader: InMemoryMetricReader) -> None:
    mw_metrics.record_operation("search", "ok", "allow", (), 0.004)
    mw_metrics.record_operation("search", "denied", "deny", (), 0.001)
    mw_metrics.record_operation("write", "rejected", "allow", ["reject"], 0.002)
    mw_metrics.record_operation("write", "ok", "allow", ["accept", "quarantine"], 0.003)
    mw_metrics.record_operation("erase", "ok", "allow", (), 0.02, records=3)
    points = _points(reader)
    ops = {(p.attributes["memwarden.operation"], p.attributes["memwarden.outcome"]): p.value
           for p in points["memwarden.operations"]}
    assert ops == {("search", "ok"): 1, ("search", "denied"): 1, ("write", "rejected"): 1, ("write", "ok"): 1,
                   ("erase", "ok"): 1}
    assert [p.value for p in points["memwarden.denials"]] == [1]
    assert [p.value for p in points["memwarden.rejections"]] == [1]
    assert [p.value for p in points["memwarden.quarantines"]] == [1]
    assert [p.value for p in points["memwarden.erasures"]] == [1]
    assert [p.value for p in points["memwarden.erased_records"]] == [3]
    durations = points["memwarden.operation.duration"]
    assert sum(p.count for p in durations) == 5
    assert abs(sum(p.sum for p in durations) - 0.030) < 1e-9
    assert all("memwarden.principal" not in p.attributes for pts in points.values() for p in pts)


def test_metrics_cost_nothing_without_a_meter_provider() -> None:
    mw_metrics.set_meter_provider(None)
    from opentelemetry import metrics

    if not isinstance(metrics.get_meter_provider(), mw_metrics._NO_PROVIDER):
        pytest.skip("a global MeterProvider is installed in this process")
    assert not mw_metrics.enabled()
    mw_metrics.record_operation("search", "ok", "allow", (), 0.001)
    assert mw_metrics._cache is None  # no meter, no instrument was ever created


def test_pipeline_records_one_measurement_per_operation(mem: Memory, reader: InMemoryMetricReader) -> None:
    alice = mem.session(ALICE)
    alice.write(SECRET, "ward3/patients/p7", subjects=["p7"])
    alice.search(QUERY, "ward3/patients")
    with pytest.raises(AccessDenied):
        mem.session(CAROL).search(QUERY, "ward3/patients")
    mem.session(DPO).erase(subject="p7")
    points = _points(reader)
    assert sum(p.value for p in points["memwarden.operations"]) == 4
    assert [p.value for p in points["memwarden.denials"]] == [1]
    assert [p.value for p in points["memwarden.erased_records"]] == [1]
    assert sum(p.count for p in points["memwarden.operation.duration"]) == 4


# -- OTLP/HTTP export (the CLI's --otlp), against a local receiver ------------------------------

class _Receiver(BaseHTTPRequestHandler):
    requests: list[bytes] = []
    headers_seen: list[dict[str, str]] = []

    def do_POST(self) -> None:  # http.server's name
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        if self.headers.get("Content-Encoding") == "gzip":
            body = gzip.decompress(body)
        elif self.headers.get("Content-Encoding") == "deflate":
            body = zlib.decompress(body)
        type(self).requests.append(body)
        type(self).headers_seen.append({k.lower(): v for k, v in self.headers.items()})
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def receiver() -> Iterator[SimpleNamespace]:
    """A local OTLP/HTTP receiver: .url, and what it got: .requests (bodies), .headers."""
    handler = type("Receiver", (_Receiver,), {"requests": [], "headers_seen": []})
    server = HTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield SimpleNamespace(url=f"http://127.0.0.1:{server.server_address[1]}", requests=handler.requests,
                          headers=handler.headers_seen)
    server.shutdown()
    server.server_close()


_SCALARS = ("string_value", "int_value", "bool_value", "double_value")


def _decode(requests: list[bytes]) -> list[tuple[str, dict, bytes, bytes, dict]]:
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    out = []
    for body in requests:
        message = ExportTraceServiceRequest()
        message.ParseFromString(body)
        for rs in message.resource_spans:
            resource = {kv.key: kv.value.string_value for kv in rs.resource.attributes}
            for ss in rs.scope_spans:
                for span in ss.spans:
                    attrs = {}
                    for kv in span.attributes:
                        which = kv.value.WhichOneof("value")
                        attrs[kv.key] = getattr(kv.value, which) if which in _SCALARS else kv.value
                    out.append((span.name, attrs, span.span_id, span.parent_span_id, resource))
    return out


def test_traces_endpoint_normalisation() -> None:
    assert otel_setup.traces_endpoint("http://127.0.0.1:4318") == "http://127.0.0.1:4318/v1/traces"
    assert otel_setup.traces_endpoint("http://h:6006/") == "http://h:6006/v1/traces"
    assert otel_setup.traces_endpoint("https://h/api/public/otel/v1/traces") == "https://h/api/public/otel/v1/traces"
    with pytest.raises(ValueError):
        otel_setup.traces_endpoint("127.0.0.1:4318")


def test_setup_tracing_exports_memory_spans_over_otlp_http(tmp_path: Path, policy_file: Path,
                                                           receiver: SimpleNamespace,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    from memwarden.memory.embeddings import HashingEmbedding

    url, requests = receiver.url, receiver.requests
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_HEADERS", "Authorization=Basic%20cGs6c2s=,x-tenant=ward3")
    telemetry = otel_setup.setup_tracing(otlp=url, service_name="test-app", project="p1", set_global=False)
    try:
        with Memory.open(tmp_path / "d", policy=policy_file, embedding=HashingEmbedding()) as mem:
            with telemetry.span("graph run"):
                mem.session(ALICE).write(SECRET, "ward3/patients/p7")
                mem.session(ALICE).search(QUERY, "ward3/patients")
    finally:
        assert telemetry.shutdown()
    assert telemetry.exported == 3 and telemetry.failed == 0
    assert receiver.headers and all(h["authorization"] == "Basic cGs6c2s=" and h["x-tenant"] == "ward3"
                                    for h in receiver.headers)
    decoded = _decode(requests)
    names = sorted(name for name, *_ in decoded)
    assert names == ["create_memory", "graph run", "search_memory"]
    root = next(d for d in decoded if d[0] == "graph run")
    for name, attrs, _, parent, resource in decoded:
        assert resource["service.name"] == "test-app" and resource["openinference.project.name"] == "p1"
        if name != "graph run":
            assert parent == root[2]
            assert attrs["memwarden.principal"] == "alice" and attrs["gen_ai.operation.name"] == name
    assert tracing.tracer() is not None and tracing._provider is None  # shutdown handed back


def test_builtin_exporter_delivers_when_the_official_one_is_absent(receiver: SimpleNamespace) -> None:
    builtin = otel_setup._exporter_classes()[0](otel_setup.traces_endpoint(receiver.url))
    telemetry = otel_setup.setup_tracing(exporters=[builtin], set_global=False)
    try:
        with tracing.operation_span("write") as span:
            tracing.annotate(span, lambda: {"memwarden.operation": "write", "memwarden.record_ids": ["mem_1"]})
    finally:
        telemetry.shutdown()
    assert telemetry.exported == 1
    ((name, attrs, *_),) = _decode(receiver.requests)
    assert name == "create_memory" and attrs["gen_ai.memory.record.id"] == "mem_1"
    assert receiver.headers[0]["content-type"] == "application/x-protobuf"


@pytest.mark.slow
def test_cli_demo_exports_to_otlp(tmp_path: Path, receiver: SimpleNamespace,
                                  capsys: pytest.CaptureFixture[str]) -> None:
    from memwarden.cli import main

    from memwarden.memory.audit import AuditLog

    url, requests = receiver.url, receiver.requests
    assert main(["demo", "--data", str(tmp_path / "demo"), "--otlp", url + "/v1/traces"]) == 0
    out = capsys.readouterr().out
    decoded = _decode(requests)
    memory = [d for d in decoded if d[0].endswith("_memory")]
    log = AuditLog(tmp_path / "demo" / "audit.sqlite3")
    # An erasure's intent has an entry of its own before its final one: one operation, one span.
    finals = [e["seq"] for e in log.entries() if e["outcome"] != "pending"]
    log.close()
    assert len(memory) == len(finals) and f"{len(decoded)} spans exported" in out  # one span per operation
    assert f"open {url} (project memwarden-demo)" in out and "the data is kept in" in out
    assert sorted(d[1]["memwarden.audit.seq"] for d in memory) == finals
    assert {"alice", "bob", "carol"} <= {d[1]["memwarden.principal"] for d in memory}
    (root,) = [d for d in decoded if d[0] == "memwarden demo"]
    assert any(d[1].get("memwarden.outcome") == "denied" for d in memory)
    # OpenInference's LangChain instrumentation is installed (test extras): the team's workers
    # have spans, and every memory call a worker made nests under that worker.
    parent_of, name_of = {d[2]: d[3] for d in decoded}, {d[2]: d[0] for d in decoded}

    def ancestors(span_id: object) -> list[str]:
        out = []
        while (span_id := parent_of.get(span_id)) in name_of:
            out.append(name_of[span_id])
        return out

    worker_of = {"alice": "physician", "bob": "nurse", "carol": "billing", "dpo": "privacy_officer"}
    in_team = [d for d in memory if "team" in ancestors(d[2])]
    assert {d[1]["memwarden.principal"] for d in in_team} == set(worker_of)
    assert all(worker_of[d[1]["memwarden.principal"]] in ancestors(d[2]) for d in in_team)
    assert all(ancestors(d[2])[-1] == "memwarden demo" for d in memory)  # one trace, one root
    # Content stays off every span, the instrumentation's too (its inputs and outputs are hidden).
    dump = json.dumps([d[1] for d in decoded], default=str)
    assert "penicillin" not in dump and "warfarin" not in dump


@pytest.mark.slow
def test_cli_demo_reports_an_unreachable_receiver(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    from memwarden.cli import main

    with HTTPServer(("127.0.0.1", 0), _Receiver) as probe:  # a port nothing listens on afterwards
        port = probe.server_address[1]
    monkeypatch.setattr(otel_setup, "otlp_http_exporter",
                        lambda url, **kw: otel_setup._exporter_classes()[0](otel_setup.traces_endpoint(url),
                                                                             attempts=1, timeout=2))
    assert main(["demo", "--data", str(tmp_path / "demo"), "--otlp", f"http://127.0.0.1:{port}"]) == 0
    assert "could not be delivered" in capsys.readouterr().out


@pytest.mark.slow
def test_cli_demo_rejects_a_bad_url(capsys: pytest.CaptureFixture[str]) -> None:
    from memwarden.cli import main

    assert main(["demo", "--otlp", "localhost:6006"]) == 2
    assert "--otlp" in capsys.readouterr().out


@pytest.mark.slow
def test_a_write_span_ends_after_the_store_call_with_its_real_outcome(mem: Memory, spans: InMemorySpanExporter,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    import time

    from memwarden.memory.partitioned import PartitionedBackend

    called: list[int] = []

    def failing(self, *args, **kwargs):
        called.append(time.time_ns())
        raise RuntimeError("the store is down")

    monkeypatch.setattr(PartitionedBackend, "upsert", failing)
    with pytest.raises(RuntimeError):
        mem.session(Principal("alice")).write("Patient 12 is allergic to penicillin", "ward3/patients/p12")
    [span] = [s for s in spans.get_finished_spans() if s.name == "create_memory"]
    assert called and span.end_time >= called[-1]
    assert span.attributes["memwarden.outcome"] == "error" and span.status.status_code.name == "ERROR"
    entries = [e for e in mem.audit_log.entries() if e["op"] == "write"]
    assert [e["outcome"] for e in entries] == ["ok", "error"]  # audited first, then compensated
