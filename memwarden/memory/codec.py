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
from memwarden.core.records import MemoryRecord
# The keys policy filters read: labels as lbl_<name>, the writer's roles as a list.
from memwarden.policies.pushdown import CONTENT_CLASS_KEY, LABEL_PREFIX, WRITER_ROLES_KEY

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
        "ns": record.namespace_text,
        "ns_depth": len(record.namespace),
        "kind": record.kind.value,
        # The content class policy conditions read (``content=directive``).
        CONTENT_CLASS_KEY: record.content_class.value,
        "status": record.status.value,
        "writer": record.writer,
        "source": record.source.value,
        "created_at": record.created_at.timestamp(),
        # ``expires_at`` is the moment the record stops being returned (TTL or decay), the
        # one field read filters compare; ``ttl_at`` keeps the TTL itself.
        "expires_at": _ts(forget_at(record)) or NEVER,
        "uses": record.uses,
        "trust": float(record.trust),
        "version": record.version,
        # What time filters compare (memwarden.memory.retrieval.time_filter): a record's time
        # is its valid_from, else its write time, and it holds until valid_to (else never).
        "t_from": (record.valid_from or record.created_at).timestamp(),
        "t_to": _ts(record.valid_to) or NEVER,
    }
    for i, label in enumerate(record.namespace):
        meta[f"ns_{i}"] = label
    # Chroma refuses empty lists, so an empty list is stored as an absent key (None).
    optional = {
        "subjects": list(record.subjects),
        "parents": list(record.parents),
        WRITER_ROLES_KEY: list(record.writer_roles),
        "valid_from": _ts(record.valid_from),
        "valid_to": _ts(record.valid_to),
        "supersedes": record.supersedes,
        "key": record.key,
        "ttl_at": _ts(record.expires_at),
        "half_life": record.half_life,
        "last_access": _ts(record.last_access),
        "approvals": list(record.approvals),
        "rejections": list(record.rejections),
        "reviewed": record.reviewed,
    }
    meta.update({k: (None if v == [] else v) for k, v in optional.items()})
    if replacing is not None:
        meta.update({LABEL_PREFIX + key: None for key in replacing.labels if key not in record.labels})
    for key, value in record.labels.items():
        meta[LABEL_PREFIX + key] = value
    return meta


def stored_metadata(metadata: dict[str, Any]) -> dict[str, Any]:
    """What a store keeps of ``metadata`` for a row it does not hold yet (no None values)."""
    return {k: v for k, v in metadata.items() if v is not None}


def from_row(row: StoredRow) -> MemoryRecord:
    """Rebuild the record a row was made from."""
    m = row.metadata
    depth = int(m["ns_depth"])
    return MemoryRecord(
        id=row.id,
        namespace=tuple(m[f"ns_{i}"] for i in range(depth)),
        content=row.document,
        kind=m["kind"],
        # A row stored before records were classified counts as a directive: the class
        # policies restrict, so that an old row escapes no directive rule.
        content_class=m.get(CONTENT_CLASS_KEY, "directive"),
        subjects=tuple(m.get("subjects", ())),
        writer=m["writer"],
        writer_roles=tuple(m.get(WRITER_ROLES_KEY, ())),
        source=m["source"],
        parents=tuple(m.get("parents", ())),
        created_at=_dt(m["created_at"]),
        valid_from=_dt(m.get("valid_from")),
        valid_to=_dt(m.get("valid_to")),
        expires_at=_dt(m.get("ttl_at")),
        trust=m.get("trust", 1.0),
        status=m["status"],
        version=int(m.get("version", 1)),
        supersedes=m.get("supersedes"),
        key=m.get("key"),
        half_life=m.get("half_life"),
        last_access=_dt(m.get("last_access")),
        uses=int(m.get("uses", 0)),
        approvals=tuple(m.get("approvals", ())),
        rejections=tuple(m.get("rejections", ())),
        reviewed=m.get("reviewed"),
        labels={k[len(LABEL_PREFIX):]: v for k, v in m.items() if k.startswith(LABEL_PREFIX)},
    )
