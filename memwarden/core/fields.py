"""The names of the metadata fields a record is stored under (memwarden.memory.codec writes
them, memwarden.memory.facets the two facet fields; every filter, index and check that reads
stored metadata names them from here).

No caller names a stored field: a caller's labels are stored under ``lbl_`` + their name and a
LangGraph filter reads the item's value (its document), so no field here, the facets among
them, can be set or filtered on from outside.

``Meta`` is a ``StrEnum``, so a member compares and hashes as its text and a lookup such as
``metadata[Meta.STATUS]`` works on the plain strings a store returns. Where a name becomes a
key that leaves the process (metadata written, a ``where`` filter sent to Chroma), use
``.value``: Chroma's HTTP client serialises with orjson, which refuses a ``str`` subclass as a
dict key, and the stored bytes stay exactly the plain names.
"""

from __future__ import annotations

from enum import StrEnum


class Meta(StrEnum):
    """One stored metadata field (see memwarden.memory.codec.to_metadata for what each holds)."""

    NS = "ns"
    NS_DEPTH = "ns_depth"
    KIND = "kind"
    CONTENT_CLASS = "content_class"
    STATUS = "status"
    WRITER = "writer"
    WRITER_ROLES = "writer_roles"
    SOURCE = "source"
    CREATED_AT = "created_at"
    EXPIRES_AT = "expires_at"
    USES = "uses"
    TRUST = "trust"
    VERSION = "version"
    T_FROM = "t_from"
    T_TO = "t_to"
    SUBJECTS = "subjects"
    PARENTS = "parents"
    VALID_FROM = "valid_from"
    VALID_TO = "valid_to"
    SUPERSEDES = "supersedes"
    KEY = "key"
    TTL_AT = "ttl_at"
    HALF_LIFE = "half_life"
    LAST_ACCESS = "last_access"
    APPROVALS = "approvals"
    REJECTIONS = "rejections"
    REVIEWED = "reviewed"
    #: The vectors of a record's index texts after its first (whose vector is the row's own
    #: embedding): float32, base64, one after another (memwarden.memory.facets). Kept in the
    #: row's own metadata, so that whatever removes the row removes them with it.
    FACETS = "facets"
    #: How many vectors ``facets`` holds (absent: none), the field a search filters on.
    FACET_COUNT = "facet_count"


#: The fields memwarden.memory.facets writes when a row's texts are embedded (every other
#: field is the codec's, written from the record).
FACET_FIELDS = frozenset({Meta.FACETS, Meta.FACET_COUNT})

#: The prefix of a label's field: label ``ward`` is stored as ``lbl_ward``.
LABEL_PREFIX = "lbl_"


def ns_label(depth: int) -> str:
    """The field of the namespace label at ``depth`` (0 first): ``ns_0``, ``ns_1``, ..."""
    return f"ns_{depth}"


def label_field(label: str) -> str:
    """The field a record's label ``label`` is stored under."""
    return LABEL_PREFIX + label
