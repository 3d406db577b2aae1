"""Crash safety: ``kill -9`` a writer in the middle of a batch, embedded and against a Chroma
server (policies and audit in PostgreSQL). After a restart every record is either fully
present with its audit entry or absent, the audit log verifies, and retrying the same batches
is idempotent: deterministic ids, no duplicates, the already stored writes are replays.

Where the kill lands is chosen, not timed: the writer kills itself (SIGKILL, so no handler,
``finally`` or atexit runs) right after the audit commit that holds its KILL_AFTER-th entry is
durable. A batch's entries are committed together, just before its writes reach the store in
one call when it ends (memwarden/memory/auditbatch.py), so that commit holds every write of
the second batch: audited, and not yet stored."""

from __future__ import annotations

import signal
import sqlite3
import subprocess
import sys
import uuid
from collections import Counter
from pathlib import Path

import psycopg
import pytest

from memwarden import Memory, Principal
from memwarden.cli import main
from memwarden.memory.embeddings import HashingEmbedding
from memwarden.core.records import record_id
from memwarden.policies.sources import SQLPolicyStore
from tests.conftest import HOSPITAL

pytestmark = pytest.mark.system

TOTAL, BATCH, KILL_AFTER = 250, 50, 75  # killed once the second batch is audited, before it is stored

WRITER = """
import os, signal, sys
from memwarden import Memory, Principal, WriteOp
from memwarden.memory.embeddings import HashingEmbedding

mode, tag, total, batch, where, policy, audit, host, port, kill_after = sys.argv[1:]
if mode == "embedded":
    mem = Memory.open(where, policy=policy, embedding=HashingEmbedding())
else:
    mem = Memory.connect(host, int(port), policy=policy, audit=audit, state=where, embedding=HashingEmbedding())
if int(kill_after):
    # The kill point: right after the commit holding this process's kill_after-th audit entry
    # is durable (append() commits through append_many() too).
    append_many, appended = mem.audit_log.append_many, []

    def append_then_maybe_die(*args, **kwargs):
        seqs = append_many(*args, **kwargs)
        appended.extend(seqs)
        if len(appended) >= int(kill_after):
            print("dying", seqs[-1], flush=True)
            os.kill(os.getpid(), signal.SIGKILL)
        return seqs

    mem.audit_log.append_many = append_then_maybe_die
alice = mem.session(Principal("alice"))
ops = [WriteOp(f"{tag} crash note {i}: patient is stable", ("ward3", "patients", tag), subjects=[f"p{i % 7}"])
       for i in range(int(total))]
print("ready", flush=True)
for start in range(0, len(ops), int(batch)):
    alice.batch(ops[start:start + int(batch)])
mem.close()
"""


class _Setup:
    """Where one mode keeps its memory, and how to count its audit entries from outside."""

    def __init__(self, mode: str, tmp_path: Path, policy_file: Path, request: pytest.FixtureRequest) -> None:
        self.mode, self.tag, self.where = mode, uuid.uuid4().hex[:8], tmp_path / "memory"
        if mode == "embedded":
            self.policy, self.audit, self.server = str(policy_file), "", ("", "0")
            self.audit_args = ["--data", str(self.where)]
        else:
            self.server = tuple(map(str, request.getfixturevalue("chroma_server")))
            self.policy = self.audit = request.getfixturevalue("pg_url")
            store = SQLPolicyStore(self.policy)
            store.replace(HOSPITAL)
            store.close()
            self.audit_args = ["--audit", self.audit, "--key", str(self.where / "audit.key")]

    def writer(self, kill_after: int = 0) -> subprocess.Popen:
        return subprocess.Popen([sys.executable, "-c", WRITER, self.mode, self.tag, str(TOTAL), str(BATCH),
                                 str(self.where), self.policy, self.audit, *self.server, str(kill_after)],
                                stdout=subprocess.PIPE, text=True)

    def audited(self) -> int:
        if self.mode == "embedded":
            db = sqlite3.connect(f"file:{self.where / 'audit.sqlite3'}?mode=ro", uri=True, timeout=1)
            try:
                return db.execute("SELECT count(*) FROM audit").fetchone()[0]
            finally:
                db.close()
        with psycopg.connect(self.audit) as conn:
            return conn.execute("SELECT count(*) FROM memwarden_audit").fetchone()[0]

    def open(self) -> Memory:
        if self.mode == "embedded":
            return Memory.open(self.where, policy=self.policy, embedding=HashingEmbedding())
        host, port = self.server
        return Memory.connect(host, int(port), policy=self.policy, audit=self.audit, state=self.where,
                              embedding=HashingEmbedding())


