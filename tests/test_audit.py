"""The audit log: hash chain plus HMAC under a key kept beside the database.

Every tamper case is done the way an attacker with write access to the SQLite file would do
it, twice where it matters: naively, and recomputing the hash chain so that only the MAC
(whose key the attacker does not have) can tell. Each case must be detected and located.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import stat
import threading
from pathlib import Path

import pytest

from memwarden.cli import main
from memwarden.core.errors import AuditError
from memwarden.memory.audit import GENESIS, KEY_FILE, AuditLog, VerifyReport, _digest
from memwarden.memory.audit_checks import entry_mac

pytestmark = pytest.mark.unit

N = 6


@pytest.fixture
def log_path(tmp_path: Path) -> Path:
    path = tmp_path / "audit.sqlite3"
    log = AuditLog(path)
    for i in range(N):
        log.append({"op": "write", "principal": f"p{i}", "records": [f"mem_{i}"], "outcome": "ok"})
    assert log.verify().ok
    log.close()
    return path


def db(path: Path) -> sqlite3.Connection:
    return sqlite3.connect(path, isolation_level=None)


def verify(path: Path) -> VerifyReport:
    log = AuditLog(path)
    try:
        return log.verify()
    finally:
        log.close()


def rechain(conn: sqlite3.Connection, start: int) -> None:
    """What an attacker without the key does to hide an edit: recompute every hash from start."""
    rows = conn.execute("SELECT seq, body FROM audit WHERE seq >= ? ORDER BY seq", (start,)).fetchall()
    prev_row = conn.execute("SELECT hash FROM audit WHERE seq < ? ORDER BY seq DESC LIMIT 1", (start,)).fetchone()
    prev = prev_row[0] if prev_row else GENESIS
    for seq, body in rows:
        digest = _digest(prev, body)
        conn.execute("UPDATE audit SET prev = ?, hash = ? WHERE seq = ?", (prev, digest, seq))
        prev = digest


# -- the key -------------------------------------------------------------------------------------

def test_key_file_is_created_on_first_append_with_mode_0600(tmp_path: Path) -> None:
    log = AuditLog(tmp_path / "audit.sqlite3")
    assert not (tmp_path / KEY_FILE).exists()  # opening (or verifying) creates nothing
    log.append({"op": "write"})
    mode = stat.S_IMODE(os.stat(tmp_path / KEY_FILE).st_mode)
    assert mode == 0o600
    assert len(bytes.fromhex((tmp_path / KEY_FILE).read_text().strip())) == 32
    report = log.verify()
    assert report.ok and report.entries == 1 and report.authenticated == 1
    log.close()


def test_verify_report_keeps_its_old_shape() -> None:
    report = VerifyReport(True, 3, [])
    assert (report.ok, report.entries, report.problems) == (True, 3, [])


def test_key_can_live_elsewhere(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    elsewhere = tmp_path / "vault" / "memwarden.key"
    monkeypatch.setenv("MEMWARDEN_AUDIT_KEY_FILE", str(elsewhere))
    log = AuditLog(tmp_path / "audit.sqlite3")
    log.append({"op": "write"})
    assert elsewhere.exists() and not (tmp_path / KEY_FILE).exists()
    assert log.verify().ok
    log.close()


def test_two_writers_share_one_chain(tmp_path: Path) -> None:
    path = tmp_path / "audit.sqlite3"
    logs = [AuditLog(path), AuditLog(path)]

    def work(log: AuditLog, who: str) -> None:
        for i in range(25):
            log.append({"op": "write", "principal": who, "i": i})

    threads = [threading.Thread(target=work, args=(log, f"w{n}")) for n, log in enumerate(logs)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    report = logs[0].verify()
    assert report.ok and report.entries == 50 and report.authenticated == 50
    for log in logs:
        log.close()


# -- the four tamper cases -------------------------------------------------------------------------

def test_an_edited_byte_is_found(log_path: Path) -> None:
    conn = db(log_path)
    body = conn.execute("SELECT body FROM audit WHERE seq = 3").fetchone()[0]
    i = body.index("p2")
    conn.execute("UPDATE audit SET body = ? WHERE seq = 3", (body[:i] + "q" + body[i + 1:],))
    conn.close()
    report = verify(log_path)
    assert not report.ok and report.bad_entries == [3]
    assert any(p.startswith("entry 3:") and "edited" in p for p in report.problems)


def test_an_edited_byte_with_a_recomputed_chain_is_found_by_the_mac(log_path: Path) -> None:
    conn = db(log_path)
    body = conn.execute("SELECT body FROM audit WHERE seq = 3").fetchone()[0]
    conn.execute("UPDATE audit SET body = ? WHERE seq = 3", (body.replace('"p2"', '"p9"'),))
    rechain(conn, 3)
    conn.close()
    report = verify(log_path)
    assert not report.ok and report.bad_entries[0] == 3
    assert report.problems[0] == "entry 3: MAC does not verify (edited, or forged without the key)"
    assert not any("hash" in p and "entry 3" in p for p in report.problems)  # the chain itself was fixed up


def test_a_deleted_entry_is_found(log_path: Path) -> None:
    conn = db(log_path)
    conn.execute("DELETE FROM audit WHERE seq = 3")
    conn.close()
    report = verify(log_path)
    assert not report.ok and 3 in report.bad_entries
    assert any("entry 3 missing (deleted)" in p for p in report.problems)


def test_a_deleted_and_renumbered_entry_is_found_by_the_mac(log_path: Path) -> None:
    conn = db(log_path)
    conn.execute("DELETE FROM audit WHERE seq = 3")
    for seq in range(4, N + 1):
        body = json.loads(conn.execute("SELECT body FROM audit WHERE seq = ?", (seq,)).fetchone()[0])
        body["seq"] = seq - 1
        conn.execute("UPDATE audit SET seq = ?, body = ? WHERE seq = ?",
                     (seq - 1, json.dumps(body, sort_keys=True, separators=(",", ":")), seq))
    rechain(conn, 3)
    conn.close()
    report = verify(log_path)
    assert not report.ok and report.bad_entries[0] == 3
    assert any(p.startswith("entry 3: MAC does not verify") for p in report.problems)


def test_the_last_entry_deleted_is_found_by_the_head(log_path: Path) -> None:
    conn = db(log_path)
    conn.execute("DELETE FROM audit WHERE seq = ?", (N,))
    conn.close()
    report = verify(log_path)
    assert not report.ok and report.bad_entries == [N]
    assert any(f"entry {N} deleted from the end" in p for p in report.problems)


def test_two_swapped_entries_are_found(log_path: Path) -> None:
    conn = db(log_path)
    rows = {seq: row for seq, *row in conn.execute("SELECT seq, body, prev, hash, mac FROM audit")}
    for seq, other in ((2, 4), (4, 2)):
        conn.execute("UPDATE audit SET body = ?, prev = ?, hash = ?, mac = ? WHERE seq = ?", (*rows[other], seq))
    conn.close()
    report = verify(log_path)
    assert not report.ok and {2, 4} <= set(report.bad_entries)
    assert "entries 2 and 4: swapped (each holds the other's body)" in report.problems


def test_two_swapped_entries_renumbered_and_rechained_are_found_by_the_mac(log_path: Path) -> None:
    conn = db(log_path)
    bodies = {seq: json.loads(b) for seq, b in conn.execute("SELECT seq, body FROM audit")}
    for seq, other in ((2, 3), (3, 2)):
        body = dict(bodies[other], seq=seq)
        conn.execute("UPDATE audit SET body = ? WHERE seq = ?", (json.dumps(body, sort_keys=True), seq))
    rechain(conn, 2)
    conn.close()
    report = verify(log_path)
    assert not report.ok and report.bad_entries[:2] == [2, 3]
    assert report.problems[0].startswith("entry 2: MAC does not verify")


def _hand_appended(conn: sqlite3.Connection, mac: str | None) -> None:
    seq, prev = conn.execute("SELECT seq, hash FROM audit ORDER BY seq DESC LIMIT 1").fetchone()
    body = json.dumps({"seq": seq + 1, "op": "erase", "principal": "dpo", "outcome": "ok"},
                      sort_keys=True, separators=(",", ":"))
    conn.execute("INSERT INTO audit(seq, body, prev, hash, mac) VALUES (?, ?, ?, ?, ?)",
                 (seq + 1, body, prev, _digest(prev, body), mac))


def test_an_entry_appended_by_hand_is_found(log_path: Path) -> None:
    conn = db(log_path)
    _hand_appended(conn, None)  # a perfect hash-chain link, and no MAC
    conn.close()
    report = verify(log_path)
    assert not report.ok and report.bad_entries == [N + 1]
    assert f"entry {N + 1}: has no MAC (appended or rewritten by hand, without the key)" in report.problems
    assert any(f"entry {N + 1} appended by hand" in p for p in report.problems)


def test_an_entry_appended_by_hand_with_a_guessed_mac_is_found(log_path: Path) -> None:
    conn = db(log_path)
    _hand_appended(conn, hashlib.sha256(b"guess").hexdigest())
    conn.close()
    report = verify(log_path)
    assert not report.ok and report.bad_entries == [N + 1]
    assert any(p.startswith(f"entry {N + 1}: MAC does not verify") for p in report.problems)


def test_threat_model_an_attacker_with_the_key_can_forge(log_path: Path) -> None:
    """Documented limitation: the key file is the trust anchor. Whoever reads it can append
    (and rewrite the head) so that verify passes. Keep it out of the database admins' reach."""
    key = bytes.fromhex((log_path.parent / KEY_FILE).read_text().strip())
    conn = db(log_path)
    _hand_appended(conn, None)
    seq, digest = conn.execute("SELECT seq, hash FROM audit ORDER BY seq DESC LIMIT 1").fetchone()
    conn.execute("UPDATE audit SET mac = ? WHERE seq = ?", (entry_mac(key, f"entry:{seq}:{digest}"), seq))
    head = f"{seq}:{digest}"
    conn.execute("UPDATE audit_meta SET value = ? WHERE name = 'head'", (head,))
    conn.execute("UPDATE audit_meta SET value = ? WHERE name = 'head_mac'", (entry_mac(key, f"head:{head}"),))
    conn.close()
    assert verify(log_path).ok


