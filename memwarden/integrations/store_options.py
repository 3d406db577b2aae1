"""The options of a governed LangGraph store: LangGraph's ``index`` and ``ttl`` configurations,
memwarden's search mode and strictness, checked once, when the store is built.

- ``index`` is LangGraph's IndexConfig: ``dims``, ``embed`` and ``fields``, and the keys
  LangGraph's SQLite and Postgres stores add: ``text_fields`` (the SQLite store's name for
  ``fields``), ``distance_type`` and ``ann_index_config``. The store embeds with the memory's
  embedder (``Memory.open(embedding=...)``): ``embed`` may name that embedder (or the function
  it wraps) and nothing else, since vectors of two models in one index would rank nonsense and
  send the text to a second provider; ``dims`` must be a positive integer, the embedder's own
  when it declares one. ``distance_type`` ("cosine", "inner_product" or "l2") chooses the
  score a dense search reports, as LangGraph's Postgres store reports it: the cosine
  similarity, the dot product, minus the Euclidean distance. memwarden normalises every
  vector it stores and ranks by cosine, so these are those of the unit vectors: LangGraph's
  own for embeddings of unit length (most models, and LangGraph's test embeddings), a
  divergence for others (docs/langgraph.md). ``ann_index_config`` (pgvector's index kind)
  is accepted and not used: memwarden chooses its own index. ``fields`` are the paths (LangGraph's syntax) whose texts are
  embedded, each text apart, as LangGraph embeds them: the item is scored by its best text
  (at most 64 distinct texts per item; :mod:`memwarden.memory.facets`).
- ``ttl`` is LangGraph's TTLConfig: ``default_ttl`` (minutes, for a put that gives none),
  ``refresh_on_read`` (the default of ``refresh_ttl`` on get and search) and
  ``sweep_interval_minutes`` (accepted: an expired item is invisible at once, and its row is
  removed by an administrator's sweep, which no store thread runs on its own).
- ``search``: "dense" (the default, LangGraph's scores: cosine similarity) or "hybrid"
  (memwarden's BM25 + vector fusion; the score is the normalised fusion score).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from memwarden.core.arguments import flag_argument, shown
from memwarden.core.errors import InvalidRequest
from memwarden.core import ops as mw
from memwarden.core.records import SearchHit
from memwarden.memory.embeddings import FunctionEmbedding, embedder_dim, embedder_name

__all__ = ["DISTANCE_TYPES", "SEARCH_MODES", "UNINDEXED", "StoreOptions"]

#: The store's search modes (see the module doc).
SEARCH_MODES = ("dense", "hybrid")
#: The scores a dense search can report (``index['distance_type']``; see the module doc).
DISTANCE_TYPES = ("cosine", "inner_product", "l2")
#: The label a put with ``index=False`` carries: a query never ranks the item, as in LangGraph.
UNINDEXED = "store_unindexed"

_INDEX_KEYS = {"dims", "embed", "fields", "text_fields", "distance_type", "ann_index_config"}
_TTL_KEYS = {"default_ttl", "refresh_on_read", "sweep_interval_minutes"}


@dataclass(frozen=True, slots=True)
class StoreOptions:
    """A governed store's checked options (see the module doc)."""

    default_ttl: float | None = None
    refresh_on_read: bool = True
    fields: tuple[str, ...] = ("$",)
    search: str = "dense"
    strict: bool = False
    distance: str = "cosine"

    def score(self, hit: SearchHit) -> float | None:
        """The score a search item reports for ``hit``: for a dense search (whose score is the
        cosine similarity) the similarity of the two unit vectors as ``distance`` measures it:
        for unit vectors the dot product is the cosine, and the Euclidean distance is
        sqrt(2 - 2 cos), reported negated as LangGraph's Postgres store does; for hybrid, the
        fusion score."""
        if self.search != "dense" or self.distance != "l2" or hit.score is None:
            return hit.score
        return -math.sqrt(max(0.0, 2.0 - 2.0 * hit.score))

    @classmethod
    def of(cls, *, index: object = None, ttl: object = None, search: object = "dense",
           strict: object = False, embedder: object = None) -> StoreOptions:
        """The options from ``as_store``'s arguments; InvalidRequest naming what is wrong.
        ``embedder``: the memory's, which ``index['embed']`` and ``index['dims']`` must match."""
        if not isinstance(search, str) or search not in SEARCH_MODES:
            raise InvalidRequest(f"search must be one of {', '.join(SEARCH_MODES)}, got {shown(search)}")
        fields, distance = _index(index, embedder)
        if distance != "cosine" and search != "dense":
            raise InvalidRequest(f"index['distance_type'] {distance!r} chooses a dense search's score; "
                                 f"search={search!r} scores by fusion: use search='dense' or distance_type 'cosine'")
        default_ttl, refresh = _ttl(ttl)
        return cls(default_ttl=default_ttl, refresh_on_read=refresh, fields=fields, search=search,
                   strict=flag_argument(strict, "strict"), distance=distance)


