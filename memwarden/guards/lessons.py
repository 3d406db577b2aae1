"""Lessons: what was rejected or retracted once is recognised when it comes back.

A-MemGuard keeps a separate memory of *lessons* learnt from failures. In memwarden a lesson
is an ordinary record of kind ``lesson`` that the core writes (as principal ``memwarden``,
in the reserved namespace ``memwarden/lessons``) when validators reject a write, when
reviewers reject a quarantined write, or when a record is retracted as poisoned. Its content
is produced by :func:`lesson_content` and holds no readable text of the rejected write, only:

    memwarden-lesson/1
    validators: injection:reject
    signals: override, exfiltration
    shingles: 0f3a9c... 7d21e0... (up to 64 keyed 64-bit hashes)
    words: 51e0b2... 9a0c44... (up to 64 keyed 64-bit hashes)

Both sketches are taken over every *reading* of the text: the folded text (case, accents and
look-alike letters normalised) and whatever the injection detector decodes from it (base64,
hex, rot13, leetspeak, split words, hidden tag characters; see
:func:`memwarden.guards.injection.readings`), so that a payload is recognised again under
another encoding. Digits are replaced by ``#``, so a changed e-mail address, token or order
number does not matter.

* ``shingles`` are keyed hashes (BLAKE2b) of overlapping word triples: the same payload with
  a different wrapper.
* ``words`` are keyed hashes of its content words (stop words removed): the same payload
  reworded, reordered or cut up.

Only the ``sketch_size`` smallest hashes of each are kept (a bottom-k sketch, a uniform
sample). :class:`LessonValidator` hashes a candidate the same way and measures which
fraction of a lesson's sample it contains. When the shingle containment reaches
``threshold``, or the word containment reaches ``word_threshold`` for a lesson of at least
``min_words`` words, the write is quarantined for review: it closely resembles something
already judged bad, which catches the retries that MINJA-style attackers send after a first
rejection.

Limits: hashes of short word triples can be guessed by someone who can test candidate
texts against a stored lesson (a dictionary attack on a low-entropy text); pass a secret
``key`` to both :func:`lesson_content` and :class:`LessonValidator` to prevent it. A payload
rewritten with other words is not matched.
"""

from __future__ import annotations

import hashlib
import re
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from memwarden.guards.contradiction import content_words
from memwarden.guards.injection import readings, signature_tokens
from memwarden.guards.validators import Outcome, ValidationContext, Verdict
from memwarden.memory.records import Kind, MemoryRecord

__all__ = ["LessonValidator", "Lesson", "lesson_content", "parse_lesson", "shingle_hashes", "word_hashes",
           "LESSON_HEADER"]

LESSON_HEADER = "memwarden-lesson/1"
DEFAULT_KEY = b"memwarden-lessons-v1"
SKETCH_SIZE = 64
SHINGLE_WORDS = 3

_SIGNALS_RE = re.compile(r"signals: ([a-z0-9:+_\-, ]+)")


@lru_cache(maxsize=16)
def _keyed(key: bytes) -> Any:
    return hashlib.blake2b(digest_size=8, key=key)


def _hash(item: str, key: bytes) -> int:
    # Copying a keyed hasher is cheaper than keying a new one for every shingle.
    hasher = _keyed(key).copy()
    hasher.update(item.encode("utf-8"))
    return int.from_bytes(hasher.digest(), "big")


def shingle_hashes(text: str, *, key: bytes = DEFAULT_KEY, words: int = SHINGLE_WORDS,
                   folded: bool = False) -> frozenset[int]:
    """Keyed 64-bit hashes of every run of ``words`` consecutive normalised words
    (``folded``: ``text`` is already folded)."""
    tokens = signature_tokens(text, folded=folded)
    if not tokens:
        return frozenset()
    if len(tokens) < words:
        grams = {" ".join(tokens)}
    else:
        grams = {" ".join(tokens[i:i + words]) for i in range(len(tokens) - words + 1)}
    return frozenset(_hash(g, key) for g in grams)


