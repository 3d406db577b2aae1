"""The gates around Chroma surgery: the pinned chromadb range is the tested one, the file edits
run only on tested releases (a rebuild otherwise), a purge removes only the folders memwarden
made or dropped, and it checks the survivors before it clears its marker."""

from __future__ import annotations

import sqlite3
import tomllib
import uuid
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from memwarden.memory import compaction
from memwarden.memory.compaction import surgery, versions
from tests.test_erasure_physical import _assert_nothing_retrievable, _assert_survivors_intact, _store

pytestmark = pytest.mark.integration

PYPROJECT = Path(__file__).resolve().parent.parent / "pyproject.toml"


def _chromadb_requirement() -> Requirement:
    deps = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["project"]["dependencies"]
    (found,) = [Requirement(d) for d in deps if Requirement(d).name == "chromadb"]
    return found


@pytest.mark.unit
def test_the_installed_chromadb_is_in_the_pinned_and_tested_range() -> None:
    pinned = _chromadb_requirement()
    assert pinned.specifier == Requirement(versions.PINNED).specifier, "pyproject.toml and versions.PINNED disagree"
    installed = versions.installed()
    assert pinned.specifier.contains(installed), f"chromadb {installed} is outside {pinned}"
    assert installed in versions.SURGERY_TESTED, (
        f"chromadb {installed} is installed but the surgery is tested on {sorted(versions.SURGERY_TESTED)}: "
        "run the erasure tests on it, then add it to SURGERY_TESTED")
    assert all(pinned.specifier.contains(v) for v in versions.SURGERY_TESTED)


def test_an_untested_chromadb_release_is_purged_by_rebuild_alone(tmp_path: Path, monkeypatch) -> None:
    import chromadb

    path = tmp_path / "chroma"
    backend, canary, other = _store(path, 200, 200)
    monkeypatch.setattr(chromadb, "__version__", "1.6.0")

    def edit(*args, **kwargs):
        raise AssertionError("the HNSW files were edited on an untested chromadb release")

    monkeypatch.setattr(surgery, "remove_elements", edit)
    with pytest.raises(compaction.PurgeError, match=r"chromadb 1\.6\.0 is not a release the file edits are tested on"):
        backend.purge(canary[0][:10], mode="surgery")

    report = backend.purge(canary[0])

    assert report.mechanism == "rebuild" and "chromadb 1.6.0" in report.fallback_reason
    _assert_nothing_retrievable(backend._col, canary, k=backend.count())
    _assert_survivors_intact(backend._col, other)
    assert not compaction.pending(path)


def test_a_purge_removes_only_the_folders_memwarden_made_or_dropped(tmp_path: Path) -> None:
    path = tmp_path / "chroma"
    backend, canary, other = _store(path, 100, 100)
    # A folder named like a segment that no segment owns: another program's, or a segment of
    # a collection another process is creating. Before: the scrub shredded it.
    stranger = path / str(uuid.uuid4())
    stranger.mkdir()
    (stranger / "header.bin").write_bytes(b"not memwarden's")
    with sqlite3.connect(path / "chroma.sqlite3") as db:
        old_segments = {r[0] for r in db.execute("SELECT id FROM segments WHERE collection = ?",
                                                 (str(backend._col.id),))}

    report = backend.purge(canary[0], mode="rebuild")

    assert stranger.is_dir() and (stranger / "header.bin").read_bytes() == b"not memwarden's"
    assert report.segments_unowned == [stranger.name]
    # The dropped collection's vector segment folder is gone, and so is the ledger.
    assert set(report.segments_removed) & old_segments and not (set(report.segments_removed) - old_segments)
    assert not any((path / s).exists() for s in old_segments)
    assert not (path / "memwarden-dropped.json").exists()
    _assert_survivors_intact(backend._col, other)


def test_a_surgery_whose_result_fails_its_check_is_not_complete(tmp_path: Path, monkeypatch) -> None:
    path = tmp_path / "chroma"
    backend, canary, other = _store(path, 200, 200)
    victim = other[0][0]
    real = surgery.purge_queue

    def and_lose_a_survivor(db_path, *args, **kwargs):
        removed = real(db_path, *args, **kwargs)
        with sqlite3.connect(db_path) as db:  # a surgery bug that loses a row it should keep
            db.execute("DELETE FROM embeddings WHERE embedding_id = ?", (victim,))
        return removed

    monkeypatch.setattr(surgery, "purge_queue", and_lose_a_survivor)
    # Before: the marker was cleared and the purge reported success with a row gone.
    with pytest.raises(compaction.PurgeError, match=r"failed its check \(1 surviving row\(s\) missing"):
        backend.purge(canary[0])
    monkeypatch.undo()
    assert compaction.pending(path)
    _assert_nothing_retrievable(backend._col, canary, k=backend.count())

    report = backend.purge([])  # the next purge redoes the physical part the safe way

    assert report.mechanism == "rebuild" and "an earlier surgery failed its check" in report.fallback_reason
    assert not compaction.pending(path)
    _assert_nothing_retrievable(backend._col, canary, k=backend.count())
