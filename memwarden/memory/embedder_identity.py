"""Which embedder a store's vectors were made with, and the check that a store is opened with it.

Vectors of two models are not comparable: a search with one model's query vector over another
model's rows returns noise, and Chroma only notices when the dimensions differ, with an error
that does not say why. So a store records the name and vector dimension of the embedder that
wrote it (the partitioned backend keeps them in its layout collection's metadata) and an open
with any other embedder is refused before anything is read or written.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pydantic import BaseModel, ConfigDict

from memwarden.core.errors import InvalidRequest

__all__ = ["EMBEDDER_DIM_KEY", "EMBEDDER_KEY", "EmbedderIdentity", "check_dimension", "settle"]

EMBEDDER_KEY = "memwarden:embedder"
EMBEDDER_DIM_KEY = "memwarden:embedding_dim"

_CHANGE = ("open it with the embedder it was written with (embedding=...), or write a new store to change "
           "models (see docs/embeddings.md)")


class EmbedderIdentity(BaseModel):
    """The model behind a store's vectors: its name and, when known, its vector dimension."""

    model_config = ConfigDict(frozen=True)

    name: str
    dim: int | None = None

    def describe(self) -> str:
        """The identity as an error message names it."""
        return f"{self.name!r} ({self.dim}-d)" if self.dim is not None else f"{self.name!r} (dimension unknown)"

    def as_metadata(self) -> dict[str, Any]:
        """The identity as Chroma collection metadata (a missing dimension is left out)."""
        meta: dict[str, Any] = {EMBEDDER_KEY: self.name}
        if self.dim is not None:
            meta[EMBEDDER_DIM_KEY] = self.dim
        return meta

    @classmethod
    def from_metadata(cls, metadata: dict[str, Any] | None) -> EmbedderIdentity | None:
        """The identity recorded in ``metadata``, or None for a store written before records."""
        meta = metadata or {}
        name = meta.get(EMBEDDER_KEY)
        if name is None:
            return None
        dim = meta.get(EMBEDDER_DIM_KEY)
        return cls(name=str(name), dim=int(dim) if dim is not None else None)


def settle(recorded: EmbedderIdentity | None, rows_dims: Iterable[int], current: EmbedderIdentity,
           where: str) -> EmbedderIdentity | None:
    """Check ``current`` against what store ``where`` holds; the identity to record, if any.

    ``recorded`` is the store's record; ``rows_dims`` the dimensions its collections hold rows
    of. Raises InvalidRequest, naming both embedders and dimensions, when they disagree.
    Returns None when the record stands as it is, else the identity to write (a store that
    has no record yet, or whose record lacks the dimension, learns it now).
    """
    dims = sorted(set(rows_dims))
    if len(dims) > 1:
        raise InvalidRequest(f"the store {where} already holds vectors of several dimensions {dims}: it mixes "
                             "embedding models, and its searches cannot be trusted; rebuild it with one embedder")
    rows_dim = dims[0] if dims else None
    if recorded is not None:
        if recorded.name != current.name or (None not in (recorded.dim, current.dim) and recorded.dim != current.dim):
            raise InvalidRequest(f"the store {where} was written with embedder {recorded.describe()}, not "
                                 f"{current.describe()}: {_CHANGE}")
        known = recorded.dim if recorded.dim is not None else current.dim
    else:
        known = current.dim
    if rows_dim is not None and known is not None and rows_dim != known:
        holder = recorded.describe() if recorded is not None else "an unrecorded embedder"
        raise InvalidRequest(f"the store {where} holds {rows_dim}-d vectors (written with {holder}), and embedder "
                             f"{current.describe()} makes {known}-d ones: {_CHANGE}")
    settled = EmbedderIdentity(name=current.name, dim=known if known is not None else rows_dim)
    return None if settled == recorded else settled


def check_dimension(identity: EmbedderIdentity | None, vectors: int, where: str) -> None:
    """Raise InvalidRequest if ``vectors``-d vectors do not fit a store of ``identity``."""
    if identity is not None and identity.dim is not None and vectors != identity.dim:
        raise InvalidRequest(f"the store {where} holds {identity.dim}-d vectors of embedder {identity.name!r}, "
                             f"got {vectors}-d ones: {_CHANGE}")
