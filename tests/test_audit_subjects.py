"""Subjects in the audit log: entries hold a keyed hash of each subject id (HMAC with the
log's key), never the id, and ``audit flows --subject S`` finds a subject's records by it."""

from __future__ import annotations

from pathlib import Path

import pytest

from memwarden import Memory, Principal
from memwarden.cli import main
from memwarden.core.errors import AuditError, InvalidRequest
from memwarden.integrations.flows import build_flows, select
from memwarden.memory.audit import AuditLog

pytestmark = pytest.mark.integration

ALICE = Principal("alice", roles=["physician"])
DPO = Principal("dpo")
# Not part of any namespace, so any occurrence in a file is the subject id itself.
SUBJECT, OTHER = "patient-7f3a", "patient-9c1d"


@pytest.fixture
def history(mem: Memory) -> dict[str, str]:
    alice = mem.session(ALICE)
    about = alice.write("Allergic to penicillin", "ward3/patients/p12", subjects=[SUBJECT])
    derived = alice.write("Avoid beta-lactams for bed 4", "ward3/patients/p12", parents=[about.id])
    other = alice.write("Sleeps badly", "ward3/patients/p13", subjects=[OTHER])
    alice.search("penicillin", "ward3/patients", k=5)
    newer = alice.update(about.id, content="Allergic to penicillin and amoxicillin")
    mem.session(DPO).erase(subject=SUBJECT)
    return {"about": about.id, "derived": derived.id, "other": other.id, "newer": newer.id}


def _files(data: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(data.glob("audit*")) if p.is_file())


def test_no_subject_id_in_clear_in_the_log_or_its_exports(mem: Memory, history: dict[str, str],
                                                          tmp_path: Path) -> None:
    data = Path(mem.audit_log.path).parent
    entries = list(mem.audit_log.entries())
    tag = mem.audit_log.subject_tag(SUBJECT)
    writes = [e for e in entries if e["op"] in ("write", "update") and history["other"] not in e["records"]]
    assert writes and all(e.get("subject_tags") == [tag] for e in writes if history["derived"] not in e["records"])
    erasures = [e for e in entries if e["op"] == "erase"]
    assert erasures and all(e["subject_tags"] == [tag] for e in erasures)  # intent and completion
    assert not any("subjects" in e for e in entries)
    assert mem.audit_log.verify().ok
    mem.close()
    assert main(["audit", "export", "--data", str(data), "-o", str(tmp_path / "log.jsonl")]) == 0
    assert main(["audit", "export", "--data", str(data), "--format", "csv", "-o", str(tmp_path / "log.csv"),
                 "--head", str(tmp_path / "head.json")]) == 0
    for blob in (_files(data), (tmp_path / "log.jsonl").read_bytes(), (tmp_path / "log.csv").read_bytes()):
        assert SUBJECT.encode() not in blob and OTHER.encode() not in blob


def test_the_tag_needs_the_key_and_follows_the_record_canonical_form(mem: Memory, history: dict[str, str],
                                                                     tmp_path: Path) -> None:
    tag = mem.audit_log.subject_tag(SUBJECT)
    # Subject ids are NFKC-normalised when a record is written: a fullwidth spelling is the same subject.
    assert mem.audit_log.subject_tag("ｐａｔｉｅｎｔ-７ｆ３ａ") == tag
    assert mem.audit_log.subject_tag(OTHER) != tag
    with pytest.raises(InvalidRequest, match="subject"):
        mem.audit_log.subject_tag("patient\u200b-7f3a")
    # Another store's key gives another hash: a tag cannot be confirmed without this log's key.
    (tmp_path / "other").mkdir()
    (tmp_path / "keyless").mkdir()
    other = AuditLog(tmp_path / "other" / "audit.sqlite3")
    other.append({"op": "write", "principal": "x", "subjects": [SUBJECT]})
    assert other.subject_tag(SUBJECT) != tag
    assert list(other.entries())[-1]["subject_tags"] == [other.subject_tag(SUBJECT)]
    other.close()
    keyless = AuditLog(tmp_path / "keyless" / "audit.sqlite3")
    with pytest.raises(AuditError, match="no audit key"):
        keyless.subject_tag(SUBJECT)
    keyless.close()


def test_flows_by_subject_finds_its_records_and_what_derives_from_them(mem: Memory, history: dict[str, str],
                                                                       tmp_path: Path,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    report = select(build_flows(mem.audit_log.entries()), subject_tag=mem.audit_log.subject_tag(SUBJECT))
    found = {f.id: f.status for f in report.records}
    assert set(found) == {history["about"], history["derived"], history["newer"]}
    assert found[history["newer"]] == "erased" and found[history["derived"]] == "erased"
    assert not report.denied and not report.reads
    assert select(build_flows(mem.audit_log.entries()), subject_tag=mem.audit_log.subject_tag("patient-0000")).records == []

    data = Path(mem.audit_log.path).parent
    mem.close()
    page = tmp_path / "subject.html"
    assert main(["audit", "flows", "--data", str(data), "--subject", SUBJECT, "--html", str(page)]) == 0
    out = capsys.readouterr().out
    assert history["newer"] in out and history["other"] not in out
    assert SUBJECT not in out and SUBJECT not in page.read_text(encoding="utf-8")
    assert main(["audit", "flows", "--data", str(data), "--subject", "bad/subject"]) == 2
    assert "path separator" in capsys.readouterr().out
