"""Keyed sketches of a text: the hashes lessons are made of and matched by (see
:mod:`memwarden.guards.lessons`, whose docstring says what they are and why they are keyed).

``words``: keyed 64-bit BLAKE2b hashes of the content words; ``shingles``: hashes of
overlapping word triples, chained from the words' keyed hashes through splitmix64.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from functools import lru_cache
from typing import Any

import numpy as np

from memwarden.core.errors import InvalidRequest
from memwarden.guards.contradiction import content_words, content_words_of
from memwarden.guards.folding import signature_tokens
from memwarden.guards.injection import readings

__all__ = ["SHINGLE_WORDS", "check_key", "shingle_hashes", "sketches", "word_hashes"]

SHINGLE_WORDS = 3

# BLAKE2b takes keys of up to 64 bytes; an empty one is no key at all.
_KEY_BYTES = (16, 64)


def check_key(key: object) -> bytes:
    """``key`` if it can key the sketches (16 to 64 bytes), else ValueError saying why."""
    if not isinstance(key, bytes):
        raise InvalidRequest(f"a lesson key must be bytes, got {type(key).__name__}")
    if not _KEY_BYTES[0] <= len(key) <= _KEY_BYTES[1]:
        raise InvalidRequest(f"a lesson key must be {_KEY_BYTES[0]} to {_KEY_BYTES[1]} bytes long, got {len(key)}")
    return key


@lru_cache(maxsize=16)
def _keyed(key: bytes) -> Any:
    return hashlib.blake2b(digest_size=8, key=key)


@lru_cache(maxsize=16)
def _table(key: bytes) -> dict[str, int]:
    return {}


def _hash(item: str, key: bytes) -> int:
    # Copying a keyed hasher is cheaper than keying a new one for every item.
    hasher = _keyed(key).copy()
    hasher.update(item.encode("utf-8"))
    return int.from_bytes(hasher.digest(), "big")


# Words recur from one write to the next: their keyed hashes are kept (per key, up to this
# many words, then the table starts again), so a write hashes only the words new to it.
_TABLE_LIMIT = 1 << 16


def _word_hashes(words: Iterable[str], key: bytes) -> dict[str, int]:
    """word -> keyed 64-bit BLAKE2b hash, for each distinct word."""
    table = _table(key)
    distinct = set(words)
    for word in distinct.difference(table):  # (walks the words, looking each up in the table)
        table[word] = _hash(word, key)
    try:
        found = dict(zip(distinct, map(table.__getitem__, distinct)))
    except KeyError:  # another write cleared the table meanwhile: hash what is gone again
        found = {w: h if (h := table.get(w)) is not None else _hash(w, key) for w in distinct}
    if len(table) > _TABLE_LIMIT:
        table.clear()
    return found


_SHIFTS = (np.uint64(30), np.uint64(27), np.uint64(31))
_FACTORS = (np.uint64(0xBF58476D1CE4E5B9), np.uint64(0x94D049BB133111EB))


def _mix(x: np.ndarray) -> np.ndarray:
    """The splitmix64 finaliser, element-wise (uint64 arithmetic wraps, as intended)."""
    # (Most readings are short: the constants are made once, and the array is worked on in
    # place after the first step, which copies it.)
    x = x ^ (x >> _SHIFTS[0])
    x *= _FACTORS[0]
    x ^= x >> _SHIFTS[1]
    x *= _FACTORS[1]
    x ^= x >> _SHIFTS[2]
    return x


def _shingles(tokens: Sequence[str], hashes: dict[str, int], words: int) -> set[int]:
    """Hashes of every run of ``words`` consecutive tokens, chained from the tokens' keyed
    hashes with a non-linear mixer: each token is hashed once, each run costs a few
    vector operations instead of a hash of its own."""
    if not tokens:
        return set()
    width = min(words, len(tokens))
    per_token = np.fromiter(map(hashes.__getitem__, tokens), dtype=np.uint64, count=len(tokens))
    runs = len(tokens) - width + 1
    x = _mix(per_token[:runs])
    for j in range(1, width):
        x = _mix(x ^ per_token[j:j + runs])
    return set(x.tolist())


def shingle_hashes(text: str, *, key: bytes, words: int = SHINGLE_WORDS,
                   folded: bool = False) -> frozenset[int]:
    """Keyed 64-bit hashes of every run of ``words`` consecutive normalised words (one run
    of all of them when there are fewer; ``folded``: ``text`` is already folded)."""
    tokens = signature_tokens(text, folded=folded)
    return frozenset(_shingles(tokens, _word_hashes(tokens, key), words))


def word_hashes(text: str, *, key: bytes, folded: bool = False) -> frozenset[int]:
    """Keyed 64-bit hashes of the content words of ``text`` (``folded``: already folded)."""
    return frozenset(_word_hashes(content_words(text, folded=folded), key).values())


def sketches(text: str, key: bytes) -> tuple[frozenset[int], frozenset[int]]:
    """Shingle and word hashes over every reading of ``text``."""
    shingles: set[int] = set()
    words: set[int] = set()
    for reading in readings(text):
        tokens = signature_tokens(reading, folded=True)
        content = content_words_of(tokens)
        hashes = _word_hashes(content.union(tokens), key)
        shingles |= _shingles(tokens, hashes, SHINGLE_WORDS)
        words.update(map(hashes.__getitem__, content))
    return frozenset(shingles), frozenset(words)
