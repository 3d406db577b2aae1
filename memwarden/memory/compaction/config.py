"""A collection's HNSW configuration, read and changed through Chroma's public API."""

from __future__ import annotations

import warnings
from typing import Any


def hnsw_config(collection: Any) -> dict[str, Any]:
    """The collection's HNSW configuration, as stored. Read from ``configuration_json``: the
    decoded ``configuration`` would also rebuild the embedding function, which memwarden
    never gives Chroma (Chroma warns about that on every read)."""
    config = getattr(collection, "configuration_json", None) or {}
    return dict(config.get("hnsw") or {})


def set_sync_threshold(collection: Any, value: int) -> None:
    """Set how many writes the collection's HNSW index takes between persists.

    Chroma marks the embedding function of a collection that has none (memwarden gives Chroma
    none: it embeds before it stores) as "legacy" at the first change of its settings, and
    from then on every change warns that this legacy configuration is deprecated. That one
    warning, about that choice, is silenced here; any other warning passes."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="legacy embedding function config", category=DeprecationWarning)
        collection.modify(configuration={"hnsw": {"sync_threshold": value}})


def space_of(collection: Any) -> str:
    """The collection's distance ("l2", "ip" or "cosine")."""
    space = hnsw_config(collection).get("space") or (collection.metadata or {}).get("hnsw:space")
    return str(space or "l2")
