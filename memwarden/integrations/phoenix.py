"""The governance scorecard of each trace, attached in Arize Phoenix as span annotations.

:func:`trace_scorecards` groups a project's spans (read back with :func:`fetch_spans`, Phoenix's
``GET /v1/projects/{project}/spans``) by trace and counts each trace's memwarden memory spans.
Trace ids live on spans only, so spans say which operations belong to which trace. The counts
come from the audit log when it is given: each memory span names its entry
(``memwarden.audit.seq``), a span is the log's when that entry has the span's principal and
operation and was written while the span was open, and then the entry is what is counted. A
trace mixing the log's spans with others stops everything; a trace with none of the log's
spans (another store's, an earlier run's) is left out. Each entry is one span's: two spans naming
one entry (a replayed copy, in the same trace or another) stop everything too. Spans are
whatever reached the collector, which anyone who can reach it can send; the audit log is hash-chained, MAC'd and
verified first. Without the log, the spans' own ``memwarden.*`` attributes are counted.

:func:`annotations` turns a scorecard into annotations on the trace's root span (one per
principal and one for the whole trace), posted with ``POST /v1/span_annotations``. Each has a
fixed identifier, so posting again replaces rather than duplicates. Nothing but principals and
counts goes into them.
"""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterable, Mapping
from datetime import datetime, timedelta
from typing import Any

from pydantic import BaseModel

from memwarden.integrations.governance import GovernedOp, Scorecard, op_from_entry, op_from_span, tally

__all__ = ["ANNOTATION_PREFIX", "TraceScorecard", "annotations", "fetch_spans", "post_annotations",
           "trace_scorecards"]

#: Every annotation's name starts with it (``memwarden governance: alice``).
ANNOTATION_PREFIX = "memwarden governance"
#: Spans and entries share one clock; Phoenix keeps microseconds, the entry too.
_SLACK = timedelta(milliseconds=1)
_IDENTIFIER = "memwarden-scorecard"  # Phoenix replaces an annotation of the same name, span and identifier


class TraceScorecard(BaseModel):
    """The scorecard of one trace and the span it is attached to."""

    trace_id: str
    root_span_id: str
    root_name: str
    source: str  # "audit log" or "spans"
    card: Scorecard


def _base(url: str) -> str:
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError(f"not an http(s) URL of a Phoenix server: {url!r}")
    return url.rstrip("/")


#: The largest answer read from Phoenix (one page of spans is far smaller); a larger one is refused.
MAX_ANSWER_BYTES = 64 * 1024 * 1024
#: The most pages of spans read from one project, so that a server repeating cursors cannot loop.
MAX_PAGES = 10_000


def _request(url: str, data: Any = None) -> Any:
    """Phoenix's JSON answer; ValueError for one too large or not JSON (the server is not
    trusted: it holds what anyone who can reach the collector sent)."""
    headers = {"Accept": "application/json"}
    if data is not None:
        headers["Content-Type"] = "application/json"
    if key := os.environ.get("PHOENIX_API_KEY"):  # Phoenix's own variable, for a server with auth on
        headers["Authorization"] = f"Bearer {key}"
    body = json.dumps(data).encode("utf-8") if data is not None else None
    request = urllib.request.Request(url, data=body, headers=headers, method="POST" if body else "GET")
    with urllib.request.urlopen(request, timeout=30) as response:  # http(s) only: _base checked it
        raw = response.read(MAX_ANSWER_BYTES + 1)
    if len(raw) > MAX_ANSWER_BYTES:
        raise ValueError(f"the answer to {url} is larger than {MAX_ANSWER_BYTES} bytes; refused")
    try:
        return json.loads(raw)
    except ValueError as exc:  # also bytes that are not UTF-8
        raise ValueError(f"the answer to {url} is not JSON ({exc}): is this a Phoenix server?") from None


