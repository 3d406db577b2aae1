"""``Memory``: a governed, shared memory, and the sessions that act on it.

A Memory is a thin facade: it opens the parts (store, policy, audit log, tombstones, the
erasure journal) and hands every operation to its :class:`~memwarden.memory.pipeline.Pipeline`,
the one governed path. Nothing else holds the store, so there is no second way to reach it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memwarden.core import adapters
from memwarden.core.errors import InvalidRequest
from memwarden.core.ops import MaintainOp, Op, operations
from memwarden.core.records import Binding, Principal, Source
from memwarden.guards.validators import WriteValidator
from memwarden.memory import compaction
from memwarden.memory.audit import AuditLog, open_audit
from memwarden.memory.backends import Backend
from memwarden.memory.datadir import DataDir
from memwarden.databases import is_database_url, kind
from memwarden.memory.changelog import ChangeLog
from memwarden.memory.derived import with_search_index
from memwarden.memory.embeddings import Embedder, as_embedder
from memwarden.memory.journal import JOURNAL_FILE, ErasureJournal
from memwarden.memory.keyfile import lessons_key
from memwarden.memory.lexical import INDEX_FILE, IndexedBackend
from memwarden.memory.partitioned import PartitionedBackend
from memwarden.memory.pipeline import Pipeline
from memwarden.memory.session import Session
from memwarden.memory.settings import DEFAULT_SEARCH_INDEX, Settings
from memwarden.memory.tombstones import Tombstones
from memwarden.policies.engine import PolicyEngine
from memwarden.policies.sources import check_policy_argument, open_policy

__all__ = ["CORE", "Memory", "Settings"]

# The core's own principal. It writes lesson records and runs maintenance, and no session can
# act as it: only this object (not another Principal with the same id) is the core.
CORE = Principal("memwarden")

if TYPE_CHECKING:
    from langgraph.store.base import BaseStore


def _not_core(principal: object) -> None:
    if principal is CORE:
        raise InvalidRequest("the core principal acts only inside memwarden")


def _chain(validators: Iterable[WriteValidator] | None) -> Iterable[WriteValidator]:
    """The validators a Memory opens with: the default chain unless the caller chose one."""
    if validators is None:
        from memwarden.guards.defaults import default_validators

        return default_validators()
    return validators


class Memory:
    """A governed, shared memory: policy, guards, audit and tracing around a Chroma store."""

    def __init__(self, backend: Backend, policy: PolicyEngine, audit: AuditLog, tombstones: Tombstones, *,
                 journal: ErasureJournal, embedding: object | None = None,
                 validators: Iterable[WriteValidator] = (), settings: Settings = Settings(),
                 lesson_key: bytes | None = None, read_only: bool = False) -> None:
        self._policy = policy
        self._audit = audit
        self._embedder = as_embedder(embedding)
        self._pipeline = Pipeline(backend, policy, audit, tombstones, journal, embedder=self._embedder,
                                  validators=validators, settings=settings, core=CORE, lesson_key=lesson_key,
                                  read_only=read_only)
        self._closed = False
        # What open/connect opened beside the parts above (a database policy's connections).
        self._on_close: list[Callable[[], None]] = []

    # -- construction -------------------------------------------------------------------

    @classmethod
    def open(cls, path: str | Path, policy: str | Path | PolicyEngine | None = None, *,
             audit: str | Path | None = None, embedding: object | None = None,
             validators: Iterable[WriteValidator] | None = None, read_only: bool = False, create: bool = True,
             **settings: Any) -> Memory:
        """Open (or create) an embedded memory in directory ``path``.

        ``policy`` is a CSV policy file, the name of a bundled policy ("hospital", "office",
        "household"), a database URL (``sqlite:///policy.db``, ``postgresql://...``: see
        docs/deployment.md), a ready PolicyEngine, or "deny-all" (no rules: everything is
        denied); it is required (docs/policies.md).
        The directory is locked while open (docs/deployment.md): a second read-write open
        raises StoreLocked naming the holder's pid. ``read_only=True`` shares it with other
        read-only opens and refuses every change (ReadOnlyError). ``create=False`` refuses a
        directory that holds no store instead of creating one.
        ``audit`` is None (``audit.sqlite3`` in ``path``), another SQLite file, or a
        ``postgresql://`` URL. ``embedding`` is any LangChain ``Embeddings`` or an embedding function of a list of texts; None uses the
        bundled offline MiniLM. ``validators``: the write-validator chain; None (the default)
        is :func:`~memwarden.guards.defaults.default_validators` (injection, provenance,
        lessons, contradiction), ``[]`` turns write validation off.
        Further keyword arguments are :class:`Settings`.
        """
        check_policy_argument(policy)  # a forgotten policy must not leave a new empty store behind
        # Locked, format checked and migrated before anything else touches the directory.
        data = DataDir.open(path, read_only=read_only, create=create)
        root = data.root

        def backend(options: Settings) -> Backend:
            if compaction.pending(root / "chroma"):
                data.writable("an erasure a crash interrupted must be finished")
                compaction.recover(root / "chroma")  # finish an erasure a crash interrupted
                data.maintenance.append("finished the physical purge of Chroma's files an interrupt left")
            # The lexical index is repaired against Chroma before first use (see memory/lexical.py).
            chroma = PartitionedBackend.embedded(str(root / "chroma"), **options.backend_options())
            # Dense searches scan a derived RAM index loaded in the background (memory/derived.py).
            return data.guard(IndexedBackend.open(with_search_index(chroma, options.search_index),
                                                  root / INDEX_FILE, repair=not read_only))

        try:
            memory = cls._assemble(root, backend, policy, audit, embedding, validators, settings,
                                   read_only=read_only, create=create, maintenance=data.maintenance)
        except BaseException:
            data.release()
            raise
        memory._on_close.append(data.release)
        return memory

    @classmethod
    def connect(cls, host: str, port: int, policy: str | Path | PolicyEngine | None = None, *,
                state: str | Path = "./memwarden-state", audit: str | Path | None = None, ssl: bool = False,
                headers: dict[str, str] | None = None, embedding: object | None = None,
                validators: Iterable[WriteValidator] | None = None, **settings: Any) -> Memory:
        """The same governed memory against a Chroma server (``chroma run``).

        Transient server errors are retried (tenacity); ids are deterministic, so retries
        never duplicate. ``policy`` and ``audit`` are as for :meth:`open`: database URLs let
        every process share them. Local state (tombstones, the audit key, the lesson key, and
        the audit log unless ``audit`` names one) lives in directory ``state``; every process
        must read the same lesson key (docs/deployment.md). There is no lexical index
        here (a process-local one would miss other processes' writes and keep text they
        erase), so hybrid searches run the dense leg only and say so in their span.
        The derived search index follows the other processes through a change log in the
        audit database: on by default when ``audit`` is PostgreSQL, off otherwise unless
        ``search_index`` is given (docs/deployment.md#the-search-index-across-processes).
        """
        from memwarden.memory.remote import RetryingPartitionedBackend

        root = Path(state)
        root.mkdir(parents=True, exist_ok=True)
        # The derived search index follows other processes through the change log in the audit
        # database, so it is on by default only where that database is shared by design
        # (PostgreSQL); a SQLite audit file is shared only by processes given the same state
        # directory, which the caller asserts by setting search_index itself (docs/deployment.md).
        shared = audit is not None and is_database_url(audit) and kind(str(audit)) == "postgresql"
        settings = {"search_index": DEFAULT_SEARCH_INDEX if shared else "off", **settings}

        def backend(options: Settings) -> Backend:
            store = RetryingPartitionedBackend.connect(host, port, ssl=ssl, headers=headers, **options.backend_options())
            return with_search_index(store, options.search_index,
                                     lambda: ChangeLog(audit if audit is not None else root / "audit.sqlite3"))

        return cls._assemble(root, backend,
                             policy, audit, embedding, validators, {"cache_ttl": 30.0, **settings})

    @classmethod
    def _assemble(cls, state: Path, backend: Callable[[Settings], Backend], policy: str | Path | PolicyEngine | None,
                  audit: str | Path | None, embedding: object | None, validators: Iterable[WriteValidator] | None,
                  settings: dict[str, Any], *, read_only: bool = False, create: bool = True,
                  maintenance: Sequence[str] = ()) -> Memory:
        """Open the parts of a memory whose local state is ``state``; if one fails, the parts
        already opened are released before the error propagates."""
        options = Settings(**settings)
        engine, close_policy = open_policy(policy)
        opened = [close_policy]
        try:
            log = open_audit(audit, state, create=create and not read_only)
            opened.append(log.close)
            tombstones = Tombstones(state / "tombstones.sqlite3")
            opened.append(tombstones.close)
            journal = ErasureJournal(state / JOURNAL_FILE)
            opened.append(journal.close)
            store = backend(options)
            opened.append(store.close)  # a store refused at open (another embedder) is released
            memory = cls(store, engine, log, tombstones, embedding=embedding,
                         validators=_chain(validators), settings=options, journal=journal,
                         lesson_key=lessons_key(state), read_only=read_only)
            # What the storage did to open is audited, as the core's own operation; an erasure
            # an interrupt left half done is finished before anything is served.
            events = [*maintenance, *getattr(memory._pipeline.backend, "maintenance", ())]
            if events and not read_only:
                memory._pipeline.system(MaintainOp(tuple(events)))
            memory._pipeline.recover()
        except BaseException:
            for close in reversed(opened):
                close()
            raise
        memory._on_close.append(close_policy)
        return memory

    # -- public surface -----------------------------------------------------------------

    @property
    def policy(self) -> PolicyEngine:
        """The policy engine in force (reload it to apply policy changes)."""
        return self._policy

    @property
    def embedder(self) -> Embedder:
        """The embedder every vector of this memory comes from (``embedding=`` at open)."""
        return self._embedder

    @property
    def audit_log(self) -> AuditLog:
        """The hash-chained audit log of every operation."""
        return self._audit

    @property
    def _backend(self) -> Backend:
        # For tests that inspect the store's layout or seed it in bulk; nothing in memwarden
        # reaches the store but the pipeline.
        return self._pipeline.backend

    def session(self, principal: Principal, *, source: str | Source = Source.USER, trust: float = 1.0) -> Session:
        """A session that acts as ``principal`` for every operation it makes.

        ``source`` and ``trust`` bind where its writes come from: the application, which
        creates the session, says so, not the code that calls ``write`` (the LangGraph store
        and the memory tools bind ``agent``). A write that declares another source, or more
        trust, needs the policy action ``claim`` (docs/policies.md).
        """
        _not_core(principal)
        binding = _binding(source, trust)
        self._pipeline.subjects_for(principal)
        return Session(self, principal, binding)

    def batch(self, principal: Principal, ops: Iterable[Op], *, binding: Binding | None = None) -> list[Any]:
        """Run operations in order, each through the governed pipeline; results in order.

        The first operation that fails raises; the ones before it have taken effect. The
        batch's writes reach the store as one call when it ends (every operation in it still
        sees the writes before it; see coalesce.py), so batching many writes is much cheaper.
        ``binding``: where the writes come from (default: the application's user).
        """
        if self._closed:
            raise InvalidRequest("this Memory is closed")
        _not_core(principal)
        if binding is not None and not isinstance(binding, Binding):
            raise InvalidRequest(f"binding must be a memwarden Binding, got {type(binding).__name__}")
        return self._pipeline.batch(principal, operations(ops), binding or Binding())

    def as_store(self, **options: Any) -> BaseStore:
        """This memory as a LangGraph ``BaseStore`` for ``graph.compile(store=...)``.

        ``options`` are the keyword arguments of
        :class:`~memwarden.integrations.store.GovernedStore` (``index``, ``ttl``, ``search``,
        ``strict``; docs/langgraph.md)."""
        # The adapter belongs to integrations/, above this layer; the package root installs it.
        if adapters.store_adapter is None:
            raise RuntimeError("no LangGraph store adapter is installed; import memwarden, which installs it")
        return adapters.store_adapter(self, **options)

    def close(self) -> None:
        """Release the store and the audit log; the Memory cannot be used afterwards."""
        if not self._closed:
            self._closed = True
            self._pipeline.close()
            for close in self._on_close:
                close()

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _binding(source: object, trust: object) -> Binding:
    try:
        chosen = Source(source)
    except ValueError:
        raise InvalidRequest(f"unknown source {source!r}; expected one of "
                             + ", ".join(s.value for s in Source)) from None
    if isinstance(trust, bool) or not isinstance(trust, (int, float)) or not 0.0 <= trust <= 1.0:
        raise InvalidRequest(f"trust must be between 0 and 1, got {trust!r}")
    return Binding(source=chosen, trust=float(trust))
