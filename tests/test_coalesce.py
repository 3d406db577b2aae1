"""A batch's upserts reach the store as one call, and nothing in the batch can tell: reads see
earlier writes, a repeated write is a replay, and a failure to store is audited per write."""

from __future__ import annotations

from pathlib import Path

import pytest

from memwarden import Memory, Principal, WriteOp
from memwarden.memory.audit import AuditLog
from memwarden.memory.partitioned import PartitionedBackend
from memwarden.memory.embeddings import HashingEmbedding
from memwarden.core.ops import GetOp, SearchOp
from memwarden.core.records import record_id
from memwarden.memory.journal import ErasureJournal
from memwarden.memory.tombstones import Tombstones
from memwarden.policies.engine import PolicyEngine

pytestmark = pytest.mark.integration


class CountingBackend:
    """A real embedded Chroma backend that counts upserts and can be told to fail them."""

    def __init__(self, inner: PartitionedBackend) -> None:
        self.inner, self.upserts, self.fail = inner, [], False

    def upsert(self, ids, embeddings, documents, metadatas) -> None:
        if self.fail:
            raise ConnectionError("store unreachable")
        self.upserts.append(list(ids))
        self.inner.upsert(ids, embeddings, documents, metadatas)

    def __getattr__(self, name: str):
        return getattr(self.inner, name)


@pytest.fixture
def counted(tmp_path: Path, policy_file: Path):
    backend = CountingBackend(PartitionedBackend.embedded(str(tmp_path / "chroma")))
    mem = Memory(backend, PolicyEngine(policy_file), AuditLog(tmp_path / "audit.sqlite3"),
                 Tombstones(tmp_path / "tombstones.sqlite3"), journal=ErasureJournal(tmp_path / "erasures.sqlite3"),
                 embedding=HashingEmbedding())
    yield mem, backend
    mem.close()


NS = ("ward3", "patients", "p1")


def test_a_batch_of_writes_is_one_upsert(counted) -> None:
    mem, backend = counted
    records = mem.session(Principal("alice")).batch([WriteOp(f"note {i}", NS) for i in range(30)])
    assert backend.upserts == [[r.id for r in records]]
    assert len(mem.session(Principal("alice")).search(None, NS, k=100)) == 30


def test_reads_inside_a_batch_see_the_writes_before_them(counted) -> None:
    mem, backend = counted
    alice = mem.session(Principal("alice"))
    allergy = "Patient 1 is allergic to penicillin"
    first, by_id, listed, child, again = alice.batch([
        WriteOp(allergy, NS, subjects=["p1"], labels={"sensitivity": "high"}, ttl=3600.0),
        GetOp(_id_of(allergy)),
        SearchOp(None, NS, 10),
        WriteOp("Patient 1 reacted to amoxicillin", NS, parents=[_id_of(allergy)]),
        WriteOp(allergy, NS),
    ])
    assert by_id == first  # a fetch by id is answered from the held row
    assert [h.record for h in listed] == [first]  # a filtered read stores the held rows first
    assert child.parents == (first.id,)  # the parent check found the held parent
    assert again == first  # the repeated write is a replay, not a second record
    assert len(alice.search(None, NS, k=10)) == 2
    assert alice.get(first.id) == by_id  # the held row reads back exactly as the stored one
    assert [e["replay"] for e in mem.audit_log.entries() if e["op"] == "write"] == [False, False, True]


def _id_of(content: str) -> str:
    return record_id("alice", NS, content)


def test_a_failed_store_is_audited_for_every_held_write(counted) -> None:
    mem, backend = counted
    alice = mem.session(Principal("alice"))
    backend.fail = True
    with pytest.raises(ConnectionError):
        alice.batch([WriteOp(f"note {i}", NS) for i in range(5)])
    backend.fail = False
    assert alice.search(None, NS, k=10) == []
    writes = [e for e in mem.audit_log.entries() if e["op"] == "write"]
    # Each write: its entry before it was held, then its compensating entry when storing failed.
    assert [e["outcome"] for e in writes] == ["ok"] * 5 + ["error"] * 5
    assert all(e["error"] == "apply failed after audit: ConnectionError" for e in writes[5:])
    assert sorted(e["records"][0] for e in writes[:5]) == sorted(e["records"][0] for e in writes[5:])
    assert mem.audit_log.verify().ok
    # Nothing stays held: the next batch stores only its own write.
    alice.write("note after", NS)
    assert backend.upserts == [[_id_of("note after")]]
