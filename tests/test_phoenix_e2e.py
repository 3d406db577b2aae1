"""End to end against a running Arize Phoenix: the demo's memory spans arrive over OTLP/HTTP.

Runs only when MEMWARDEN_PHOENIX_URL names a Phoenix server, e.g. after ``make dashboard``::

    MEMWARDEN_PHOENIX_URL=http://127.0.0.1:6006 python -m pytest tests/test_phoenix_e2e.py

It runs ``memwarden demo --otlp URL/v1/traces`` in a subprocess and then reads the spans back
through Phoenix's REST API (``GET /v1/projects/{project}/spans``). Then ``memwarden audit
scorecard --phoenix URL --data DIR`` annotates the trace, and the annotations are read back
(``GET /v1/projects/{project}/span_annotations``) and looked for on the rendered trace page.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

URL = os.environ.get("MEMWARDEN_PHOENIX_URL", "").rstrip("/")
PROJECT = "memwarden-demo"  # the demo files its traces under this Phoenix project
ROOT = Path(__file__).resolve().parent.parent

pytestmark = [pytest.mark.system, pytest.mark.skipif(not URL, reason="set MEMWARDEN_PHOENIX_URL (e.g. http://127.0.0.1:6006) to a "
                                                "running Phoenix, e.g. from `make dashboard`, to run this test")]


def _get(path: str, **query: object) -> dict:
    url = f"{URL}{path}" + ("?" + urllib.parse.urlencode(query, doseq=True) if query else "")
    with urllib.request.urlopen(url, timeout=30) as response:  # the operator's URL
        return json.load(response)


def _spans(since: datetime) -> list[dict]:
    spans, cursor = [], None
    while True:
        query: dict[str, object] = {"limit": 1000, "start_time": since.isoformat()}
        if cursor:
            query["cursor"] = cursor
        try:
            page = _get(f"/v1/projects/{urllib.parse.quote(PROJECT)}/spans", **query)
        except urllib.error.HTTPError as exc:
            # Phoenix makes the project when its first span is ingested, which it does
            # asynchronously after the export returned: until then the project is not found.
            if exc.code == 404 and not spans:
                return []
            raise
        spans += page.get("data", [])
        cursor = page.get("next_cursor")
        if not cursor:
            return spans


def test_demo_spans_arrive_in_phoenix(tmp_path: Path) -> None:
    since = datetime.now(timezone.utc) - timedelta(seconds=1)
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    run = subprocess.run([sys.executable, "-m", "memwarden.cli", "demo", "--data", str(tmp_path / "demo"),
                          "--otlp", f"{URL}/v1/traces"], capture_output=True, text=True, timeout=600, env=env,
                         check=False)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert "could not be delivered" not in run.stdout, run.stdout[-2000:]
    from memwarden.memory.audit import AuditLog

    log = AuditLog(tmp_path / "demo" / "audit.sqlite3")
    entries = list(log.entries())
    log.close()
    # An erasure writes its intent first and a completing entry after; its one span carries both.
    audited = sum(1 for e in entries if e.get("outcome") != "pending")

    deadline, memory, roots = time.monotonic() + 60, [], []
    while time.monotonic() < deadline:  # Phoenix ingests asynchronously
        spans = _spans(since)
        roots = [s for s in spans if s["name"] == "memwarden demo"]
        memory = [s for s in spans if s["name"].endswith("_memory") and roots
                  and s["context"]["trace_id"] == roots[-1]["context"]["trace_id"]]
        if roots and len(memory) >= audited:
            break
        time.sleep(1)
    assert roots, f"no demo root span in Phoenix project {PROJECT!r} at {URL}"
    assert len(memory) == audited, [s["name"] for s in memory]  # one span per audited operation
    root = roots[-1]
    # Every memory span is in the demo's one trace; those a worker made sit under that worker
    # (OpenInference's LangChain instrumentation, in the test extras, gives workers spans).
    trace = [s for s in spans if s["context"]["trace_id"] == root["context"]["trace_id"]]
    parent_of = {s["context"]["span_id"]: s["parent_id"] for s in trace}
    name_of = {s["context"]["span_id"]: s["name"] for s in trace}

    def ancestors(span: dict) -> list[str]:
        out, at = [], span["context"]["span_id"]
        while (at := parent_of.get(at)) in name_of:
            out.append(name_of[at])
        return out

    assert all(ancestors(s)[-1] == "memwarden demo" for s in memory)
    worker_of = {"alice": "physician", "bob": "nurse", "carol": "billing", "dpo": "privacy_officer"}
    in_team = [s for s in memory if "team" in ancestors(s)]
    assert {s["attributes"]["memwarden.principal"] for s in in_team} == set(worker_of)
    for span in in_team:
        assert worker_of[span["attributes"]["memwarden.principal"]] in ancestors(span)
        assert span["attributes"]["memwarden.decision"] in ("allow", "deny")
    assert {"create_memory", "search_memory"} <= {s["name"] for s in memory}
    covered = [s["attributes"]["memwarden.audit.seq"] for s in memory]
    covered += [s["attributes"]["memwarden.audit.completes"] for s in memory
                if s["attributes"].get("memwarden.audit.completes") is not None]
    assert sorted(covered) == list(range(1, len(entries) + 1))
    for span in memory:
        attrs = span["attributes"]
        assert attrs["gen_ai.operation.name"] == span["name"]
        assert attrs["memwarden.principal"]
        assert attrs["memwarden.decision"] in {"allow", "deny"} and attrs["memwarden.rule"]
        assert isinstance(attrs["memwarden.audit.seq"], int)
    # A denial is a governed outcome: it does not turn the trace red (docs/observability.md).
    denied = [s for s in memory if s["attributes"]["memwarden.outcome"] == "denied"]
    assert denied and all(s["status_code"] != "ERROR" for s in denied)
    assert not any("error.type" in s["attributes"] for s in denied)
    assert all(s["attributes"]["memwarden.namespace"] and s["attributes"]["memwarden.rule"] for s in denied)
    assert root["status_code"] != "ERROR"
    searches = [s for s in memory if s["name"] == "search_memory" and s["attributes"]["memwarden.outcome"] == "ok"]
    assert all("memwarden.records.withheld" in s["attributes"] for s in searches)
    # OpenInference: Phoenix files searches as retrievals, with the returned records as documents.
    # (Phoenix lifts openinference.span.kind out of the attributes into span_kind.)
    assert all(s["span_kind"] == "RETRIEVER" for s in searches)
    assert any(s["attributes"].get("retrieval.documents.0.document.id") for s in searches)
    assert {s["span_kind"] for s in memory if s["name"] != "search_memory"} == {"CHAIN"}
    assert all(json.loads(s["attributes"]["input.value"])["principal"] == s["attributes"]["memwarden.principal"]
               for s in memory)
    # Content stays off unless opted in.
    assert not any("gen_ai.memory.query.text" in s["attributes"] for s in memory)

    # The governance scorecard, expected from the audit log's entries (counted here on their own).
    expected: dict[str, dict[str, int]] = {}
    for entry in entries:
        if entry["outcome"] == "pending":
            continue
        row = expected.setdefault(entry["principal"], {"returned": 0, "withheld": 0, "denied": 0})
        if entry["outcome"] == "denied":
            row["denied"] += 1
        elif entry["outcome"] == "ok" and entry["op"] in ("search", "get", "list", "history"):
            row["returned"] += entry.get("returned") or 0
            row["withheld"] += entry.get("withheld") or 0
    assert any(r["withheld"] for r in expected.values()) and any(r["denied"] for r in expected.values())
    # For any OTLP backend: the root span carries it as attributes (setup_tracing(scorecard=True)).
    assert json.loads(root["attributes"]["memwarden.scorecard"]) == expected
    assert root["attributes"]["memwarden.scorecard.withheld"] == sum(r["withheld"] for r in expected.values())
    # For Phoenix: span annotations on the root span, counted from the verified audit log.
    trace_id = root["context"]["trace_id"]
    run = subprocess.run([sys.executable, "-m", "memwarden.cli", "audit", "scorecard", "--phoenix", URL,
                          "--data", str(tmp_path / "demo"), "--trace", trace_id], capture_output=True, text=True,
                         timeout=300, env=env, check=False)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    notes = _get(f"/v1/projects/{urllib.parse.quote(PROJECT)}/span_annotations",
                 span_ids=root["context"]["span_id"], limit=1000)["data"]
    got = {n["name"]: n for n in notes if n["name"].startswith("memwarden governance")}
    assert set(got) == {"memwarden governance"} | {f"memwarden governance: {p}" for p in expected}
    for principal, row in expected.items():
        note = got[f"memwarden governance: {principal}"]
        assert {k: note["metadata"][k] for k in row} == row and note["metadata"]["source"] == "audit log"
        assert note["result"]["label"] == f"{row['returned']} returned, {row['withheld']} withheld, {row['denied']} denied"
    total = got["memwarden governance"]["metadata"]
    assert total["withheld"] == sum(r["withheld"] for r in expected.values())
    assert total["denied"] == sum(r["denied"] for r in expected.values())

    # The trace view as an operator sees it: rendered in headless Chromium and kept as an artifact.
    from tests.test_flows import CHROMIUM, _chromium, decode_png

    if not Path(CHROMIUM).exists():
        pytest.skip(f"{CHROMIUM} is missing: the spans arrived, but no screenshot was taken")
    shot = ROOT / "tests" / "output" / "phoenix-trace.png"  # kept by CI as an artefact
    shot.parent.mkdir(exist_ok=True)
    project_id = next(p["id"] for p in _get("/v1/projects")["data"] if p["name"] == PROJECT)
    trace_url = f"{URL}/projects/{project_id}/traces/{root['context']['trace_id']}"
    run = _chromium(f"--screenshot={shot}", "--window-size=1400,900", "--virtual-time-budget=20000", trace_url,
                    profile=tmp_path / "chromium", timeout=600)  # Phoenix's page is heavy: ~50 s on a busy 2-core machine
    assert run.returncode == 0 and shot.is_file(), run.stderr[-2000:]
    pixels = decode_png(shot.read_bytes())[..., :3].astype(float)
    assert pixels.std() > 10, "the Phoenix page rendered blank"
    # Phoenix's trace page lists the root span's annotations: the scorecard is on the page.
    run = _chromium("--dump-dom", "--virtual-time-budget=20000", trace_url, profile=tmp_path / "chromium-dom",
                    timeout=600)
    page = run.stdout.decode("utf-8", "replace")
    assert all(f"memwarden governance: {p}" in page for p in expected), page[-2000:]
