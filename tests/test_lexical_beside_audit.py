"""The lexical index's synced transaction runs beside the audit commit, not after it, and the
order that matters still holds: nothing reaches Chroma before its audit entry is committed,
and a write whose entry cannot be committed leaves nothing behind, in Chroma or the index."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from memwarden import Memory, Principal, WriteOp
from memwarden.core.errors import AuditError
from memwarden.memory.audit import AuditLog
from memwarden.memory.embeddings import HashingEmbedding
from memwarden.memory.lexical import IndexedBackend, LexicalIndex

pytestmark = pytest.mark.integration

NS = ("ward3", "patients", "p1")
# Long enough for a loaded machine; a pass never waits for it (the event is set at once).
_PATIENCE = 30.0


@pytest.fixture
def mem(tmp_path: Path, policy_file: Path):
    memory = Memory.open(tmp_path / "data", policy=policy_file, embedding=HashingEmbedding(), lessons=False,
                         validators=[], search_index="off")
    yield memory
    memory.close()


def _lexical(mem: Memory) -> IndexedBackend:
    backend = mem._pipeline.backend._inner
    assert isinstance(backend, IndexedBackend)
    return backend


def test_the_index_transaction_runs_while_the_audit_commits(mem: Memory, monkeypatch) -> None:
    indexed = threading.Event()
    seen_in_chroma_during_commit: list[int] = []
    upsert, append_many = LexicalIndex.upsert, AuditLog.append_many

    def index_upsert(self, ids, documents, metadatas):
        upsert(self, ids, documents, metadatas)
        indexed.set()

    def commit(self, entries, *, flush=True):
        if any(e.get("op") == "write" for e in entries):
            # Before this commit returns, the index has committed its rows (they run side by
            # side) and Chroma has none of them (it waits for both).
            assert indexed.wait(_PATIENCE), "the lexical transaction waited for the audit commit"
            seen_in_chroma_during_commit.append(_lexical(mem)._inner.count())
        return append_many(self, entries, flush=flush)

    monkeypatch.setattr(LexicalIndex, "upsert", index_upsert)
    monkeypatch.setattr(AuditLog, "append_many", commit)
    records = mem.session(Principal("alice")).batch([WriteOp(f"note {i}", NS) for i in range(3)])
    assert seen_in_chroma_during_commit == [0]
    assert _lexical(mem)._inner.count() == 3
    assert {i for i, _ in _lexical(mem)._index.search("note", 10, None)} == {r.id for r in records}


@pytest.mark.parametrize("fault", [AuditError("audit log unwritable"), KeyboardInterrupt()])
def test_an_entry_that_cannot_be_committed_leaves_nothing(mem: Memory, monkeypatch, fault) -> None:
    alice = mem.session(Principal("alice"))
    kept = alice.write("kept note", NS)
    append_many = AuditLog.append_many

    def failing(self, entries, *, flush=True):
        if any(e.get("op") == "write" for e in entries):
            raise fault
        return append_many(self, entries, flush=flush)

    monkeypatch.setattr(AuditLog, "append_many", failing)
    with pytest.raises(type(fault)):
        alice.batch([WriteOp(f"lost note {i}", NS) for i in range(4)])
    monkeypatch.setattr(AuditLog, "append_many", append_many)
    backend = _lexical(mem)
    # Neither Chroma nor the index holds any of the batch's rows, and none is left marked for
    # a repair to find (the earlier write's mark is cleared by the next transaction, as ever):
    # the index took back what Chroma holds.
    assert backend._inner.count() == 1
    assert backend._index.count() == 1
    assert set(backend._index.pending()) <= {kept.id}
    assert [i for i, _ in backend._index.search("lost", 10, None)] == []
    assert [r.record.content for r in alice.search("note", NS, k=10)] == ["kept note"]
    # The memory goes on: the next write is stored and indexed as usual.
    alice.write("later note", NS)
    assert backend._index.count() == backend._inner.count() == 2
