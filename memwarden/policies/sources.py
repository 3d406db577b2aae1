"""Policy kept in a SQL database (SQLite, or PostgreSQL when processes share it), hot-reloaded.

The rows live in pycasbin's ``sqlalchemy-adapter`` table (``casbin_rule``: ``ptype, v0..v5``),
one policy line per row: ``p, physician, ward3/patients/**, read`` is the row
``("p", "physician", "ward3/patients/**", "read")``. Any pycasbin application using the same
adapter and table edits the same policy. Rows are never trusted as they are: each row's fields
go through the checks of the tokenizer that every policy file's records go through
(:func:`memwarden.policies.tokenizer.record_fields`: no line break in any field) and then the
same validation a policy file gets (``p``, ``g``, ``ttl``, ``decay`` and ``cap`` lines alike), and
the engine is built from the result exactly as from a file.

Hot reload. Every change to the table, by memwarden or by anyone else (the adapter, ``psql``),
bumps a counter row in ``memwarden_policy_version`` through a trigger in the same transaction.
Triggers do not always run, though: a logical replica applies changes with
``session_replication_role = replica``, and ``pg_restore --disable-triggers`` restores rows
without them. So the state a poll reads is the counter *and* a checksum of every row (computed
by PostgreSQL in the same statement: one round trip and a 32-character answer, whatever the
size of the policy; SQLite, a local file, hashes the rows in the process). :class:`SQLPolicyEngine`
reads that state before a decision when its last read started ``poll`` seconds ago or more, and
re-reads the rows when either part moved. So a change is in force in every process for every
decision that starts ``poll`` seconds (default 1) or more after the change committed, whether or
not its triggers ran; the check is inline, so an idle process costs the database nothing.

Failing closed. When the rows cannot be read (the database is unreachable) or do not validate
(a malformed row, a row with a line break in a field, an empty row), the engine denies every
request until a later poll reads a valid policy again. It does not keep the previous policy: that
may be exactly what the administrator just revoked. The problem is logged at ERROR on the
``memwarden.policy`` logger once per distinct problem, and kept in :attr:`SQLPolicyEngine.error`;
``reload()`` raises it. A policy that is malformed when the engine starts raises PolicyError, as
a malformed file does. ``memwarden policy import`` validates a whole file before it writes
anything, so malformed rows only come from editing the table by other means.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

from memwarden.databases import is_database_url, kind, redacted, sqlalchemy_url, sqlite_path
from memwarden.core.errors import InvalidRequest, PolicyError
from memwarden.policies.engine import PolicyEngine
from memwarden.policies.loading import PolicyData, parse_policy_text, parse_records, read_policy_file
from memwarden.policies.tokenizer import csv_line, policy_lines, record_fields

__all__ = ["DEFAULT_POLL", "DEFAULT_TABLE", "PolicyState", "SQLPolicyEngine", "SQLPolicyStore", "export_policy",
           "import_policy", "open_policy"]

DEFAULT_TABLE = "casbin_rule"
#: Seconds between two polls of the policy state: the propagation bound of a policy change.
DEFAULT_POLL = 1.0
VERSION_TABLE = "memwarden_policy_version"
_FIELDS = 6  # v0..v5 in the adapter's table
_FIELD_WIDTH = 255
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,62}")
_PG_SETUP_LOCK = 0x6D656D77_706F6C00  # "memwpol\0": serialises first-time table creation
_EMPTY = PolicyData((), ())

log = logging.getLogger("memwarden.policy")


class PolicyState(NamedTuple):
    """What a poll compares: the trigger-moved counter and a checksum of the rows."""

    version: int
    checksum: str


class SQLPolicyStore:
    """The policy table of one database: read it as validated PolicyData, replace it, export it.

    Creates the adapter's table, the version counter and its triggers when they are missing,
    unless ``create`` is false: a reader must find a policy there, so a mistyped URL is refused
    instead of becoming a new, empty (deny-all) policy database, and a URL naming some other
    database (the audit log's) is never given policy tables.
    """

    def __init__(self, url: str, *, table: str = DEFAULT_TABLE, create: bool = True) -> None:
        import sqlalchemy as sa
        from sqlalchemy_adapter.adapter import create_casbin_rule_class

        if not _IDENTIFIER.fullmatch(table):
            raise PolicyError(f"policy table name {table!r} must be a plain SQL identifier")
        self.url = url
        self.table = table
        self.where = f"{redacted(url)}#{table}"
        self._kind = kind(url)
        if not create and self._kind == "sqlite" and not sqlite_path(url).is_file():
            raise PolicyError(f"no policy database at {redacted(url)}: a mistyped URL? Create one with "
                              f"`memwarden policy import POLICY_FILE --db {redacted(url)}`")
        options: dict[str, Any] = {"pool_pre_ping": True}
        if self._kind == "postgresql":
            options["connect_args"] = {"connect_timeout": 10}
        self._engine = sa.create_engine(sqlalchemy_url(url), **options)
        self._rules = create_casbin_rule_class(table).__table__
        self._versions = sa.Table(VERSION_TABLE, sa.MetaData(), sa.Column("name", sa.String(255), primary_key=True),
                                  sa.Column("version", sa.BigInteger, nullable=False))
        try:
            self._setup() if create else self._require_tables()
        except PolicyError:
            self._engine.dispose()
            raise
        except sa.exc.SQLAlchemyError as exc:
            self._engine.dispose()
            raise PolicyError(f"cannot set up the policy table at {self.where}: {exc}") from exc

    def _require_tables(self) -> None:
        import sqlalchemy as sa

        present = set(sa.inspect(self._engine).get_table_names())
        missing = [name for name in (self.table, VERSION_TABLE) if name not in present]
        if missing:
            raise PolicyError(f"{redacted(self.url)} holds no memwarden policy (no table {missing[0]!r}): import one "
                              f"with `memwarden policy import POLICY_FILE --db {redacted(self.url)}`")

    def _setup(self) -> None:
        import sqlalchemy as sa

        with self._engine.begin() as conn:
            if self._kind == "postgresql":
                # Two processes creating the same tables at once collide in the catalog.
                conn.execute(sa.text("SELECT pg_advisory_xact_lock(:k)"), {"k": _PG_SETUP_LOCK})
            self._rules.create(conn, checkfirst=True)
            self._versions.create(conn, checkfirst=True)
            conn.execute(sa.text(f"INSERT INTO {VERSION_TABLE}(name, version) VALUES (:t, 0) "
                                 "ON CONFLICT (name) DO NOTHING"), {"t": self.table})
            bump = f"UPDATE {VERSION_TABLE} SET version = version + 1 WHERE name = '{self.table}'"
            if self._kind == "sqlite":
                for event in ("INSERT", "UPDATE", "DELETE"):
                    conn.exec_driver_sql(f"CREATE TRIGGER IF NOT EXISTS memwarden_{self.table}_{event.lower()} "
                                         f"AFTER {event} ON {self.table} BEGIN {bump}; END")
                return
            present = conn.execute(sa.text("SELECT 1 FROM pg_trigger WHERE tgname = 'memwarden_policy_bump' "
                                           "AND tgrelid = CAST(:t AS regclass)"), {"t": self.table}).first()
            if present is None:
                conn.exec_driver_sql(
                    f"CREATE OR REPLACE FUNCTION memwarden_policy_bump() RETURNS trigger LANGUAGE plpgsql AS $$ "
                    f"BEGIN UPDATE {VERSION_TABLE} SET version = version + 1 WHERE name = TG_TABLE_NAME; "
                    "RETURN NULL; END $$")
                conn.exec_driver_sql(f"CREATE TRIGGER memwarden_policy_bump AFTER INSERT OR UPDATE OR DELETE "
                                     f"OR TRUNCATE ON {self.table} FOR EACH STATEMENT "
                                     "EXECUTE FUNCTION memwarden_policy_bump()")

    # -- reading ---------------------------------------------------------------------------

    def _version(self, conn: Any) -> int:
        import sqlalchemy as sa

        value = conn.execute(sa.select(self._versions.c.version).where(self._versions.c.name == self.table)).scalar()
        if value is None:
            raise PolicyError(f"the version row of {self.where} is missing (deleted?); cannot tell whether "
                              "the policy changed")
        return int(value)

    def version(self) -> int:
        """The change counter: the trigger moves it whenever any row of the table changes."""
        with self._engine.connect() as conn:
            return self._version(conn)

    def _state(self, conn: Any) -> PolicyState:
        import sqlalchemy as sa

        if self._kind == "postgresql":
            rows = ", ".join(["id", "ptype"] + [f"v{i}" for i in range(_FIELDS)])
            version, checksum = conn.execute(sa.text(
                f"SELECT (SELECT version FROM {VERSION_TABLE} WHERE name = :t), "
                f"(SELECT md5(coalesce(string_agg(json_build_array({rows})::text, ',' ORDER BY id), '')) "
                f"FROM {self.table})"), {"t": self.table}).one()
            if version is None:
                raise PolicyError(f"the version row of {self.where} is missing (deleted?); cannot tell whether "
                                  "the policy changed")
            return PolicyState(int(version), checksum)
        digest = hashlib.sha256(json.dumps(self._rows(conn)).encode("utf-8")).hexdigest()
        return PolicyState(self._version(conn), digest)

    def state(self) -> PolicyState:
        """The change counter and a checksum of every row: it moves whenever any row changes,
        whether or not the change ran the table's triggers."""
        with self._engine.connect() as conn:
            return self._state(conn)

    def _rows(self, conn: Any) -> list[tuple[int, list[str | None]]]:
        import sqlalchemy as sa

        columns = [self._rules.c.ptype] + [self._rules.c[f"v{i}"] for i in range(_FIELDS)]
        found = conn.execute(sa.select(self._rules.c.id, *columns).order_by(self._rules.c.id)).all()
        return [(row[0], list(row[1:])) for row in found]

    def _fields(self, rid: int, values: list[str | None]) -> list[str]:
        """One row as the fields of a policy line: the checks of the tokenizer every policy
        file goes through, and no comments or blank lines (a row is always a line)."""
        values = list(values)
        while values and values[-1] is None:
            values.pop()
        where = f"{self.where} row id {rid}"
        fields = record_fields(["" if v is None else v for v in values], where)
        if fields is None:
            raise PolicyError(f"{where}: empty, or its type starts with '#' (a file would ignore it as a comment)")
        return fields

    def lines(self) -> list[str]:
        """Every row as a policy line, in row id order (``memwarden policy export``)."""
        with self._engine.connect() as conn:
            return [csv_line(self._fields(rid, values)) for rid, values in self._rows(conn)]

    def read(self) -> tuple[PolicyState, PolicyData]:
        """(state, validated policy). Raises PolicyError naming the row of the first problem."""
        with self._engine.connect() as conn:
            # The state first: rows newer than it only cause one needless re-read later;
            # rows older than it would hide a change until the next one.
            state = self._state(conn)
            rows = self._rows(conn)
        return state, parse_records((f"{self.where} row id {rid}", self._fields(rid, values)) for rid, values in rows)

    # -- writing ---------------------------------------------------------------------------

    def replace(self, text: str, *, source: str = "<policy>") -> int:
        """Validate policy text as a file is validated, then make it the whole table in one
        transaction (readers see the old policy or the new, never a mix). Returns the version."""
        import sqlalchemy as sa

        parse_policy_text(text, source=source)  # nothing is written unless every line is valid
        rows = []
        for lineno, fields in policy_lines(text, source=source):
            if len(fields) > _FIELDS + 1:
                raise PolicyError(f"{source}:{lineno}: more than {_FIELDS} fields after the line type do not fit "
                                  f"the {self.table} table (v0..v{_FIELDS - 1})")
            if any(len(f) > _FIELD_WIDTH for f in fields):
                raise PolicyError(f"{source}:{lineno}: a field is longer than {_FIELD_WIDTH} characters")
            rows.append({"ptype": fields[0], **{f"v{i}": v for i, v in enumerate(fields[1:])}})
        try:
            with self._engine.begin() as conn:
                conn.execute(sa.delete(self._rules))
                if rows:
                    conn.execute(sa.insert(self._rules), [{f"v{i}": None for i in range(_FIELDS)} | r for r in rows])
                return self._version(conn)
        except sa.exc.SQLAlchemyError as exc:
            raise PolicyError(f"cannot write the policy to {self.where}: {exc}") from exc

    def close(self) -> None:
        """Release the database connections."""
        self._engine.dispose()


class SQLPolicyEngine(PolicyEngine):
    """A PolicyEngine over a :class:`SQLPolicyStore`, kept current by polling (see the module
    docstring for the propagation bound and how it fails closed).

    Every public question (``knows``, ``subjects``, ``decide``, ``scope``, ``lifecycle``) first
    makes sure the policy was confirmed current less than ``poll`` seconds ago.
    """

    def __init__(self, store: SQLPolicyStore | str, *, table: str = DEFAULT_TABLE, poll: float = DEFAULT_POLL) -> None:
        if not isinstance(poll, (int, float)) or not poll >= 0:
            raise PolicyError(f"poll must be a number of seconds >= 0, got {poll!r}")
        owned = not isinstance(store, SQLPolicyStore)
        self._store = SQLPolicyStore(store, table=table, create=False) if owned else store
        self.poll = float(poll)
        self._poll_lock = threading.Lock()
        self._error: str | None = None
        started = time.monotonic()
        try:
            state, data = self._store.read()
        except Exception as exc:  # PolicyError, or the database driver's own errors
            if owned:
                self._store.close()
            if isinstance(exc, PolicyError):
                raise
            raise PolicyError(f"cannot read the policy at {self._store.where}: {exc}") from exc
        # The last state read (valid or not), and the last valid policy with its state.
        self._seen: PolicyState | None = state
        self._good_state, self._good = state, data
        self._checked = started
        super().__init__(None, data=data)

    @property
    def store(self) -> SQLPolicyStore:
        """Where the policy lives."""
        return self._store

    @property
    def error(self) -> str | None:
        """Why every request is denied right now, or None when the policy in force is current."""
        return self._error

    def refresh(self, *, force: bool = False) -> bool:
        """Poll the policy state (counter and checksum) if the last poll started ``poll``
        seconds ago or more (or ``force``); install the new policy if it moved. True when this
        poll changed what is in force: a new policy, a failure (deny everything) or the recovery
        from one."""
        if not force and time.monotonic() - self._checked < self.poll:
            return False
        with self._poll_lock:
            started = time.monotonic()
            if not force and started - self._checked < self.poll:
                return False  # another thread polled while this one waited
            state: PolicyState | None = None
            try:
                state = self._store.state()
                if state == self._seen:
                    # Unchanged. After an outage that is the policy last in force: use it again.
                    if self._error is not None and state == self._good_state:
                        self._restore(self._good, "the policy database answers again")
                        return True
                    return False
                state, data = self._store.read()
            except PolicyError as exc:
                # Malformed rows: remember the state, so the same rows are not re-read every
                # poll; any later change to the table is read again.
                self._seen = state
                self._fail(str(exc))
                return True
            except Exception as exc:  # noqa: BLE001 - the database driver's errors: unreachable, timed out, ...
                self._fail(f"cannot read the policy at {self._store.where}: {exc}")
                return True
            finally:
                self._checked = started
            self._seen = self._good_state = state
            self._good = data
            self._restore(data, f"version {state.version} read")
            return True

    def _fail(self, message: str) -> None:
        if message != self._error:
            log.error("policy source failed, denying every request until it is fixed: %s", message)
        if self._error is None:
            super().reload(data=_EMPTY)
        self._error = message

    def _restore(self, data: PolicyData, why: str) -> None:
        super().reload(data=data)
        if self._error is not None:
            log.warning("policy source %s recovered (%s); decisions use it again", self._store.where, why)
        self._error = None

    def reload(self, data: PolicyData | None = None) -> None:
        """Re-read the database now; raise PolicyError if it cannot be read or does not validate.

        ``data`` is refused: the database is the policy (write it with ``memwarden policy
        import`` or :meth:`SQLPolicyStore.replace`).
        """
        if data is not None:
            raise PolicyError("a database-backed policy is changed in its database, not with reload(data=...)")
        self.refresh(force=True)
        if self._error is not None:
            raise PolicyError(self._error)

    def knows(self, principal_id: str, roles: Any) -> bool:
        """As PolicyEngine.knows; while the source is failing every principal is "known", so
        its operations are denied (AccessDenied) rather than refused as unknown."""
        self.refresh()
        return self._error is not None or super().knows(principal_id, roles)

    def subjects(self, *args: Any, **kwargs: Any) -> Any:
        """As PolicyEngine.subjects, on a current policy."""
        self.refresh()
        return super().subjects(*args, **kwargs)

    def decide(self, *args: Any, **kwargs: Any) -> Any:
        """As PolicyEngine.decide, on a current policy (deny while the source is failing)."""
        self.refresh()
        return super().decide(*args, **kwargs)

    def scope(self, *args: Any, **kwargs: Any) -> Any:
        """As PolicyEngine.scope, on a current policy (empty while the source is failing)."""
        self.refresh()
        return super().scope(*args, **kwargs)

    def lifecycle(self, *args: Any, **kwargs: Any) -> Any:
        """As PolicyEngine.lifecycle, on a current policy."""
        self.refresh()
        return super().lifecycle(*args, **kwargs)

    def close(self) -> None:
        """Release the database connections (of the store too, when one was passed in)."""
        self._store.close()


#: The ``policy=`` value that opens a memory with no rules on purpose (everything is denied).
DENY_ALL = "deny-all"


def open_policy(policy: str | Path | PolicyEngine | None) -> tuple[PolicyEngine, Callable[[], None]]:
    """The engine for a ``policy=`` argument, and how to release what was opened for it.

    A PolicyEngine is used as it is (its owner closes it); a ``sqlite://`` or ``postgresql://``
    URL opens a :class:`SQLPolicyEngine`; ``"deny-all"`` is an engine with no rules; anything
    else is a policy file or bundled name. None is refused: a memory opened without a policy
    would deny everything, which is nearly always a forgotten argument rather than the intent.
    """
    check_policy_argument(policy)
    if isinstance(policy, PolicyEngine):
        return policy, _nothing
    if policy == DENY_ALL:
        return PolicyEngine(None), _nothing
    if is_database_url(policy):
        engine = SQLPolicyEngine(str(policy))
        return engine, engine.close
    return PolicyEngine(policy), _nothing


def check_policy_argument(policy: object) -> None:
    """Refuse a ``policy=`` argument of no accepted kind, before anything is opened for it."""
    if policy is None:
        raise InvalidRequest(
            "no policy given: without one every operation is denied. Pass the policy, e.g. "
            "Memory.open('./data', policy='path/to/policy.csv'), a bundled policy (policy='hospital', 'office' or "
            "'household'), a database URL (policy='sqlite:///policy.db'), or policy='deny-all' to open it with no "
            "rules on purpose (docs/policies.md)")
    if not isinstance(policy, (str, os.PathLike, PolicyEngine)):
        raise InvalidRequest(f"policy must be a policy file, a bundled policy name, a database URL, a PolicyEngine "
                             f"or 'deny-all'; got {type(policy).__name__}")


def _nothing() -> None:
    """Nothing to release."""


def import_policy(path: str | Path, url: str, *, table: str = DEFAULT_TABLE) -> tuple[int, int]:
    """Replace the policy in database ``url`` with policy file ``path``; (rows, version)."""
    text = read_policy_file(path)
    store = SQLPolicyStore(url, table=table)
    try:
        version = store.replace(text, source=str(path))
        return sum(1 for _ in policy_lines(text, source=str(path))), version
    finally:
        store.close()


def export_policy(url: str, *, table: str = DEFAULT_TABLE) -> list[str]:
    """The policy in database ``url`` as policy lines, one per row in row id order."""
    store = SQLPolicyStore(url, table=table)
    try:
        return store.lines()
    finally:
        store.close()
