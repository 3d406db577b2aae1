"""The audit log in PostgreSQL: one linear chain however many processes append at once, the
same tamper detection as in SQLite, and `memwarden audit verify` on it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import psycopg
import pytest

from memwarden.cli import main
from memwarden.core.errors import AuditError
from memwarden.memory.audit import AuditLog

pytestmark = pytest.mark.integration

APPENDER = """
import sys
from memwarden.memory.audit import AuditLog
url, key, who, n = sys.argv[1:]
log = AuditLog(url, key_path=key)
for i in range(int(n)):
    log.append({"op": "write", "principal": who, "i": i})
log.close()
"""


@pytest.fixture
def key(tmp_path: Path) -> Path:
    return tmp_path / "audit.key"


@pytest.mark.system
@pytest.mark.slow
def test_four_processes_append_to_one_linear_chain(pg_url: str, key: Path) -> None:
    procs = [subprocess.Popen([sys.executable, "-c", APPENDER, pg_url, str(key), f"w{w}", "150"]) for w in range(4)]
    assert [p.wait(timeout=120) for p in procs] == [0] * 4
    log = AuditLog(pg_url, key_path=key)
    report = log.verify()
    assert report.ok and report.entries == 600 and report.authenticated == 600
    entries = list(log.entries())
    assert [e["seq"] for e in entries] == list(range(1, 601))
    for w in range(4):  # each writer's appends keep their order inside the one chain
        assert [e["i"] for e in entries if e["principal"] == f"w{w}"] == list(range(150))
    assert log.head()[0] == 600
    log.close()
    assert main(["audit", "verify", "--audit", pg_url, "--key", str(key)]) == 0


@pytest.fixture
def written(pg_url: str, key: Path) -> str:
    log = AuditLog(pg_url, key_path=key)
    for i in range(5):
        log.append({"op": "write", "principal": f"p{i}", "records": [f"mem_{i}"]})
    log.close()
    return pg_url


def _verify(url: str, key: Path):
    log = AuditLog(url, key_path=key)
    try:
        return log.verify()
    finally:
        log.close()


def _sql(url: str, statement: str) -> None:
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(statement)


def test_an_edited_entry_is_found(written: str, key: Path) -> None:
    _sql(written, "UPDATE memwarden_audit SET body = replace(body, 'p2', 'q2') WHERE seq = 3")
    report = _verify(written, key)
    assert not report.ok and report.bad_entries == [3]
    assert main(["audit", "verify", "--audit", written, "--key", str(key)]) == 1


def test_a_deleted_last_entry_is_found(written: str, key: Path) -> None:
    _sql(written, "DELETE FROM memwarden_audit WHERE seq = 5")
    report = _verify(written, key)
    assert not report.ok and any("deleted from the end" in p for p in report.problems)


def test_an_entry_appended_by_hand_is_found(written: str, key: Path) -> None:
    _sql(written, "INSERT INTO memwarden_audit(seq, body, prev, hash) "
                  "SELECT 6, body, hash, hash FROM memwarden_audit WHERE seq = 5")
    report = _verify(written, key)
    assert not report.ok and 6 in report.bad_entries


def test_a_writer_with_another_key_refuses_to_append(written: str, tmp_path: Path) -> None:
    other = tmp_path / "other.key"
    other.write_text("ab" * 32 + "\n", encoding="ascii")
    log = AuditLog(written, key_path=other)
    with pytest.raises(AuditError, match="does not match this log"):
        log.append({"op": "write"})
    log.close()


def test_a_postgres_log_needs_a_key_file(pg_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MEMWARDEN_AUDIT_KEY_FILE", raising=False)
    with pytest.raises(AuditError, match="needs a key file"):
        AuditLog(pg_url)


def test_an_unreachable_log_is_an_audit_error(key: Path) -> None:
    with pytest.raises(AuditError, match="cannot open the audit log"):
        AuditLog("postgresql://memwarden@127.0.0.1:1/nothing", key_path=key)


KILLED = """
import os, signal, sys
from memwarden.memory.audit import AuditLog
where, key = sys.argv[1:]
log = AuditLog(where, key_path=key)
for i in range(40):
    # reads are appended unflushed, mutations flushed: interleaved, as memwarden does
    log.append({"op": "search" if i % 4 else "write", "i": i}, flush=bool(i % 4 == 0))
