"""Shared fixtures (a real embedded Memory on a temporary directory with a fast embedding, a
Chroma server, a PostgreSQL cluster, the clock of TTL tests) and the test tiers.

Tiers (registered in pyproject.toml): every test is marked ``unit``, ``integration`` or
``system``, in its module's ``pytestmark`` or on the test; where a test carries several, the
highest counts. A test without one is an error, and a test whose tier is ``unit`` fails if it
opens a Chroma client or starts a process, so that ``make test-fast`` selects what it says.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from memwarden import Memory
from memwarden.core.records import utcnow
from memwarden.memory.embeddings import HashingEmbedding
from tests.clock import Clock, RealClock, patched_clock

TIERS = ("unit", "integration", "system")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Refuse a test that has no tier."""
    untiered = [item.nodeid for item in items if not any(item.get_closest_marker(t) for t in TIERS)]
    if untiered:
        raise pytest.UsageError("tests without a tier marker (unit, integration or system; see tests/conftest.py): "
                                + ", ".join(untiered[:20]) + (" ..." if len(untiered) > 20 else ""))


@pytest.fixture(autouse=True)
def _unit_tests_stay_in_process(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """A ``unit`` test (no higher tier) that opens a Chroma client or starts a process fails,
    naming the tier it needs."""
    if any(request.node.get_closest_marker(t) for t in TIERS[1:]):
        return
    import chromadb

    def refuse(what: str, tier: str):
        def call(*args, **kwargs):
            raise AssertionError(f"{request.node.nodeid} is marked unit but {what}: mark it {tier}")
        return call

    for name in ("PersistentClient", "HttpClient", "EphemeralClient", "Client"):
        monkeypatch.setattr(chromadb, name, refuse(f"opens a Chroma client (chromadb.{name})", "integration"))
    monkeypatch.setattr(subprocess, "Popen", refuse("starts a process", "system"))


HOSPITAL = """
p, physician, ward3/patients/**, read
p, physician, ward3/patients/*, write
p, physician, ward3/patients/*, update
p, physician, ward3/patients/*, forget
p, nurse, ward3/patients/*, read
p, nurse, ward3/patients/*, write
p, billing_clerk, ward3/billing/**, read
p, billing_clerk, ward3/billing/**, write
p, billing_clerk, ward3/patients/*, read, deny
p, privacy_officer, ward3/**, erase
p, privacy_officer, ward3/**, read
g, alice, physician
g, bob, nurse
g, carol, billing_clerk
g, dpo, privacy_officer
"""


@pytest.fixture(params=["fake", pytest.param("real", marks=pytest.mark.slow)])
def clock(request: pytest.FixtureRequest) -> Iterator[Clock | RealClock]:
    """The time memwarden reads, which a TTL test moves on with ``advance``: a fake clock (no
    wait; tests/clock.py), and in the slow tier the system's own (real waits), so that every TTL
    case is also proven on the time memwarden reads in production."""
    if request.param == "real":
        yield RealClock()
        return
    with patched_clock(Clock(utcnow())) as clock:
        yield clock


@pytest.fixture
def policy_file(tmp_path: Path) -> Path:
    """The hospital test policy as a CSV file."""
    path = tmp_path / "policy.csv"
    path.write_text(HOSPITAL, encoding="utf-8")
    return path


@pytest.fixture
def mem(tmp_path: Path, policy_file: Path):
    """A real embedded Memory (Chroma PersistentClient) with the hashing test embedding."""
    memory = Memory.open(tmp_path / "data", policy=policy_file, embedding=HashingEmbedding(), count_withheld=True)
    yield memory
    memory.close()


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="session")
def chroma_server(tmp_path_factory: pytest.TempPathFactory):
    """A real Chroma server (``chroma run``, shipped with chromadb) on a free loopback port."""
    import subprocess
    import sys
    import time

    import httpx

    binary = Path(sys.executable).parent / "chroma"
    if not binary.exists():
        pytest.fail(f"the chroma CLI is missing next to {sys.executable}; reinstall chromadb")
    port = _free_port()
    data = tmp_path_factory.mktemp("chroma-server")
    log = (data / "server.log").open("w")
    proc = subprocess.Popen([str(binary), "run", "--path", str(data / "db"), "--host", "127.0.0.1",
                             "--port", str(port)], stdout=log, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 60
    while True:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/api/v2/heartbeat", timeout=1).status_code == 200:
                break
        except httpx.TransportError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            pytest.fail(f"chroma run did not start; see {data / 'server.log'}")
        time.sleep(0.2)
    yield "127.0.0.1", port
    proc.terminate()
    proc.wait(timeout=30)
    log.close()


_POSTGRES_SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "postgres.sh"


@pytest.fixture(scope="session")
def postgres():
    """A throwaway PostgreSQL cluster (scripts/postgres.sh) on a free loopback port; yields its
    URL. Skips only when no PostgreSQL server binaries are installed (Debian: ``postgresql``)."""
    import shutil
    import subprocess
    import tempfile

    root = Path(tempfile.mkdtemp(prefix="memwarden-pg-"))
    root.chmod(0o755)  # run as root, the server runs as `postgres` and must reach the cluster
    data = root / "cluster"
    # Nothing here is worth a disk flush: the cluster dies with the test session.
    started = subprocess.run(["bash", str(_POSTGRES_SCRIPT), "start", str(data), str(_free_port()),
                              "-c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200"],
                             capture_output=True, text=True)
    if started.returncode == 3:
        shutil.rmtree(root, ignore_errors=True)
        pytest.skip(f"PostgreSQL is not installed: {started.stderr.strip()}")
    if started.returncode != 0:
        shutil.rmtree(root, ignore_errors=True)
        pytest.fail(f"scripts/postgres.sh could not start PostgreSQL: {started.stderr.strip()}")
    try:
        yield started.stdout.strip()
    finally:
        subprocess.run(["bash", str(_POSTGRES_SCRIPT), "stop", str(data), "immediate"], capture_output=True)
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def pg_url(postgres: str) -> str:
    """A fresh, empty database in the session's PostgreSQL cluster, for one test."""
    import uuid

    import psycopg

    name = f"t_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(postgres, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    return postgres.rsplit("/", 1)[0] + "/" + name
