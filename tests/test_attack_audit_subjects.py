"""Attacks on the promise that after ``erase(subject=S)`` nothing readable in the audit log
names S (docs/erasure.md, "Subjects in the audit log"): paths other than ``subject_tags``
by which a subject id reaches an audit entry in clear."""

from __future__ import annotations

from pathlib import Path

import pytest

from memwarden import Memory, Principal, WriteRejected
from memwarden.core.errors import InvalidRequest

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
