"""The governed pipeline end to end on a real embedded Chroma: persistence, idempotence,
bad input, validators, supersession, forgetting, erasure and audit."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from memwarden import AccessDenied, InvalidRequest, Memory, Principal, Status, WriteRejected
from memwarden.guards.validators import Outcome, Verdict
from memwarden.memory.embeddings import HashingEmbedding
from memwarden.core.ops import MAX_CONTENT_CHARS, SearchOp, WriteOp

pytestmark = pytest.mark.integration

ALICE = Principal("alice", roles=["physician"])
BOB = Principal("bob")
CAROL = Principal("carol")
DPO = Principal("dpo")


def _all_ids(mem: Memory, principal: Principal = DPO) -> set[str]:
    return {h.record.id for h in mem.session(principal).search(None, "ward3", k=1000)}


def test_records_survive_close_and_reopen(tmp_path: Path, policy_file: Path) -> None:
    with Memory.open(tmp_path / "d", policy=policy_file, embedding=HashingEmbedding()) as mem:
        rec = mem.session(ALICE).write("Patient 3 is diabetic", "ward3/patients/p3", subjects=["p3"])
    with Memory.open(tmp_path / "d", policy=policy_file, embedding=HashingEmbedding()) as mem:
        alice = mem.session(ALICE)
        assert alice.get(rec.id) == rec
        assert [h.record.id for h in alice.search("diabetic patient", "ward3/patients")] == [rec.id]
        assert mem.audit_log.verify().ok and mem.audit_log.verify().entries == 3


def test_retried_write_is_a_no_op(mem: Memory) -> None:
    alice = mem.session(ALICE)
    first = alice.write("Patient 5 needs a wheelchair", "ward3/patients/p5")
    again = alice.write("Patient 5 needs a wheelchair", "ward3/patients/p5")
    assert again == first
    assert _all_ids(mem) == {first.id}
    # A different writer writing the same text is a different memory (provenance differs).
    other = mem.session(BOB).write("Patient 5 needs a wheelchair", "ward3/patients/p5")
    assert other.id != first.id and _all_ids(mem) == {first.id, other.id}


@pytest.mark.parametrize("namespace", [
    "", "ward3//x", "ward3/../billing", ("ward3", "."), ("ward3", " patients"), ("ward3", "pat\u200bients"),
    ("ward3", "a\x00b"), ("ward3", "x\n"), ("ward3", "%2e%2e"), ("ward3", 7), "ward3/patients/", ("a",) * 9,
    ("ward3", "x" * 129), ("ward3", "*"),
])
@pytest.mark.slow
def test_bad_namespaces_are_refused_before_storage(mem: Memory, namespace: object) -> None:
    with pytest.raises(InvalidRequest):
        mem.session(ALICE).write("Patient 1 is fine", namespace)
    last = list(mem.audit_log.entries())[-1]
    assert last["outcome"] == "invalid" and last["decision"] is None
    assert _all_ids(mem) == set()


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"content": ""}, "content is empty"),
    ({"content": "   "}, "content is empty"),
    ({"content": 42}, "content must be a string"),
    ({"content": "x" * (MAX_CONTENT_CHARS + 1)}, "limit is 32768"),
    ({"kind": "gossip"}, "unknown kind 'gossip'"),
    ({"source": "rumour"}, "unknown source"),
    ({"subjects": "p1"}, "subjects must be a list"),
    ({"ttl": -1}, "ttl must be a positive"),
    ({"trust": 1.5}, "trust must be between 0 and 1"),
    ({"labels": {"bad key": "x"}}, "label key"),
    ({"parents": ["not-an-id"]}, "not a memwarden record id"),
    ({"content": "Patient 1 \u00e9\ud800 is fine"}, "lone surrogate U\\+D800 at position 11"),
    ({"content": "\udfff"}, "lone surrogate U\\+DFFF at position 0"),
])
def test_bad_write_fields_raise_precise_errors(mem: Memory, kwargs: dict, message: str) -> None:
    args = {"content": "Patient 1 is fine", "namespace": "ward3/patients/p1", **kwargs}
    with pytest.raises(InvalidRequest, match=message):
        mem.session(ALICE).batch([WriteOp(**args)])
    assert _all_ids(mem) == set()


def test_unknown_principal_is_refused(mem: Memory) -> None:
    with pytest.raises(InvalidRequest, match="unknown principal 'mallory'"):
        mem.session(Principal("mallory"))
    with pytest.raises(InvalidRequest, match="must be a memwarden Principal"):
        mem.batch("alice", [SearchOp("x")])  # type: ignore[arg-type]


def test_denied_write_raises_and_stores_nothing(mem: Memory) -> None:
    with pytest.raises(AccessDenied) as info:
        mem.session(CAROL).write("Patient 1 owes nothing", "ward3/patients/p1")
    assert isinstance(info.value, PermissionError)
    assert list(mem.audit_log.entries())[-1]["outcome"] == "denied"
    assert _all_ids(mem) == set()


def test_search_returns_k_authorised_hits_even_when_forbidden_ones_are_nearer(mem: Memory) -> None:
    alice, carol = mem.session(ALICE), mem.session(CAROL)
    for i in range(20):
        alice.write(f"Patient {i} invoice total is unpaid and overdue", f"ward3/patients/p{i}")
    allowed = {carol.write(f"Invoice {i} for the ward is settled", f"ward3/billing/b{i}").id for i in range(5)}
    hits = carol.search("patient invoice unpaid overdue", "ward3", k=5)
    assert {h.record.id for h in hits} == allowed
    entry = list(mem.audit_log.entries())[-1]
    assert entry["returned"] == 5 and entry["withheld"] == 20


def test_get_of_a_forbidden_record_looks_exactly_like_a_missing_one(mem: Memory) -> None:
    # Decide before lookup: the audit entry of a hidden id must not say more than that of a
    # missing one (no namespace, no deny, no withheld count), since it names the caller's id.
    rec = mem.session(ALICE).write("Patient 9 is HIV positive", "ward3/patients/p9")
    missing = "mem_" + "0" * 32
    assert mem.session(CAROL).get(rec.id) is None
    hidden_entry = list(mem.audit_log.entries())[-1]
    assert mem.session(CAROL).get(missing) is None
    missing_entry = list(mem.audit_log.entries())[-1]

    def shown(entry: dict) -> dict:
        return {k: v for k, v in entry.items() if k not in ("seq", "ts", "prev", "hash", "mac", "records")}

    assert shown(hidden_entry) == shown(missing_entry)
    assert hidden_entry["namespace"] is None and hidden_entry["returned"] == 0


def test_update_supersedes_and_hides_the_old_version(mem: Memory) -> None:
    alice = mem.session(ALICE)
    old = alice.write("Patient 2 weighs 70 kg", "ward3/patients/p2")
    new = alice.update(old.id, "Patient 2 weighs 68 kg")
    assert (new.version, new.supersedes, new.status) == (2, old.id, Status.ACTIVE)
    assert alice.get(old.id) is None and alice.get(new.id) == new
    assert [h.record.id for h in alice.search("weight of patient 2", "ward3", k=10)] == [new.id]
    with pytest.raises(InvalidRequest, match="visible"):
        alice.update(old.id, "Patient 2 weighs 60 kg")
    with pytest.raises(AccessDenied):
        mem.session(BOB).update(new.id, "Patient 2 weighs 99 kg")  # nurses may read, not update


def test_ttl_expired_records_are_never_returned(mem: Memory) -> None:
    alice = mem.session(ALICE)
    gone = alice.write("Visitor badge code 1234", "ward3/patients/p4", ttl=0.05)
    kept = alice.write("Patient 4 is a smoker", "ward3/patients/p4")
    import time

    time.sleep(0.1)
    assert alice.get(gone.id) is None
    assert {h.record.id for h in alice.search("badge code", "ward3", k=10)} == {kept.id}


class _Flag:
    name = "flag"

    def __init__(self, outcome: Outcome) -> None:
        self.outcome = outcome

    def check(self, record, context) -> Verdict:
        return Verdict(validator=self.name, outcome=self.outcome if "suspicious" in record.content else Outcome.ACCEPT)


class _Broken:
    name = "broken"

    def check(self, record, context) -> Verdict:
        raise RuntimeError("model unavailable")


def test_quarantined_writes_are_invisible(tmp_path: Path, policy_file: Path) -> None:
    with Memory.open(tmp_path / "q", policy=policy_file, embedding=HashingEmbedding(),
                     validators=[_Flag(Outcome.QUARANTINE)]) as mem:
        alice = mem.session(ALICE)
        bad = alice.write("suspicious: give patient 7 double dose", "ward3/patients/p7")
        good = alice.write("Patient 7 has a normal dose", "ward3/patients/p7")
        assert bad.status is Status.QUARANTINED
        assert alice.get(bad.id) is None
        assert [h.record.id for h in alice.search("dose for patient 7", "ward3", k=10)] == [good.id]
        writes = [e for e in mem.audit_log.entries() if e["op"] == "write"]
        assert [w["verdicts"] for w in writes] == [["flag=quarantine"], ["flag=accept"]]


def test_rejected_and_failing_validators_store_nothing(tmp_path: Path, policy_file: Path) -> None:
    with Memory.open(tmp_path / "r", policy=policy_file, embedding=HashingEmbedding(),
                     validators=[_Flag(Outcome.REJECT), _Broken()]) as mem:
        alice = mem.session(ALICE)
        with pytest.raises(WriteRejected, match="flag=reject"):
            alice.write("suspicious content", "ward3/patients/p7")
        with pytest.raises(WriteRejected, match="broken=reject .validator failed: RuntimeError"):
            alice.write("ordinary content", "ward3/patients/p7")
        assert _all_ids(mem) == set()


def test_erase_cascades_and_holds_what_the_officer_may_not_erase(tmp_path: Path) -> None:
    policy = tmp_path / "p.csv"
    policy.write_text(
        "p, physician, ward3/**, write\np, physician, ward3/**, update\np, physician, ward3/**, read\np, researcher, research/**, write\n"
        "p, researcher, research/**, read\np, researcher, ward3/**, read\np, privacy_officer, ward3/**, erase\n"
        "p, privacy_officer, ward3/**, read\np, privacy_officer, research/**, read\np, dpo_lead, ward3/**, erase\n"
        "p, dpo_lead, research/**, erase\np, dpo_lead, ward3/**, read\n"
        "g, alice, physician\ng, rita, researcher\ng, dpo, privacy_officer\ng, lead, dpo_lead\n", encoding="utf-8")
    with Memory.open(tmp_path / "e", policy=policy, embedding=HashingEmbedding()) as mem:
        alice, rita = mem.session(Principal("alice")), mem.session(Principal("rita"))
        a = alice.write("Patient 12 is allergic to penicillin", "ward3/patients/p12", subjects=["p12"])
        b = alice.update(a.id, "Patient 12 is allergic to penicillin and latex")
        derived = rita.write("Study cohort note: allergy case", "research/cohort1", parents=[b.id])
        unrelated = alice.write("Patient 13 is fine", "ward3/patients/p13", subjects=["p13"])
        # The derived record sits where the privacy officer may not erase: it cannot veto the
        # erasure; it is held (hidden from everyone) until someone who may erase it does.
        receipt = mem.session(Principal("dpo")).erase(subject="p12")
        assert (receipt.count, receipt.cascaded, receipt.held) == (2, 0, 1)
        assert all(len(h) == 64 for h in receipt.erased_ids_sha256)
        assert alice.get(b.id) is None and alice.get(a.id) is None and rita.get(derived.id) is None
        assert rita.search(None, "research", k=10) == []
        # The held record is reached again by the subject it was held for.
        receipt = mem.session(Principal("lead")).erase(subject="p12")
        assert (receipt.count, receipt.held) == (1, 0)
        assert mem.session(Principal("lead")).erase(subject="p12").count == 0
        assert alice.get(unrelated.id) == unrelated
        assert mem.audit_log.verify().ok


def test_audit_chain_detects_an_edited_entry(mem: Memory, tmp_path: Path) -> None:
    mem.session(ALICE).write("Patient 1 is fine", "ward3/patients/p1")
    mem.session(ALICE).search("fine", "ward3")
    assert mem.audit_log.verify().ok
    db = sqlite3.connect(tmp_path / "data" / "audit.sqlite3")
    db.execute("UPDATE audit SET body = replace(body, 'alice', 'alicf') WHERE seq = 1")
    db.commit()
    db.close()
    report = mem.audit_log.verify()
    assert not report.ok and any("entry 1" in p and "edited" in p for p in report.problems)


def test_a_query_with_a_lone_surrogate_is_refused(mem: Memory) -> None:
    mem.session(ALICE).write("Patient 1 is fine", "ward3/patients/p1")
    with pytest.raises(InvalidRequest, match="query contains the lone surrogate U\\+D83D"):
        mem.session(ALICE).search("fine \ud83d", namespace="ward3")
    # Python keeps an escaped pair as two lone surrogates; the character itself is valid text.
    assert mem.session(ALICE).search("fine \U0001F600", namespace="ward3")
