"""Policy in a SQL database (pycasbin's sqlalchemy-adapter table): the same validation as a
file, hot reload within the documented bound, and failing closed on bad rows or a lost
database."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import psycopg
import pytest
import sqlalchemy as sa

from memwarden import AccessDenied, Memory, Principal
from memwarden.cli import main
from memwarden.databases import sqlalchemy_url
from memwarden.core.errors import PolicyError
from memwarden.memory.embeddings import HashingEmbedding
from memwarden.policies.loading import PolicyData, bundled_model_path, parse_policy_text, read_policy
from memwarden.policies.sources import DEFAULT_POLL, SQLPolicyEngine, SQLPolicyStore, export_policy, import_policy
from tests.conftest import HOSPITAL

pytestmark = pytest.mark.integration

WARD = ("ward3", "patients", "p1")


def _plain(data: PolicyData) -> tuple:
    """PolicyData without where each line came from."""
    return ([r.text for r in data.rules], [(link.member, link.role) for link in data.links],
            [(c.what, c.pattern.text, c.kind, c.value) for c in data.lifecycle])


def _allowed(engine, principal: str, action: str = "read", namespace: tuple[str, ...] = WARD) -> bool:
    return engine.decide(engine.subjects(principal, ()), action, namespace).allowed


def _sql(url: str, statement: str, **params) -> None:
    """Edit the table as another program would (psql, an admin tool): not through memwarden."""
    engine = sa.create_engine(sqlalchemy_url(url))
    with engine.begin() as conn:
        conn.execute(sa.text(statement), params)
    engine.dispose()


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    url = f"sqlite:///{tmp_path / 'policy.db'}"
    SQLPolicyStore(url).replace(HOSPITAL)
    return url


@pytest.mark.parametrize("name", ["hospital", "office", "household"])
def test_bundled_policies_round_trip_through_the_database(name: str, tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'policy.db'}"
    assert main(["policy", "import", name, "--db", url]) == 0
    expected = _plain(read_policy(name))
    engine = SQLPolicyEngine(url)
    assert _plain(engine.data) == expected
    engine.close()
    out = tmp_path / "exported.csv"
    assert main(["policy", "export", "--db", url, "--out", str(out)]) == 0
    assert _plain(parse_policy_text(out.read_text(encoding="utf-8"))) == expected


def test_an_import_is_validated_whole_before_anything_is_written(sqlite_url: str, tmp_path: Path) -> None:
    before, version = export_policy(sqlite_url), SQLPolicyStore(sqlite_url).version()
    bad = tmp_path / "bad.csv"
    bad.write_text("p, nurse, ward3/**, read\ng, bob, nurse\np, nurse, ward3/**, raed\n", encoding="utf-8")
    with pytest.raises(PolicyError, match=r"bad\.csv:3: unknown action 'raed'"):
        import_policy(bad, sqlite_url)
    assert main(["policy", "import", str(bad), "--db", sqlite_url]) == 2
    assert export_policy(sqlite_url) == before and SQLPolicyStore(sqlite_url).version() == version


BAD_ROWS = {
    "unknown action": ("p", "mallory", "ward3/**", "raed", None),
    "dot-dot pattern": ("p", "mallory", "ward3/../billing", "read", None),
    "too few fields": ("p", "mallory", "ward3/**", None, None),
    "unknown effect": ("p", "mallory", "ward3/**", "read", "alow"),
    "unknown line type": ("q", "mallory", "ward3/**", "read", None),
    "empty row": (None, None, None, None, None),
    "comment type": ("#p", "mallory", "ward3/**", "read", None),
    # One row must never become two policy lines.
    "line break injection": ("p", "nurse", "ward3/**", "read\np, mallory, ward3/**, erase", None),
    "bad ttl": ("ttl", "ward3/**", "fact", "soon", None),
}


@pytest.mark.parametrize("row", BAD_ROWS.values(), ids=BAD_ROWS.keys())
def test_a_malformed_row_denies_everything_until_fixed(sqlite_url: str, row: tuple) -> None:
    engine = SQLPolicyEngine(sqlite_url, poll=0)
    assert _allowed(engine, "alice") and not _allowed(engine, "mallory", "erase")
    _sql(sqlite_url, "INSERT INTO casbin_rule(id, ptype, v0, v1, v2, v3) VALUES (900, :t, :a, :b, :c, :d)",
         t=row[0], a=row[1], b=row[2], c=row[3], d=row[4])
    assert not _allowed(engine, "alice") and not _allowed(engine, "mallory", "erase")
    assert "row id 900" in engine.error
    with pytest.raises(PolicyError, match="row id 900"):
        engine.reload()
    with pytest.raises(PolicyError, match="row id 900"):  # a fresh process refuses to start on it
        SQLPolicyEngine(sqlite_url)
    _sql(sqlite_url, "DELETE FROM casbin_rule WHERE id = 900")
    assert _allowed(engine, "alice") and engine.error is None
    assert not _allowed(engine, "mallory", "erase")
    engine.close()


def test_a_memory_denies_while_its_policy_rows_are_malformed(sqlite_url: str, tmp_path: Path,
                                                              caplog: pytest.LogCaptureFixture) -> None:
    engine = SQLPolicyEngine(sqlite_url, poll=0)
    with Memory.open(tmp_path / "data", policy=engine, embedding=HashingEmbedding()) as mem:
        alice = mem.session(Principal("alice"))
        rec = alice.write("Patient 1 is allergic to penicillin", WARD)
        _sql(sqlite_url, "UPDATE casbin_rule SET v2 = 'raed' WHERE v0 = 'nurse' AND v2 = 'read'")
        with caplog.at_level("ERROR", logger="memwarden.policy"):
            with pytest.raises(AccessDenied):
                alice.search("penicillin", "ward3/patients")
        assert alice.get(rec.id) is None
        assert any("denying every request" in r.getMessage() for r in caplog.records)
        _sql(sqlite_url, "UPDATE casbin_rule SET v2 = 'read' WHERE v2 = 'raed'")
        assert [h.record.id for h in alice.search("penicillin", "ward3/patients")] == [rec.id]
    engine.close()


def test_memory_open_accepts_a_policy_url(sqlite_url: str, tmp_path: Path) -> None:
    with Memory.open(tmp_path / "data", policy=sqlite_url, embedding=HashingEmbedding()) as mem:
        assert isinstance(mem.policy, SQLPolicyEngine) and mem.policy.poll == DEFAULT_POLL
        alice = mem.session(Principal("alice"))
        rec = alice.write("Patient 1 is allergic to penicillin", WARD)
        assert mem.session(Principal("carol")).get(rec.id) is None
        assert alice.get(rec.id) == rec


def test_a_lost_database_denies_and_a_returning_one_restores(pg_url: str, postgres: str) -> None:
    SQLPolicyStore(pg_url).replace(HOSPITAL)
    engine = SQLPolicyEngine(pg_url, poll=0)
    assert _allowed(engine, "alice")
    name = pg_url.rsplit("/", 1)[1]
    with psycopg.connect(postgres, autocommit=True) as admin:
        admin.execute(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS false')
        admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s", (name,))
        try:
            assert not _allowed(engine, "alice")
            assert engine.error.startswith("cannot read the policy")
            assert engine.knows("someone-unknown", ())  # denied as such, not refused as unknown
        finally:
            admin.execute(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS true')
    assert _allowed(engine, "alice") and engine.error is None
    engine.close()


WATCHER = """
import json, sys, time
from memwarden.policies.sources import open_policy

