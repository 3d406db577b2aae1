"""Shared fixtures: a real embedded Memory on a temporary directory, with a fast embedding."""

from __future__ import annotations

from pathlib import Path

import pytest

from memwarden import Memory
from memwarden.memory.embeddings import HashingEmbedding

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
