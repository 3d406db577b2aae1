"""The same governed API against a real Chroma server (``chroma run``): the contract and
retries through injected connection failures. Several OS processes writing at once:
test_multiprocess.py."""

from __future__ import annotations

import socket
import threading
import uuid
from pathlib import Path

import pytest

from memwarden import AccessDenied, Memory, Principal
from memwarden.memory.embeddings import HashingEmbedding
from memwarden.memory.remote import is_transient

pytestmark = pytest.mark.integration


def _connect(server, policy_file: Path, state: Path, **kw) -> Memory:
    host, port = server
    return Memory.connect(host, port, policy=policy_file, state=state, embedding=HashingEmbedding(), **kw)


def test_contract_against_a_server(chroma_server, policy_file: Path, tmp_path: Path) -> None:
    with _connect(chroma_server, policy_file, tmp_path / "s1") as mem:
        alice = mem.session(Principal("alice"))
        tag = uuid.uuid4().hex[:8]
        rec = alice.write(f"Patient {tag} is allergic to penicillin", ("ward3", "patients", tag), subjects=[tag])
        assert alice.write(f"Patient {tag} is allergic to penicillin", ("ward3", "patients", tag)) == rec
        assert [h.record.id for h in alice.search("penicillin", ("ward3", "patients", tag))] == [rec.id]
        assert mem.session(Principal("carol")).get(rec.id) is None
        with pytest.raises(AccessDenied):
            mem.session(Principal("carol")).write("x", ("ward3", "patients", tag))
        new = alice.update(rec.id, f"Patient {tag} is allergic to penicillin and latex")
        assert mem.session(Principal("dpo")).erase(subject=tag).count == 2
        assert alice.get(new.id) is None
        assert mem.audit_log.verify().ok


class _FlakyProxy:
    """A loopback TCP proxy that drops the first ``failures`` connections, then forwards."""

    def __init__(self, target: tuple[str, int], failures: int) -> None:
        self.target, self.failures = target, failures
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.dropped = 0
        self.live: list[socket.socket] = []
        threading.Thread(target=self._serve, daemon=True).start()

    def break_connections(self, then_drop: int) -> None:
        """Cut every open connection (kept-alive ones too) and refuse the next ``then_drop``."""
        self.failures = self.dropped + then_drop
        for s in self.live:
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        self.live.clear()

    def _pipe(self, a: socket.socket, b: socket.socket) -> None:
        try:
            while data := a.recv(65536):
                b.sendall(data)
        except OSError:
            pass
        finally:
            for s in (a, b):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def _serve(self) -> None:
        while True:
            try:
                client, _ = self.sock.accept()
            except OSError:
                return
            if self.dropped < self.failures:
                self.dropped += 1
                client.close()
                continue
            upstream = socket.create_connection(self.target)
            self.live += [client, upstream]
            threading.Thread(target=self._pipe, args=(client, upstream), daemon=True).start()
            threading.Thread(target=self._pipe, args=(upstream, client), daemon=True).start()


@pytest.mark.slow
def test_transient_failures_are_retried_without_duplicates(chroma_server, policy_file: Path, tmp_path: Path) -> None:
    proxy = _FlakyProxy(chroma_server, failures=0)
    with _connect(("127.0.0.1", proxy.port), policy_file, tmp_path / "s2") as mem:
        alice = mem.session(Principal("alice"))
        tag = uuid.uuid4().hex[:8]
        alice.search("warm up the connection pool", "ward3")
        proxy.break_connections(then_drop=3)
        rec = alice.write(f"Patient {tag} needs a wheelchair", ("ward3", "patients", tag))
        assert proxy.dropped >= 1
        hits = alice.search("wheelchair", ("ward3", "patients", tag), k=10)
        assert [h.record.id for h in hits] == [rec.id]


def test_only_transient_errors_are_retried() -> None:
    import httpx

    assert is_transient(httpx.ConnectError("refused"))
    assert not is_transient(ValueError("Collection expecting embedding with dimension of 3, got 256"))
    from chromadb.errors import InternalError

    # The server's SQLite busy for a moment (seen under concurrent tests): retried.
    assert is_transient(InternalError("Database error: error returned from database: (code: 5) database is locked"))
    assert not is_transient(InternalError("Database error: no such table: collections"))
    assert not is_transient(ValueError("database is locked"))



@pytest.mark.slow
def test_partitions_made_by_another_process_are_found(chroma_server, tmp_path: Path) -> None:
    """Two connections stand for two processes: what one writes into a partition the other has
    never seen is found by id at once, and by search within the documented second."""
    import time

    tag = uuid.uuid4().hex[:8]
    policy = tmp_path / "policy.csv"
    policy.write_text("p, staff, ward3/**, read\np, staff, ward3/**, write\np, staff, ward3/**, erase\n"
                      "g, alice, staff\ng, dpo, staff\n", encoding="utf-8")
    with _connect(chroma_server, policy, tmp_path / "a") as first, \
            _connect(chroma_server, policy, tmp_path / "b") as second:
        second.session(Principal("alice")).search("warm up", "ward3")
        rec = first.session(Principal("alice")).write(f"Patient {tag} takes warfarin", ("ward3", tag, "p1"))
        alice = second.session(Principal("alice"))
        assert alice.get(rec.id) == rec
        time.sleep(1.1)
        assert [h.record.id for h in alice.search("warfarin", ("ward3", tag), k=3)] == [rec.id]
        receipt = first.session(Principal("dpo")).erase(ids=[rec.id])
        assert receipt.count == 1 and alice.get(rec.id) is None


def test_search_breadth_reaches_the_servers_partitions(chroma_server, tmp_path: Path) -> None:
    import chromadb

    from memwarden.memory.compaction import hnsw_config
    from memwarden.memory.partitioned import collection_name
    from memwarden.policies.partitions import Partition

    tag = uuid.uuid4().hex[:8]
    policy = tmp_path / "policy.csv"
    policy.write_text("p, staff, ward3/**, read\np, staff, ward3/**, write\ng, alice, staff\n", encoding="utf-8")
    client = chromadb.HttpClient(host=chroma_server[0], port=chroma_server[1])
    name = collection_name(2, Partition(("ward3", tag), 3))
    with _connect(chroma_server, policy, tmp_path / "a", search_breadth=250) as mem:
        mem.session(Principal("alice")).write(f"Patient {tag} takes warfarin", ("ward3", tag, "p1"))
    assert hnsw_config(client.get_collection(name)).get("ef_search") == 250
    with _connect(chroma_server, policy, tmp_path / "b", search_breadth=180) as mem:
        assert mem.session(Principal("alice")).search("warfarin", ("ward3", tag), k=1)
    assert hnsw_config(client.get_collection(name)).get("ef_search") == 180
