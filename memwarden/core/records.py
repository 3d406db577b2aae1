"""The records and results that cross memwarden's public edge (pydantic models)."""

from __future__ import annotations

import hashlib
from datetime import datetime, timezone
from enum import Enum
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from memwarden.core.errors import InvalidRequest
from memwarden.core.namespace import Namespace, exact_name, namespace_text
from memwarden.core.arguments import sequence_argument


class Kind(str, Enum):
    """What a memory is for (MemGuard's functional kinds, plus lessons from rejected writes)."""

    FACT = "fact"
    EVENT = "event"
    RULE = "rule"
    PREFERENCE = "preference"
    LESSON = "lesson"


class Source(str, Enum):
    """Where the content came from; external and tool content earns less trust."""

    USER = "user"
    AGENT = "agent"
    TOOL = "tool"
    EXTERNAL = "external"


class ContentClass(str, Enum):
    """What a memory's text is, whatever kind was declared (memwarden.guards.directives): a
    statement about the world, or a directive addressed to agents."""

    STATEMENT = "statement"
    DIRECTIVE = "directive"


class Status(str, Enum):
    """Lifecycle state; only ``active`` records are ever returned by search."""

    ACTIVE = "active"
    QUARANTINED = "quarantined"
    SUPERSEDED = "superseded"
    FORGOTTEN = "forgotten"


def utcnow() -> datetime:
    """The current time, timezone-aware in UTC (every timestamp memwarden stores is)."""
    return datetime.now(timezone.utc)


