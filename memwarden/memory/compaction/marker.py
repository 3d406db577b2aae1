"""The purge marker: a small JSON file in the data directory that records the phase of a
purge in progress, so that an interrupted one is finished (see
:func:`memwarden.memory.compaction.recover`). It may hold erased ids, so it is shredded when
replaced or cleared. The partitioned backend keeps its own marker, under another name, with
the same guarantees."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from memwarden.memory.compaction.files import fsync_dir, shred

MARKER = "memwarden-purge.json"


def pending(root: str | Path) -> bool:
    """True if a purge of the directory ``root`` was interrupted; call ``recover``."""
    return (Path(root) / MARKER).exists()


def write(root: Path | None, state: dict[str, Any], name: str = MARKER) -> None:
    """Replace the marker file ``name`` in ``root`` durably (nothing for a server: None)."""
    if root is None:
        return
    tmp = root / (name + ".tmp")
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump(state, fh)
        fh.flush()
        os.fsync(fh.fileno())
    old = root / name
    if old.exists():
        shred(old)  # it may hold the erased ids
    os.replace(tmp, old)
    fsync_dir(root)


def read(root: Path, name: str = MARKER) -> dict[str, Any] | None:
    """The marker ``name`` in ``root``; None when there is none, ``{"phase": "unknown"}``
    when it cannot be read (an interrupted purge all the same)."""
    try:
        return json.loads((root / name).read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError):
        return {"phase": "unknown"}


def clear(root: Path, name: str = MARKER) -> None:
    """Shred and remove the marker file ``name`` (it may hold erased ids)."""
    path = root / name
    if path.exists():
        shred(path)
        path.unlink()
        fsync_dir(root)
