"""Every code block of README.md and docs/*.md runs as written, or says it is a fragment.

The convention (README.md, "Development"):

* a fence always names its language; ```text (or csv, json, ...) is never run;
* ```python runs in a fresh empty directory, in its own process, and must exit 0;
* ```sh runs when every command in it is a ``memwarden ...`` command: in order, one block
  after the other in one directory per document, where ``data`` is a copy of the demo's store
  (``memwarden demo --keep data``). No shell: no variables, pipes or redirections. A whole
  comment line right after a command is the output the page shows: the command's output must
  begin with its first word, and it must exit 1 when that is ``deny`` (``policy check``), else 0;
* a block preceded by ``<!-- fragment: why -->`` is not run (it needs a server, a model API,
  its page's context, or shows a placeholder); the reason is required.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

pytestmark = [pytest.mark.system, pytest.mark.slow]

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^(\s*)```(\S*)\s*$")
FRAGMENT = re.compile(r"^<!-- fragment: \S.* -->$")
RUN = {"python", "sh"}
TEXT = {"text", "csv", "json", "toml", "yaml", "ini"}
SHELL_SYNTAX = re.compile(r"[$|;&<>`]|\s>\s|\[")


@dataclass(frozen=True)
class Block:
    """One fenced block: where it is, its language, its text, and whether it is a fragment."""

    doc: Path
    line: int
    lang: str
    text: str
    fragment: bool

    @property
    def where(self) -> str:
        return f"{self.doc.relative_to(ROOT)}:{self.line}"


def blocks(doc: Path) -> list[Block]:
    """The fenced blocks of ``doc``, those indented under a list item too (indent removed)."""
    lines = doc.read_text(encoding="utf-8").splitlines()
    out, i = [], 0
    while i < len(lines):
        match = FENCE.match(lines[i])
        if match is None:
            i += 1
            continue
        indent = match.group(1)
        end = next(j for j in range(i + 1, len(lines)) if lines[j].strip().startswith("```"))
        fragment = i > 0 and bool(FRAGMENT.match(lines[i - 1].strip()))
        body = [line.removeprefix(indent) for line in lines[i + 1:end]]
        out.append(Block(doc, i + 1, match.group(2), "\n".join(body) + "\n", fragment))
        i = end + 1
    return out


ALL = [b for doc in DOCS for b in blocks(doc)]


def documented(block: Block) -> list[tuple[list[str], str | None]]:
    """The commands of a shell block, comments dropped and continuations joined, each with the
    output the page shows for it: the first whole comment line right after it, if any."""
    text = re.sub(r"\\\n\s*", " ", block.text)
    out: list[tuple[list[str], str | None]] = []
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("#"):
            if out and out[-1][1] is None:
                out[-1] = (out[-1][0], stripped.lstrip("# "))
            continue
        command = re.sub(r"\s#.*$", "", stripped).strip()
        if command:
            out.append((shlex.split(command), None))
    return out


def commands(block: Block) -> list[list[str]]:
    """The commands of a shell block."""
    return [argv for argv, _ in documented(block)]


def test_every_block_names_its_language_and_runs_or_says_why_not() -> None:
    problems = []
    for block in ALL:
        if block.lang not in RUN | TEXT:
            problems.append(f"{block.where}: fence ```{block.lang} (use python, sh, or text for output and examples)")
        elif block.lang == "sh" and not block.fragment:
            for argv in commands(block):
                line = " ".join(argv)
                if argv[0] != "memwarden" or SHELL_SYNTAX.search(re.sub(r"'[^']*'|\"[^\"]*\"", "", line)):
                    problems.append(f"{block.where}: {line!r} is not a plain memwarden command: mark the block "
                                    "<!-- fragment: why --> or make it one")
    assert not problems, "\n".join(problems)


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""),
            "MEMWARDEN_CAPTURE_CONTENT": "", "NO_COLOR": "1", "COLUMNS": "100"}


@pytest.mark.parametrize("block", [b for b in ALL if b.lang == "python" and not b.fragment], ids=lambda b: b.where)
def test_python_block_runs(block: Block, tmp_path: Path) -> None:
    run = subprocess.run([sys.executable, "-c", block.text], cwd=tmp_path, env=_env(), capture_output=True,
                         text=True, timeout=600, check=False)
    assert run.returncode == 0, f"{block.where}\n{run.stdout[-2000:]}\n{run.stderr[-3000:]}"


@pytest.fixture(scope="session")
def demo_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo's store, made once; each document's shell blocks get a copy as ``data``."""
    where = tmp_path_factory.mktemp("demo") / "data"
    run = subprocess.run([sys.executable, "-m", "memwarden.cli", "demo", "--keep", str(where)], env=_env(),
                         capture_output=True, text=True, timeout=900, check=False)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    return where


SHELL_DOCS = sorted({b.doc for b in ALL if b.lang == "sh" and not b.fragment})


@pytest.mark.parametrize("doc", SHELL_DOCS, ids=lambda d: str(d.relative_to(ROOT)))
def test_shell_blocks_run(doc: Path, demo_store: Path, tmp_path: Path) -> None:
    shutil.copytree(demo_store, tmp_path / "data")
    for block in (b for b in blocks(doc) if b.lang == "sh" and not b.fragment):
        for argv, shown in documented(block):
            run = subprocess.run([sys.executable, "-m", "memwarden.cli", *argv[1:]], cwd=tmp_path, env=_env(),
                                 capture_output=True, text=True, timeout=900, check=False)
            # `policy check` exits 1 for a denial (docs/cli.md): a page that shows "deny ..." expects it.
            status = 1 if shown is not None and shown.startswith("deny ") else 0
            said = f"{block.where}: {shlex.join(argv)}\n{run.stdout[-2000:]}\n{run.stderr[-2000:]}"
            assert run.returncode == status, said
            if shown is not None:  # the output starts as the page shows it (its first word: deny, allow, ok)
                assert run.stdout.split(maxsplit=1)[:1] == shown.split(maxsplit=1)[:1], said
