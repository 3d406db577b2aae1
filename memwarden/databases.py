"""Database URLs for shared state: policies and the audit log in SQLite or PostgreSQL.

A policy or audit argument that is a URL (``sqlite:///path`` or ``postgresql://user@host/db``)
names a database; anything else is a path. PostgreSQL is reached through psycopg 3, the driver
memwarden depends on for it, whichever spelling of the scheme the caller used.
"""

from __future__ import annotations

from pathlib import Path

from memwarden.core.errors import InvalidRequest

_SCHEMES = {"sqlite": "sqlite", "postgresql": "postgresql", "postgres": "postgresql",
            "postgresql+psycopg": "postgresql"}


def is_database_url(value: object) -> bool:
    """True when ``value`` is a string naming a SQLite or PostgreSQL database by URL."""
    return isinstance(value, str) and "://" in value and value.split("://", 1)[0].lower() in _SCHEMES


def kind(url: str) -> str:
    """``sqlite`` or ``postgresql``; raises InvalidRequest for any other URL."""
    if not is_database_url(url):
        raise InvalidRequest(f"not a sqlite:// or postgresql:// database URL: {redacted(url)!r}")
    return _SCHEMES[url.split("://", 1)[0].lower()]


def redacted(url: str) -> str:
    """The URL with any password replaced by ``***``, for messages and logs."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        return url
    credentials, at, location = rest.rpartition("@")
    if at and ":" in credentials:
        credentials = credentials.split(":", 1)[0] + ":***"
    return f"{scheme}{sep}{credentials}{at}{location}"


def sqlalchemy_url(url: str) -> str:
    """The URL for SQLAlchemy: PostgreSQL always through psycopg 3 (not psycopg2)."""
    if kind(url) == "postgresql":
        return "postgresql+psycopg://" + url.split("://", 1)[1]
    return url


def libpq_url(url: str) -> str:
    """A PostgreSQL URL as libpq (and so psycopg.connect) reads it."""
    if kind(url) != "postgresql":
        raise InvalidRequest(f"not a PostgreSQL URL: {redacted(url)!r}")
    return "postgresql://" + url.split("://", 1)[1]


def sqlite_path(url: str) -> Path:
    """The file a ``sqlite:///relative`` or ``sqlite:////absolute`` URL names."""
    if kind(url) != "sqlite":
        raise InvalidRequest(f"not a SQLite URL: {redacted(url)!r}")
    path = url.split("://", 1)[1]
    if not path.startswith("/") or path in ("/", "/:memory:"):
        raise InvalidRequest(f"a SQLite URL names a file, e.g. sqlite:///policy.db or sqlite:////abs/policy.db: {url!r}")
    return Path(path[1:])
