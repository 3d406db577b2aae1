"""Memory operations as small immutable values.

Every call on a Session becomes one of these and goes through ``Memory.batch``. Each op
knows how to canonicalise itself (``canonical``), which is the edge where bad input becomes
an InvalidRequest with a precise message, before any policy or storage work.

Why over 500 lines: every op kind and the field checks they share, in one module, as
LangGraph's ``store/base`` keeps its ops; split by kind, each field would be checked in
several places.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from typing import Any, ClassVar, Protocol, Union

from memwarden.core.errors import InvalidRequest
from memwarden.core.indextext import index_texts_of
from memwarden.core.arguments import flag_argument, text_argument, integer_argument, iterable_argument, sequence_argument, shown
from memwarden.core.records import Binding, Kind, Principal, Source, ensure_kind
from memwarden.core.schema import HELD_LABEL, OP_KINDS
from memwarden.core.valuefilter import check_filter
from memwarden.core.namespace import Namespace, canonical_label, canonical_namespace, canonical_value, is_label_name

#: Longest content accepted, in characters (documented in the README).
MAX_CONTENT_CHARS = 32_768
#: Longest query accepted, in characters.
MAX_QUERY_CHARS = 4_096
#: Largest k a search may ask for.
MAX_K = 1_000
#: Largest offset a search may ask for (listing pages through big namespaces).
MAX_OFFSET = 1_000_000
#: Longest addressable key (LangGraph store keys), in characters.
MAX_KEY_CHARS = 1_024
#: Longest time to live, in seconds (a century; beyond it an expiry date may not exist).
MAX_TTL = 100 * 365 * 86_400.0
#: Most subjects, parents or labels on one record.
MAX_LIST = 64
#: Largest token budget a search may compose within.
MAX_BUDGET_TOKENS = 1_000_000
#: Search modes (see SearchOp).
SEARCH_MODES = ("hybrid", "dense", "lexical")

NamespaceLike = Union[str, Sequence[str]]




def _names(values: object, what: str) -> tuple[str, ...]:
    items = sequence_argument(values, what, limit=MAX_LIST)
    return tuple(dict.fromkeys(canonical_label(v, what=f"{what}[{i}]") for i, v in enumerate(items)))


def _record_id(value: object, what: str = "id") -> str:
    if not isinstance(value, str) or not value.startswith("mem_") or len(value) != 36 \
            or any(c not in "0123456789abcdef" for c in value[4:]):
        raise InvalidRequest(f"{what} {shown(value)} is not a memwarden record id (mem_ + 32 hex digits)")
    return value


def _record_ids(values: object, what: str, limit: int | None = MAX_LIST) -> tuple[str, ...]:
    items = sequence_argument(values, what, of="record ids", limit=limit)
    return tuple(dict.fromkeys(_record_id(v, f"{what}[{i}]") for i, v in enumerate(items)))


def _positive_seconds(value: object, what: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
            or not 0 < value <= MAX_TTL:
        raise InvalidRequest(f"{what} must be a positive number of seconds (at most {MAX_TTL:.0f}), got {shown(value)}")
    return float(value)


def _when(value: object, what: str) -> datetime | None:
    if value is None:
        return None
    if not isinstance(value, datetime):
        raise InvalidRequest(f"{what} must be a datetime, got {type(value).__name__}")
    if value.utcoffset() is None:
        raise InvalidRequest(f"{what} must be timezone-aware (naive datetimes are ambiguous)")
    try:
        return value.astimezone(timezone.utc)
    except OverflowError:
        raise InvalidRequest(f"{what} {value.isoformat()} is out of range in UTC") from None


def _range(value: object) -> tuple[datetime, datetime] | None:
    if value is None:
        return None
    if isinstance(value, (str, bytes)) or not isinstance(value, (tuple, list)) or len(value) != 2:
        raise InvalidRequest(f"time_range must be a (start, end) pair of datetimes, got {value!r}")
    start, end = _when(value[0], "time_range start"), _when(value[1], "time_range end")
    if start is None or end is None:
        raise InvalidRequest("time_range needs both a start and an end")
    if end <= start:
        raise InvalidRequest("time_range end must be after its start")
    return start, end


def _source(value: object) -> Source:
    try:
        return Source(value)
    except (ValueError, TypeError):
        raise InvalidRequest(f"unknown source {shown(value)}; expected one of "
                             + ", ".join(s.value for s in Source)) from None


def _labels(value: object) -> dict[str, str]:
    if not isinstance(value, Mapping):
        raise InvalidRequest(f"labels must be a mapping of strings, got {type(value).__name__}")
    if len(value) > MAX_LIST:
        raise InvalidRequest(f"labels has {len(value)} entries; the limit is {MAX_LIST}")
    out = {}
    for key, val in value.items():
        if not is_label_name(key):
            raise InvalidRequest(f"labels: label key {shown(key)} must be ASCII letters, digits or '_'")
        if key == HELD_LABEL:
            # The core's mark of a record an erasure holds (votes and the sweeper pass it by).
            raise InvalidRequest(f"labels: {HELD_LABEL!r} is reserved for records an erasure holds")
        # Policy conditions compare label values exactly, so they are canonicalised like the
        # values a policy names (NFKC, nothing invisible, no look-alike script mixing).
        out[key] = canonical_value(val, what=f"labels[{key!r}]")
    return out


def _kinds(value: object) -> tuple[Kind, ...] | None:
    if value is None:
        return None
    items = sequence_argument(value, "kinds", of="kinds")
    if not items:
        raise InvalidRequest("kinds must be a non-empty list of kinds (or None for every kind)")
    return tuple(dict.fromkeys(_kind(k, f"kinds[{i}]") for i, k in enumerate(items)))


def _kind(value: object, what: str) -> Kind:
    try:
        return ensure_kind(value)
    except InvalidRequest as exc:
        raise InvalidRequest(f"{what}: {exc}") from None


def operations(ops: object) -> list:
    """The operations of a batch as a list; InvalidRequest for anything that is not an
    iterable of them (a string, a mapping, a single operation)."""
    if getattr(ops, "action", None) is not None and not isinstance(ops, type):
        raise InvalidRequest(f"ops must be an iterable of operations, got one {type(ops).__name__}: "
                             "put it in a list")
    items = iterable_argument(ops, "ops", of="operations")
    for i, op in enumerate(items):
        if isinstance(op, type) or getattr(op, "action", None) not in OP_KINDS:
            raise InvalidRequest(f"ops[{i}] is not a memwarden operation: {shown(op)}")
    return items


@dataclass(frozen=True, slots=True)
class WriteOp:
    """Store a new memory (a retry with the same writer, namespace and content is a no-op)."""

    action: ClassVar[str] = "write"

    content: str
    namespace: NamespaceLike
    kind: str | Kind = Kind.FACT
    subjects: Sequence[str] = ()
    #: None: the session's binding decides (see :class:`~memwarden.core.records.Binding`).
    source: str | Source | None = None
    parents: Sequence[str] = ()
    valid_from: datetime | None = None
    valid_to: datetime | None = None
    ttl: float | None = None
    #: None: the binding's trust.
    trust: float | None = None
    labels: Mapping[str, str] = field(default_factory=dict)
    key: str | None = None
    allow_reingest: bool = False
    #: What is embedded in place of the content (the LangGraph store's texts at its index
    #: paths): one text, or several, each embedded apart (the first is the row's vector, the
    #: others its facets; a search scores the record by the best), each made of the content's
    #: own values, at most MAX_INDEX_TEXTS (see :mod:`memwarden.core.indextext`); None: the
    #: content. What is stored, validated and searched lexically is the content either way.
    index_text: str | Sequence[str] | None = None

    def canonical(self) -> WriteOp:
        """This op with every field checked and normalised."""
        source = _source(self.source) if self.source is not None else None
        if self.trust is not None and (isinstance(self.trust, bool) or not isinstance(self.trust, (int, float))
                                       or not 0.0 <= self.trust <= 1.0):
            raise InvalidRequest(f"trust must be between 0 and 1, got {shown(self.trust)}")
        valid_from, valid_to = _when(self.valid_from, "valid_from"), _when(self.valid_to, "valid_to")
        if valid_from and valid_to and valid_to <= valid_from:
            raise InvalidRequest("valid_to must be after valid_from")
        return replace(
            self,
            content=text_argument(self.content, "content", MAX_CONTENT_CHARS),
            namespace=canonical_namespace(self.namespace),
            kind=ensure_kind(self.kind),
            subjects=_names(self.subjects, "subjects"),
            source=source,
            parents=_record_ids(self.parents, "parents"),
            valid_from=valid_from,
            valid_to=valid_to,
            ttl=_positive_seconds(self.ttl, "ttl"),
            trust=float(self.trust) if self.trust is not None else None,
            labels=_labels(self.labels),
            key=text_argument(self.key, "key", MAX_KEY_CHARS) if self.key is not None else None,
            allow_reingest=flag_argument(self.allow_reingest, "allow_reingest"),
            index_text=(index_texts_of(self.content, self.index_text, MAX_CONTENT_CHARS)
                        if self.index_text is not None else None),
        )


@dataclass(frozen=True, slots=True)
class SearchOp:
    """Search at or below a namespace prefix; returns only what the caller may see.

    With a ``query`` the results are the most relevant memories; without one they are listed
    in storage order (LangGraph's filter-only search). ``offset`` skips that many results.

    ``mode``: "hybrid" (default; BM25 and vector legs fused by reciprocal rank), "dense" or
    "lexical". Time conditions (see :func:`memwarden.memory.retrieval.time_filter`): ``as_of``,
    ``time_range=(start, end)``, ``created_after``, ``created_before``. ``include_superseded``
    also returns earlier versions, ranked below current ones, where the caller holds the
    ``history`` permission. ``budget_tokens`` composes the results per kind within that many
    tokens (typed evidence; see :func:`memwarden.memory.retrieval.compose`).
    ``consensus``: also compare every result with the related memories the caller may see
    (same subject) and mark it ``contested`` when most of them contradict it (costs a
    comparison per result; off by default).
    ``filter`` (only without a query): LangGraph's filter on store items' values
    (:mod:`memwarden.core.valuefilter`); with it, even empty, only store items (keyed
    records) are listed, those whose value passes it, tested on the stored rows inside the
    governed path (the derived index's copies once it is loaded), so ``k`` and ``offset``
    count matching items.
    """

    action: ClassVar[str] = "search"

    query: str | None
    namespace: NamespaceLike = ()
    k: int = 5
    kinds: Sequence[str | Kind] | None = None
    offset: int = 0
    mode: str = "hybrid"
    as_of: datetime | None = None
    time_range: tuple[datetime, datetime] | None = None
    created_after: datetime | None = None
    created_before: datetime | None = None
    include_superseded: bool = False
    budget_tokens: int | None = None
    consensus: bool = False
    filter: Mapping[str, Any] | None = None

    def canonical(self) -> SearchOp:
        """This op with every field checked and normalised."""
        integer_argument(self.k, "k", minimum=1, maximum=MAX_K)
        integer_argument(self.offset, "offset", minimum=0, maximum=MAX_OFFSET)
        kinds = _kinds(self.kinds)
        if not isinstance(self.mode, str) or self.mode not in SEARCH_MODES:
            raise InvalidRequest(f"unknown search mode {shown(self.mode)}; expected one of {', '.join(SEARCH_MODES)}")
        flag_argument(self.include_superseded, "include_superseded")
        if self.budget_tokens is not None:
            integer_argument(self.budget_tokens, "budget_tokens", minimum=1, maximum=MAX_BUDGET_TOKENS)
            if self.offset:
                raise InvalidRequest("budget_tokens composes one answer and cannot be combined with offset")
        after, before = _when(self.created_after, "created_after"), _when(self.created_before, "created_before")
        if after and before and before <= after:
            raise InvalidRequest("created_before must be after created_after")
        query = text_argument(self.query, "query", MAX_QUERY_CHARS) if self.query is not None else None
        flag_argument(self.consensus, "consensus")
        if self.filter is not None:
            if query is not None:
                raise InvalidRequest("filter lists store items without a query; a search with a query "
                                     "ranks records and cannot take one")
            check_filter(self.filter)
        return replace(self, query=query, namespace=canonical_namespace(self.namespace, allow_empty=True), kinds=kinds,
                       as_of=_when(self.as_of, "as_of"), time_range=_range(self.time_range),
                       created_after=after, created_before=before)


@dataclass(frozen=True, slots=True)
class ListNamespacesOp:
    """The distinct namespaces at or below ``prefix`` that hold records the caller may see."""

    action: ClassVar[str] = "list"

    prefix: NamespaceLike = ()
    max_depth: int | None = None
    limit: int = 100
    offset: int = 0

    def canonical(self) -> ListNamespacesOp:
        """This op with every field checked and normalised."""
        integer_argument(self.limit, "limit", minimum=1)
        integer_argument(self.offset, "offset", minimum=0)
        if self.max_depth is not None:
            integer_argument(self.max_depth, "max_depth", minimum=1)
        return replace(self, prefix=canonical_namespace(self.prefix, allow_empty=True, what="prefix"))

    @property
    def namespace(self) -> NamespaceLike:
        """The prefix, under the name spans and audit use."""
        return self.prefix


@dataclass(frozen=True, slots=True)
class GetOp:
    """Fetch one record by id; None when it does not exist or the caller may not see it.
    ``refresh_ttl``: restart the record's time to live, where the caller may update it."""

    action: ClassVar[str] = "get"

    id: str
    refresh_ttl: bool = False

    def canonical(self) -> GetOp:
        """This op with its id checked."""
        flag_argument(self.refresh_ttl, "refresh_ttl")
        return replace(self, id=_record_id(self.id))


@dataclass(frozen=True, slots=True)
class UpdateOp:
    """Write a new version that supersedes the record ``id``."""

    action: ClassVar[str] = "update"

    id: str
    content: str
    kind: str | Kind | None = None
    subjects: Sequence[str] | None = None
    labels: Mapping[str, str] | None = None

    def canonical(self) -> UpdateOp:
        """This op with every field checked and normalised."""
        return replace(
            self,
            id=_record_id(self.id),
            content=text_argument(self.content, "content", MAX_CONTENT_CHARS),
            kind=ensure_kind(self.kind) if self.kind is not None else None,
            subjects=_names(self.subjects, "subjects") if self.subjects is not None else None,
            labels=_labels(self.labels) if self.labels is not None else None,
        )


@dataclass(frozen=True, slots=True)
class ForgetOp:
    """Logically forget one record: it is never returned again."""

    action: ClassVar[str] = "forget"

    id: str

    def canonical(self) -> ForgetOp:
        """This op with its id checked."""
        return replace(self, id=_record_id(self.id))


@dataclass(frozen=True, slots=True)
class EraseOp:
    """Erase every record about ``subject`` (and/or the given ids) and everything derived from them."""

    action: ClassVar[str] = "erase"

    subject: str | None = None
    ids: Sequence[str] = ()

    def canonical(self) -> EraseOp:
        """This op with its subject and ids checked."""
        ids = _record_ids(self.ids, "ids", limit=None)
        if self.subject is None and not ids:
            raise InvalidRequest("erase needs a subject or record ids")
        subject = canonical_label(self.subject, what="subject") if self.subject is not None else None
        return replace(self, subject=subject, ids=ids)


@dataclass(frozen=True, slots=True)
class ReviewOp:
    """A vote on a quarantined record: ``approve=True`` to release it, False to reject it.

    The record becomes active after ``quorum`` distinct approvers (never its writer) and is
    rejected after ``quorum`` distinct rejections or when its review window closes.
    """

    action: ClassVar[str] = "review"

    id: str
    approve: bool = True

    def canonical(self) -> ReviewOp:
        """This op with its id checked."""
        flag_argument(self.approve, "approve")
        return replace(self, id=_record_id(self.id))


@dataclass(frozen=True, slots=True)
class RetractOp:
    """Retract a record as poisoned: it is forgotten, a lesson is kept, and every record
    derived from it through provenance is quarantined (taint tracing)."""

    action: ClassVar[str] = "retract"

    id: str

    def canonical(self) -> RetractOp:
        """This op with its id checked."""
        return replace(self, id=_record_id(self.id))


@dataclass(frozen=True, slots=True)
class HistoryOp:
    """Every version of a memory, oldest first (superseded ones included)."""

    action: ClassVar[str] = "history"

    id: str

    def canonical(self) -> HistoryOp:
        """This op with its id checked."""
        return replace(self, id=_record_id(self.id))


@dataclass(frozen=True, slots=True)
class SweepOp:
    """Physically remove what is already invisible (forgotten, expired, faded, rejected or
    timed-out quarantined records) in the namespaces the caller administers."""

    action: ClassVar[str] = "sweep"

    namespace: NamespaceLike = ()

    def canonical(self) -> SweepOp:
        """This op with its namespace prefix checked."""
        return replace(self, namespace=canonical_namespace(self.namespace, allow_empty=True))


Op = Union[WriteOp, SearchOp, ListNamespacesOp, GetOp, UpdateOp, ForgetOp, EraseOp, ReviewOp, RetractOp,
           HistoryOp, SweepOp]


class OpRunner(Protocol):
    """What runs operations as a principal: ``Memory`` is one. ``Session`` and the LangGraph
    store need nothing else of a Memory, so they depend on this, not on the layer that builds it."""

    def batch(self, principal: Principal, ops: Iterable[Op], *, binding: Binding | None = None) -> list[Any]:
        """Run ``ops`` in order as ``principal``, writes coming from ``binding``; results in order."""


@dataclass(frozen=True, slots=True)
class EvictOp:
    """The core's capacity eviction after a write into ``namespace`` (a ``cap`` line): keep
    the namespace within ``capacity`` active records, never evicting ``keep``. Only the core
    runs it; ``rule`` is the policy line that asks for it."""

    action: ClassVar[str] = "evict"

    namespace: Namespace
    keep: str
    capacity: int
    rule: str

    def canonical(self) -> EvictOp:
        """Built by the pipeline from checked values."""
        return self


@dataclass(frozen=True, slots=True)
class MaintainOp:
    """The core's account of what the storage did to itself when the memory opened (finished
    an interrupted purge, repaired the lexical index, migrated the format or the layout):
    ``events`` says what, one sentence each."""

    action: ClassVar[str] = "maintain"

    events: tuple[str, ...]

    def canonical(self) -> MaintainOp:
        """Built by the memory from its parts' reports."""
        return self


@dataclass(frozen=True, slots=True)
class RecoverOp:
    """The core finishing an erasure an interrupt left half done (journal number ``intent``)."""

    action: ClassVar[str] = "recover"

    intent: int

    def canonical(self) -> RecoverOp:
        """Built by the pipeline from its journal."""
        return self

def op_namespace(op: Op) -> Namespace | None:
    """The namespace an op names directly, if any (for spans and audit)."""
    ns = getattr(op, "namespace", None)
    return ns if isinstance(ns, tuple) else None
