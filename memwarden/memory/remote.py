"""A Chroma server behind the pipeline, with retries for transient failures (tenacity).

Every backend call is idempotent (deterministic ids, upserts, metadata merges, deletes), so
retrying one after a dropped connection or a gateway error cannot duplicate or lose data.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import httpx
from tenacity import Retrying, retry_if_exception, stop_after_attempt, wait_exponential_jitter

from memwarden.memory.partitioned import PartitionedBackend

T = TypeVar("T")

_TRANSIENT_STATUS = ("502", "503", "504", "429")


def is_transient(exc: BaseException) -> bool:
    """Connection problems, time-outs, overload answers and a server's SQLite being busy
    (another writer holds it for a moment) are worth retrying; nothing else."""
    if isinstance(exc, (httpx.TransportError, ConnectionError, TimeoutError)):
        return True
    text = str(exc)
    if type(exc).__name__ == "InternalError" and "database is locked" in text:
        return True
    return any(code in text for code in _TRANSIENT_STATUS) and "rror" in type(exc).__name__


def retrying(attempts: int = 5, max_wait: float = 2.0) -> Retrying:
    """Retry transient failures with jittered exponential back-off, then re-raise."""
    return Retrying(retry=retry_if_exception(is_transient), stop=stop_after_attempt(attempts),
                    wait=wait_exponential_jitter(multiplier=0.05, max=max_wait), reraise=True)


class RetryingPartitionedBackend(PartitionedBackend):
    """PartitionedBackend over ``chromadb.HttpClient``; each Chroma call is retried on
    transient errors (the partitions are queried in parallel, each call retried alone)."""

    def __init__(self, client: Any, *, attempts: int = 5, max_wait: float = 2.0, **options: Any) -> None:
        self._retrying = retrying(attempts, max_wait)
        super().__init__(client, **options)

    @classmethod
    def connect(cls, host: str, port: int, *, ssl: bool = False, headers: dict[str, str] | None = None,
                attempts: int = 5, **options: Any) -> RetryingPartitionedBackend:
        """Connect to a server started with ``chroma run``, telemetry off."""
        import chromadb
        from chromadb.config import Settings

        client = retrying(attempts)(lambda: chromadb.HttpClient(
            host=host, port=port, ssl=ssl, headers=headers or {}, settings=Settings(anonymized_telemetry=False)))
        return cls(client, attempts=attempts, **options)

    def _call(self, fn: Callable[[], T]) -> T:
        return self._retrying(fn)
