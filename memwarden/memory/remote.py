"""A Chroma server behind the pipeline, with retries for transient failures (tenacity).

Every backend call is idempotent (deterministic ids, upserts, metadata merges, deletes), so
retrying one after a dropped connection or a gateway error cannot duplicate or lose data.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import httpx
from tenacity import Retrying, retry_if_exception, stop_after_attempt, wait_exponential_jitter

from memwarden.memory.backends import COLLECTION, ChromaBackend

T = TypeVar("T")

_TRANSIENT_STATUS = ("502", "503", "504", "429")


def is_transient(exc: BaseException) -> bool:
    """Connection problems, time-outs and overload answers are worth retrying; nothing else."""
    if isinstance(exc, (httpx.TransportError, ConnectionError, TimeoutError)):
        return True
    text = str(exc)
    return any(code in text for code in _TRANSIENT_STATUS) and "rror" in type(exc).__name__


class RetryingChromaBackend(ChromaBackend):
    """ChromaBackend over ``chromadb.HttpClient``; each call is retried on transient errors."""

    def __init__(self, client: Any, collection: str = COLLECTION, *, attempts: int = 5,
                 max_wait: float = 2.0) -> None:
        self._retrying = Retrying(
            retry=retry_if_exception(is_transient), stop=stop_after_attempt(attempts),
            wait=wait_exponential_jitter(multiplier=0.05, max=max_wait), reraise=True,
        )
        self._call(lambda: super(RetryingChromaBackend, self).__init__(client, collection))

    @classmethod
    def connect(cls, host: str, port: int, *, ssl: bool = False, headers: dict[str, str] | None = None,
                collection: str = COLLECTION, attempts: int = 5) -> RetryingChromaBackend:
        """Connect to a server started with ``chroma run``, telemetry off."""
        import chromadb
        from chromadb.config import Settings

        client = chromadb.HttpClient(host=host, port=port, ssl=ssl, headers=headers or {},
                                     settings=Settings(anonymized_telemetry=False))
        return cls(client, collection, attempts=attempts)

    def _call(self, fn: Callable[[], T]) -> T:
        return self._retrying(fn)

    def upsert(self, ids, embeddings, documents, metadatas) -> None:  # noqa: D102 - see Backend
        self._call(lambda: super(RetryingChromaBackend, self).upsert(ids, embeddings, documents, metadatas))

    def update_metadata(self, ids, metadatas) -> None:  # noqa: D102
        self._call(lambda: super(RetryingChromaBackend, self).update_metadata(ids, metadatas))

    def fetch(self, ids=None, where=None, limit=None, offset=None):  # noqa: D102
        return self._call(lambda: super(RetryingChromaBackend, self).fetch(ids, where, limit, offset))

    def query(self, embedding, k, where):  # noqa: D102
        return self._call(lambda: super(RetryingChromaBackend, self).query(embedding, k, where))

    def delete(self, ids) -> None:  # noqa: D102
        self._call(lambda: super(RetryingChromaBackend, self).delete(ids))

    def count(self) -> int:  # noqa: D102
        return self._call(lambda: super(RetryingChromaBackend, self).count())
