"""DESIGN.md's public API snippet, run verbatim against a real embedded Chroma and MiniLM."""

from __future__ import annotations

from pathlib import Path

import pytest
from langgraph.store.base import BaseStore

from tests.conftest import HOSPITAL

pytestmark = pytest.mark.integration


def test_design_snippet_runs_verbatim(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "path" / "to").mkdir(parents=True)
    (tmp_path / "path" / "to" / "policy.csv").write_text(HOSPITAL, encoding="utf-8")

    # --- verbatim from DESIGN.md "Public API contract" ---
    from memwarden import Memory, Principal, AccessDenied, WriteRejected

    mem = Memory.open("./data", policy="path/to/policy.csv")   # embedded Chroma; policy file in the default model
    # Memory.connect(host, port, policy=...) -> the same against a Chroma server
    alice = mem.session(Principal("alice", roles=["physician"]))
    rec = alice.write("Patient 12 is allergic to penicillin",
                      namespace=("ward3", "patients", "p12"), kind="fact", subjects=["p12"])
    hits = alice.search("penicillin allergy", namespace=("ward3", "patients"), k=5)  # list of hits; hit.record, hit.score
    alice.get(rec.id)                    # -> MemoryRecord or None (None also when not allowed to see it)
    new = alice.update(rec.id, content="Patient 12 is allergic to penicillin and amoxicillin")  # -> the new version
    alice.forget(rec.id)                 # logical forgetting by an authorised principal
    receipt = mem.session(Principal("dpo", roles=["privacy_officer"])).erase(subject="p12")  # right to erasure
    store = mem.as_store()               # a langgraph BaseStore for graph.compile(store=...)
    mem.close()
    # --- end of snippet ---

    assert issubclass(AccessDenied, PermissionError) and issubclass(WriteRejected, Exception)
    assert [h.record.id for h in hits] == [rec.id]
    assert 0.3 < hits[0].score <= 1.0
    assert new.version == 2 and new.supersedes == rec.id and new.content.endswith("amoxicillin")
    assert receipt.count == 2 and receipt.actor == "dpo"
    assert isinstance(store, BaseStore)


def test_forgetting_an_old_version_forgets_every_version(tmp_path: Path, policy_file: Path) -> None:
    """The snippet forgets ``rec.id`` after updating it: the id from before the update still
    names the memory, and all its versions become invisible."""
    from memwarden import Memory, Principal
    from memwarden.memory.embeddings import HashingEmbedding

    with Memory.open(tmp_path / "d", policy=policy_file, embedding=HashingEmbedding()) as mem:
        alice = mem.session(Principal("alice"))
        rec = alice.write("Patient 12 is allergic to penicillin", namespace="ward3/patients/p12")
        new = alice.update(rec.id, content="Patient 12 is allergic to penicillin and amoxicillin")
        other = alice.write("Patient 12 prefers tea", namespace="ward3/patients/p12")
        alice.forget(rec.id)
        assert alice.get(new.id) is None and alice.get(rec.id) is None
        assert [h.record.id for h in alice.search("allergic penicillin", "ward3", k=10)] == [other.id]
        forgets = [e for e in mem.audit_log.entries() if e["op"] == "forget"]
        assert [e["records"] for e in forgets] == [[rec.id, new.id]]
