"""An erasure interrupted at every phase, by kill -9 and by Ctrl-C (KeyboardInterrupt), never
reads as done and never leaves an erased record readable once the store is opened again.

Each case copies one prepared store, runs ``erase(subject="p12")`` in a child process that
dies (or is interrupted) at exactly one point, chosen by patching the function of that phase
(no timers), then opens the store here and checks: no record about p12 is readable, no byte of
their text is left in the data directory, the audit log verifies and every "pending" erasure
entry is completed by a later one, the flows report shows none of them active, and the record
outside the officer's scope is held, not readable.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from memwarden import Memory, Principal, Status
from memwarden.integrations.flows import build_flows
from memwarden.memory.embeddings import HashingEmbedding

pytestmark = pytest.mark.system

POLICY = """
p, physician, ward3/**, read
p, physician, ward3/**, write
p, physician, research/**, read
p, physician, research/**, write
p, privacy_officer, ward3/**, erase
p, privacy_officer, ward3/**, read
g, alice, physician
g, dpo, privacy_officer
"""
CANARY = "canarytosis"
RECORDS = 40

# (phase, module:object.attribute patched, when to stop: before or after the original runs)
PHASES = [
    ("journal", "memwarden.memory.journal:ErasureJournal.begin", "after"),
    ("pending-entry", "memwarden.memory.audit:AuditLog.append", "after"),
    ("tombstones", "memwarden.memory.tombstones:Tombstones.add", "after"),
    ("holds", "memwarden.memory.partitioned:PartitionedBackend.update_metadata", "after"),
    ("purge-marker", "memwarden.memory.compaction.marker:write", "after"),
    ("physical-purge", "memwarden.memory.compaction:purge_collection", "before"),
    ("lexical-scrub", "memwarden.memory.lexical:LexicalIndex.replace_rows", "before"),
    ("final-entry", "memwarden.memory.audit:AuditLog.append", "before-final"),
    ("journal-finish", "memwarden.memory.journal:ErasureJournal.finish", "before"),
]

CHILD = textwrap.dedent("""
    import importlib, os, signal, sys
    from memwarden import Memory, Principal
    from memwarden.memory.embeddings import HashingEmbedding

    data, policy, target, when, mode = sys.argv[1:6]
    module_name, path = target.split(":")
    owner = importlib.import_module(module_name)
    *parents, attr = path.split(".")
    for name in parents:
        owner = getattr(owner, name)
    original = getattr(owner, attr)

    def stop():
        if mode == "kill":
            os.kill(os.getpid(), signal.SIGKILL)
        raise KeyboardInterrupt

    def patched(*args, **kwargs):
        entry = args[1] if len(args) > 1 and isinstance(args[1], dict) else {}
        if when == "before-final":
            if entry.get("op") == "erase" and entry.get("outcome") == "ok":
                stop()
            return original(*args, **kwargs)
        if attr == "append" and entry.get("outcome") != "pending":
            return original(*args, **kwargs)
        if when == "before":
            stop()
        result = original(*args, **kwargs)
        stop()
        return result

    setattr(owner, attr, patched)
    mem = Memory.open(data, policy=policy, embedding=HashingEmbedding(), validators=[])
    try:
        mem.session(Principal("dpo")).erase(subject="p12")
        print("COMPLETED")
    except KeyboardInterrupt:
        print("INTERRUPTED")
        setattr(owner, attr, original)
        # The next call finishes the erasure before it is served.
        assert mem.session(Principal("alice")).search(None, "ward3", k=100) is not None
    mem.close()
""")


@pytest.fixture(scope="module")
def prepared(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("erasure-interrupts")
    policy = root / "policy.csv"
    policy.write_text(POLICY, encoding="utf-8")
    data = root / "template"
    with Memory.open(data, policy=policy, embedding=HashingEmbedding(), validators=[]) as mem:
        alice = mem.session(Principal("alice"))
        first = None
        for i in range(RECORDS):
            rec = alice.write(f"Patient 12 note {i}: {CANARY} observed", f"ward3/patients/p12/n{i % 4}",
                              subjects=["p12"])
            first = first or rec
        alice.write("Study cohort: one case of the rare condition", "research/cohort", parents=[first.id])
        for i in range(5):
            alice.write(f"Patient 13 note {i}", "ward3/patients/p13", subjects=["p13"])
    return data, policy


def _check(data: Path, policy: Path) -> None:
    with Memory.open(data, policy=policy, embedding=HashingEmbedding(), validators=[]) as mem:
        alice = mem.session(Principal("alice"))
        seen = alice.search(None, "", k=1000)
        assert not [h for h in seen if "p12" in h.record.subjects], "an erased record is readable"
        assert not [h for h in seen if h.record.namespace[0] == "research"], "the held record is readable"
        assert len([h for h in seen if "p13" in h.record.subjects]) == 5
        report = mem.audit_log.verify()
        assert report.ok, report.problems
        entries = list(mem.audit_log.entries())
        # One erasure, done once: its final entry (or the recovery's) completes its intent entry,
        # if the interrupt came after that entry was written.
        finals = [e for e in entries if e["op"] in ("erase", "recover") and e["outcome"] == "ok"]
        pending = [e["seq"] for e in entries if e["op"] == "erase" and e["outcome"] == "pending"]
        assert len(finals) == 1 and len(pending) <= 1, (finals, pending)
        assert finals[0].get("completes") == (pending[0] if pending else None)
        flows = build_flows(entries)
        assert not [f for f in flows.records if f.status in ("active", "erasing") and f.namespace
                    and f.namespace.startswith("ward3/patients/p12")]
    for path in data.rglob("*"):
        if path.is_file():
            assert CANARY.encode() not in path.read_bytes(), f"erased text left in {path.relative_to(data)}"


@pytest.mark.parametrize("mode", ["kill", "interrupt"])
@pytest.mark.parametrize("phase, target, when", PHASES, ids=[p[0] for p in PHASES])
@pytest.mark.slow
def test_an_interrupted_erasure_is_finished_and_never_reads_as_done(
        prepared: tuple[Path, Path], tmp_path: Path, phase: str, target: str, when: str, mode: str) -> None:
    template, policy = prepared
    data = tmp_path / "data"
    shutil.copytree(template, data)
    child = subprocess.run([sys.executable, "-c", CHILD, str(data), str(policy), target, when, mode],
                           capture_output=True, text=True, timeout=300)
    if mode == "kill":
        assert child.returncode == -9, (child.returncode, child.stdout, child.stderr[-2000:])
    else:
        assert child.returncode == 0 and "INTERRUPTED" in child.stdout, (child.stdout, child.stderr[-2000:])
    _check(data, policy)


def test_a_completed_erasure_reads_as_done_once(prepared: tuple[Path, Path], tmp_path: Path) -> None:
    template, policy = prepared
    data = tmp_path / "data"
    shutil.copytree(template, data)
    with Memory.open(data, policy=policy, embedding=HashingEmbedding(), validators=[]) as mem:
        receipt = mem.session(Principal("dpo")).erase(subject="p12")
        assert (receipt.count, receipt.held) == (RECORDS, 1)
        held = [r for r in mem._backend.fetch() if r.metadata.get("lbl_erasure_pending") == "p12"]
        assert len(held) == 1 and held[0].metadata["status"] == Status.QUARANTINED.value
        assert json.loads(receipt.model_dump_json())["audit_seqs"] == list(receipt.audit_seqs)
    _check(data, policy)