def _span_page(page: Any, url: str) -> tuple[list[dict[str, Any]], str | None]:
    """The spans and next cursor of one page, checked: a span has a context with string trace
    and span ids, and its attributes, if any, are an object (ValueError otherwise)."""
    if not isinstance(page, dict) or not isinstance(page.get("data"), list):
        raise ValueError(f"the answer to {url} is not a page of spans (an object with a \"data\" list)")
    for i, span in enumerate(page["data"]):
        context = span.get("context") if isinstance(span, dict) else None
        if (not isinstance(context, dict) or not isinstance(context.get("trace_id"), str)
                or not isinstance(context.get("span_id"), str)
                or not isinstance(span.get("attributes", {}), dict | None)
                or not isinstance(span.get("parent_id"), str | None)):
            raise ValueError(f"span {i} of the answer to {url} is not a span (a context with string trace_id "
                             "and span_id, an attributes object, a string parent_id)")
    cursor = page.get("next_cursor")
    if not isinstance(cursor, str | None):
        raise ValueError(f"the answer to {url} has a next_cursor that is not a string")
    return page["data"], cursor


def fetch_spans(url: str, project: str, *, trace_ids: Iterable[str] = ()) -> list[dict[str, Any]]:
    """Every span of ``project`` in the Phoenix at ``url`` (only those of ``trace_ids`` if given)."""
    base, wanted = _base(url), set(trace_ids)
    spans: list[dict[str, Any]] = []
    cursor, seen = None, set()
    for _ in range(MAX_PAGES):
        query: dict[str, Any] = {"limit": 1000}
        if cursor:
            query["cursor"] = cursor
        if wanted:
            query["trace_id"] = sorted(wanted)
        url_ = f"{base}/v1/projects/{urllib.parse.quote(project, safe='')}/spans?" + urllib.parse.urlencode(
            query, doseq=True)
        try:
            answer = _request(url_)
        except urllib.error.HTTPError as exc:
            if exc.code != 404:
                raise
            # Phoenix makes a project when the first span filed under it arrives, and ingests
            # asynchronously: right after a run, or with a misspelt --project, there is none.
            raise ValueError(f"Phoenix at {base} has no project {project!r} (it makes one when the "
                             "project's first span arrives, a few seconds after the run that sent "
                             "it; check --project)") from None
        page, cursor = _span_page(answer, url_)
        spans += [s for s in page if not wanted or s["context"]["trace_id"] in wanted]
        if not cursor:
            return spans
        if cursor in seen:
            raise ValueError(f"the answer to {url_} repeats the cursor of an earlier page: the pages never end")
        seen.add(cursor)
    raise ValueError(f"project {project!r} has more than {MAX_PAGES} pages of spans; name traces with --trace")


def trace_scorecards(spans: Iterable[Mapping[str, Any]], entries: Mapping[int, Mapping[str, Any]] | None = None,
                     *, every_trace: bool = False) -> list[TraceScorecard]:
    """One scorecard per trace that has memwarden memory spans, oldest trace first.

    ``entries``: the audit log by sequence number. Given, the counts are the entries', and a
    span is this log's when its entry has its principal and operation and was written while
    the span was open. A trace none of whose memory spans is this log's (another store, an
    earlier run) is left out, unless ``every_trace`` (the caller named the traces); a trace
    with some spans of this log and some not raises ValueError naming the first stranger."""
    traces: dict[str, list[Mapping[str, Any]]] = {}
    for span in sorted(spans, key=lambda s: str(s.get("start_time") or "")):
        traces.setdefault(span["context"]["trace_id"], []).append(span)
    out = []
    claimed: dict[int, str] = {}  # audit entry -> the span that named it first
    for trace_id, members in traces.items():
        memory = [(s, op) for s in members if (op := op_from_span(s.get("attributes") or {})) is not None]
        if not memory:
            continue
        if entries is not None:
            audited = [(s, _entry_of(s, op, entries)) for s, op in memory]
            strangers = [(s, why) for s, (_, why) in audited if why]
            for span, (entry, _) in audited:
                # One operation, one span: a copy of a genuine span (in this trace or another)
                # passes every other check and would count its entry twice.
                if entry is None:
                    continue
                sid, seq = span["context"]["span_id"], span["attributes"]["memwarden.audit.seq"]
                if seq in claimed:
                    raise ValueError(f"span {sid} ({span.get('name')}, trace {trace_id}) names audit entry {seq}, "
                                     f"which span {claimed[seq]} names too (replayed)")
                claimed[seq] = sid
            if len(strangers) == len(audited) and not every_trace:
                continue
            if strangers:
                span, why = strangers[0]
                raise ValueError(f"span {span['context']['span_id']} ({span.get('name')}, trace {trace_id}) {why}")
            ops = [op_from_entry(entry) for _, (entry, _) in audited if entry is not None]
        else:
            ops = [op for _, op in memory]
        ids = {s["context"]["span_id"] for s in members}
        # The span whose parent is not in the trace; a trace whose parents all point inside
        # it (a cycle only a forger sends) gets its earliest span.
        root = next((s for s in members if s.get("parent_id") not in ids), members[0])
        out.append(TraceScorecard(trace_id=trace_id, root_span_id=root["context"]["span_id"],
                                  root_name=str(root.get("name")), card=tally(ops),
                                  source="audit log" if entries is not None else "spans"))
    return out


