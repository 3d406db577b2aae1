"""Flattening records into backend metadata and back.

Chroma metadata is flat, so a namespace is stored both whole (``ns``) and one label per key
(``ns_0``, ``ns_1``, ... with ``ns_depth``): that is what lets policy patterns become exact,
label-wise ``where`` filters. Times are stored as POSIX seconds so they can be compared.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from memwarden.guards.forgetting import forget_at
from memwarden.memory.backends import StoredRow
from memwarden.core.fields import LABEL_PREFIX, Meta, label_field, ns_label
from memwarden.core.records import MemoryRecord

#: Stored in place of "never" so that an expiry filter is a plain comparison.
NEVER = 253402300799.0  # 9999-12-31T23:59:59Z


def _ts(value: datetime | None) -> float | None:
    return value.timestamp() if value is not None else None


def _dt(value: Any) -> datetime | None:
    if value is None or value == NEVER:
        return None
    return datetime.fromtimestamp(float(value), tz=timezone.utc)


def to_metadata(record: MemoryRecord, *, replacing: MemoryRecord | None = None) -> dict[str, Any]:
    """The complete flat metadata of a record (its content is stored as the document).

    Every field is present: an unset optional field is None, which both stores read as
    "remove this key", because Chroma's upsert and update merge metadata, so a field left
    out would silently keep the previous version's value (a label, approvals, an expiry).
    ``replacing``: the stored version this metadata overwrites, whose labels the new record
    lacks are removed the same way.
    """
    meta: dict[str, Any] = {
        Meta.NS.value: record.namespace_text,
        Meta.NS_DEPTH.value: len(record.namespace),
        Meta.KIND.value: record.kind.value,
        # The content class policy conditions read (``content=directive``).
        Meta.CONTENT_CLASS.value: record.content_class.value,
        Meta.STATUS.value: record.status.value,
        Meta.WRITER.value: record.writer,
        Meta.SOURCE.value: record.source.value,
        Meta.CREATED_AT.value: record.created_at.timestamp(),
        # ``expires_at`` is the moment the record stops being returned (TTL or decay), the
        # one field read filters compare; ``ttl_at`` keeps the TTL itself.
        Meta.EXPIRES_AT.value: _ts(forget_at(record)) or NEVER,
        Meta.USES.value: record.uses,
        Meta.TRUST.value: float(record.trust),
        Meta.VERSION.value: record.version,
        # What time filters compare (memwarden.memory.retrieval.time_filter): a record's time
        # is its valid_from, else its write time, and it holds until valid_to (else never).
        Meta.T_FROM.value: (record.valid_from or record.created_at).timestamp(),
        Meta.T_TO.value: _ts(record.valid_to) or NEVER,
    }
    for i, label in enumerate(record.namespace):
        meta[ns_label(i)] = label
    # Chroma refuses empty lists, so an empty list is stored as an absent key (None).
    optional = {
        Meta.SUBJECTS.value: list(record.subjects),
        Meta.PARENTS.value: list(record.parents),
        Meta.WRITER_ROLES.value: list(record.writer_roles),
        Meta.VALID_FROM.value: _ts(record.valid_from),
        Meta.VALID_TO.value: _ts(record.valid_to),
        Meta.SUPERSEDES.value: record.supersedes,
        Meta.KEY.value: record.key,
        Meta.TTL_AT.value: _ts(record.expires_at),
        Meta.HALF_LIFE.value: record.half_life,
        Meta.LAST_ACCESS.value: _ts(record.last_access),
        Meta.APPROVALS.value: list(record.approvals),
        Meta.REJECTIONS.value: list(record.rejections),
        Meta.REVIEWED.value: record.reviewed,
    }
    meta.update({k: (None if v == [] else v) for k, v in optional.items()})
    if replacing is not None:
        meta.update({label_field(key): None for key in replacing.labels if key not in record.labels})
    for key, value in record.labels.items():
        meta[label_field(key)] = value
    return meta


def stored_metadata(metadata: dict[str, Any]) -> dict[str, Any]:
    """What a store keeps of ``metadata`` for a row it does not hold yet (no None values)."""
    return {k: v for k, v in metadata.items() if v is not None}


def from_row(row: StoredRow) -> MemoryRecord:
    """Rebuild the record a row was made from."""
    m = row.metadata
    depth = int(m[Meta.NS_DEPTH])
    return MemoryRecord(
        id=row.id,
        namespace=tuple(m[ns_label(i)] for i in range(depth)),
        content=row.document,
        kind=m[Meta.KIND],
        # A row stored before records were classified counts as a directive: the class
        # policies restrict, so that an old row escapes no directive rule.
        content_class=m.get(Meta.CONTENT_CLASS, "directive"),
        subjects=tuple(m.get(Meta.SUBJECTS, ())),
        writer=m[Meta.WRITER],
        writer_roles=tuple(m.get(Meta.WRITER_ROLES, ())),
        source=m[Meta.SOURCE],
        parents=tuple(m.get(Meta.PARENTS, ())),
        created_at=_dt(m[Meta.CREATED_AT]),
        valid_from=_dt(m.get(Meta.VALID_FROM)),
        valid_to=_dt(m.get(Meta.VALID_TO)),
        expires_at=_dt(m.get(Meta.TTL_AT)),
        trust=m.get(Meta.TRUST, 1.0),
        status=m[Meta.STATUS],
        version=int(m.get(Meta.VERSION, 1)),
        supersedes=m.get(Meta.SUPERSEDES),
        key=m.get(Meta.KEY),
        half_life=m.get(Meta.HALF_LIFE),
        last_access=_dt(m.get(Meta.LAST_ACCESS)),
        uses=int(m.get(Meta.USES, 0)),
        approvals=tuple(m.get(Meta.APPROVALS, ())),
        rejections=tuple(m.get(Meta.REJECTIONS, ())),
        reviewed=m.get(Meta.REVIEWED),
        labels={k[len(LABEL_PREFIX):]: v for k, v in m.items() if k.startswith(LABEL_PREFIX)},
    )
