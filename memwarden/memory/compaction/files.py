"""File primitives of a purge: shredding, durable directory changes, and SQLite connections
that zero what they free."""

from __future__ import annotations

import logging
import os
import shutil
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

log = logging.getLogger("memwarden.memory.compaction")


@contextmanager
def connect(db_path: Path) -> Iterator[sqlite3.Connection]:
    """A connection to Chroma's SQLite file with ``secure_delete`` on."""
    db = sqlite3.connect(db_path, timeout=60, isolation_level=None)
    try:
        # Whatever is freed from now on is zeroed, not merely unlinked from its b-tree.
        db.execute("PRAGMA secure_delete = ON")
        yield db
    finally:
        db.close()


def remove_tree(folder: Path) -> None:
    """Shred every file under ``folder``, then remove it (nothing when it does not exist)."""
    if not folder.exists():
        return
    for path in sorted(folder.rglob("*")):
        if path.is_file():
            shred(path)
    shutil.rmtree(folder)


def shred(path: Path) -> None:
    """Overwrite a file with zeros before it is unlinked (best effort against remanence on
    filesystems that overwrite in place; docs/erasure.md says what this cannot promise)."""
    try:
        size = path.stat().st_size
        with open(path, "r+b", buffering=0) as fh:
            zeros = b"\0" * (1 << 20)
            left = size
            while left > 0:
                left -= fh.write(zeros[:min(left, len(zeros))])
            os.fsync(fh.fileno())
    except OSError as exc:  # pragma: no cover - the unlink still removes it from the directory
        log.warning("could not overwrite %s before removing it: %s", path, exc)


def cut(path: Path, size: int) -> None:
    """Zero what lies past ``size`` bytes of ``path``, then truncate it there."""
    try:
        total = path.stat().st_size
    except OSError:
        return
    if total <= size:
        return
    with open(path, "r+b", buffering=0) as fh:
        fh.seek(size)
        left = total - size
        zeros = b"\0" * (1 << 20)
        while left > 0:
            left -= fh.write(zeros[:min(left, len(zeros))])
        fh.truncate(size)
        os.fsync(fh.fileno())


def fsync_dir(path: Path) -> None:
    """Make the entries of directory ``path`` durable (where the platform allows it)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:  # pragma: no cover - e.g. Windows
        return
    try:
        os.fsync(fd)
    except OSError:  # pragma: no cover
        pass
    finally:
        os.close(fd)