os.kill(os.getpid(), signal.SIGKILL)
"""


@pytest.mark.parametrize("store", ["sqlite", "postgresql"])
@pytest.mark.system
def test_unflushed_entries_survive_a_killed_process(store: str, request: pytest.FixtureRequest, tmp_path: Path,
                                                   key: Path) -> None:
    """A read's entry is committed without waiting for the disk; a kill -9 right after the
    last of them loses none, and the chain verifies with every entry in order."""
    where = str(tmp_path / "audit.sqlite3") if store == "sqlite" else request.getfixturevalue("pg_url")
    proc = subprocess.run([sys.executable, "-c", KILLED, where, str(key)], timeout=120)
    assert proc.returncode == -9
    log = AuditLog(where, key_path=key)
    report = log.verify()
    assert report.ok and report.entries == 40 and report.authenticated == 40
    assert [e["i"] for e in log.entries()] == list(range(40))
    assert [e["op"] for e in log.entries()][:5] == ["write", "search", "search", "search", "write"]
    log.close()


# -- the anchor: a head file per state directory ------------------------------------------------

N = 5


def _meta_rows(url: str) -> list[tuple[str, str]]:
    with psycopg.connect(url, autocommit=True) as conn:
        return conn.execute("SELECT name, value FROM memwarden_audit_meta").fetchall()


@pytest.mark.parametrize("heads", ["rolled back", "deleted"])
@pytest.mark.parametrize("keep", [0, 1, N - 1])
def test_a_cut_log_fails_verification_and_refuses_appends(pg_url: str, key: Path, keep: int, heads: str) -> None:
    log = AuditLog(pg_url, key_path=key)
    snapshots = {}
    for i in range(N):
        log.append({"op": "write", "principal": f"p{i}"})
        snapshots[i + 1] = _meta_rows(pg_url)
    log.close()
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("DELETE FROM memwarden_audit WHERE seq > %s", (keep,))
        if keep == 0:
            conn.execute("DELETE FROM memwarden_audit_meta")
        elif heads == "deleted":
            conn.execute("DELETE FROM memwarden_audit_meta WHERE name LIKE 'head%%'")
        else:
            conn.execute("DELETE FROM memwarden_audit_meta")
            conn.cursor().executemany("INSERT INTO memwarden_audit_meta VALUES (%s, %s)", snapshots[keep])
    report = _verify(pg_url, key)
    assert not report.ok
    assert any(p.startswith("anchored head:") and f"says it had {N}" in p for p in report.problems), report.problems
    log = AuditLog(pg_url, key_path=key)
    with pytest.raises(AuditError, match="anchored head|refusing"):
        log.append({"op": "write", "principal": "mallory"})
    log.close()
    assert main(["audit", "verify", "--audit", pg_url, "--key", str(key)]) == 1


def test_both_tables_emptied_fail_in_a_fresh_state_directory_too(written: str, key: Path, tmp_path: Path) -> None:
    """Another machine's process has copies of the keys but no head file of its own: the
    empty log still fails, and it refuses to start a new chain."""
    other = tmp_path / "machine2"
    other.mkdir()
    for name in ("audit.key", "audit.signing.key"):
        (other / name).write_bytes((key.parent / name).read_bytes())
    _sql(written, "DELETE FROM memwarden_audit")
    _sql(written, "DELETE FROM memwarden_audit_meta")
    for where in (key, other / "audit.key"):
        report = _verify(written, where)
        assert not report.ok and report.entries == 0
        log = AuditLog(written, key_path=where)
        with pytest.raises(AuditError):
            log.append({"op": "write"})
        log.close()


def test_each_state_directory_anchors_its_own_appends(written: str, key: Path, tmp_path: Path) -> None:
    other = tmp_path / "machine2"
    other.mkdir()
    for name in ("audit.key", "audit.signing.key"):
        (other / name).write_bytes((key.parent / name).read_bytes())
    log = AuditLog(written, key_path=other / "audit.key")
    log.append({"op": "write", "principal": "m2"})  # anchors the log from here on
    log.close()
    assert _verify(written, key).ok and _verify(written, other / "audit.key").ok
    _sql(written, "DELETE FROM memwarden_audit WHERE seq = 6")
    _sql(written, "DELETE FROM memwarden_audit_meta WHERE name LIKE 'head%%'")
    assert _verify(written, key).ok is False  # the head row is gone; entry 5 is machine 1's anchor
    assert any("anchored head" in p for p in _verify(written, other / "audit.key").problems)