def _ids(tag: str) -> list[str]:
    """The ids of the writer's writes, in order (ids are deterministic)."""
    return [record_id("alice", ("ward3", "patients", tag), f"{tag} crash note {i}: patient is stable")
            for i in range(TOTAL)]


def _state(mem: Memory, tag: str) -> tuple[dict, Counter, set[str]]:
    """(stored records by id, ok write entries per record id, ids whose entries are replays)."""
    alice = mem.session(Principal("alice"))
    stored = {h.record.id: h.record for offset in range(0, TOTAL + 1000, 1000)
              for h in alice.search(None, ("ward3", "patients", tag), k=1000, offset=offset)}
    writes = [e for e in mem.audit_log.entries() if e["op"] == "write" and e["outcome"] == "ok"]
    return (stored, Counter(rid for e in writes if not e["replay"] for rid in e["records"]),
            {rid for e in writes if e["replay"] for rid in e["records"]})


@pytest.mark.parametrize("mode", ["embedded", "server"])
@pytest.mark.slow
def test_kill_9_mid_batch_then_retry(mode: str, tmp_path: Path, policy_file: Path, request: pytest.FixtureRequest) -> None:
    setup = _Setup(mode, tmp_path, policy_file, request)
    proc = setup.writer(kill_after=KILL_AFTER)
    assert proc.stdout.readline().strip() == "ready"
    dying = proc.stdout.readline().split()
    assert proc.wait(timeout=300) == -signal.SIGKILL
    assert dying[0] == "dying" and setup.audited() == int(dying[1])  # nothing was audited after the kill point

    with setup.open() as mem:
        assert mem.audit_log.verify().ok
        stored, entries, _ = _state(mem, setup.tag)
        alice = mem.session(Principal("alice"))
        assert stored, "nothing was stored before the kill; raise KILL_AFTER"
        for rid, record in stored.items():  # present means whole, and audited
            assert entries[rid] == 1, f"{rid} is stored without exactly one audit entry"
            assert record.content.startswith(f"{setup.tag} crash note ") and len(record.subjects) == 1
            assert record.namespace == ("ward3", "patients", setup.tag)
            assert alice.get(rid) == record
        lost = set(entries) - set(stored)
        # Audited, never stored: the writes of the batch in flight (the second), all audited in
        # the commit the kill followed; every write of the first batch is whole.
        ids = _ids(setup.tag)
        assert lost == set(ids[BATCH:2 * BATCH])
        assert set(ids[:BATCH]) <= set(stored) and len(entries) == 2 * BATCH
    assert main(["audit", "verify", *setup.audit_args]) == 0

    retry = setup.writer()  # the same batches again, to the end
    assert retry.stdout.readline().strip() == "ready"
    assert retry.wait(timeout=300) == 0

    with setup.open() as mem:
        after, entries, replays = _state(mem, setup.tag)
        assert len(after) == TOTAL  # every write once: deterministic ids, no duplicates
        assert {rid: after[rid] for rid in stored} == stored  # what survived the crash is untouched
        assert set(stored) <= replays  # ... and its retried writes were replays
        # A write audited before the crash but never stored is written (and audited) again;
        # its first entry stays: the log is append-only (docs/deployment.md).
        assert {rid for rid, n in entries.items() if n == 2} == lost
        assert all(n == 1 for rid, n in entries.items() if rid not in lost)
        assert mem.audit_log.verify().ok
    assert main(["audit", "verify", *setup.audit_args]) == 0
