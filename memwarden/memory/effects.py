"""What an operation changes, as values the pipeline applies after auditing them.

A handler returns its effects; it never touches the store. The pipeline writes the audit
entry first, then applies the effects in order (so a crash leaves an audited change that may
be absent, never a change no entry accounts for), and the caches follow from the same values.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Union

from memwarden.core.records import MemoryRecord, Status
from memwarden.memory.journal import Intent


@dataclass(frozen=True, slots=True)
class Store:
    """Store ``record`` (text and complete metadata; its text is embedded when it is sent).
    ``replacing``: the stored row under the same id it overwrites, if any. ``embed_texts``:
    what is embedded instead of the content (a WriteOp's ``index_text``), each text apart:
    the first as the row's vector, the others as its facets (memwarden.memory.facets).
    ``vectors_of``: the id of a stored row whose vector and facets the record takes instead of
    being embedded (an approved overwrite takes the held put's, made from its index texts)."""

    record: MemoryRecord
    replacing: MemoryRecord | None = None
    embed_texts: tuple[str, ...] | None = None
    vectors_of: str | None = None


@dataclass(frozen=True, slots=True)
class Restate:
    """Replace the metadata of stored records: each pair is (new state, stored state)."""

    changes: tuple[tuple[MemoryRecord, MemoryRecord], ...]


@dataclass(frozen=True, slots=True)
class Touch:
    """Refresh the decay clocks of records just read (only the decay fields are sent, so a
    concurrent change of anything else is never overwritten by a read), and restart the time
    to live of the ``renewed`` ones (read with ``refresh_ttl`` by a principal who may update
    them; see :func:`renewed`)."""

    records: tuple[MemoryRecord, ...]
    renewed: tuple[MemoryRecord, ...] = ()


@dataclass(frozen=True, slots=True)
class Purge:
    """Remove ``records`` and every physical copy of them."""

    records: tuple[MemoryRecord, ...]


def renewed(record: MemoryRecord, now: datetime) -> MemoryRecord:
    """``record`` with its time to live restarted at ``now``: the span it was given runs again
    from now. The span is its expiry less its last start (``last_access``, which a renewal
    sets, else its write time), so renewing again never stretches it."""
    assert record.expires_at is not None and record.half_life is None  # see handlers.reads.renewable
    start = record.last_access or record.created_at
    return record.model_copy(update={"expires_at": now + (record.expires_at - start), "last_access": now})


def relabel(records: list[MemoryRecord], status: Status, labels: dict[str, str]) -> Restate:
    """Move ``records`` to ``status`` with ``labels`` added; votes are cleared, since a vote
    counts only for the state it was cast on."""
    return Restate(tuple((r.model_copy(update={"status": status, "labels": {**r.labels, **labels},
                                               "approvals": (), "rejections": (), "reviewed": None}), r)
                         for r in records))


@dataclass(frozen=True, slots=True)
class Erase:
    """An erasure: tombstone ``marks``, hold ``held`` (quarantined, label ``erasure_pending``)
    and purge ``records``, recorded as an intent first (see :mod:`memwarden.memory.journal`)."""

    records: tuple[MemoryRecord, ...]
    held: tuple[MemoryRecord, ...]
    marks: tuple[tuple[str, str | None], ...]
    subject: str | None
    #: The journal intent this erasure finishes (recovery after an interrupt), if any.
    resumes: Intent | None = None
    #: The receipt's fields; the pipeline signs it once the erasure is complete.
    receipt: dict[str, Any] | None = None


Effect = Union[Store, Restate, Touch, Purge, Erase]
