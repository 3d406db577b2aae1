"""The embedded data directory of ``Memory.open``: who may open it, and in which format it is.

**One writer.** Chroma's embedded store is not safe for two processes at once, so the
directory is locked with ``flock`` on ``memwarden.lock`` inside it. A read-write open takes the
lock exclusively; a second one, in any process, gets :class:`StoreLocked` naming the holder's
pid. ``read_only=True`` takes it shared: any number of read-only opens may share the directory,
but not with a writer (a reader could see Chroma's files half written), and each of them
refuses every operation that would change the store. The kernel drops the lock when its
process ends, however it ends (``kill -9`` included), so a crash never leaves it stale; the
file stays, holding the writer's pid only for the error message.

**A format version.** ``memwarden-format.json`` records the directory's format, written when
the directory is created. A directory in a newer format than this memwarden knows is refused
(:class:`StoreFormatError` naming both versions: an older memwarden would otherwise see an
empty store, and its writes would go where the newer one never looks). A directory in an older
format, including one with no such file (every store made before the file existed), is
migrated step by step when it is opened read-write: each :class:`Migration` runs, reporting its
progress, and the file is rewritten after each step, so an interrupted migration resumes at the
step it was in (a step must therefore be safe to run again).
"""

from __future__ import annotations

import errno
import fcntl
import json
import logging
import os
import socket
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from memwarden.core.errors import InvalidRequest, ReadOnlyError, StoreFormatError, StoreLocked
from memwarden.memory.backends import Backend, DelegatingBackend
from memwarden.memory.lexical import INDEX_FILE, LexicalIndex

#: The lock file, inside the data directory.
LOCK_FILE = "memwarden.lock"
#: The format file, inside the data directory.
FORMAT_FILE = "memwarden-format.json"
#: The format this memwarden writes and reads.
FORMAT_VERSION = 3
# What a store made before the format file existed always holds (its format is 0).
_LEGACY_MARKERS = ("chroma", "audit.sqlite3", "lexical.sqlite3", "tombstones.sqlite3")

_log = logging.getLogger("memwarden")

#: ``report(done, total)``: how a migration step tells how far it is.
Report = Callable[[int, int], None]


@dataclass(frozen=True, slots=True)
class Migration:
    """One step from format ``source`` to ``source + 1``.

    ``run(root, report)`` changes the directory ``root`` and calls ``report(done, total)`` as
    it goes. It must be safe to run again after an interruption: the format file is only
    rewritten once the step has returned.
    """

    source: int
    description: str
    run: Callable[[Path, Report], None]


def _nothing_to_migrate(root: Path, report: Report) -> None:
    report(1, 1)


def _rebuild_lexical_index(root: Path, report: Report) -> None:
    # Opening the index drops a layout of another schema (its freed pages zeroed: secure
    # delete); the memory's open then rebuilds it from Chroma. Safe to run again.
    if (root / INDEX_FILE).exists():
        LexicalIndex(root / INDEX_FILE).close()
    report(1, 1)


#: Every migration, in order: ``MIGRATIONS[n]`` takes format ``n`` to ``n + 1``.
MIGRATIONS: tuple[Migration, ...] = (
    Migration(0, "record the store's format version (a store from before memwarden-format.json)",
              _nothing_to_migrate),
    Migration(1, "the lexical index keeps each record's writer and source as columns (the write checks rank "
                 "the nearest records writer by writer in one query); it is rebuilt from Chroma",
              _rebuild_lexical_index),
    Migration(2, "the lexical index splits words at '_' and keeps the procedure categories this version reads "
                 "(amounts whole, bare host names, possessive approvers); it is rebuilt from Chroma",
              _rebuild_lexical_index),
)


def holds_store(root: Path) -> bool:
    """True when directory ``root`` holds a memwarden store (in any format)."""
    return root.is_dir() and ((root / FORMAT_FILE).is_file() or any((root / m).exists() for m in _LEGACY_MARKERS))


def _version() -> str:
    from memwarden import __version__

    return __version__


