"""The governance scorecard per trace: counted from spans or from the audit log, posted to
Phoenix as span annotations (a fake Phoenix here; tests/test_phoenix_e2e.py runs a real one),
and kept on the root span for any OTLP backend."""

from __future__ import annotations

import json
import threading
from datetime import datetime, timedelta, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memwarden.cli import main
from memwarden.integrations.governance import GovernedOp, op_from_span, tally
from memwarden.integrations.phoenix import annotations, trace_scorecards
from memwarden.memory.audit import AuditLog

pytestmark = pytest.mark.unit

T0 = datetime(2026, 12, 1, 9, 0, tzinfo=timezone.utc)


def _span(trace: str, sid: str, parent: str | None, *, seq: int | None = None, principal: str | None = None,
          op: str = "search", outcome: str = "ok", returned: int = 0, withheld: int = 0, at: int = 0,
          **extra: Any) -> dict[str, Any]:
    attrs: dict[str, Any] = dict(extra)
    if principal is not None:
        attrs |= {"memwarden.operation": op, "memwarden.principal": principal, "memwarden.outcome": outcome,
                  "memwarden.records.returned": returned, "memwarden.records.withheld": withheld,
                  "memwarden.audit.seq": seq}
    return {"name": f"{op}_memory" if principal else "root", "context": {"trace_id": trace, "span_id": sid},
            "parent_id": parent, "attributes": attrs,
            "start_time": (T0 + timedelta(seconds=at)).isoformat(),
            "end_time": (T0 + timedelta(seconds=at, milliseconds=500)).isoformat()}


def _entry(seq: int, principal: str, op: str = "search", outcome: str = "ok", returned: int = 0,
           withheld: int = 0, at: int = 0) -> dict[str, Any]:
    return {"seq": seq, "principal": principal, "op": op, "outcome": outcome, "returned": returned,
            "withheld": withheld, "ts": (T0 + timedelta(seconds=at, milliseconds=200)).isoformat()}


def test_counts_per_principal_from_span_attributes() -> None:
    spans = [_span("t1", "r", None),
             _span("t1", "a", "r", seq=1, principal="alice", returned=3, withheld=1),
             _span("t1", "b", "r", seq=2, principal="carol", returned=2, withheld=9),
             _span("t1", "c", "b", seq=3, principal="carol", op="write", outcome="denied"),
             _span("t1", "d", "r", seq=4, principal="carol", op="write")]
    [trace] = trace_scorecards(spans)
    assert trace.root_span_id == "r" and trace.source == "spans"
    carol = trace.card.principals["carol"]
    assert (carol.returned, carol.withheld, carol.denied, carol.reads, carol.operations) == (2, 9, 1, 1, 3)
    assert trace.card.total().withheld == 10


@given(st.lists(st.tuples(st.sampled_from(["alice", "bob", "ｂｏｂ"]), st.sampled_from(["search", "get", "write"]),
                          st.sampled_from(["ok", "denied", "rejected"]), st.integers(-3, 50), st.integers(-3, 50)),
                max_size=30))
def test_the_total_is_the_sum_of_the_rows_and_only_ok_reads_count_records(ops: list[tuple]) -> None:
    card = tally(GovernedOp(principal=p, op=o, outcome=r, returned=max(n, 0), withheld=max(w, 0))
                 for p, o, r, n, w in ops)
    total = card.total()
    assert total.returned == sum(max(n, 0) for _, o, r, n, _ in ops if r == "ok" and o != "write")
    assert total.denied == sum(1 for *_, r, _n, _w in ops if r == "denied")
    assert total.operations == len(ops) == sum(r.operations for r in card.principals.values())


def test_a_count_that_is_not_a_count_counts_nothing() -> None:
    op = op_from_span({"memwarden.operation": "search", "memwarden.principal": "x", "memwarden.outcome": "ok",
                       "memwarden.records.returned": True, "memwarden.records.withheld": -5})
    assert op is not None and (op.returned, op.withheld) == (0, 0)
    assert op_from_span({"memwarden.principal": "x"}) is None  # not a memory span


def test_counts_come_from_the_audit_log_when_given() -> None:
    spans = [_span("t1", "r", None), _span("t1", "a", "r", seq=1, principal="alice", returned=99, withheld=0)]
    [trace] = trace_scorecards(spans, {1: _entry(1, "alice", returned=3, withheld=4)})
    assert trace.source == "audit log"
    assert (trace.card.principals["alice"].returned, trace.card.principals["alice"].withheld) == (3, 4)


