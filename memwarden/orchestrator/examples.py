"""Plumbing the runnable examples share: the command line, the model, the embedding, a catalog.

Every example runs offline by default, with scripted chat models
(:class:`~memwarden.orchestrator.scripted.ScriptedChatModel`). ``--model provider:name``
(for example ``openai:gpt-4o-mini``) runs it with a real model instead, through
``langchain.chat_models.init_chat_model`` (the ``langchain`` package and the provider's
package must be installed, with the provider's API key in the environment).

The embedding is the bundled offline MiniLM unless ``--hashing`` is given or the environment
has ``MEMWARDEN_EMBEDDING=hashing``: then the hashing test embedding, which is much faster to
start but only matches words, not meaning (tests use it).
"""

from __future__ import annotations

import argparse
import os
import re
from collections.abc import Sequence
from typing import Any

from langchain_core.messages import BaseMessage, ToolMessage

from memwarden.core.records import record_id
from memwarden.core.namespace import canonical_namespace

__all__ = [
    "Catalog", "example_embedding", "example_parser", "load_chat_model", "recalled", "recalled_ids", "tool_errors",
]

#: Environment variable choosing the examples' embedding ("hashing" or "minilm").
EMBEDDING_ENV = "MEMWARDEN_EMBEDDING"


def example_embedding(embedding: Any = None, *, hashing: bool = False) -> Any:
    """The embedding an example opens its Memory with (None: the bundled MiniLM)."""
    if embedding is not None:
        return embedding
    choice = "hashing" if hashing else os.environ.get(EMBEDDING_ENV, "minilm").strip().lower()
    if choice == "hashing":
        from memwarden.memory.embeddings import HashingEmbedding

        return HashingEmbedding()
    if choice not in ("", "minilm", "default"):
        raise SystemExit(f"{EMBEDDING_ENV} must be 'hashing' or 'minilm', got {choice!r}")
    return None


def load_chat_model(spec: str | None) -> Any:
    """A real chat model for ``provider:name``, or None (scripted) when ``spec`` is empty."""
    if not spec:
        return None
    try:
        from langchain.chat_models import init_chat_model
    except ImportError:
        raise SystemExit("--model needs the `langchain` package (pip install langchain) and the "
                         "provider's package, e.g. langchain-openai") from None
    try:
        return init_chat_model(spec, temperature=0)
    except Exception as exc:  # noqa: BLE001 - any provider error becomes one clear line
        raise SystemExit(f"cannot load model {spec!r}: {type(exc).__name__}: {exc}") from None


def example_parser(description: str) -> argparse.ArgumentParser:
    """The options every example takes: --model, --data, --hashing."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--model", help="a real chat model, e.g. openai:gpt-4o-mini (default: scripted, offline)")
    parser.add_argument("--data", help="directory to keep the memory in (default: a temporary one)")
    parser.add_argument("--hashing", action="store_true",
                        help=f"use the fast hashing test embedding (also {EMBEDDING_ENV}=hashing)")
    return parser


class Catalog:
    """Short descriptions of known memories by id, to show what each principal was given.

    Ids are deterministic (writer, namespace, content), so a memory written by a script can
    be catalogued before or after it is written, without reading it back.
    """

    def __init__(self) -> None:
        self._texts: dict[str, str] = {}

    def add(self, writer: str, namespace: str | Sequence[str], content: str) -> str:
        """Catalogue one memory; returns its id."""
        ns = canonical_namespace(namespace)
        rid = record_id(writer, ns, content)
        short = content if len(content) <= 90 else content[:89] + "…"
        self._texts[rid] = f"{short}  [{'/'.join(ns)}, by {writer}]"
        return rid

    def describe(self, rid: str) -> str | None:
        """The description of ``rid``, or None if it is not catalogued."""
        return self._texts.get(rid)

    def __len__(self) -> int:
        return len(self._texts)


_HIT = re.compile(r"^- (mem_[0-9a-f]{32}) \[[^\]]*\] (.*)$")


def _hits(messages: Sequence[BaseMessage]) -> list[re.Match[str]]:
    return [m for msg in messages if isinstance(msg, ToolMessage) and msg.name == "recall"
            for line in str(msg.content).splitlines() if (m := _HIT.match(line))]


def recalled(messages: Sequence[BaseMessage]) -> list[str]:
    """The memory texts an agent's ``recall`` calls returned, in order (for scripted answers)."""
    return list(dict.fromkeys(m.group(2) for m in _hits(messages)))


def recalled_ids(messages: Sequence[BaseMessage]) -> list[str]:
    """The ids of the memories an agent's ``recall`` calls returned, in order."""
    return list(dict.fromkeys(m.group(1) for m in _hits(messages)))


def tool_errors(messages: Sequence[BaseMessage]) -> list[str]:
    """The refusals an agent's tools returned (tool messages with status "error")."""
    return [str(msg.content) for msg in messages if isinstance(msg, ToolMessage) and msg.status == "error"]
