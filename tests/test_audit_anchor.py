"""The anchored audit log (SQLite): cutting the log back to any length, zero included, with
its head rows deleted or rolled back to a genuine earlier state, is found by verify and
refused by the next append; so is a deleted database whose key is still there.

The attacker can write ``audit.sqlite3`` but cannot read the key files or write their
directory. Rolling the head rows back is the strongest thing they can do to the database:
the rows are MAC'd, so they replay ones that were genuine when the log had k entries.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from memwarden.cli import main
from memwarden.core.errors import AuditError
from memwarden.memory.audit import AuditLog

pytestmark = pytest.mark.unit

N = 6


def _db(path: Path) -> sqlite3.Connection:
    return sqlite3.connect(path, isolation_level=None)


def _meta(path: Path) -> list[tuple[str, str]]:
    with _db(path) as conn:
        return conn.execute("SELECT name, value FROM audit_meta").fetchall()


@pytest.fixture
def grown(tmp_path: Path) -> tuple[Path, dict[int, list[tuple[str, str]]]]:
    """A log of N entries, and its meta rows as they were after each append."""
    path = tmp_path / "audit.sqlite3"
    log = AuditLog(path)
    snapshots = {}
    for i in range(N):
        log.append({"op": "write", "principal": f"p{i}", "outcome": "ok"})
        snapshots[i + 1] = _meta(path)
    log.close()
    return path, snapshots


def _cut(path: Path, keep: int, heads: str, snapshots: dict[int, list[tuple[str, str]]]) -> None:
    conn = _db(path)
    conn.execute("DELETE FROM audit WHERE seq > ?", (keep,))
    if heads == "deleted" or keep == 0:  # there are no genuine head rows of an empty log to replay
        conn.execute("DELETE FROM audit_meta" if keep == 0 else "DELETE FROM audit_meta WHERE name LIKE 'head%'")
    else:  # rolled back to the genuine rows of a log of `keep` entries
        conn.execute("DELETE FROM audit_meta")
        conn.executemany("INSERT INTO audit_meta VALUES (?, ?)", snapshots[keep])
    conn.close()


@pytest.mark.parametrize("heads", ["rolled back", "deleted"])
@pytest.mark.parametrize("keep", [0, 1, N - 1])
def test_a_cut_log_fails_verification_and_refuses_appends(grown, keep: int, heads: str,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    path, snapshots = grown
    _cut(path, keep, heads, snapshots)
    log = AuditLog(path)
    report = log.verify()
    assert not report.ok
    assert any(p.startswith("anchored head:") and f"says it had {N}" in p for p in report.problems), report.problems
    assert set(range(keep + 1, N + 1)) <= set(report.bad_entries)
    with pytest.raises(AuditError, match="anchored head|refusing"):
        log.append({"op": "write", "principal": "mallory"})
    log.close()
    assert len(list(AuditLog(path).entries())) == keep  # nothing was chained onto the cut log
    assert main(["audit", "verify", "--data", str(path.parent)]) == 1
    out = capsys.readouterr().out
    assert "TAMPERED" in out and "anchored head" in out


def test_both_tables_emptied_is_not_an_empty_valid_log(grown) -> None:
    """The attack as reported: every row of both tables deleted, then the next append would
    start a fresh chain that verifies."""
    path, _ = grown
    conn = _db(path)
    conn.execute("DELETE FROM audit")
    conn.execute("DELETE FROM audit_meta")
    conn.close()
    log = AuditLog(path)
    report = log.verify()
    assert not report.ok and report.entries == 0
    assert any("every entry deleted" in p for p in report.problems)
    with pytest.raises(AuditError):
        log.append({"op": "write"})
    assert not log.verify().ok
    log.close()


def test_a_deleted_database_with_its_key_still_there_fails(grown, capsys: pytest.CaptureFixture[str]) -> None:
    path, _ = grown
    for name in (path.name, path.name + "-wal", path.name + "-shm"):
        (path.parent / name).unlink(missing_ok=True)
    assert main(["audit", "verify", "--data", str(path.parent)]) == 1
    assert "TAMPERED" in capsys.readouterr().out
    log = AuditLog(path)  # re-creates an empty database
    assert not log.verify().ok
    with pytest.raises(AuditError):
        log.append({"op": "write"})
    log.close()


def test_an_empty_log_whose_key_exists_without_any_head_fails(grown) -> None:
    """Keys left from an earlier log (or copied in) do not make a wiped log look new."""
    path, _ = grown
    (path.parent / "audit.head").unlink()
    conn = _db(path)
    conn.execute("DELETE FROM audit")
    conn.execute("DELETE FROM audit_meta")
    conn.close()
    log = AuditLog(path)
    report = log.verify()
    assert not report.ok and any("the log was wiped" in p for p in report.problems)
    with pytest.raises(AuditError, match="refusing to start a new chain"):
        log.append({"op": "write"})
    log.close()


def test_the_head_file_deleted_garbled_or_edited_is_found(grown) -> None:
    path, _ = grown
    head = path.parent / "audit.head"
    original = head.read_bytes()
    head.unlink()
    assert any("head file" in p and "missing" in p for p in AuditLog(path).verify().problems)
    head.write_text("{not json")
    assert any("garbled" in p for p in AuditLog(path).verify().problems)
    doc = json.loads(original)
    head.write_text(json.dumps({**doc, "count": N - 1}))
    report = AuditLog(path).verify()
    assert any("signature does not verify" in p for p in report.problems)
    with pytest.raises(AuditError):
        AuditLog(path).append({"op": "write"})
    head.write_bytes(original)
    assert AuditLog(path).verify().ok


def test_the_head_file_only_moves_forward(tmp_path: Path) -> None:
    path = tmp_path / "audit.sqlite3"
    logs = [AuditLog(path), AuditLog(path)]
    for i in range(10):
        logs[i % 2].append({"op": "write", "i": i})
        assert json.loads((tmp_path / "audit.head").read_text())["count"] == i + 1
    # A writer that lags behind never writes an older head over a newer one.
    logs[0]._head_file.advance(3, lambda: pytest.fail("an older head was written"), flush=False)
    assert json.loads((tmp_path / "audit.head").read_text())["count"] == 10
    assert all(log.verify().ok for log in logs)
    for log in logs:
        log.close()


def test_a_new_store_and_an_anchored_empty_log_verify(tmp_path: Path) -> None:
    log = AuditLog(tmp_path / "audit.sqlite3")
    assert log.verify().ok  # no keys yet: a store that never wrote anything
    log.append({"op": "write"})
    assert log.verify().ok and (tmp_path / "audit.head").exists() and (tmp_path / "audit.signing.key").exists()
    log.close()


def test_a_log_from_before_the_anchor_is_anchored_by_its_next_append(grown) -> None:
    path, _ = grown
    (path.parent / "audit.head").unlink()
    (path.parent / "audit.signing.key").unlink()  # as memwarden before signing keys left it
    log = AuditLog(path)
    assert log.append({"op": "search"}) == N + 1
    assert log.verify().ok
    assert json.loads((path.parent / "audit.head").read_text())["count"] == N + 1
    log.close()


def test_threat_model_a_rollback_of_database_and_head_file_together(grown, tmp_path: Path) -> None:
    """Documented limitation: whoever can also write the key directory can restore an older
    genuine copy of both the database and the head file. Exported heads held elsewhere are
    the defence (tests/test_proof.py)."""
    path, _ = grown
    saved = tmp_path / "saved"
    saved.mkdir()
    files = ("audit.sqlite3", "audit.sqlite3-wal", "audit.sqlite3-shm", "audit.head")
    for name in files:
        if (path.parent / name).exists():
            shutil.copy(path.parent / name, saved / name)
    log = AuditLog(path)
    log.append({"op": "erase", "principal": "dpo"})
    log.close()
    for name in files:
        (path.parent / name).unlink(missing_ok=True)
        if (saved / name).exists():
            shutil.copy(saved / name, path.parent / name)
    log = AuditLog(path)
    assert log.verify().ok and len(list(log.entries())) == N
    log.close()