def _holders(lock: Path, fd: int) -> tuple[int, ...]:
    """The pids holding ``lock``: from the kernel's lock table on Linux, else from the pid the
    writer left in the file."""
    stat = os.fstat(fd)
    file_id = f"{os.major(stat.st_dev):02x}:{os.minor(stat.st_dev):02x}:{stat.st_ino}"
    pids: list[int] = []
    try:
        with open("/proc/locks", encoding="ascii") as table:
            for line in table:
                fields = line.split()
                # "1: FLOCK  ADVISORY  WRITE 4242 08:01:1234 0 EOF"; a waiter's line has "->"
                # in the second field, so it never matches.
                if len(fields) >= 6 and fields[1] == "FLOCK" and fields[5] == file_id:
                    pids.append(int(fields[4]))
    except (OSError, ValueError):
        pids = []
    if not pids:
        try:
            pid = json.loads(lock.read_text(encoding="utf-8") or "{}").get("pid")
        except (OSError, ValueError, AttributeError):
            pid = None
        if isinstance(pid, int):
            pids.append(pid)
    return tuple(sorted(set(pids)))


def _atomic_write(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", encoding="utf-8") as out:
        out.write(text)
        out.flush()
        os.fsync(out.fileno())
    os.replace(tmp, path)
    directory = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(directory)
    finally:
        os.close(directory)


def _progress_bar(description: str) -> tuple[Report, Callable[[], None]]:
    """A report function drawing a progress bar on a terminal (a log line otherwise), and
    how to close it."""
    if not sys.stderr.isatty():
        _log.warning("memwarden: migrating the store: %s", description)
        return (lambda done, total: None), (lambda: None)
    from rich.console import Console
    from rich.progress import Progress

    progress = Progress(console=Console(stderr=True), transient=False)
    task = progress.add_task(f"migrating: {description}", total=None)
    progress.start()

    def report(done: int, total: int) -> None:
        progress.update(task, completed=done, total=total)

    return report, progress.stop


class DataDir:
    """An opened data directory: its lock is held until :meth:`release`."""

    def __init__(self, root: Path, fd: int, read_only: bool) -> None:
        self.root = root
        self.read_only = read_only
        #: What opening did to the directory (format migrations), one sentence each.
        self.maintenance: list[str] = []
        self._fd: int | None = fd

    @classmethod
    def open(cls, path: str | os.PathLike[str], *, read_only: bool = False, create: bool = True,
             migrations: Sequence[Migration] = MIGRATIONS, current: int = FORMAT_VERSION,
             progress: Callable[[str], tuple[Report, Callable[[], None]]] = _progress_bar) -> DataDir:
        """Lock directory ``path`` (creating it when ``create``), then check its format and migrate it.

        Raises StoreLocked when another open holds it, StoreFormatError for a format this
        memwarden cannot open, and InvalidRequest when ``root`` holds no store and ``create``
        is False (or ``read_only`` is True: there is nothing to read).
        """
        if not isinstance(path, (str, os.PathLike)) or isinstance(path, bytes):
            raise InvalidRequest(f"path must be a directory path (str or Path), got {type(path).__name__}")
        for name, flag in (("read_only", read_only), ("create", create)):
            if not isinstance(flag, bool):
                raise InvalidRequest(f"{name} must be True or False, got {flag!r}")
        # Absolute: Chroma caches its clients by the path string, so a relative path opened again
        # after a chdir would reach the client of the directory it meant before.
        root = Path(path).absolute()
        if root.exists() and not root.is_dir():
            raise InvalidRequest(f"memory path {str(root)!r} exists and is not a directory")
        existed = holds_store(root)
        if not existed and (read_only or not create):
            raise InvalidRequest(
                f"{str(root)!r} holds no memwarden store (no {FORMAT_FILE}, chroma/ or audit.sqlite3): check the "
                + ("path; a read-only open never creates one" if read_only else
                   "path, or pass create=True (--create on the command line) to make a new store there"))
        root.mkdir(parents=True, exist_ok=True)
        data = cls(root, cls._lock(root, read_only), read_only)
        try:
            data._check_format(existed, migrations, current, progress)
        except BaseException:
            data.release()
            raise
        return data

    @staticmethod
    def _lock(root: Path, read_only: bool) -> int:
        path = root / LOCK_FILE
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, (fcntl.LOCK_SH if read_only else fcntl.LOCK_EX) | fcntl.LOCK_NB)
        except OSError as exc:
            holders = _holders(path, fd) if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN) else ()
            os.close(fd)
            if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN):
                raise
            who = ", ".join(f"pid {p}" + (" (this process)" if p == os.getpid() else "") for p in holders) \
                or "another process"
            wanted = "read-only" if read_only else "read-write"
            raise StoreLocked(
                f"the memory at {str(root)!r} is open in {who}; it cannot also be opened {wanted} "
                "(Chroma's embedded files are not safe for a writer and another process at once). Close it "
                "there first" + ("" if read_only else ", or open with read_only=True once no writer has it")
                + "; to share one memory between live processes, use a Chroma server (Memory.connect, "
                "docs/deployment.md)", holders=holders) from None
        if not read_only:
            # Only for the message another opener prints; the lock itself is the flock.
            os.ftruncate(fd, 0)
            os.pwrite(fd, json.dumps({"pid": os.getpid(), "host": socket.gethostname(),
                                      "since": datetime.now(timezone.utc).isoformat()}).encode(), 0)
        return fd

    def _read_format(self) -> dict[str, Any]:
        path = self.root / FORMAT_FILE
        try:
            info = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise StoreFormatError(f"{path} is unreadable ({exc}); it should hold the store's format version, "
                                   f"e.g. {{\"format\": {FORMAT_VERSION}}}") from None
        if not isinstance(info, dict) or isinstance(info.get("format"), bool) or not isinstance(info.get("format"), int) \
                or info["format"] < 0:
            raise StoreFormatError(f"{path} does not hold a format version (expected {{\"format\": <integer>}})")
        return info

    def _write_format(self, version: int) -> None:
        _atomic_write(self.root / FORMAT_FILE, json.dumps(
            {"format": version, "written_by": f"memwarden {_version()}",
             "written_at": datetime.now(timezone.utc).isoformat()}, indent=2) + "\n")

    def _check_format(self, existed: bool, migrations: Sequence[Migration], current: int,
                      progress: Callable[[str], tuple[Report, Callable[[], None]]]) -> None:
        if not existed:
            self._write_format(current)  # a new store: before anything else is written into it
            return
        found = self._read_format()["format"] if (self.root / FORMAT_FILE).is_file() else 0
        if found > current:
            info = self._read_format()
            raise StoreFormatError(
                f"the store at {str(self.root)!r} has format {found} (written by {info.get('written_by', 'a newer memwarden')}); "
                f"this memwarden ({_version()}) reads format {current} and older: upgrade memwarden to open it")
        if found == current:
            return
        if self.read_only:
            raise StoreFormatError(
                f"the store at {str(self.root)!r} has format {found} and needs migrating to format {current}; a "
                "read-only open cannot migrate it: open it read-write once")
        steps = {m.source: m for m in migrations}
        for version in range(found, current):
            step = steps.get(version)
            if step is None:
                raise StoreFormatError(f"no migration from format {version} to {version + 1} is known")
            report, close = progress(step.description)
            try:
                step.run(self.root, report)
            finally:
                close()
            self._write_format(version + 1)
            self.maintenance.append(f"store format migrated from {version} to {version + 1}: {step.description}")
            _log.info("memwarden: store %s migrated from format %d to %d", self.root, version, version + 1)

    def writable(self, why: str) -> None:
        """Raise ReadOnlyError when opened read-only; ``why`` says what needed to write."""
        if self.read_only:
            raise ReadOnlyError(f"the memory at {str(self.root)!r} is opened read-only, but {why}: "
                                "open it read-write once")

    def guard(self, backend: Backend) -> Backend:
        """``backend`` itself, or, when opened read-only, a wrapper refusing every change."""
        return ReadOnlyBackend(backend, self.root) if self.read_only else backend

    def release(self) -> None:
        """Give the lock back (idempotent)."""
        fd, self._fd = self._fd, None
        if fd is None:
            return
        try:
            if not self.read_only:
                os.ftruncate(fd, 0)
            fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)


class ReadOnlyBackend(DelegatingBackend):
    """A backend that refuses every change: the last line behind ``Memory.batch``'s refusal of
    mutating operations on a read-only memory."""

    def __init__(self, inner: Backend, root: Path) -> None:
        super().__init__(inner)
        self._root = root

    def _refuse(self, *args: object, **kwargs: object) -> Any:
        raise ReadOnlyError(f"the memory at {str(self._root)!r} is opened read-only")

    upsert = update_metadata = delete = purge = _refuse

    def bind_embedder(self, name: str | None, dim: int | None, *, record: bool = True) -> None:
        """Check the store's embedder, never recording one (see Backend.bind_embedder)."""
        self._inner.bind_embedder(name, dim, record=False)
