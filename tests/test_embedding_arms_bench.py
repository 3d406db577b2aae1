"""Smoke tests of benchmarks/embedding_arms.py on the real default model, with few sentences."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from benchmarks import embedding_arms
from benchmarks.embedding import make_sentences

pytestmark = pytest.mark.unit


def test_arm_runs_the_default_graph_and_matches_the_default(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Two float32 arms only: the quantiser arms take minutes on this machine.
    monkeypatch.setattr(embedding_arms, "arms", lambda workdir: {
        "default": (embedding_arms.ArmEmbedding(embedding_arms.bundled_model, {}), "float32"),
        "batch 4, basic graph": (embedding_arms.ArmEmbedding(
            embedding_arms.bundled_model, {"level": "ORT_ENABLE_BASIC"}, batch_size=4), "float32"),
    })
    figures = embedding_arms.measure(make_sentences(12), 1, None, tmp_path)
    assert set(figures) == {"default", "batch 4, basic graph"}
    for f in figures.values():
        assert f["sentences_per_s"] > 0 and f["cpu_ms_per_sentence"] > 0
        assert f["alone_vs_batch_max_difference"] <= 1e-6
        assert f["max_abs_difference_from_default"] <= embedding_arms.SAME_VECTORS
    assert figures["default"]["max_abs_difference_from_default"] == 0.0


def test_batch_invariance_detects_a_batch_dependent_embedder() -> None:
    class BatchMean:
        # The failure mode of dynamic int8: each vector depends on the batch's statistics.
        def embed_documents_array(self, texts: list[str]) -> np.ndarray:
            lengths = np.array([[len(t), 1.0] for t in texts])
            return lengths / lengths[:, :1].mean()

    assert embedding_arms.batch_invariant(BatchMean(), make_sentences(16)) > 1e-3