engine, close = open_policy(sys.argv[1])
print("ready", flush=True)
last_denied, deadline = None, time.time() + 30
while time.time() < deadline:
    began = time.time()
    if engine.decide(engine.subjects("ann", ("auditor",)), "read", ("ward3", "patients", "p1")).allowed:
        print(json.dumps({"last_denied": last_denied, "first_allowed": began}), flush=True)
        break
    last_denied = began
    time.sleep(0.005)
close()
"""


@pytest.mark.system
@pytest.mark.slow
def test_a_change_by_another_pycasbin_process_is_in_force_within_the_bound(pg_url: str) -> None:
    """The other process is any pycasbin application on the same table (sqlalchemy-adapter);
    the watcher is a second OS process using the default poll interval."""
    import casbin
    from sqlalchemy_adapter import Adapter

    SQLPolicyStore(pg_url).replace(HOSPITAL)
    watcher = subprocess.Popen([sys.executable, "-c", WATCHER, pg_url], stdout=subprocess.PIPE, text=True)
    try:
        assert watcher.stdout.readline().strip() == "ready"
        time.sleep(DEFAULT_POLL + 0.2)  # the watcher is denied for a while first
        engine = sa.create_engine(sqlalchemy_url(pg_url))
        enforcer = casbin.Enforcer(bundled_model_path(), Adapter(engine, create_table=False))
        assert enforcer.add_policy("auditor", "ward3/**", "read", "allow")  # auto-saved through the adapter
        committed = time.time()
        engine.dispose()
        seen = json.loads(watcher.stdout.readline())
        assert watcher.wait(timeout=30) == 0
    finally:
        watcher.kill()
    assert seen["last_denied"] is not None and seen["last_denied"] < committed + DEFAULT_POLL, seen
    assert seen["first_allowed"] - committed < DEFAULT_POLL + 1.0


def _without_triggers(url: str, *statements: str) -> None:
    """Apply ``statements`` the way a logical replica or ``pg_restore --disable-triggers`` does:
    with ``session_replication_role = replica``, so no trigger (the version bump) runs."""
    with psycopg.connect(url) as conn:
        conn.execute("SET session_replication_role = replica")
        for statement in statements:
            conn.execute(statement)
        conn.commit()


@pytest.mark.system
@pytest.mark.slow
def test_a_change_made_with_triggers_off_is_in_force_within_the_bound(pg_url: str) -> None:
    """Before: the version counter is moved only by a trigger, so these changes never reached a
    running process (the watcher timed out; the revoked grant stayed in force)."""
    store = SQLPolicyStore(pg_url)
    store.replace(HOSPITAL)
    version = store.version()
    engine = SQLPolicyEngine(pg_url)  # the default poll: the documented bound
    assert _allowed(engine, "alice")
    watcher = subprocess.Popen([sys.executable, "-c", WATCHER, pg_url], stdout=subprocess.PIPE, text=True)
    try:
        assert watcher.stdout.readline().strip() == "ready"
        time.sleep(DEFAULT_POLL + 0.2)  # the watcher is denied for a while first
        _without_triggers(pg_url, "INSERT INTO casbin_rule(ptype, v0, v1, v2, v3) "
                                  "VALUES ('p', 'auditor', 'ward3/**', 'read', 'allow')",
                          "DELETE FROM casbin_rule WHERE ptype = 'g' AND v0 = 'alice'")
        committed = time.time()
        revoked_at = None
        while time.time() < committed + 10:
            began = time.time()
            if not _allowed(engine, "alice"):
                revoked_at = began
                break
            assert began < committed + DEFAULT_POLL, "alice was still allowed after the bound"
            time.sleep(0.005)
        seen = json.loads(watcher.stdout.readline())
        assert watcher.wait(timeout=30) == 0
    finally:
        watcher.kill()
        engine.close()
    assert store.version() == version, "the trigger ran: this test would not show anything"
    store.close()
    assert revoked_at is not None and revoked_at - committed < DEFAULT_POLL + 1.0
    assert seen["last_denied"] is not None and seen["last_denied"] < committed + DEFAULT_POLL, seen
    assert seen["first_allowed"] - committed < DEFAULT_POLL + 1.0


def test_the_poll_reads_one_short_row_whatever_the_size_of_the_policy(pg_url: str) -> None:
    text = HOSPITAL + "".join(f"p, role{i}, ward{i}/**, read\n" for i in range(2000))
    store = SQLPolicyStore(pg_url)
    store.replace(text)
    state = store.state()
    assert len(state.checksum) == 32 and state == store.state()
    _without_triggers(pg_url, "UPDATE casbin_rule SET v1 = 'ward0/x/**' WHERE v0 = 'role0'")
    assert store.state().version == state.version and store.state().checksum != state.checksum
    store.close()


def test_a_mistyped_policy_url_is_refused_and_creates_nothing(sqlite_url: str, tmp_path: Path) -> None:
    """Before: a reader's URL naming no database created an empty policy database that denied
    everything, and the operator saw only 'unknown principal'."""
    typo = tmp_path / "plicy.db"
    with pytest.raises(PolicyError, match=r"no policy database at .*plicy\.db.*memwarden policy import"):
        Memory.open(tmp_path / "data", policy=f"sqlite:///{typo}", embedding=HashingEmbedding())
    assert not typo.exists()


def test_a_database_without_a_policy_is_refused_and_left_unchanged(tmp_path: Path) -> None:
    """A URL naming another database (here a stand-in for the audit log's) gets no policy tables."""
    other = tmp_path / "audit.db"
    sqlite3.connect(other).execute("CREATE TABLE entries (n INTEGER)").connection.commit()
    with pytest.raises(PolicyError, match=r"holds no memwarden policy \(no table 'casbin_rule'\)"):
        SQLPolicyEngine(f"sqlite:///{other}")
    tables = {name for (name,) in sqlite3.connect(other).execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert tables == {"entries"}
