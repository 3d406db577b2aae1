"""Corpus records: one memory write, who makes it, where, and what a later reader asks.

A record is what an agent (or a user, or a tool) would write into a governed memory: the text,
the namespace, the declared kind, the subjects and the writer (principal, roles and the source
its session is bound with). A malicious record also names the *target*: what a later reader
would do if it acted on the memory. ``setup`` holds the established records written before it
(by their own writers) that give it a context: the value a poisoned fact changes, the record a
legitimate owner updates.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

DATA = Path(__file__).resolve().parents[1] / "data" / "poisoning"

Label = Literal["malicious", "benign"]
Binding = Literal["user", "agent", "tool", "external"]
DeclaredKind = Literal["fact", "event", "rule", "preference"]


class Actor(BaseModel):
    """A principal and the source its session is bound with (``Memory.session(principal,
    source=binding)``); ``roles`` are given on top of the policy's ``g`` lines."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    principal: str
    roles: tuple[str, ...] = ()
    binding: Binding = "user"


class Write(BaseModel):
    """One write as the writer makes it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    text: str = Field(min_length=1)
    namespace: tuple[str, ...] = Field(min_length=1)
    kind: DeclaredKind = "fact"
    subjects: tuple[str, ...] = ()
    writer: Actor


class CorpusRecord(Write):
    """A measured write of the corpus (see the module docstring)."""

    id: str = Field(min_length=1)
    source: str = Field(min_length=1)
    family: str = Field(min_length=1)
    label: Label
    target: str | None = None
    query: str = Field(min_length=1)
    reader: Actor
    setup: tuple[Write, ...] = ()
    user_owned_preference: bool = False
    origin: str = Field(min_length=1)
    lang: str = "en"

    @model_validator(mode="after")
    def _consistent(self) -> CorpusRecord:
        if not self.id.startswith(f"{self.source}/"):
            raise ValueError(f"record id {self.id!r} must start with its source {self.source!r}/")
        if (self.label == "malicious") != bool(self.target):
            raise ValueError(f"{self.id}: a malicious record names its target, a benign one none")
        if self.user_owned_preference and (self.label != "benign" or self.kind != "preference"):
            raise ValueError(f"{self.id}: a user-owned preference is a benign record of kind preference")
        if self.reader.principal == self.writer.principal:
            raise ValueError(f"{self.id}: the reader must be another principal than the writer")
        return self


def load(path: Path) -> list[CorpusRecord]:
    """Every record of one JSONL file, validated; a bad line raises naming the file and line."""
    out = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            out.append(CorpusRecord.model_validate_json(line))
        except ValueError as exc:
            raise ValueError(f"{path}:{number}: {exc}") from exc
    return out


def save(path: Path, records: Iterable[CorpusRecord]) -> int:
    """Write records as JSONL (sorted keys, UTF-8), replacing the file; returns how many."""
    rows = [json.dumps(r.model_dump(mode="json", exclude_defaults=True), ensure_ascii=False, sort_keys=True)
            for r in records]
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text("".join(row + "\n" for row in rows), encoding="utf-8")
    tmp.replace(path)
    return len(rows)


def load_corpus(sources: Sequence[str] | None = None, root: Path = DATA) -> dict[str, list[CorpusRecord]]:
    """The corpus, per source (every ``*.jsonl`` in ``root``, or the ``sources`` named)."""
    names = list(sources) if sources is not None else sorted(p.stem for p in root.glob("*.jsonl"))
    corpus = {}
    for name in names:
        path = root / f"{name}.jsonl"
        if not path.exists():
            raise ValueError(f"no corpus file for source {name!r}: {path}")
        records = load(path)
        stray = sorted({r.source for r in records} - {name})
        if stray:
            raise ValueError(f"{path}: records of other sources {stray}")
        corpus[name] = records
    return corpus
