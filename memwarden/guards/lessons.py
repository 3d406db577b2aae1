"""Lessons: what was rejected or retracted once is recognised when it comes back.

A-MemGuard keeps a separate memory of *lessons* learnt from failures. In memwarden a lesson
is an ordinary record of kind ``lesson`` that the core writes when a write is rejected or a
record is retracted. Its content is produced by :func:`lesson_content` and holds no readable
text of the rejected write, only:

    memwarden-lesson/1
    validators: injection:reject
    signals: override, exfiltration
    shingles: 0f3a9c... 7d21e0... (up to 64 keyed 64-bit hashes)

The shingles are keyed hashes (BLAKE2b) of overlapping word triples of the folded text
(case, accents and look-alike letters normalised, digits replaced by ``#`` so a changed
e-mail address, token or order number does not matter). Only the ``sketch_size`` smallest
hashes are kept (a bottom-k sketch), so the sketch is a uniform sample of the shingles.

:class:`LessonValidator` hashes a candidate the same way and measures which fraction of a
lesson's sampled shingles it contains. When that containment reaches ``threshold`` the write
is quarantined: it closely resembles something already judged bad (the same payload with a
different wrapper, address or token), which catches the retries and paraphrase-light
variants that MINJA-style attackers send after a first rejection.

Limits: hashes of short word triples can be guessed by someone who can test candidate
texts against a stored lesson (a dictionary attack on a low-entropy text); pass a secret
``key`` to both :func:`lesson_content` and :class:`LessonValidator` to prevent it. A
reworded payload shares few triples with the original and is not matched.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache

from memwarden.guards.injection import signature_tokens
from memwarden.guards.validators import Outcome, ValidationContext, Verdict
from memwarden.memory.records import Kind, MemoryRecord

__all__ = ["LessonValidator", "Lesson", "lesson_content", "parse_lesson", "shingle_hashes", "LESSON_HEADER"]

LESSON_HEADER = "memwarden-lesson/1"
DEFAULT_KEY = b"memwarden-lessons-v1"
SKETCH_SIZE = 64
SHINGLE_WORDS = 3

_SIGNALS_RE = re.compile(r"signals: ([a-z0-9:+_\-, ]+)")


def shingle_hashes(text: str, *, key: bytes = DEFAULT_KEY, words: int = SHINGLE_WORDS) -> frozenset[int]:
    """Keyed 64-bit hashes of every run of ``words`` consecutive normalised words."""
    tokens = signature_tokens(text)
    if not tokens:
        return frozenset()
    if len(tokens) < words:
        grams = [" ".join(tokens)]
    else:
        grams = [" ".join(tokens[i:i + words]) for i in range(len(tokens) - words + 1)]
    return frozenset(int.from_bytes(hashlib.blake2b(g.encode("utf-8"), digest_size=8, key=key).digest(), "big")
                     for g in grams)


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

    ``verdicts`` are the validator verdicts that led to it (may be empty for a retraction).
    The result names validators, outcomes and signals, and carries hashed shingles; it
    contains no text of the original content.
    """
    text = record if isinstance(record, str) else record.content
    hashes = sorted(shingle_hashes(text, key=key))[:sketch_size]
    outcomes = [f"{getattr(v, 'validator', '?')}:{getattr(getattr(v, 'outcome', None), 'value', '?')}"
                for v in verdicts if getattr(getattr(v, "outcome", None), "value", "accept") != "accept"]
    lines = [
        LESSON_HEADER,
        f"validators: {', '.join(dict.fromkeys(outcomes)) or 'retracted'}",
        f"signals: {', '.join(_signals(verdicts)) or 'none'}",
        f"shingles: {' '.join(f'{h:016x}' for h in hashes)}",
    ]
    return "\n".join(lines)


@dataclass(frozen=True)
class Lesson:
    """A parsed lesson: the signals it recorded and its shingle sketch."""

    signals: tuple[str, ...]
    shingles: frozenset[int]


@lru_cache(maxsize=2048)
def parse_lesson(content: str) -> Lesson | None:
    """Parse lesson content; None when it is not in the lesson format."""
    lines = content.splitlines()
    if not lines or lines[0].strip() != LESSON_HEADER:
        return None
    signals: tuple[str, ...] = ()
    shingles: frozenset[int] = frozenset()
    for line in lines[1:]:
        field, _, value = line.partition(":")
        if field == "signals":
            signals = tuple(s.strip() for s in value.split(",") if s.strip() and s.strip() != "none")
        elif field == "shingles":
            try:
                shingles = frozenset(int(h, 16) for h in value.split())
            except ValueError:
                return None
    return Lesson(signals, shingles)


class LessonValidator:
    """Quarantine a write that closely resembles content that was rejected or retracted.

    ``threshold``: fraction of a lesson's sampled shingles the candidate must contain.
    ``min_shingles``: lessons with fewer sampled shingles are too short to match on.
    ``trusted_writers``: when given, only lessons written by these principals count.
    """

    name = "lessons"

    def __init__(self, *, threshold: float = 0.6, min_shingles: int = 3, key: bytes = DEFAULT_KEY,
                 trusted_writers: Iterable[str] | None = None) -> None:
        if not 0 < threshold <= 1:
            raise ValueError("threshold must be in (0, 1]")
        self.threshold = threshold
        self.min_shingles = min_shingles
        self.key = key
        self.trusted_writers = frozenset(trusted_writers) if trusted_writers is not None else None

    def lesson_content(self, record: MemoryRecord | str, verdicts: Sequence[object] = ()) -> str:
        """:func:`lesson_content` with this validator's key."""
        return lesson_content(record, verdicts, key=self.key)

    def check(self, record: MemoryRecord, context: ValidationContext) -> Verdict:
        """Compare the candidate with every active lesson."""
        if record.kind is Kind.LESSON:
            return Verdict(validator=self.name, outcome=Outcome.ACCEPT)
        lessons = context.lessons()
        if not lessons:
            return Verdict(validator=self.name, outcome=Outcome.ACCEPT)
        candidate = shingle_hashes(record.content, key=self.key)
        if not candidate:
            return Verdict(validator=self.name, outcome=Outcome.ACCEPT)
        best, best_id = 0.0, None
        for lesson_record in lessons:
            if self.trusted_writers is not None and lesson_record.writer not in self.trusted_writers:
                continue
            lesson = parse_lesson(lesson_record.content)
            if lesson is None or len(lesson.shingles) < self.min_shingles:
                continue
            score = len(lesson.shingles & candidate) / len(lesson.shingles)
            if score > best:
                best, best_id = score, lesson_record.id
        if best >= self.threshold:
            return Verdict(validator=self.name, outcome=Outcome.QUARANTINE,
                           reason=f"resembles content rejected before (lesson {best_id}, containment {best:.2f})")
        return Verdict(validator=self.name, outcome=Outcome.ACCEPT)
