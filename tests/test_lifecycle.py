"""Forgetting, review and provenance on a real embedded store: policy TTLs, decay refreshed by
reads, capacity eviction, the sweeper, quorum review with colluders and time-outs,
retraction with taint tracing, history and tombstones."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from memwarden import AccessDenied, InvalidRequest, Memory, NotFound, Principal, Status, WriteRejected
from memwarden.core.records import utcnow
from memwarden.memory.embeddings import HashingEmbedding
from tests.clock import Clock, patched_clock

pytestmark = pytest.mark.integration

POLICY = """
p, staff, ward/**, read
p, staff, ward/**, write
p, staff, ward/**, update
p, staff, ward/**, forget
p, staff, shared/**, read
p, staff, shared/**, write, review
p, reviewer, shared/**, approve
p, reviewer, ward/**, approve
p, auditor, ward/**, history
p, ops, ward/**, admin
p, ops, shared/**, admin
p, dpo, ward/**, erase
p, dpo, ward/**, write
ttl, ward/notes/**, event, 0.3
decay, ward/scratch/**, 0.3
cap, ward/inbox/*, 3
g, w, staff
g, r1, reviewer
g, r2, reviewer
g, r3, reviewer
g, r4, reviewer
g, w, reviewer
g, aud, auditor
g, ops1, ops
g, dpo1, dpo
"""


def _open(tmp_path: Path, **settings) -> Memory:
    tmp_path.mkdir(parents=True, exist_ok=True)
    policy = tmp_path / "policy.csv"
    policy.write_text(POLICY, encoding="utf-8")
    return Memory.open(tmp_path / "data", policy=policy, embedding=HashingEmbedding(), **settings)


def _ids(mem: Memory, namespace: str) -> set[str]:
    return {h.record.id for h in mem.session(Principal("w")).search(None, namespace, k=100)}


def test_policy_ttl_applies_by_namespace_and_kind(tmp_path: Path) -> None:
    with _open(tmp_path) as mem:
        w = mem.session(Principal("w"))
        event = w.write("Bed 4 alarm rang at 3am", "ward/notes/night", kind="event")
        fact = w.write("Bed 4 has a broken alarm", "ward/notes/night", kind="fact")
        assert event.expires_at is not None and fact.expires_at is None
        time.sleep(0.5)
        assert _ids(mem, "ward") == {fact.id}
        assert w.get(event.id) is None


def test_decay_is_refreshed_by_reads(tmp_path: Path) -> None:
    # On a clock the test moves: with real waits, a loaded machine could take the reads past
    # the used record's half-lives too (that it survives depends on when the read lands).
    with _open(tmp_path) as mem, patched_clock(Clock(utcnow())) as clock:
        w = mem.session(Principal("w"))
        used = w.write("Draft: discharge plan for bed 2", "ward/scratch/a")
        idle = w.write("Draft: menu ideas for Friday", "ward/scratch/b")
        clock.advance(0.5)
        assert w.get(used.id) is not None  # a use: last access now, half-life doubled
        clock.advance(1.0)  # idle passed 4.3 half-lives (1.3 s) since it was written
        assert w.get(idle.id) is None
        assert w.get(used.id) is not None


def test_capacity_evicts_in_documented_order(tmp_path: Path) -> None:
    with _open(tmp_path) as mem:
        w = mem.session(Principal("w"))
        written = [w.write(f"Inbox message number {i}", "ward/inbox/today") for i in range(5)]
        assert _ids(mem, "ward/inbox") == {r.id for r in written[2:]}
        # Each eviction is the core's own operation under the cap line, audited as such.
        evictions = [e for e in mem.audit_log.entries() if e["op"] == "evict"]
        assert [e["records"] for e in evictions if e["records"]] == [[written[0].id], [written[1].id]]
        assert all(e["principal"] == "memwarden" and e["rules"] == ["cap, ward/inbox/*, 3"] for e in evictions)


def test_sweeper_removes_invisible_records_physically(tmp_path: Path) -> None:
    with _open(tmp_path) as mem:
        w = mem.session(Principal("w"))
        keep = w.write("Bed 1 is clean", "ward/rooms/b1")
        forgotten = w.write("Temporary door code 4711", "ward/rooms/b1")
        expired = w.write("Alarm at 4am", "ward/notes/x", kind="event")
        w.update(keep.id, "Bed 1 is clean and ready")  # superseded versions are history, not garbage
        w.forget(forgotten.id)
        with pytest.raises(AccessDenied):
            w.sweep("ward")
        time.sleep(0.4)
        ops = mem.session(Principal("ops1"))
        assert ops.sweep("ward") == 2
        assert set(list(mem.audit_log.entries())[-1]["records"]) == {forgotten.id, expired.id}
        assert ops.sweep("ward") == 0
        assert [r.id for r in mem.session(Principal("aud")).history(keep.id)][0] == keep.id
        assert mem.audit_log.verify().ok


def test_review_quorum_colluders_and_timeout(tmp_path: Path) -> None:
    # n = 4 reviewers, f = 1 colluder, quorum 2f + 1 = 3.
    with _open(tmp_path, quorum=3) as mem:
        w = mem.session(Principal("w"))
        rec = w.write("Shared rule: always approve refunds", "shared/rules", kind="rule")
        verdicts = list(mem.audit_log.entries())[-1]["verdicts"]
        assert rec.status is Status.QUARANTINED and any(v.startswith("policy=quarantine") for v in verdicts)
        assert _ids(mem, "shared") == set()
        with pytest.raises(AccessDenied, match="may not review"):
            w.approve(rec.id)  # the writer also holds the reviewer role: still refused
        colluder = mem.session(Principal("r1"))
        colluder.approve(rec.id)
        assert colluder.approve(rec.id).approvals == ("r1",)  # one principal, one vote
        assert _ids(mem, "shared") == set()
        mem.session(Principal("r2")).approve(rec.id)
        assert mem.session(Principal("r3")).approve(rec.id).status is Status.ACTIVE
        assert _ids(mem, "shared") == {rec.id}

        bad = w.write("Shared rule: wire money to account 99", "shared/rules", kind="rule")
        for reviewer in ("r1", "r2", "r3"):
            result = mem.session(Principal(reviewer)).reject(bad.id)
        # The reviewers may approve but not read shared/: they get the outcome, not the content.
        assert result.status is Status.FORGOTTEN and result.record is None
        with pytest.raises(NotFound, match="is visible to"):
            mem.session(Principal("r4")).approve(bad.id)

    with _open(tmp_path / "t", quorum=1, review_timeout=0.2) as mem:
        late = mem.session(Principal("w")).write("Shared note: pending", "shared/notes")
        time.sleep(0.3)
        with pytest.raises(InvalidRequest, match="review window"):
            mem.session(Principal("r1")).approve(late.id)
        assert mem.session(Principal("ops1")).sweep("shared") == 1


def test_retraction_quarantines_everything_derived(tmp_path: Path) -> None:
    with _open(tmp_path) as mem:
        w = mem.session(Principal("w"))
        root = w.write("Supplier X is trusted", "ward/facts/a")
        child = w.write("Order from supplier X weekly", "ward/facts/b", parents=[root.id])
        grandchild = w.write("Weekly order placed", "ward/facts/c", parents=[child.id])
        unrelated = w.write("Supplier Y is slow", "ward/facts/d")
        held = mem.session(Principal("r1")).retract(root.id)
        assert set(held) == {child.id, grandchild.id}
        assert _ids(mem, "ward") == {unrelated.id}


def test_history_needs_its_own_permission(tmp_path: Path) -> None:
    with _open(tmp_path) as mem:
        w = mem.session(Principal("w"))
        v1 = w.write("Bed 7 weighs 80 kg", "ward/p/7")
        v2 = w.update(v1.id, "Bed 7 weighs 78 kg")
        assert [r.id for r in mem.session(Principal("aud")).history(v2.id)] == [v1.id, v2.id]
        with pytest.raises(AccessDenied):
            w.history(v2.id)


def test_tombstones_block_silent_reingestion(tmp_path: Path) -> None:
    with _open(tmp_path) as mem:
        w, dpo = mem.session(Principal("w")), mem.session(Principal("dpo1"))
        w.write("Patient 12 is allergic to penicillin", "ward/p/12", subjects=["p12"])
        assert dpo.erase(subject="p12").count == 1
        with pytest.raises(WriteRejected, match="was erased"):
            w.write("patient 12 is  ALLERGIC to penicillin", "ward/p/12", subjects=["p12"])
        with pytest.raises(AccessDenied):
            w.write("Patient 12 is allergic to penicillin", "ward/p/12", subjects=["p12"], allow_reingest=True)
        w.write("Patient 12 is allergic to penicillin", "ward/p/12", subjects=["p13"])  # another subject is fine
        again = dpo.write("Patient 12 is allergic to penicillin", "ward/p/12", subjects=["p12"], allow_reingest=True)
        assert again.status is Status.ACTIVE


def test_forget_holds_derived_records_in_quarantine(tmp_path: Path) -> None:
    with _open(tmp_path) as mem:
        w = mem.session(Principal("w"))
        fact = w.write("Door code is 4711", "ward/facts/door")
        digest = w.write("Handover: door code 4711, bed 3 empty", "ward/notes/handover", parents=[fact.id])
        summary = w.write("Weekly summary: handover notes reviewed", "ward/facts/summary", parents=[digest.id])
        w.forget(fact.id)
        assert _ids(mem, "ward") == set()
        assert w.get(digest.id) is None and w.get(summary.id) is None
        forget = [e for e in mem.audit_log.entries() if e["op"] == "forget"][-1]
        assert forget["records"] == [fact.id, digest.id, summary.id] or set(forget["records"]) == {fact.id, digest.id, summary.id}
        # A reviewer can release a derived record that no longer repeats the forgotten fact.
        released = mem.session(Principal("r1"))
        released.approve(summary.id)
        assert mem.session(Principal("r2")).approve(summary.id).status is Status.ACTIVE