def _time(text: object) -> datetime | None:
    try:
        return datetime.fromisoformat(str(text))
    except ValueError:
        return None


def _entry_of(span: Mapping[str, Any], op: GovernedOp,
              entries: Mapping[int, Mapping[str, Any]]) -> tuple[Mapping[str, Any] | None, str | None]:
    """The audit entry of a memory span, or why it has none in this log."""
    seq = (span.get("attributes") or {}).get("memwarden.audit.seq")
    entry = entries.get(seq) if isinstance(seq, int) and not isinstance(seq, bool) else None
    if entry is None:
        return None, f"names audit entry {seq!r}, which this audit log does not have"
    if entry.get("principal") != op.principal or entry.get("op") != op.op:
        return None, (f"says {op.principal!r} did {op.op!r}, but audit entry {seq} says "
                      f"{entry.get('principal')!r} did {entry.get('op')!r}")
    written, start, end = _time(entry.get("ts")), _time(span.get("start_time")), _time(span.get("end_time"))
    if written is None or start is None or end is None or not start - _SLACK <= written <= end + _SLACK:
        return None, f"was open from {span.get('start_time')} to {span.get('end_time')}, but audit entry {seq} " \
                     f"was written at {entry.get('ts')}"
    return entry, None


def annotations(trace: TraceScorecard) -> list[dict[str, Any]]:
    """The span annotations of one trace's scorecard, for ``POST /v1/span_annotations``."""
    rows = [*trace.card.principals.values(), trace.card.total()]
    out = []
    for row in rows:
        whole = row.principal == "*"
        out.append({
            "span_id": trace.root_span_id,
            "name": ANNOTATION_PREFIX if whole else f"{ANNOTATION_PREFIX}: {row.principal}",
            "annotator_kind": "CODE",
            "identifier": _IDENTIFIER,
            "result": {"label": row.label, "score": float(row.withheld + row.denied),
                       "explanation": (f"{'all principals' if whole else row.principal}: {row.reads} read(s) returned "
                                       f"{row.returned} record(s); the policy withheld {row.withheld} and denied "
                                       f"{row.denied} operation(s); counted from the {trace.source}")},
            "metadata": {"principal": row.principal, "returned": row.returned, "withheld": row.withheld,
                         "denied": row.denied, "reads": row.reads, "operations": row.operations,
                         "source": trace.source},
        })
    return out


def post_annotations(url: str, payload: list[dict[str, Any]]) -> int:
    """Post span annotations to the Phoenix at ``url``; returns how many it took."""
    if not payload:
        return 0
    where = f"{_base(url)}/v1/span_annotations?sync=true"
    answer = _request(where, {"data": payload})
    if not isinstance(answer, dict) or not isinstance(answer.get("data") or [], list):
        raise ValueError(f"the answer to {where} is not Phoenix's (an object with a \"data\" list)")
    return len(answer.get("data") or ())
