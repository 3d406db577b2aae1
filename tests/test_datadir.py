"""The embedded data directory: one writer (a lock naming its holder), read-only sharing, a
format version with migrations, the CLI's refusal to create a store from a typo, and the
refusal to open a memory without a policy."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from memwarden import (
    InvalidRequest, Memory, Principal, ReadOnlyError, StoreFormatError, StoreLocked, WriteOp,
)
from memwarden.cli import main
from memwarden.memory.datadir import FORMAT_FILE, FORMAT_VERSION, LOCK_FILE, DataDir, Migration
from memwarden.memory.embeddings import HashingEmbedding

pytestmark = pytest.mark.integration

ALICE = Principal("alice")
EMBEDDING = HashingEmbedding()

HOLDER = """
import sys
from memwarden import Memory
from memwarden.memory.embeddings import HashingEmbedding

mem = Memory.open(sys.argv[1], policy=sys.argv[2], embedding=HashingEmbedding(), read_only=sys.argv[3] == "ro")
print("open", flush=True)
sys.stdin.readline()  # hold the directory until told (or killed)
mem.close()
"""


def _open(root: Path, policy: Path, **kwargs) -> Memory:
    return Memory.open(root, policy=policy, embedding=EMBEDDING, **kwargs)


def _holder(root: Path, policy: Path, mode: str = "rw") -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-c", HOLDER, str(root), str(policy), mode],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "open"
    return proc


def _written(root: Path, policy: Path, text: str) -> str:
    with _open(root, policy) as mem:
        return mem.session(ALICE).write(text, "ward3/patients/p1", subjects=["p1"]).id


# -- the lock ------------------------------------------------------------------------------

@pytest.mark.system
@pytest.mark.slow
def test_a_second_process_is_refused_with_the_holders_pid(tmp_path: Path, policy_file: Path) -> None:
    root = tmp_path / "data"
    _written(root, policy_file, "Patient 1 is stable")
    holder = _holder(root, policy_file)
    try:
        with pytest.raises(StoreLocked, match=rf"is open in pid {holder.pid}; it cannot also be opened read-write") as info:
            _open(root, policy_file)
        assert info.value.holders == (holder.pid,)
        # Read-only access does not share with a writer either (Chroma's files may be half written).
        with pytest.raises(StoreLocked, match=rf"pid {holder.pid}"):
            _open(root, policy_file, read_only=True)
    finally:
        holder.stdin.write("\n")
        holder.stdin.close()
        assert holder.wait(timeout=120) == 0
    with _open(root, policy_file) as mem:  # released on close
        assert len(mem.session(ALICE).search(None, "ward3", k=10)) == 1


def test_a_relative_path_after_a_chdir_is_the_new_directory(tmp_path: Path, policy_file: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    # Chroma caches clients by path string: "data" opened again after a chdir, while a Memory
    # of the first "data" was still open (a script that never closes it), reached the first
    # directory's client and the open failed on files that were not there.
    opened = []
    try:
        for where in (tmp_path / "a", tmp_path / "b"):
            where.mkdir()
            monkeypatch.chdir(where)
            mem = Memory.open("data", policy=policy_file, embedding=HashingEmbedding(), create=True)
            opened.append(mem)
            mem.session(Principal("alice")).write(f"a note in {where.name}", namespace=("ward3", "patients", "p1"))
        for mem, where in zip(opened, ("a", "b")):
            notes = mem.session(Principal("alice")).search("a note", namespace=("ward3", "patients"))
            assert [h.record.content for h in notes] == [f"a note in {where}"]
    finally:
        for mem in opened:
            mem.close()
    assert (tmp_path / "b" / "data" / "chroma" / "chroma.sqlite3").is_file()


def test_the_same_process_cannot_open_one_directory_twice(tmp_path: Path, policy_file: Path) -> None:
    with _open(tmp_path / "data", policy_file):
        with pytest.raises(StoreLocked, match=rf"pid {os.getpid()} \(this process\)"):
            _open(tmp_path / "data", policy_file)
    _open(tmp_path / "data", policy_file).close()


@pytest.mark.system
@pytest.mark.slow
def test_kill_9_of_the_holder_releases_the_lock(tmp_path: Path, policy_file: Path) -> None:
    root = tmp_path / "data"
    _written(root, policy_file, "Patient 1 is stable")
    holder = _holder(root, policy_file)
    with pytest.raises(StoreLocked):
        _open(root, policy_file)
    holder.send_signal(signal.SIGKILL)
    assert holder.wait(timeout=60) == -signal.SIGKILL
    assert (root / LOCK_FILE).exists()  # the file stays; the kernel dropped the lock
    with _open(root, policy_file) as mem:
        assert len(mem.session(ALICE).search(None, "ward3", k=10)) == 1


def test_a_failed_open_releases_the_lock(tmp_path: Path, policy_file: Path) -> None:
    with pytest.raises(InvalidRequest, match="quorum"):
        _open(tmp_path / "data", policy_file, quorum=0)
    _open(tmp_path / "data", policy_file).close()


# -- read-only -----------------------------------------------------------------------------

@pytest.mark.system
@pytest.mark.slow
def test_read_only_opens_share_and_refuse_every_change(tmp_path: Path, policy_file: Path) -> None:
    root = tmp_path / "data"
    rid = _written(root, policy_file, "Patient 1 is stable")
    other = _holder(root, policy_file, "ro")  # another read-only process
    try:
        with _open(root, policy_file, read_only=True) as mem:
            alice, dpo = mem.session(ALICE), mem.session(Principal("dpo"))
            assert [h.record.id for h in alice.search("stable", "ward3")] == [rid]
            assert alice.get(rid).id == rid
            assert alice.list_namespaces("ward3") == [("ward3", "patients", "p1")]
            for change in (lambda: alice.write("Patient 1 is worse", "ward3/patients/p1"),
                           lambda: alice.update(rid, "Patient 1 is worse"), lambda: alice.forget(rid),
                           lambda: dpo.erase(subject="p1"), lambda: alice.sweep("ward3"),
                           lambda: alice.batch([WriteOp("Patient 2", "ward3/patients/p2")])):
                with pytest.raises(ReadOnlyError, match="opened read-only"):
                    change()
            with pytest.raises(StoreLocked) as info:  # a writer waits for the readers, named
                _open(root, policy_file)
            assert set(info.value.holders) == {other.pid, os.getpid()}
    finally:
        other.stdin.write("\n")
        other.stdin.close()
        assert other.wait(timeout=120) == 0
    with _open(root, policy_file) as mem:
        alice = mem.session(ALICE)
        assert [h.record.content for h in alice.search(None, "ward3", k=10)] == ["Patient 1 is stable"]


def test_read_only_never_creates_a_store(tmp_path: Path, policy_file: Path) -> None:
    with pytest.raises(InvalidRequest, match="holds no memwarden store.*a read-only open never creates one"):
        _open(tmp_path / "nothing", policy_file, read_only=True)
    assert not (tmp_path / "nothing").exists()


# -- the format version --------------------------------------------------------------------

def test_a_new_store_records_its_format(tmp_path: Path, policy_file: Path) -> None:
    _open(tmp_path / "data", policy_file).close()
    info = json.loads((tmp_path / "data" / FORMAT_FILE).read_text(encoding="utf-8"))
    assert info["format"] == FORMAT_VERSION and info["written_by"].startswith("memwarden ")


def test_a_newer_store_is_refused_naming_both_versions(tmp_path: Path, policy_file: Path) -> None:
    root = tmp_path / "data"
    rid = _written(root, policy_file, "Patient 1 is stable")
    (root / FORMAT_FILE).write_text(json.dumps({"format": FORMAT_VERSION + 1, "written_by": "memwarden 9.0"}))
    for read_only in (False, True):
        with pytest.raises(StoreFormatError, match=rf"has format {FORMAT_VERSION + 1} \(written by memwarden 9.0\); "
                                                   rf"this memwarden \(0\.1\.0\) reads format {FORMAT_VERSION} and older"):
            _open(root, policy_file, read_only=read_only)
    (root / FORMAT_FILE).write_text(json.dumps({"format": FORMAT_VERSION}))
    with _open(root, policy_file) as mem:  # nothing was touched by the refused opens
        assert mem.session(ALICE).get(rid) is not None


def test_a_store_without_a_format_file_is_migrated(tmp_path: Path, policy_file: Path) -> None:
    """Every store made before the format file existed: its records stay, the file appears."""
    root = tmp_path / "data"
    rid = _written(root, policy_file, "Patient 1 is stable")
    (root / FORMAT_FILE).unlink()  # as main made it
    with pytest.raises(StoreFormatError, match=f"needs migrating to format {FORMAT_VERSION}; a read-only open cannot"):
        _open(root, policy_file, read_only=True)
    with _open(root, policy_file) as mem:
        assert mem.session(ALICE).get(rid) is not None
    assert json.loads((root / FORMAT_FILE).read_text())["format"] == FORMAT_VERSION
    with _open(root, policy_file, read_only=True) as mem:
        assert mem.session(ALICE).get(rid) is not None


@pytest.mark.parametrize(("fmt", "schema"), [(1, "2"), (2, "3")])
def test_an_older_store_gets_its_lexical_index_rebuilt(tmp_path: Path, policy_file: Path, fmt: int,
                                                      schema: str) -> None:
    """Format 1 kept a lexical index without writer and source columns, format 2 one that kept
    "_" inside words: a read-only open is refused and leaves the index as it was; a read-write
    open rebuilds it from Chroma, and a lexical search finds what was written."""
    root = tmp_path / "data"
    rid = _written(root, policy_file, "Patient 1 is stable after the zorblat_infusion")
    index = root / "lexical.sqlite3"
    with sqlite3.connect(index) as db:  # as format 1 left it: another schema
        db.execute("UPDATE info SET value = ? WHERE key = 'schema'", (schema,))
    (root / FORMAT_FILE).write_text(json.dumps({"format": fmt}))
    before = index.read_bytes()
    with pytest.raises(StoreFormatError, match="a read-only open cannot migrate it"):
        _open(root, policy_file, read_only=True)
    assert index.read_bytes() == before
    with _open(root, policy_file) as mem:
        hits = mem.session(ALICE).search("zorblat", "ward3", mode="lexical")
        assert [h.record.id for h in hits] == [rid]
    with sqlite3.connect(index) as db:
        assert db.execute("SELECT value FROM info WHERE key = 'schema'").fetchone()[0] != schema
    assert json.loads((root / FORMAT_FILE).read_text())["format"] == FORMAT_VERSION


def test_migrations_run_in_order_with_progress_and_resume_after_a_failure(tmp_path: Path) -> None:
    """The hook for real migrations: each step reports progress, and the version is written
    only after its step, so a step that fails is run again on the next open."""
    root = tmp_path / "data"
    DataDir.open(root, current=1).release()
    ran: list[tuple[str, int, int]] = []
    bars: list[str] = []
    fail = {"once": True}

    def step(name: str, total: int):
        def run(path: Path, report) -> None:
            assert path == root
            for done in range(1, total + 1):
                ran.append((name, done, total))
                report(done, total)
                if name == "two" and fail.pop("once", False):
                    raise OSError("disk full")
        return run

    def progress(description: str):
        bars.append(description)
        return (lambda done, total: bars.append(f"{done}/{total}")), (lambda: bars.append("closed"))

    migrations = [Migration(1, "one", step("one", 2)), Migration(2, "two", step("two", 3))]
    with pytest.raises(OSError, match="disk full"):
        DataDir.open(root, migrations=migrations, current=3, progress=progress)
    assert json.loads((root / FORMAT_FILE).read_text())["format"] == 2  # step one is done
    assert bars == ["one", "1/2", "2/2", "closed", "two", "1/3", "closed"]
    DataDir.open(root, migrations=migrations, current=3, progress=progress).release()  # the lock was released
    assert json.loads((root / FORMAT_FILE).read_text())["format"] == 3
    assert [r for r in ran if r[0] == "one"] == [("one", 1, 2), ("one", 2, 2)]  # not run again
    assert ran[-3:] == [("two", 1, 3), ("two", 2, 3), ("two", 3, 3)]


@pytest.mark.parametrize("text", ["", "{", "[]", '{"format": "1"}', '{"format": -1}', '{"format": true}'])
def test_an_unreadable_format_file_is_refused(tmp_path: Path, text: str) -> None:
    root = tmp_path / "data"
    DataDir.open(root).release()
    (root / FORMAT_FILE).write_text(text)
    with pytest.raises(StoreFormatError, match=FORMAT_FILE):
        DataDir.open(root)


# -- the CLI and a mistyped path -----------------------------------------------------------

def test_cli_refuses_a_path_that_holds_no_store_unless_create(tmp_path: Path, policy_file: Path, capsys) -> None:
    root = tmp_path / "data"
    _written(root, policy_file, "Patient 1 is stable")
    typo = tmp_path / "dtaa"
    args = ["--policy", str(policy_file), "--principal", "dpo", "--subject", "p1"]
    assert main(["erase", "--data", str(typo), *args]) == 2
    out = capsys.readouterr().out
    assert "holds no memwarden store" in out and "--create" in out and "count" not in out
    assert not typo.exists()
    assert main(["sweep", "--data", str(typo), "--policy", str(policy_file), "--principal", "dpo"]) == 2
    assert "holds no memwarden store" in capsys.readouterr().out and not typo.exists()
    assert main(["erase", "--data", str(typo), "--create", *args]) == 0  # asked for: an empty store
    assert json.loads(capsys.readouterr().out)["count"] == 0 and (typo / FORMAT_FILE).is_file()
    assert main(["erase", "--data", str(root), *args]) == 0  # the real store
    assert json.loads(capsys.readouterr().out)["count"] == 1


def test_an_existing_empty_directory_is_no_store(tmp_path: Path, policy_file: Path) -> None:
    (tmp_path / "empty").mkdir()
    with pytest.raises(InvalidRequest, match="holds no memwarden store"):
        _open(tmp_path / "empty", policy_file, create=False)
    _open(tmp_path / "empty", policy_file).close()  # create=True is the library's default


# -- no policy -----------------------------------------------------------------------------

def test_opening_without_a_policy_is_refused_with_how_to_pass_one(tmp_path: Path) -> None:
    with pytest.raises(InvalidRequest, match=r"no policy given: without one every operation is denied\. Pass the "
                                             r"policy, e\.g\. Memory\.open\('\./data', policy='path/to/policy\.csv'\)"):
        Memory.open(tmp_path / "data", embedding=EMBEDDING)
    with pytest.raises(InvalidRequest, match="policy='deny-all'"):
        Memory.open(tmp_path / "data", policy=None, embedding=EMBEDDING)
    with pytest.raises(InvalidRequest, match="policy must be a policy file"):
        Memory.open(tmp_path / "data", policy=5, embedding=EMBEDDING)  # type: ignore[arg-type]
    assert not (tmp_path / "data").exists()  # refused before the directory was touched
    # The explicit opt-in opens it with no rules.
    with Memory.open(tmp_path / "data", policy="deny-all", embedding=EMBEDDING) as mem:
        assert mem.policy.data.rules == ()