# -- the key itself under attack ----------------------------------------------------------------

def test_a_deleted_key_is_reported_and_appends_refuse(log_path: Path) -> None:
    (log_path.parent / KEY_FILE).unlink()
    report = verify(log_path)
    assert not report.ok and any(p.startswith("key: the key file") and "missing" in p for p in report.problems)
    log = AuditLog(log_path)
    with pytest.raises(AuditError, match="missing"):
        log.append({"op": "write"})
    log.close()
    assert not (log_path.parent / KEY_FILE).exists()  # no silent re-keying


def test_a_replaced_key_is_reported_and_appends_refuse(log_path: Path) -> None:
    (log_path.parent / KEY_FILE).write_text(os.urandom(32).hex())
    report = verify(log_path)
    assert not report.ok and any("not the key this log was signed with" in p for p in report.problems)
    log = AuditLog(log_path)
    with pytest.raises(AuditError, match="does not match"):
        log.append({"op": "write"})
    log.close()


def test_a_removed_signing_record_is_reported_and_appends_refuse(log_path: Path) -> None:
    conn = db(log_path)
    conn.execute("DELETE FROM audit_meta")
    conn.close()
    report = verify(log_path)
    assert not report.ok and any(p.startswith("key record: missing") for p in report.problems)
    log = AuditLog(log_path)
    with pytest.raises(AuditError, match="signing record"):
        log.append({"op": "write"})
    log.close()


