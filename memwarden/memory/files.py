"""Small files that must never be seen half-written: keys, the anchored head."""

from __future__ import annotations

import os
import secrets
from pathlib import Path


def atomic_write(path: Path, text: str, *, replace: bool, sync: bool = True) -> bool:
    """Write ``text`` to ``path`` through a temporary file (mode 0600) so that readers see the
    old file or the new one, never a part. ``replace=False`` never overwrites an existing file
    (a key another process created first wins): returns whether this call wrote it.
    ``sync``: the data is on disk before the file takes its name."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            if sync:
                fh.flush()
                os.fsync(fh.fileno())
        if replace:
            os.replace(tmp, path)
            return True
        try:
            os.link(tmp, path)  # fails if the file exists
        except FileExistsError:
            return False
        return True
    finally:
        tmp.unlink(missing_ok=True)


def read_text_if_present(path: Path, *, what: str, error: type[Exception], encoding: str = "utf-8") -> str | None:
    """The text of ``path``; None when there is no such file; ``error`` naming ``what`` and the
    path when it exists but cannot be read or decoded (a key file must never read as absent)."""
    try:
        return path.read_text(encoding=encoding)
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise error(f"cannot read the {what} {path}: {exc}") from None
