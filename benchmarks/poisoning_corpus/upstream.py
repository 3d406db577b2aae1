"""Reading upstream repositories for the corpus builders, and deterministic choices.

The builders read data files out of local git mirrors (``git show HEAD:path``; the search
tool's ``fetch`` puts them under ``/work/.mirror/<owner>+<name>/repo``) and never import or
run upstream code. Every choice a builder makes (which wrapper, which writer, which half) is a
function of a stable hash, so a rebuild writes the same files byte for byte.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")

MIRRORS = Path(os.environ.get("MEMWARDEN_CORPUS_MIRRORS", "/work/.mirror"))


class Mirror:
    """One repository's mirror: its files at HEAD and the commit they come from."""

    def __init__(self, repo: str, root: Path = MIRRORS) -> None:
        self.repo = repo
        self.git_dir = root / repo.replace("/", "+") / "repo"
        if not self.git_dir.exists():
            raise FileNotFoundError(f"no mirror of {repo} at {self.git_dir} (fetch github:{repo} first)")

    def _git(self, *args: str) -> str:
        return subprocess.run(["git", "--git-dir", str(self.git_dir), *args], check=True, capture_output=True,
                              text=True).stdout

    @property
    def commit(self) -> str:
        """The commit the files are read at."""
        return self._git("rev-parse", "HEAD").strip()

    def text(self, path: str) -> str:
        """A file's text at HEAD."""
        return self._git("show", f"HEAD:{path}")

    def json(self, path: str) -> Any:
        """A JSON file at HEAD."""
        return json.loads(self.text(path))

    def jsonl(self, path: str) -> list[Any]:
        """A JSON Lines file at HEAD."""
        return [json.loads(line) for line in self.text(path).splitlines() if line.strip()]

    def files(self, folder: str) -> list[str]:
        """The paths of the files below ``folder``, sorted."""
        return sorted(p for p in self._git("ls-tree", "-r", "--name-only", "HEAD", folder).splitlines() if p)


def stable(*parts: object) -> int:
    """A stable 64-bit hash of the parts (never Python's salted ``hash``)."""
    return int.from_bytes(hashlib.sha256("\x1f".join(map(str, parts)).encode()).digest()[:8], "big")


def pick(options: Sequence[T], *key: object) -> T:
    """One of ``options``, chosen by a stable hash of ``key``."""
    return options[stable(*key) % len(options)]


def half(*key: object) -> bool:
    """A stable coin: True for about half of the keys."""
    return stable("half", *key) % 2 == 0


def slug(text: str, limit: int = 40) -> str:
    """A short id-safe slug of a text."""
    out = "".join(c if c.isalnum() else "-" for c in text.casefold())
    return "-".join(p for p in out.split("-") if p)[:limit].strip("-") or "x"
