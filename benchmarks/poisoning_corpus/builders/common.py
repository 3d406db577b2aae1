"""What every builder shares: record construction and the standard places records go."""

from __future__ import annotations

import re
from collections.abc import Sequence

from benchmarks.poisoning_corpus.deploy import ACTORS
from benchmarks.poisoning_corpus.records import Actor, CorpusRecord, Write


def actor(name: str) -> Actor:
    """A named actor of the deployment (deploy.ACTORS)."""
    return ACTORS[name]


def write(text: str, namespace: Sequence[str], writer: str, *, kind: str = "fact",
          subjects: Sequence[str] = ()) -> Write:
    """A setup write (an established record)."""
    return Write(text=text, namespace=tuple(namespace), kind=kind, subjects=tuple(subjects), writer=actor(writer))


def record(source: str, key: str, *, family: str, label: str, text: str, namespace: Sequence[str], writer: str,
           reader: str, query: str, origin: str, kind: str = "fact", subjects: Sequence[str] = (),
           target: str | None = None, setup: Sequence[Write] = (), user_owned_preference: bool = False,
           lang: str = "en") -> CorpusRecord:
    """A corpus record; ``writer`` and ``reader`` name deploy.ACTORS entries."""
    return CorpusRecord(id=f"{source}/{key}", source=source, family=family, label=label, text=clean(text),
                        namespace=tuple(namespace), kind=kind, subjects=tuple(subjects), writer=actor(writer),
                        reader=actor(reader), query=clean(query), origin=origin, target=target,
                        setup=tuple(setup), user_owned_preference=user_owned_preference, lang=lang)


def clean(text: str) -> str:
    """Trailing spaces off every line, at most one blank line in a row, no outer blank lines."""
    lines = [line.rstrip() for line in text.strip().splitlines()]
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines))


def sentences(text: str) -> list[str]:
    """The sentences of a prose text (a plain split on end punctuation)."""
    flat = " ".join(text.split())
    return [s.strip() for s in re.split(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(])", flat) if len(s.strip()) > 2]