# -- logs written before MACs ---------------------------------------------------------------------

def _legacy_log(path: Path, n: int) -> None:
    """The schema and chain of memwarden before MACs (no mac column, no key, no meta)."""
    conn = db(path)
    conn.execute("CREATE TABLE audit (seq INTEGER PRIMARY KEY, body TEXT NOT NULL, prev TEXT NOT NULL, "
                 "hash TEXT NOT NULL)")
    prev = GENESIS
    for seq in range(1, n + 1):
        body = json.dumps({"seq": seq, "op": "write", "principal": "old"}, sort_keys=True, separators=(",", ":"))
        digest = _digest(prev, body)
        conn.execute("INSERT INTO audit VALUES (?, ?, ?, ?)", (seq, body, prev, digest))
        prev = digest
    conn.close()


def test_a_legacy_log_is_upgraded_in_place(tmp_path: Path) -> None:
    path = tmp_path / "audit.sqlite3"
    _legacy_log(path, 3)
    log = AuditLog(path)
    assert log.verify().ok and log.verify().authenticated == 0
    assert log.append({"op": "search"}) == 4
    report = log.verify()
    assert report.ok and report.entries == 4 and report.authenticated == 1
    assert [e["seq"] for e in log.entries()] == [1, 2, 3, 4]
    log.close()
    # Old entries keep their hash-chain protection; new ones need the MAC.
    conn = db(path)
    conn.execute("UPDATE audit SET body = replace(body, 'old', 'new') WHERE seq = 2")
    _hand_appended(conn, None)
    conn.close()
    report = verify(path)
    assert any(p.startswith("entry 2:") and "edited" in p for p in report.problems)
    assert any(p.startswith("entry 5: has no MAC") for p in report.problems)


# -- the command ----------------------------------------------------------------------------------

def test_cli_verify_names_the_tampered_entry(log_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["audit", "verify", "--data", str(log_path.parent)]) == 0
    assert f"{N} entries, {N} signed" in capsys.readouterr().out
    conn = db(log_path)
    conn.execute("DELETE FROM audit WHERE seq = 2")
    conn.close()
    assert main(["audit", "verify", "--data", str(log_path.parent)]) == 1
    out = capsys.readouterr().out
    assert "TAMPERED" in out and "first bad entry: 2" in out and "entry 2 missing (deleted)" in out


def test_cli_verify_without_a_log(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["audit", "verify", "--data", str(tmp_path)]) == 2
    assert "no audit log" in capsys.readouterr().out
