"""benchmarks/raw_arm.py on real embedded Chroma: the raw arm is configured as memwarden's
partitions, a kept collection is reconfigured, and a forced persist empties the log backlog
without changing the rows."""

from __future__ import annotations

from pathlib import Path

import chromadb
import numpy as np
import pytest
from chromadb.config import Settings as ChromaSettings

from benchmarks import raw_arm
from memwarden.memory.compaction.config import hnsw_config

pytestmark = pytest.mark.integration

THRESHOLD = raw_arm.MEMWARDEN_HNSW["hnsw:sync_threshold"]


def _write(col, n: int, start: int = 0, seed: int = 7) -> dict[str, tuple[np.ndarray, str, dict]]:
    """``n`` single upserts of unit vectors (as the benchmark's rows); returns what was written."""
    vecs = np.random.default_rng(seed).standard_normal((n, 8)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    written = {}
    for i in range(n):  # one call each: single writes, as the benchmark's write arm makes them
        rid, doc, meta = f"r{start + i}", f"row {start + i}", {"i": start + i}
        col.upsert(ids=[rid], embeddings=vecs[i:i + 1], documents=[doc], metadatas=[meta])
        written[rid] = (vecs[i], doc, meta)
    return written


def _assert_holds(col, written: dict[str, tuple[np.ndarray, str, dict]]) -> None:
    got = col.get(include=["embeddings", "documents", "metadatas"])
    assert sorted(got["ids"]) == sorted(written)
    for rid, vec, doc, meta in zip(got["ids"], got["embeddings"], got["documents"], got["metadatas"]):
        # Chroma keeps float32 vectors; an upsert of a row's own vector may move its last bit.
        assert np.allclose(vec, written[rid][0], atol=1e-6) and doc == written[rid][1] and meta == written[rid][2]


def test_a_new_raw_collection_persists_as_memwardens_partitions_do(tmp_path: Path) -> None:
    client, col = raw_arm.open_raw(tmp_path, "raw")
    assert raw_arm.sync_threshold(col) == THRESHOLD
    _write(col, THRESHOLD + 7)
    # Persisted once at THRESHOLD entries: only the 7 after it are pending.
    assert raw_arm.log_backlog(tmp_path, col) == 7
    client.close()


def test_a_kept_collection_at_chromas_default_is_reconfigured_and_reloaded(tmp_path: Path) -> None:
    client = chromadb.PersistentClient(path=str(tmp_path), settings=ChromaSettings(anonymized_telemetry=False))
    col = client.get_or_create_collection("raw", embedding_function=None, metadata={"hnsw:space": "cosine"})
    written = _write(col, 30)
    assert hnsw_config(col)["sync_threshold"] == 1000
    client.close()
    client, col = raw_arm.open_raw(tmp_path, "raw")
    assert raw_arm.sync_threshold(col) == THRESHOLD
    # In force, not only recorded: 30 pending + THRESHOLD new entries crossed the threshold.
    written |= _write(col, THRESHOLD, start=30)
    assert raw_arm.log_backlog(tmp_path, col) < THRESHOLD
    _assert_holds(col, written)
    client.close()


def test_persist_now_empties_the_backlog_and_keeps_every_row(tmp_path: Path) -> None:
    client, col = raw_arm.open_raw(tmp_path, "raw")
    written = _write(col, THRESHOLD + 40)
    assert raw_arm.log_backlog(tmp_path, col) == 40
    assert raw_arm.persist_now(tmp_path, col) == 40
    assert raw_arm.log_backlog(tmp_path, col) == 0
    _assert_holds(col, written)
    assert col.count() == THRESHOLD + 40
    assert raw_arm.persist_now(tmp_path, col) == 0  # nothing pending: nothing written
    client.close()


def test_persist_now_after_a_reopen_with_more_pending_than_the_threshold(tmp_path: Path) -> None:
    # A kept store can hold more pending entries than the new threshold: one entry is enough
    # (and Chroma persists as soon as a read loads the segment, replaying them).
    client = chromadb.PersistentClient(path=str(tmp_path), settings=ChromaSettings(anonymized_telemetry=False))
    col = client.get_or_create_collection("raw", embedding_function=None, metadata={"hnsw:space": "cosine"})
    written = _write(col, THRESHOLD + 20)
    client.close()
    client, col = raw_arm.open_raw(tmp_path, "raw")
    assert raw_arm.log_backlog(tmp_path, col) == THRESHOLD + 20
    assert raw_arm.persist_now(tmp_path, col) == THRESHOLD + 20
    assert raw_arm.log_backlog(tmp_path, col) == 0
    _assert_holds(col, written)
    client.close()


def test_log_backlog_of_a_directory_without_chroma_is_a_clear_error(tmp_path: Path) -> None:
    client, col = raw_arm.open_raw(tmp_path / "real", "raw")
    with pytest.raises(FileNotFoundError, match="no Chroma database"):
        raw_arm.log_backlog(tmp_path / "elsewhere", col)
    client.close()