def word_hashes(text: str, *, key: bytes = DEFAULT_KEY, folded: bool = False) -> frozenset[int]:
    """Keyed 64-bit hashes of the content words of ``text`` (``folded``: already folded)."""
    return frozenset(_hash(w, key) for w in content_words(text, folded=folded))


def _sketches(text: str, key: bytes) -> tuple[frozenset[int], frozenset[int]]:
    """Shingle and word hashes over every reading of ``text``."""
    shingles: set[int] = set()
    words: set[int] = set()
    for reading in readings(text):
        shingles |= shingle_hashes(reading, key=key, folded=True)
        words |= word_hashes(reading, key=key, folded=True)
    return frozenset(shingles), frozenset(words)


def _signals(verdicts: Sequence[object]) -> list[str]:
    names: list[str] = []
    for v in verdicts:
        m = _SIGNALS_RE.search(getattr(v, "reason", "") or "")
        if m:
            names.extend(s.strip() for s in m.group(1).split(",") if s.strip())
    return list(dict.fromkeys(names))


def lesson_content(record: MemoryRecord | str, verdicts: Sequence[object] = (), *, key: bytes = DEFAULT_KEY,
                   sketch_size: int = SKETCH_SIZE) -> str:
    """The content of a lesson record for a rejected or retracted ``record``.

    ``verdicts`` are the verdicts that led to it (validators', or a reviewers' or retraction
    verdict). The result names validators, outcomes and signals, and carries hashed sketches;
    it contains no text of the original content.
    """
    text = record if isinstance(record, str) else record.content
    shingles, words = _sketches(text, key)
    outcomes = [f"{getattr(v, 'validator', '?')}:{getattr(getattr(v, 'outcome', None), 'value', '?')}"
                for v in verdicts if getattr(getattr(v, "outcome", None), "value", "accept") != "accept"]
    lines = [
        LESSON_HEADER,
        f"validators: {', '.join(dict.fromkeys(outcomes)) or 'retracted'}",
        f"signals: {', '.join(_signals(verdicts)) or 'none'}",
        f"shingles: {' '.join(f'{h:016x}' for h in sorted(shingles)[:sketch_size])}",
        f"words: {' '.join(f'{h:016x}' for h in sorted(words)[:sketch_size])}",
    ]
    return "\n".join(lines)


@dataclass(frozen=True)
class Lesson:
    """A parsed lesson: the signals it recorded and its two sketches."""

    signals: tuple[str, ...]
    shingles: frozenset[int]
    words: frozenset[int] = frozenset()


@lru_cache(maxsize=2048)
def parse_lesson(content: str) -> Lesson | None:
    """Parse lesson content; None when it is not in the lesson format."""
    lines = content.splitlines()
    if not lines or lines[0].strip() != LESSON_HEADER:
        return None
    signals: tuple[str, ...] = ()
    sketches: dict[str, frozenset[int]] = {}
    for line in lines[1:]:
        field, _, value = line.partition(":")
        if field == "signals":
            signals = tuple(s.strip() for s in value.split(",") if s.strip() and s.strip() != "none")
        elif field in ("shingles", "words"):
            try:
                sketches[field] = frozenset(int(h, 16) for h in value.split())
            except ValueError:
                return None
    return Lesson(signals, sketches.get("shingles", frozenset()), sketches.get("words", frozenset()))


class _Index:
    """Which lessons hold each hash; kept up to date lesson by lesson as the set changes."""

    def __init__(self) -> None:
        self.lessons: dict[str, Lesson] = {}
        self.shingles: dict[int, set[str]] = {}
        self.words: dict[int, set[str]] = {}
        self.source: Sequence[MemoryRecord] | None = None

    def add(self, rid: str, lesson: Lesson, min_shingles: int, min_words: int) -> None:
        self.lessons[rid] = lesson
        for sketch, table, least in ((lesson.shingles, self.shingles, min_shingles),
                                     (lesson.words, self.words, min_words)):
            if len(sketch) >= least:
                for h in sketch:
                    table.setdefault(h, set()).add(rid)

    def remove(self, rid: str) -> None:
        lesson = self.lessons.pop(rid)
        for sketch, table in ((lesson.shingles, self.shingles), (lesson.words, self.words)):
            for h in sketch:
                held = table.get(h)
                if held is not None:
                    held.discard(rid)
                    if not held:
                        del table[h]