def _config(value: object, name: str, kind: str, keys: frozenset[str] | set[str]) -> None:
    """Refuse ``value`` unless it is a mapping of LangGraph's ``kind`` with only ``keys``."""
    if not isinstance(value, Mapping):
        raise InvalidRequest(f"{name} must be a LangGraph {kind} mapping, got {type(value).__name__}")
    unknown = sorted(set(map(str, value)) - set(keys))
    if unknown:
        raise InvalidRequest(f"{name} has unknown key(s) {unknown}; expected {', '.join(sorted(keys))}")


def _index(index: object, embedder: object) -> tuple[tuple[str, ...], str]:
    if index is None:
        return ("$",), "cosine"
    _config(index, "index", "IndexConfig", _INDEX_KEYS)
    dims = index.get("dims")
    if dims is not None and (isinstance(dims, bool) or not isinstance(dims, int) or dims < 1):
        raise InvalidRequest(f"index['dims'] must be a positive integer, got {shown(dims)}")
    if dims is not None and (own := embedder_dim(embedder)) is not None and dims != own:
        raise InvalidRequest(f"index['dims'] is {dims}, but the memory's embeddings ({embedder_name(embedder)}) "
                             f"have {own} dimensions")
    embed = index.get("embed")
    if embed is not None and embed is not embedder and not (isinstance(embedder, FunctionEmbedding)
                                                              and embed is embedder.func):
        # Embedding with another model than the memory's would put vectors of two spaces in
        # one index (and send the text to a second provider): refused, never done quietly.
        raise InvalidRequest("index['embed'] is not the memory's embeddings: the store embeds with those; pass "
                             "the same object to Memory.open(..., embedding=...), or leave 'embed' out")
    distance = index.get("distance_type", "cosine")
    if not isinstance(distance, str) or distance not in DISTANCE_TYPES:
        raise InvalidRequest(f"index['distance_type'] must be one of {', '.join(DISTANCE_TYPES)}, got {shown(distance)}")
    if not isinstance(index.get("ann_index_config", {}), Mapping):
        raise InvalidRequest(f"index['ann_index_config'] must be a mapping, got {shown(index['ann_index_config'])}")
    fields = _fields(index, "fields")
    text_fields = _fields(index, "text_fields")
    if fields is not None and text_fields is not None and fields != text_fields:
        raise InvalidRequest(f"index['fields'] {list(fields)} and index['text_fields'] {list(text_fields)} differ; "
                             "give one")
    return fields or text_fields or ("$",), distance


def _fields(index: Mapping[str, Any], key: str) -> tuple[str, ...] | None:
    """The field paths at ``index[key]`` (None when absent); the SQLite store's
    ``text_fields`` may be one path, as there."""
    fields = index.get(key)
    if fields is None:
        return None
    if key == "text_fields" and isinstance(fields, str):
        fields = [fields]
    if isinstance(fields, str) or not isinstance(fields, (list, tuple)) or not fields \
            or not all(isinstance(f, str) and f for f in fields):
        raise InvalidRequest(f"index['{key}'] must be a non-empty list of field paths, got {shown(fields)}")
    return tuple(fields)


def _ttl(ttl: object) -> tuple[float | None, bool]:
    if ttl is None:
        return None, True
    _config(ttl, "ttl", "TTLConfig", _TTL_KEYS)
    default = ttl.get("default_ttl")
    if default is not None:
        minutes(default, "ttl['default_ttl']")
    refresh = ttl.get("refresh_on_read", True)
    flag_argument(refresh, "ttl['refresh_on_read']")
    sweep = ttl.get("sweep_interval_minutes")
    if sweep is not None and (isinstance(sweep, bool) or not isinstance(sweep, (int, float))
                              or not math.isfinite(sweep) or sweep <= 0):
        raise InvalidRequest(f"ttl['sweep_interval_minutes'] must be a positive number, got {shown(sweep)}")
    return (None if default is None else float(default)), refresh


def minutes(value: Any, what: str) -> float:
    """A LangGraph TTL in minutes, checked: positive, finite, at most memwarden's longest TTL."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
            or not 0 < value <= mw.MAX_TTL / 60:
        raise InvalidRequest(f"{what} must be a positive number of minutes (at most {mw.MAX_TTL / 60:.0f}), "
                             f"got {shown(value)}")
    return float(value)
