"""Facets: the extra vectors of a record embedded by several texts (a LangGraph store item's
texts at its index paths; see :mod:`memwarden.core.indextext`).

The first text's vector is the Chroma row's own embedding. The others are stored in the row's
own metadata (:attr:`Meta.FACETS`, float32 base64, one after another, with their number in
:attr:`Meta.FACET_COUNT`), so whatever removes or rewrites the row (an erasure's physical
purge, a sweep, a re-put) removes them with it, and there is no second collection to keep
consistent. A search scores a record by its best vector, the largest cosine similarity over
its own and its facets', as LangGraph's stores do (max-pooling):

- the derived index (:mod:`memwarden.memory.vectorindex`) holds one slot per vector, each
  mapped back to its row;
- the partition path (:mod:`memwarden.memory.partitioned`) reads the rows with facets of each
  searched partition (at most :data:`MAX_FACETED_ROWS`, within the target's filter) beside its
  nearest rows, and re-scores them (:func:`pooled`).
"""

from __future__ import annotations

import base64
import binascii
import logging
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from memwarden.core.fields import Meta
from memwarden.memory.backends import StoredRow
from memwarden.policies.pushdown import all_of

_log = logging.getLogger("memwarden")

FACETS = Meta.FACETS.value
FACET_COUNT = Meta.FACET_COUNT.value
#: The filter of the rows that have facets.
FACETED: dict[str, Any] = {FACET_COUNT: {"$gt": 0}}
#: The fields of a replaced row that has no facets now (Chroma merges metadata: a field left
#: out would keep the earlier version's facets).
CLEARED: dict[str, Any] = {FACETS: None, FACET_COUNT: None}
#: Rows with facets one partition query re-scores (the partition path; beyond them, a row is
#: ranked by its own vector alone there, and fully once the derived index is loaded).
MAX_FACETED_ROWS = 2_000


def encoded(vectors: np.ndarray) -> dict[str, Any]:
    """The metadata fields holding ``vectors`` (one per row) as a row's facets; CLEARED for none."""
    x = np.ascontiguousarray(vectors, dtype=np.float32)
    if x.size == 0:
        return dict(CLEARED)
    return {FACETS: base64.b64encode(x.tobytes()).decode("ascii"), FACET_COUNT: int(len(x))}


def decoded(metadata: dict[str, Any]) -> np.ndarray | None:
    """The facets a row's metadata holds, one vector per row (None when it has none, or when
    what it holds is not a whole number of vectors of that count: then it is ranked by its own)."""
    text, count = metadata.get(FACETS), metadata.get(FACET_COUNT)
    if not text or not isinstance(count, int) or isinstance(count, bool) or count < 1:
        return None
    try:
        raw = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError, TypeError):
        raw = b""
    if not raw or len(raw) % (4 * count):
        _log.warning("memwarden: ignoring malformed facets of a stored row")
        return None
    return np.frombuffer(raw, dtype=np.float32).reshape(count, -1)


def without_facets(metadata: dict[str, Any]) -> dict[str, Any]:
    """``metadata`` without the facet vectors (their count stays): what a RAM copy keeps."""
    return {k: v for k, v in metadata.items() if k != FACETS}


def embed_rows(texts: Sequence[Sequence[str]], metadatas: Sequence[dict[str, Any]],
               embed: Callable[[list[str]], np.ndarray]) -> np.ndarray:
    """The vectors of rows embedded by ``texts`` (each row's texts, its own first): each row's
    first vector, returned; the others are written into its metadata dict as its facets. Every
    distinct text is embedded once, all in one call."""
    distinct = list(dict.fromkeys(t for row in texts for t in row))
    vectors = np.asarray(embed(distinct), dtype=np.float32).reshape(len(distinct), -1)
    at = {text: i for i, text in enumerate(distinct)}
    for row, metadata in zip(texts, metadatas):
        if len(row) > 1:
            metadata.update(encoded(vectors[[at[t] for t in row[1:]]]))
    return vectors[[at[row[0]] for row in texts]]


def faceted_rows(get: Callable[..., dict[str, Any]], where: dict[str, Any] | None) -> list[tuple[StoredRow, np.ndarray]]:
    """The rows with facets that pass ``where`` (the first MAX_FACETED_ROWS), each with its own
    vector; ``get`` is a Chroma collection's ``get``."""
    got = get(where=all_of([where or {}, FACETED]), limit=MAX_FACETED_ROWS,
              include=["embeddings", "documents", "metadatas"])
    if not got["ids"]:
        return []
    rows = [StoredRow(i, d or "", dict(m or {})) for i, d, m in zip(got["ids"], got["documents"], got["metadatas"])]
    return list(zip(rows, np.asarray(got["embeddings"], dtype=np.float32)))


def _unit(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.float32).reshape(-1, np.shape(x)[-1])
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    return x / np.where(norms > 0, norms, 1.0)


def pooled(hits: list[tuple[StoredRow, float]], query: np.ndarray, k: int,
           faceted: Sequence[tuple[StoredRow, np.ndarray]],
           accept: Callable[[dict[str, Any]], bool]) -> list[tuple[StoredRow, float]]:
    """The k nearest of ``hits`` (rows with cosine distances) and of the ``faceted`` rows
    (each with its own vector) that ``accept`` takes, a faceted row at the distance of its
    best vector (its own or a facet's), nearest first."""
    best: dict[str, tuple[StoredRow, float]] = {row.id: (row, float(d)) for row, d in hits}
    if faceted:
        q = _unit(query)[0]
        for row, own in faceted:
            if not accept(row.metadata):
                continue
            extra = decoded(row.metadata)
            vectors = own.reshape(1, -1) if extra is None or extra.shape[1] != own.shape[-1] \
                else np.vstack([own.reshape(1, -1), extra])
            distance = 1.0 - float(np.max(_unit(vectors) @ q))
            held = best.get(row.id)
            if held is None or distance < held[1]:
                best[row.id] = (row, distance)
    return sorted(best.values(), key=lambda h: h[1])[:k]
