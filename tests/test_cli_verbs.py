"""The operator's verbs: ``records list|show|history`` (governed, as a named principal),
``policy show`` and ``policy who-can``, and ``--version``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memwarden import Memory, Principal
from memwarden.cli import main
from memwarden.memory.audit import AuditLog
from memwarden.memory.embeddings import HashingEmbedding
from tests.conftest import HOSPITAL

pytestmark = pytest.mark.integration

POLICY = HOSPITAL + "p, physician, ward3/patients/*, history\n"


@pytest.fixture
def store(tmp_path: Path) -> tuple[Path, Path, dict[str, str]]:
    policy = tmp_path / "policy.csv"
    policy.write_text(POLICY, encoding="utf-8")
    with Memory.open(tmp_path / "d", policy=policy, embedding=HashingEmbedding()) as mem:
        alice, carol = mem.session(Principal("alice")), mem.session(Principal("carol"))
        first = alice.write("Patient 12 is allergic to penicillin", "ward3/patients/p12", subjects=["p12"])
        second = alice.update(first.id, "Patient 12 is allergic to penicillin and amoxicillin")
        derived = alice.write("Ward stock: no penicillin for bed 12", "ward3/patients/p13", parents=[second.id])
        invoice = carol.write("Invoice 5531 for patient 12", "ward3/billing/p12", subjects=["p12"])
    return tmp_path / "d", policy, {"first": first.id, "second": second.id, "derived": derived.id,
                                    "invoice": invoice.id}


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    code = main(list(args))
    return code, capsys.readouterr().out


def _actor(store: tuple[Path, Path, dict[str, str]], principal: str) -> list[str]:
    data, policy, _ = store
    return ["--data", str(data), "--policy", str(policy), "--principal", principal]


def _audited(data: Path) -> list[dict]:
    log = AuditLog(data / "audit.sqlite3")
    try:
        return list(log.entries())
    finally:
        log.close()


# -- records: governed reads as a named principal ------------------------------------------------

def test_records_list_shows_what_the_principal_may_see(store, capsys) -> None:
    _, _, ids = store
    code, out = _run(capsys, "records", "list", *_actor(store, "alice"), "--namespace", "ward3/patients")
    assert code == 0 and ids["second"] in out and ids["derived"] in out and "amoxicillin" in out
    assert ids["first"] not in out  # superseded by the update
    assert "2 record(s) visible to alice" in out
    # The clerk reading the whole ward gets the billing record only: the rest is withheld.
    code, out = _run(capsys, "records", "list", *_actor(store, "carol"), "--namespace", "ward3", "--json")
    rows = [json.loads(line) for line in out.splitlines()]
    assert code == 0 and [r["id"] for r in rows] == [ids["invoice"]] and "penicillin" not in out


def test_records_list_with_a_query_searches(store, capsys) -> None:
    _, _, ids = store
    code, out = _run(capsys, "records", "list", *_actor(store, "alice"), "--query", "amoxicillin allergy",
                     "--embedding", "hashing", "--json", "-k", "1")
    (row,) = [json.loads(line) for line in out.splitlines()]
    assert code == 0 and row["id"] == ids["second"] and isinstance(row["score"], float)


def test_records_are_read_through_the_policy_and_audited(store, capsys) -> None:
    data, _, ids = store
    before = len(_audited(data))
    code, out = _run(capsys, "records", "list", *_actor(store, "carol"), "--namespace", "ward3/patients")
    assert code == 2 and "may not read" in out and "penicillin" not in out
    # A record the clerk may not see and one that does not exist get the same answer.
    hidden = _run(capsys, "records", "show", ids["second"], *_actor(store, "carol"))
    missing_id = "mem_" + "0" * 32
    missing = _run(capsys, "records", "show", missing_id, *_actor(store, "carol"))
    assert hidden[0] == missing[0] == 1
    assert hidden[1].replace(ids["second"], "ID") == missing[1].replace(missing_id, "ID")
    for verb in ("show", "history"):
        code, out = _run(capsys, "records", verb, ids["second"], *_actor(store, "carol"))
        assert code == 1 and "penicillin" not in out
    # Every CLI read is an audited operation of carol's, like an application's.
    entries = _audited(data)[before:]
    assert len(entries) == 5 and {e["principal"] for e in entries} == {"carol"}
    assert entries[0]["decision"] == "deny" and entries[0]["outcome"] == "denied"


def test_records_show_prints_provenance(store, capsys) -> None:
    _, _, ids = store
    code, out = _run(capsys, "records", "show", ids["derived"], *_actor(store, "alice"))
    assert code == 0 and f"parents       {ids['second']}" in out and "writer        alice" in out
    assert "namespace     ward3/patients/p13" in out and "Ward stock: no penicillin for bed 12" in out
    code, out = _run(capsys, "records", "show", ids["second"], *_actor(store, "alice"), "--json")
    record = json.loads(out)
    assert code == 0 and record["supersedes"] == ids["first"] and record["subjects"] == ["p12"]


def test_records_history_lists_every_version(store, capsys) -> None:
    _, _, ids = store
    code, out = _run(capsys, "records", "history", ids["second"], *_actor(store, "alice"), "--json")
    versions = [json.loads(line) for line in out.splitlines()]
    assert code == 0 and [v["id"] for v in versions] == [ids["first"], ids["second"]]
    assert [v["version"] for v in versions] == [1, 2]
    # Bob (a nurse) may read the record but holds no history right on it.
    code, out = _run(capsys, "records", "history", ids["second"], *_actor(store, "bob"))
    assert code == 2 and "may not history" in out


def test_records_never_create_or_change_a_store(tmp_path: Path, store, capsys) -> None:
    _, policy, _ = store
    code, out = _run(capsys, "records", "list", "--data", str(tmp_path / "typo"), "--policy", str(policy),
                     "--principal", "alice")
    assert code == 2 and not (tmp_path / "typo").exists()
    with pytest.raises(SystemExit):
        main(["records", "list", *_actor(store, "alice"), "--create"])  # no such option for a read


# -- policy show, policy who-can ------------------------------------------------------------------

def test_policy_show_prints_every_line_or_a_principals(store, capsys) -> None:
    _, policy, _ = store
    code, out = _run(capsys, "policy", "show", "--policy", str(policy))
    assert code == 0 and "12 rule(s), 4 role link(s), 0 lifecycle line(s)" in out
    assert "p, billing_clerk, ward3/patients/*, read, deny" in out and "g, dpo, privacy_officer" in out
    code, out = _run(capsys, "policy", "show", "--policy", str(policy), "--principal", "bob")
    assert code == 0 and "bob holds: nurse" in out
    assert "p, nurse, ward3/patients/*, read, allow" in out and "physician" not in out and "g, bob, nurse" in out
    code, out = _run(capsys, "policy", "show", "--policy", str(policy), "--principal", "nobody")
    assert code == 2 and "unknown principal 'nobody'" in out


def test_policy_who_can_names_every_role_and_principal(store, capsys) -> None:
    _, policy, _ = store
    code, out = _run(capsys, "policy", "who-can", "--policy", str(policy), "--action", "read",
                     "--namespace", "ward3/patients/p12")
    lines = {line.split(":")[0].split(None, 1)[1]: line.split()[0] for line in out.splitlines()[1:] if ": " in line}
    assert code == 0
    assert lines["role physician"] == "allow" and lines["alice (physician)"] == "allow"
    assert lines["role nurse"] == "allow" and lines["bob (nurse)"] == "allow"
    assert lines["role billing_clerk"] == "deny" and lines["carol (billing_clerk)"] == "deny"
    assert "p, billing_clerk, ward3/patients/*, read, deny" in out
    code, out = _run(capsys, "policy", "who-can", "--policy", str(policy), "--action", "admin", "--namespace", "ward3")
    assert code == 1 and "allow" not in out


def test_policy_who_can_with_a_conditional_rule(capsys) -> None:
    code, out = _run(capsys, "policy", "who-can", "--policy", "hospital", "--action", "read",
                     "--namespace", "ward3/patients/p12")
    assert code == 0 and "depends role nurse: p, nurse, ward3/patients/*, read, allow, " in out
    code, out = _run(capsys, "policy", "who-can", "--policy", "hospital", "--action", "read",
                     "--namespace", "ward3/patients/p12", "--label", "sensitivity=restricted", "--kind", "fact",
                     "--source", "user", "--writer-role", "physician")
    assert code == 0 and "depends" not in out and "deny    role nurse" in out
    code, out = _run(capsys, "policy", "who-can", "--policy", "hospital", "--action", "raed", "--namespace", "x")
    assert code == 2 and "unknown action 'raed'" in out
