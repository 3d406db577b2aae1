"""Secret key files of a store: 256 random bits, in hex, in a file of mode 0600.

A key file is created once and never overwritten: the first process to create it wins, and
every other process (or a later open) reads that one. Two keys use this pattern: the audit
log's MAC key (``audit.key``, see :mod:`memwarden.memory.audit`) and the key of the lesson
sketches (``lessons.key``, see :mod:`memwarden.guards.lessons`). Each has a file of its own,
so that each can be kept, rotated or handed out on its own.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path

from memwarden.memory.files import atomic_write, read_text_if_present
from memwarden.core.errors import InvalidRequest, MemwardenError

__all__ = ["LESSONS_KEY_FILE", "LESSONS_KEY_ENV", "read_key", "create_key", "lessons_key", "lessons_key_path"]

LESSONS_KEY_FILE = "lessons.key"
LESSONS_KEY_ENV = "MEMWARDEN_LESSONS_KEY_FILE"


def read_key(path: Path, *, what: str, error: type[MemwardenError]) -> bytes | None:
    """The key in ``path``; None when there is no such file; ``error`` when it is unreadable
    or not a 256-bit hex key (``what`` names the key in the message)."""
    text = read_text_if_present(path, what=what, error=error, encoding="ascii")
    if text is None:
        return None
    try:
        key = bytes.fromhex(text.strip())
    except ValueError:
        key = b""
    if len(key) < 32:
        raise error(f"the {what} {path} is not a 256-bit hex key")
    return key


def create_key(path: Path, *, what: str, error: type[MemwardenError]) -> bytes:
    """Write a fresh key to ``path`` atomically (mode 0600) unless one is there; the key the
    file then holds (if another process won the race, its key)."""
    atomic_write(path, secrets.token_hex(32) + "\n", replace=False)
    key = read_key(path, what=what, error=error)
    assert key is not None
    return key


def lessons_key_path(state: Path) -> Path:
    """Where the lesson key of a memory whose local state is ``state`` lives:
    ``$MEMWARDEN_LESSONS_KEY_FILE`` when set (processes on several machines that share one
    server point it at copies of one file), else ``lessons.key`` in ``state``."""
    named = os.environ.get(LESSONS_KEY_ENV)
    return Path(named) if named else state / LESSONS_KEY_FILE


def lessons_key(state: Path) -> bytes:
    """The store's secret key for lesson sketches, created with the store on first open."""
    path = lessons_key_path(state)
    what = "lesson key"
    return read_key(path, what=what, error=InvalidRequest) or create_key(path, what=what, error=InvalidRequest)