class LessonValidator:
    """Quarantine a write that closely resembles content that was rejected or retracted.

    ``threshold``: fraction of a lesson's sampled shingles the candidate must contain.
    ``word_threshold``: fraction of a lesson's sampled content words the candidate must
    contain, for lessons of at least ``min_words`` words.
    ``min_shingles``: lessons with fewer sampled shingles are too short to match on.
    ``trusted_writers``: when given, only lessons written by these principals count.
    """

    name = "lessons"
    most = Outcome.QUARANTINE

    def __init__(self, *, threshold: float = 0.6, word_threshold: float = 0.8, min_shingles: int = 3,
                 min_words: int = 6, key: bytes = DEFAULT_KEY, trusted_writers: Iterable[str] | None = None) -> None:
        if not 0 < threshold <= 1 or not 0 < word_threshold <= 1:
            raise ValueError("thresholds must be in (0, 1]")
        self.threshold = threshold
        self.word_threshold = word_threshold
        self.min_shingles = min_shingles
        self.min_words = min_words
        self.key = key
        self.trusted_writers = frozenset(trusted_writers) if trusted_writers is not None else None
        self._index = _Index()
        self._lock = threading.Lock()

    def lesson_content(self, record: MemoryRecord | str, verdicts: Sequence[object] = ()) -> str:
        """:func:`lesson_content` with this validator's key."""
        return lesson_content(record, verdicts, key=self.key)

    def _update(self, records: Sequence[MemoryRecord]) -> None:
        """Bring the index in line with ``records`` (called under the lock). The core hands
        out the same tuple until the lessons change, and then a tuple that differs by a lesson
        or two: only those are indexed or dropped (a list might be changed in place, so it is
        always compared)."""
        index = self._index
        if index.source is records and isinstance(records, tuple):
            return
        wanted = {}
        for record in records:
            if self.trusted_writers is None or record.writer in self.trusted_writers:
                wanted[record.id] = record
        for rid in [rid for rid in index.lessons if rid not in wanted]:
            index.remove(rid)
        for rid, record in wanted.items():
            if rid not in index.lessons:
                lesson = parse_lesson(record.content)
                if lesson is not None:
                    index.add(rid, lesson, self.min_shingles, self.min_words)
        index.source = records

    def check(self, record: MemoryRecord, context: ValidationContext) -> Verdict:
        """Compare the candidate with every active lesson."""
        if record.kind is Kind.LESSON:
            return Verdict(validator=self.name, outcome=Outcome.ACCEPT)
        records = context.lessons()
        if not records:
            return Verdict(validator=self.name, outcome=Outcome.ACCEPT)
        shingles, words = _sketches(record.content, self.key)  # outside the lock: the costly part
        with self._lock:
            self._update(records)
            index = self._index
            for sketch, table, threshold, what in ((shingles, index.shingles, self.threshold, "shingles"),
                                                   (words, index.words, self.word_threshold, "words")):
                hits: dict[str, int] = {}
                for h in sketch:
                    for rid in table.get(h, ()):
                        hits[rid] = hits.get(rid, 0) + 1
                if not hits:
                    continue
                size = (lambda rid: len(index.lessons[rid].shingles)) if what == "shingles" else \
                    (lambda rid: len(index.lessons[rid].words))
                rid, score = max(((rid, n / size(rid)) for rid, n in hits.items()), key=lambda x: x[1])
                if score >= threshold:
                    return Verdict(validator=self.name, outcome=Outcome.QUARANTINE,
                                   reason=f"resembles content rejected before (lesson {rid}, {what} containment "
                                          f"{score:.2f})")
        return Verdict(validator=self.name, outcome=Outcome.ACCEPT)
