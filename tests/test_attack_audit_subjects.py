"""Attacks on the new audit surfaces. The promise that after ``erase(subject=S)`` nothing
readable in the audit log names S (docs/erasure.md, "Subjects in the audit log"): paths other
than ``subject_tags`` by which a subject id reaches an entry in clear. The scorecard
(``memwarden audit scorecard``): a replayed span must not count an audit entry twice, and a
hostile Phoenix gets a clear error, never a traceback or a terminal escape."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from memwarden import Memory, Principal, WriteRejected
from memwarden.cli import main
from memwarden.core.errors import InvalidRequest
from memwarden.integrations.phoenix import trace_scorecards

pytestmark = pytest.mark.integration

ALICE = Principal("alice", roles=["physician"])
DPO = Principal("dpo")
# Not part of any namespace, so any occurrence in a file is the subject id itself.
SUBJECT = "patient-7f3a"
CONTENT = "Allergic to penicillin"


def _log_bytes(mem: Memory) -> bytes:
    data = Path(mem.audit_log.path).parent
    return b"".join(p.read_bytes() for p in sorted(data.glob("audit*")) if p.is_file())


@pytest.fixture
def erased(mem: Memory) -> Memory:
    mem.session(ALICE).write(CONTENT, "ward3/patients/p12", subjects=[SUBJECT])
    mem.session(DPO).erase(subject=SUBJECT)
    assert SUBJECT.encode() not in _log_bytes(mem)
    return mem


def test_a_refused_re_ingest_does_not_name_the_erased_subject_in_the_log(erased: Memory) -> None:
    # The tombstone refusal's message names the subject; the audit entry kept the message.
    with pytest.raises(WriteRejected, match=SUBJECT):  # the caller, who named it, is told
        erased.session(ALICE).write(CONTENT, "ward3/patients/p12", subjects=[SUBJECT])
    entry = list(erased.audit_log.entries())[-1]
    assert entry["outcome"] == "rejected" and entry["error"].startswith("WriteRejected: ")
    assert SUBJECT not in entry["error"]
    # Not lost: the entry says which subject by its keyed hash, as a write's entry does.
    assert entry["subject_tags"] == [erased.audit_log.subject_tag(SUBJECT)]
    assert SUBJECT.encode() not in _log_bytes(erased)


@pytest.mark.parametrize("spelling", [SUBJECT + " ", SUBJECT + "\u200b", "\t" + SUBJECT])
def test_an_invalid_spelling_of_the_subject_is_not_kept_in_clear(erased: Memory, spelling: str) -> None:
    # A typo in an erasure or a write (trailing space, invisible character) is refused with a
    # message quoting the value, which holds the subject id.
    with pytest.raises(InvalidRequest):
        erased.session(DPO).erase(subject=spelling)
    with pytest.raises(InvalidRequest):
        erased.session(ALICE).write("Sleeps badly", "ward3/patients/p12", subjects=["p13", spelling])
    entries = list(erased.audit_log.entries())[-2:]
    assert [e["outcome"] for e in entries] == ["invalid", "invalid"]
    assert all("InvalidRequest: " in e["error"] and "7f3a" not in e["error"] for e in entries)
    assert SUBJECT.encode() not in _log_bytes(erased)


# -- the scorecard: a replayed span, a malicious Phoenix ---------------------------------------

T0 = datetime(2026, 12, 1, 9, 0, tzinfo=timezone.utc)


def _memory_span(trace: str, sid: str, seq: int, principal: str = "alice") -> dict[str, Any]:
    return {"name": "search_memory", "context": {"trace_id": trace, "span_id": sid}, "parent_id": None,
            "attributes": {"memwarden.operation": "search", "memwarden.principal": principal,
                           "memwarden.outcome": "ok", "memwarden.records.returned": 2,
                           "memwarden.records.withheld": 1, "memwarden.audit.seq": seq},
            "start_time": T0.isoformat(), "end_time": (T0 + timedelta(seconds=1)).isoformat()}


ENTRIES = {1: {"seq": 1, "principal": "alice", "op": "search", "outcome": "ok", "returned": 2, "withheld": 1,
               "ts": (T0 + timedelta(milliseconds=300)).isoformat()}}


@pytest.mark.parametrize("copy", [_memory_span("t1", "s2", 1), _memory_span("t2", "s9", 1),
                                  _memory_span("t2", "s1", 1)], ids=["same trace", "other trace", "same span id"])
def test_a_replayed_span_cannot_count_its_audit_entry_twice(copy: dict[str, Any]) -> None:
    # The copy has the genuine span's principal, operation, entry and times: every check of a
    # single span passes, and the entry's 2 returned / 1 withheld would be counted twice.
    genuine = _memory_span("t1", "s1", 1)
    assert trace_scorecards([genuine], ENTRIES)[0].card.total().returned == 2
    with pytest.raises(ValueError, match="names audit entry 1, which span s1 names too"):
        trace_scorecards([genuine, copy], ENTRIES)


class _Hostile(BaseHTTPRequestHandler):
    """A Phoenix answering whatever ``answer`` holds (bytes), to GET and POST alike."""

    answer: bytes = b""
    post_answer: bytes | None = None  # None: the same as to GET

    def log_message(self, *args: Any) -> None:
        pass

    def _send(self, answer: bytes) -> None:
        self.send_response(200)
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def do_GET(self) -> None:  # the name http.server calls
        self._send(self.answer)

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["Content-Length"]))
        self._send(self.answer if self.post_answer is None else self.post_answer)


@pytest.fixture
def hostile() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Hostile)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def _page(*spans: Any, cursor: Any = None) -> bytes:
    return json.dumps({"data": list(spans), "next_cursor": cursor}).encode()


@pytest.mark.parametrize("answer, said", [
    (b"[1, 2]", "not a page of spans"),
    (json.dumps({"data": None}).encode(), "not a page of spans"),
    (b"<html>\x1b[2J</html>", "not JSON"),
    (b"\xff\xfe{", "not JSON"),
    (_page("x"), "span 0 of the answer"),
    (_page({"name": "x"}), "span 0 of the answer"),
    (_page({"context": {"trace_id": ["t"], "span_id": {}}}), "span 0 of the answer"),
    (_page({"context": {"trace_id": "t", "span_id": "s"}, "attributes": [1]}), "span 0 of the answer"),
    (_page(cursor=7), "next_cursor"),
    (_page(cursor="again"), "repeats the cursor"),  # the same page for ever
], ids=["list", "data null", "html", "not utf-8", "span a string", "no context", "ids not strings",
        "attributes a list", "cursor a number", "endless cursor"])
def test_a_malicious_phoenix_is_a_clear_error_not_a_crash(hostile: str, answer: bytes, said: str,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    _Hostile.answer, _Hostile.post_answer = answer, None
    assert main(["audit", "scorecard", "--phoenix", hostile, "--dry-run"]) == 2
    out = capsys.readouterr().out
    assert said in out and "\x1b" not in out


def test_a_malicious_answer_to_the_post_is_a_clear_error(hostile: str, capsys: pytest.CaptureFixture[str]) -> None:
    span = _memory_span("t1", "s1", 1, principal="alice\x1b]52;c;ZXZpbA==\x07")  # writes the clipboard
    _Hostile.answer, _Hostile.post_answer = _page(span), b"[]"
    assert main(["audit", "scorecard", "--phoenix", hostile]) == 2
    out = capsys.readouterr().out
    assert "cannot post annotations" in out and "not Phoenix's" in out
    assert "\x1b" not in out and "\x07" not in out and "alice" in out