def test_a_forged_span_in_the_logs_trace_stops_everything() -> None:
    entries = {1: _entry(1, "alice"), 2: _entry(2, "carol", at=5)}
    genuine = [_span("t1", "r", None), _span("t1", "a", "r", seq=1, principal="alice")]
    # Claims carol's entry for bob; names an entry the log lacks; reuses an entry written while it was not open.
    for forged in (_span("t1", "f", "r", seq=2, principal="bob", at=5), _span("t1", "f", "r", seq=7, principal="alice"),
                   _span("t1", "f", "r", seq=2, principal="carol", at=60)):
        with pytest.raises(ValueError, match="span f"):
            trace_scorecards([*genuine, forged], entries)


def test_another_stores_traces_are_left_out_unless_named() -> None:
    entries = {1: _entry(1, "alice")}
    spans = [_span("mine", "r", None), _span("mine", "a", "r", seq=1, principal="alice"),
             # An earlier run: same seq, principal and op, but written at another time.
             _span("old", "r2", None, at=-3600), _span("old", "b", "r2", seq=1, principal="alice", at=-3600)]
    assert [t.trace_id for t in trace_scorecards(spans, entries)] == ["mine"]
    with pytest.raises(ValueError, match="trace old"):
        trace_scorecards(spans, entries, every_trace=True)


def test_annotations_carry_principals_and_counts_only() -> None:
    spans = [_span("t1", "r", None, **{"input.value": "SECRET-ROOT"}),
             _span("t1", "a", "r", seq=1, principal="alice", returned=2, **{"gen_ai.memory.query.text": "SECRET",
                                                                             "retrieval.documents.0.document.content": "SECRET"})]
    [trace] = trace_scorecards(spans)
    payload = annotations(trace)
    assert "SECRET" not in json.dumps(payload)
    assert {a["name"] for a in payload} == {"memwarden governance", "memwarden governance: alice"}
    assert all(a["span_id"] == "r" and a["identifier"] == "memwarden-scorecard" for a in payload)
    alice = next(a for a in payload if a["name"].endswith("alice"))
    assert alice["result"]["label"] == "2 returned, 0 withheld, 0 denied"
    assert alice["metadata"] | {} == {"principal": "alice", "returned": 2, "withheld": 0, "denied": 0, "reads": 1,
                                      "operations": 1, "source": "spans"}


class _FakePhoenix(BaseHTTPRequestHandler):
    spans: list[dict[str, Any]] | None = []
    posted: list[dict[str, Any]] = []

    def log_message(self, *args: Any) -> None:
        pass

    def _send(self, doc: Any) -> None:
        body = json.dumps(doc).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:  # the name http.server calls
        if self.spans is None:  # as Phoenix answers for a project no span has been filed under yet
            self.send_error(404, "Project with name memwarden-demo not found")
            return
        self._send({"data": self.spans, "next_cursor": None})

    def do_POST(self) -> None:
        doc = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.posted.extend(doc["data"])
        self._send({"data": [{"id": str(i)} for i, _ in enumerate(doc["data"])]})


@pytest.fixture
def phoenix():
    _FakePhoenix.spans, _FakePhoenix.posted = [], []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _FakePhoenix)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def _logged(tmp_path: Path) -> tuple[Path, list[dict[str, Any]]]:
    log = AuditLog(tmp_path / "audit.sqlite3")
    log.append({"op": "search", "principal": "alice", "outcome": "ok", "returned": 2, "withheld": 1})
    log.append({"op": "write", "principal": "carol", "outcome": "denied"})
    entries = list(log.entries())
    log.close()
    spans = [{"name": "root", "context": {"trace_id": "t1", "span_id": "r"}, "parent_id": None, "attributes": {},
              "start_time": entries[0]["ts"], "end_time": entries[-1]["ts"]}]
    for e, op in zip(entries, ("search", "write")):
        span = _span("t1", f"s{e['seq']}", "r", seq=e["seq"], principal=e["principal"], op=op, outcome=e["outcome"])
        span["start_time"] = span["end_time"] = e["ts"]
        spans.append(span)
    return tmp_path, spans