class Principal(BaseModel):
    """Who is acting: an id and the roles it is given (the policy's ``g`` lines add more).

    Ids and role names are compared exactly, never folded (see ``exact_name``): an id that is
    not in NFKC form, mixes look-alike scripts or holds an invisible character is refused with
    InvalidRequest, as is anything else malformed.
    """

    model_config = ConfigDict(frozen=True)

    id: str
    roles: tuple[str, ...] = ()

    def __init__(self, id: str, roles: list[str] | tuple[str, ...] = (), **kwargs: object) -> None:
        # Checked here, not by pydantic: tuple("physician") would be nine one-letter roles,
        # and an error raised inside a validator would surface as a raw ValidationError.
        try:
            super().__init__(id=id, roles=_role_names(roles), **kwargs)
        except ValidationError as exc:
            raise InvalidRequest(_validation_message("Principal", exc)) from None

    @field_validator("id", mode="before")
    @classmethod
    def _check_id(cls, value: object) -> str:
        return exact_name(value, what="principal id")

    @field_validator("roles", mode="before")
    @classmethod
    def _check_roles(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        return _role_names(value)


def _role_names(roles: object) -> tuple[str, ...]:
    items = sequence_argument(roles, "roles", of="role names")
    return tuple(dict.fromkeys(exact_name(r, what=f"roles[{i}]") for i, r in enumerate(items)))


def _validation_message(model: str, exc: ValidationError) -> str:
    """The first problem of a pydantic ValidationError as one precise sentence: memwarden's own
    message when one of its checks failed, else the field and pydantic's description."""
    error = exc.errors()[0]
    cause = (error.get("ctx") or {}).get("error")
    if isinstance(cause, InvalidRequest):
        return str(cause)
    where = ".".join(str(part) for part in error["loc"]) or "input"
    return f"{model} {where}: {error['msg']}"


def _hashed_id(*parts: str) -> str:
    h = hashlib.sha256()
    for part in parts:
        h.update(part.encode("utf-8"))
        h.update(b"\x00")
    return "mem_" + h.hexdigest()[:32]


def keyed_id(namespace: Namespace, key: str) -> str:
    """Id of an addressable item (a LangGraph store key): one id per (namespace, key), so a
    put to the same key overwrites instead of adding."""
    return _hashed_id("key", namespace_text(namespace), key)


def record_id(writer: str, namespace: Namespace, content: str, supersedes: str | None = None) -> str:
    """Deterministic id: the same writer writing the same content in the same place gets the
    same id, so a retried write is a no-op. An update also hashes the id it supersedes, so
    reverting to an older text makes a new version rather than colliding with the old one."""
    return _hashed_id(writer, namespace_text(namespace), content, supersedes or "")


class MemoryRecord(BaseModel):
    """One memory with its provenance, lifecycle and temporal fields (immutable once built)."""

    model_config = ConfigDict(frozen=True)

    id: str
    namespace: Namespace
    content: str
    kind: Kind = Kind.FACT
    #: Classified by the write path from the content; a record that was never classified
    #: counts as a directive (the class policies restrict).
    content_class: ContentClass = ContentClass.DIRECTIVE
    subjects: tuple[str, ...] = ()
    writer: str
    writer_roles: tuple[str, ...] = ()
    source: Source = Source.AGENT
    parents: tuple[str, ...] = ()
    created_at: datetime = Field(default_factory=utcnow)
    valid_from: datetime | None = None
    valid_to: datetime | None = None
    expires_at: datetime | None = None
    trust: float = Field(default=1.0, ge=0.0, le=1.0)
    status: Status = Status.ACTIVE
    version: int = 1
    supersedes: str | None = None
    labels: dict[str, str] = Field(default_factory=dict)
    key: str | None = None
    half_life: float | None = None
    last_access: datetime | None = None
    uses: int = 0
    approvals: tuple[str, ...] = ()
    rejections: tuple[str, ...] = ()
    #: The content digest the votes in ``approvals`` and ``rejections`` were cast for; a vote
    #: counts only while it matches the content (see :func:`content_digest`).
    reviewed: str | None = None

    @property
    def namespace_text(self) -> str:
        """The namespace as ``a/b/c``."""
        return namespace_text(self.namespace)


class SearchHit(BaseModel):
    """One search result: the record and the score it was ranked by (higher is better; None
    when the search had no query and merely listed records).

    ``score`` depends on the search mode: dense, the cosine similarity (1 is identical);
    hybrid, the reciprocal-rank-fusion score normalised so that 1.0 means ranked first by
    both legs; lexical, the BM25 relevance. ``similarity`` and ``bm25`` are what each leg
    said, when that leg found the record.

    With ``consensus=True`` searches, ``contested`` says that most related memories the
    caller may see contradict the record, and ``contradicted_by`` names them.
    """

    model_config = ConfigDict(frozen=True)

    record: MemoryRecord
    score: float | None
    similarity: float | None = None
    bm25: float | None = None
    contested: bool = False
    contradicted_by: tuple[str, ...] = ()


#: How much each source is trusted, most first: a caller may declare a source its binding
#: does not give it only where the policy lets it claim one.
SOURCE_ORDER = (Source.USER, Source.AGENT, Source.TOOL, Source.EXTERNAL)


class Binding(BaseModel):
    """Where a session's writes come from, set by whoever creates the session (the
    application), not by the caller of each write: the ``source`` and the highest ``trust``
    its records get. A write that declares another source, or more trust, needs the policy
    action ``claim`` (docs/policies.md)."""

    model_config = ConfigDict(frozen=True)

    source: Source = Source.USER
    trust: float = Field(default=1.0, ge=0.0, le=1.0)


#: The binding of the LangGraph store adapter and the memory tools: what an agent writes.
AGENT = Binding(source=Source.AGENT)


def content_digest(content: str) -> str:
    """The digest a review vote is bound to (sha256 of the content, 32 hex digits)."""
    return hashlib.sha256(content.encode("utf-8")).hexdigest()[:32]


class ReviewResult(BaseModel):
    """What a vote on a quarantined record did: the record's status and votes after it.

    ``record`` is the record itself only when the reviewer may also read it; a reviewer who
    may approve but not read gets no content back.
    """

    model_config = ConfigDict(frozen=True)

    id: str
    status: Status
    approvals: tuple[str, ...]
    rejections: tuple[str, ...]
    quorum: int
    record: MemoryRecord | None = None


class ErasureReceipt(BaseModel):
    """Content-free, signed proof of an erasure: what was removed, by whom, under which rule.

    ``records_digest`` commits to the erased records as they stood before deletion:
    ``record_leaves`` holds, sorted, ``sha256(id + "\\n" + sha256(content))`` of each (hex,
    UTF-8), and the digest is ``sha256`` of the leaves joined by ``"\\n"``. ``audit_seqs`` are
    the audit entries it covers. ``key_id`` and ``signature`` are the store's Ed25519
    signature over the canonical JSON of every other field (see docs/erasure.md); check it
    with ``memwarden receipt verify`` and the store's public key, offline.
    """

    model_config = ConfigDict(frozen=True)

    format: Literal["memwarden-erasure-receipt-v1"] = "memwarden-erasure-receipt-v1"
    subject: str | None
    requested_ids: tuple[str, ...] = ()
    erased_ids_sha256: tuple[str, ...]
    count: int
    cascaded: int
    #: Records about the subject, or derived from an erased record, that the caller may not
    #: erase: they are held (quarantined, label ``erasure_pending``) until someone who may
    #: erase them does.
    held: int = 0
    actor: str
    rules: tuple[str, ...]
    erased_at: datetime
    audit_seq: int | None = None
    audit_seqs: tuple[int, ...] = ()
    records_digest: str
    record_leaves: tuple[str, ...]
    key_id: str
    signature: str


def hashed(value: str) -> str:
    """sha256 of an identifier, for logs that must not identify a subject."""
    return hashlib.sha256(value.encode("utf-8")).hexdigest()


def ensure_kind(value: object) -> Kind:
    """Parse a kind, raising InvalidRequest that lists the allowed values."""
    try:
        return Kind(value)
    except ValueError:
        allowed = ", ".join(k.value for k in Kind)
        raise InvalidRequest(f"unknown kind {value!r}; expected one of {allowed}") from None
