"""The texts a record is embedded by when they are not its content: a LangGraph store item's
texts at its index paths (``WriteOp.index_text``), checked and bounded.

Each text is embedded apart, as in LangGraph's stores: the first text's vector is the row's
own, the others are its facets (memwarden.memory.facets), and a search scores the record by
its best vector. Every text must select from the content, never add to it: a text embedded
apart from the content could make a record rank for queries its content does not answer, out
of the validators' sight.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

from memwarden.core.arguments import shown, text_argument
from memwarden.core.errors import InvalidRequest

#: Most texts one record is embedded by (its vector and its facets): each costs an embedding
#: and a vector in the row's metadata and in the derived index.
MAX_INDEX_TEXTS = 64


def index_texts_of(content: str, index_text: object, limit: int) -> tuple[str, ...]:
    """``index_text`` (one text, or a sequence of texts) as a tuple of distinct texts, in order,
    when each occurs in the values of ``content`` (a JSON document; see :func:`index_text_of`)
    and there are at most :data:`MAX_INDEX_TEXTS`; InvalidRequest otherwise. ``limit``: the
    longest text accepted, in characters."""
    texts = [index_text] if isinstance(index_text, str) else index_text
    if not isinstance(texts, Sequence) or isinstance(texts, (bytes, bytearray)):
        raise InvalidRequest(f"index_text must be a string or a list of strings, got {shown(index_text)}")
    if not texts:
        raise InvalidRequest("index_text is an empty list: give None to embed the content")
    distinct = tuple(dict.fromkeys(texts))
    if len(distinct) > MAX_INDEX_TEXTS:
        raise InvalidRequest(f"index_text has {len(distinct)} distinct texts; the limit is {MAX_INDEX_TEXTS} "
                             "per record")
    what = "index_text" if isinstance(index_text, str) else "index_text[{}]"
    return tuple(index_text_of(content, text, limit, what.format(i)) for i, text in enumerate(distinct))


def index_text_of(content: str, text: object, limit: int, what: str = "index_text") -> str:
    """``text`` when every line of it occurs in one of the values of ``content`` (a JSON
    document), or is the JSON of keys and values all of the content's (LangGraph's text for
    an index path at an object or a list); InvalidRequest otherwise."""
    text = text_argument(text, what, limit)
    try:
        document = json.loads(content)
    except (ValueError, RecursionError):
        raise InvalidRequest(f"{what} needs a content that is a JSON document to select from") from None
    if text == content:  # the whole value (LangGraph's "$")
        return text
    values = list(_leaf_texts(document))
    words: set[str] | None = None  # the content's keys and values, read when a line needs them
    for i, line in enumerate(text.split("\n")):
        if not line or any(line in value for value in values):
            continue
        if words is None:
            words = set(values) | set(_leaf_texts(document, keys=True))
        try:
            part = json.loads(line)
        except (ValueError, RecursionError):
            part = None
        if not isinstance(part, dict | list) or not set(_leaf_texts(part, keys=True)) <= words:
            raise InvalidRequest(f"{what} line {i} is not part of any value of the content")
    return text


def _leaf_texts(value: Any, *, keys: bool = False) -> Iterable[str]:
    """The texts of ``value``'s leaves (and, with ``keys``, of its objects' keys)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            stack.extend(item.values())
            if keys:
                yield from map(str, item)
        elif isinstance(item, list):
            stack.extend(item)
        elif item is not None:
            yield str(item)