def test_the_command_posts_the_logs_counts(phoenix: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data, _FakePhoenix.spans = _logged(tmp_path)
    assert main(["audit", "scorecard", "--phoenix", phoenix, "--data", str(data)]) == 0
    assert "3 span annotation(s) posted" in capsys.readouterr().out
    got = {a["name"]: a["metadata"] for a in _FakePhoenix.posted}
    assert got["memwarden governance: alice"]["withheld"] == 1 and got["memwarden governance: carol"]["denied"] == 1
    assert {m["source"] for m in got.values()} == {"audit log"}


def test_a_tampered_log_posts_nothing(phoenix: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import sqlite3

    data, _FakePhoenix.spans = _logged(tmp_path)
    with sqlite3.connect(data / "audit.sqlite3") as db:
        db.execute("UPDATE audit SET body = replace(body, '\"withheld\":1', '\"withheld\":0') WHERE seq = 1")
    assert main(["audit", "scorecard", "--phoenix", phoenix, "--data", str(data)]) == 1
    assert "TAMPERED" in capsys.readouterr().out and _FakePhoenix.posted == []


def test_a_span_the_log_contradicts_posts_nothing(phoenix: str, tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    data, spans = _logged(tmp_path)
    spans[1]["attributes"]["memwarden.principal"] = "mallory"
    _FakePhoenix.spans = spans
    assert main(["audit", "scorecard", "--phoenix", phoenix, "--data", str(data)]) == 1
    assert "MISMATCH" in capsys.readouterr().out and _FakePhoenix.posted == []


def test_an_unreachable_phoenix_is_a_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["audit", "scorecard", "--phoenix", "http://127.0.0.1:9", "--dry-run"]) == 2
    assert "cannot read spans" in capsys.readouterr().out
    assert main(["audit", "scorecard", "--phoenix", "file:///etc/passwd"]) == 2
    assert "not an http(s) URL" in capsys.readouterr().out


def test_a_project_phoenix_does_not_have_yet_is_a_clear_error(phoenix: str, tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    _FakePhoenix.spans = None
    assert main(["audit", "scorecard", "--phoenix", phoenix, "--dry-run"]) == 2
    out = capsys.readouterr().out
    assert "has no project 'memwarden-demo'" in out and "check --project" in out and "404" not in out


def test_the_root_span_carries_the_scorecard_for_any_backend() -> None:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from memwarden.integrations.governance_spans import ScorecardSpanProcessor

    provider, exported = TracerProvider(), InMemorySpanExporter()
    provider.add_span_processor(ScorecardSpanProcessor())
    provider.add_span_processor(SimpleSpanProcessor(exported))
    tracer = provider.get_tracer("t")

    def memory(principal: str, outcome: str = "ok", returned: int = 0, withheld: int = 0) -> None:
        with tracer.start_as_current_span("search_memory", attributes={
                "memwarden.operation": "search", "memwarden.principal": principal, "memwarden.outcome": outcome,
                "memwarden.records.returned": returned, "memwarden.records.withheld": withheld}):
            pass

    with tracer.start_as_current_span("run"):
        memory("alice", returned=3)
        with tracer.start_as_current_span("worker"):
            memory("carol", returned=1, withheld=4)
            memory("carol", outcome="denied")
    memory("bob", returned=7)  # its own root: nothing is added to it
    spans = {s.name + str(i): s for i, s in enumerate(exported.get_finished_spans())}
    root = next(s for s in spans.values() if s.name == "run")
    assert root.attributes["memwarden.scorecard.returned"] == 4
    assert root.attributes["memwarden.scorecard.withheld"] == 4
    assert root.attributes["memwarden.scorecard.denied"] == 1
    assert json.loads(root.attributes["memwarden.scorecard"]) == {
        "alice": {"returned": 3, "withheld": 0, "denied": 0}, "carol": {"returned": 1, "withheld": 4, "denied": 1}}
    lone = next(s for s in spans.values() if s.attributes.get("memwarden.principal") == "bob")
    assert "memwarden.scorecard" not in lone.attributes


def test_a_trace_whose_parents_form_a_cycle_is_still_counted() -> None:
    spans = [_span("t1", "a", "b", seq=1, principal="alice", returned=1),
             _span("t1", "b", "a", seq=2, principal="alice", returned=2, at=1)]
    [trace] = trace_scorecards(spans)
    assert trace.root_span_id == "a" and trace.card.principals["alice"].returned == 3
