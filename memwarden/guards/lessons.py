"""Lessons: what was rejected or retracted once is recognised when it comes back, where it was.

A-MemGuard keeps a separate memory of *lessons* learnt from failures. In memwarden a lesson
is an ordinary record of kind ``lesson`` that the core writes (as principal ``memwarden``,
in the reserved namespace ``memwarden/lessons``) when validators reject a write, when
reviewers reject a quarantined write, or when a record is retracted as poisoned. Its content
is produced by :func:`lesson_content` and holds no readable text of the rejected write, only:

    memwarden-lesson/3
    scope: home/guest/notes
    subjects: ["p12"]
    validators: injection:reject
    signals: override, exfiltration
    shingles: 0f3a9c... 7d21e0... (up to 64 keyed 64-bit hashes)
    words: 51e0b2... 9a0c44... (up to 64 keyed 64-bit hashes)

``scope`` is the namespace of the write it was learnt from: the lesson applies to writes in
that namespace and below it (compared label by label on canonical namespaces), nowhere
else, so that what one principal got rejected in its own namespace never steers writes in
another (docs/guards.md says why this depth). ``subjects`` are the subjects of that write;
the core also stores them as the lesson record's subjects, so erasing a subject erases its
lessons. They do not restrict matching: a retry can drop or change the subjects it declares.

Both sketches are taken over every *reading* of the text: the folded text (case, accents and
look-alike letters normalised) and whatever the injection detector decodes from it (base64,
hex, rot13, leetspeak, split words, hidden tag characters; see
:func:`memwarden.guards.injection.readings`), so that a payload is recognised again under
another encoding. Digits are replaced by ``#``, so a changed e-mail address, token or order
number does not matter.

* ``words`` are keyed hashes (BLAKE2b) of its content words (stop words removed): the same
  payload reworded, reordered or cut up.
* ``shingles`` are hashes of overlapping word triples: the same payload with a different
  wrapper. A triple's hash chains the keyed hashes of its three words through a non-linear
  64-bit mixer (splitmix64), so each word is hashed once, not once per triple it is in, and
  the hashes stay unguessable without the key.

The key is a secret: a store creates its own (``lessons.key`` in its state directory, see
:mod:`memwarden.memory.keyfile`) and hands it to the chain's :class:`LessonValidator`; a
validator made without a key, outside a store, draws a random one. There is no public
default key: with one, anyone who can read the lessons (or the store's files) would recover
the words of a rejected write by hashing a dictionary. Lessons of formats 1 and 2 (before
scopes, hashed with such a default key) are not read.

Only the ``sketch_size`` smallest hashes of each are kept (a bottom-k sketch, a uniform
sample). :class:`LessonValidator` hashes a candidate the same way and measures which
fraction of a lesson's sample it contains. When the shingle containment reaches
``threshold``, or the word containment reaches ``word_threshold`` for a lesson of at least
``min_words`` words, the write is quarantined for review: it closely resembles something
already judged bad there, which catches the retries that MINJA-style attackers send after a
first rejection.

Limits: whoever holds the key can test guessed texts against a stored lesson (a dictionary
attack on a low-entropy text), so keep the key file as private as the audit key. A payload
rewritten with other words is not matched, and neither is a retry into a namespace outside
the lesson's scope.
"""

from __future__ import annotations

import json
import re
import secrets
import threading
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from memwarden.guards.sketches import check_key, sketches
from memwarden.guards.validators import Outcome, ValidationContext, Verdict, shown_text
from memwarden.core.errors import InvalidRequest
from memwarden.core.records import Kind, MemoryRecord
from memwarden.core.namespace import Namespace, canonical_namespace, namespace_text

__all__ = ["LessonValidator", "Lesson", "LessonIndex", "Lessons", "lesson_content", "parse_lesson", "covers",
           "LESSON_HEADER"]

LESSON_HEADER = "memwarden-lesson/3"
SKETCH_SIZE = 64
#: The verdicts of people's decisions that leave lessons: a quorum of reviewers rejected the
#: record, someone retracted another's record, from a session of their own (source ``user``).
#: A writer retracting its own record is ``SELF_RETRACTION``: anyone may make many of those,
#: so they rank with validators'. So do the same decisions made from an agent's (or a tool's)
#: session, ``BY_AGENT`` after the name: an agent holding a reviewer's rights retracted a
#: colluder's junk in bulk, and its "decided" lessons pushed the reviewer's own out.
QUORUM, RETRACTION, SELF_RETRACTION = "quorum", "retraction", "self-retraction"
BY_AGENT = "-by-agent"
DECIDED_BY_PEOPLE = frozenset({QUORUM, RETRACTION})
DEFAULT_THRESHOLD = 0.6
DEFAULT_WORD_THRESHOLD = 0.8

_SIGNALS_RE = re.compile(r"signals: ([a-z0-9:+_\-, ]+)")
def covers(scope: Namespace, namespace: Namespace) -> bool:
    """Whether a lesson learnt in ``scope`` applies to a write into ``namespace``: the same
    namespace or one below it, label by label (``home/guest`` covers ``home/guest/notes``,
    never ``home/guestroom``); both are canonical."""
    return len(namespace) >= len(scope) and namespace[:len(scope)] == scope


def _signals(verdicts: Sequence[object]) -> list[str]:
    names: list[str] = []
    for v in verdicts:
        m = _SIGNALS_RE.search(getattr(v, "reason", "") or "")
        if m:
            names.extend(s.strip() for s in m.group(1).split(",") if s.strip())
    return list(dict.fromkeys(names))


def lesson_content(record: MemoryRecord, verdicts: Sequence[object] = (), *, key: bytes,
                   sketch_size: int = SKETCH_SIZE) -> str:
    """The content of a lesson record for a rejected or retracted ``record``, hashed with ``key``.

    ``verdicts`` are the verdicts that led to it (validators', or a reviewers' or retraction
    verdict). The result names the record's namespace (the lesson's scope) and subjects,
    validators, outcomes and signals, and carries hashed sketches; it contains no text of
    the original content.
    """
    shingles, words = sketches(shown_text(record.content, record.key), check_key(key))
    outcomes = [f"{getattr(v, 'validator', '?')}:{getattr(getattr(v, 'outcome', None), 'value', '?')}"
                for v in verdicts if getattr(getattr(v, "outcome", None), "value", "accept") != "accept"]
    lines = [
        LESSON_HEADER,
        f"scope: {namespace_text(record.namespace)}",
        # The same payload rejected about another subject is another lesson, erased with it.
        f"subjects: {json.dumps(sorted(record.subjects))}",
        f"validators: {', '.join(dict.fromkeys(outcomes)) or 'retracted'}",
        f"signals: {', '.join(_signals(verdicts)) or 'none'}",
        f"shingles: {' '.join(f'{h:016x}' for h in sorted(shingles)[:sketch_size])}",
        f"words: {' '.join(f'{h:016x}' for h in sorted(words)[:sketch_size])}",
    ]
    return "\n".join(lines)


@dataclass(frozen=True)
class Lesson:
    """A parsed lesson: where it applies, the signals it recorded and its two sketches."""

    scope: Namespace
    signals: tuple[str, ...]
    shingles: frozenset[int]
    words: frozenset[int] = frozenset()
    #: People decided it (a quorum's rejection, a retraction by someone other than the
    #: writer), not a validator nor the writer itself: such lessons are kept first, so that a
    #: flood of rejected writes cannot push them out (tests/test_attack_flooding.py).
    decided: bool = False


def _hex_hashes(value: str) -> frozenset[int]:
    """Space-separated hex hashes -> ints (raises ValueError on anything else)."""
    tokens = value.split()
    if all(len(t) == 16 for t in tokens):  # as lesson_content writes them: decoded in one go
        return frozenset(np.frombuffer(bytes.fromhex(value), dtype=">u8").tolist())
    return frozenset(int(h, 16) for h in tokens)


@lru_cache(maxsize=2048)
def parse_lesson(content: str) -> Lesson | None:
    """Parse lesson content; None when it is not in the lesson format or has no valid scope
    (a lesson that cannot say where it applies applies nowhere)."""
    lines = content.splitlines()
    if not lines or lines[0].strip() != LESSON_HEADER:
        return None
    scope: Namespace | None = None
    signals: tuple[str, ...] = ()
    decided = False
    sketches: dict[str, frozenset[int]] = {}
    for line in lines[1:]:
        field, _, value = line.partition(":")
        if field == "validators":
            decided = any(v.strip().split(":")[0] in DECIDED_BY_PEOPLE for v in value.split(","))
        elif field == "scope":
            try:
                scope = canonical_namespace(value.strip())
            except InvalidRequest:
                return None
        elif field == "signals":
            signals = tuple(s.strip() for s in value.split(",") if s.strip() and s.strip() != "none")
        elif field in ("shingles", "words"):
            try:
                sketches[field] = _hex_hashes(value)
            except ValueError:
                return None
    if scope is None:
        return None
    return Lesson(scope, signals, sketches.get("shingles", frozenset()), sketches.get("words", frozenset()), decided)


@lru_cache(maxsize=1024)
def _keys_needed(size: int, threshold: float) -> int:
    """How many of a sample of ``size`` hashes to key a lesson on so that a candidate holding
    ``threshold`` of the sample holds at least one of them (all but the ones it may miss)."""
    need = next(n for n in range(1, size + 1) if n / size >= threshold)
    return size - need + 1


class LessonIndex:
    """The current lessons, and which of them each hash may lead to.

    A candidate can reach a lesson's threshold only if it holds one of any ``size - need + 1``
    of the lesson's sampled hashes (``need``: the hashes the threshold asks for). So each
    lesson is keyed, per threshold asked about, on that many of its hashes, the ones fewest
    other lessons hold: hashes of boilerplate that every lesson shares (a heading, common
    words) then lead to no lesson, and a check compares the candidate only with the few
    lessons it shares rare hashes with (a set intersection each).

    Kept up to date lesson by lesson by whoever holds the set of lessons:
    :class:`~memwarden.memory.caches.LessonCache` does it as the core stores each lesson, off
    the path of the writes checked against them; a :class:`LessonValidator` handed plain
    records keeps its own. Thread-safe.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._lessons: dict[str, tuple[Lesson, str]] = {}  # id -> (lesson, writer)
        # Per kind: hash -> how many lessons hold it (how common it is).
        self._counts: dict[str, Counter[int]] = {"shingles": Counter(), "words": Counter()}
        # Per (kind, threshold): hash -> the lessons keyed on it, and lesson -> its keys.
        # (The default thresholds are keyed from the start; others from their first use.)
        self._keys: dict[tuple[str, float], dict[int, set[str]]] = {
            ("shingles", DEFAULT_THRESHOLD): {}, ("words", DEFAULT_WORD_THRESHOLD): {}}
        self._keyed: dict[tuple[str, float], dict[str, list[int]]] = {key: {} for key in self._keys}
        self._puts = 0  # lessons put since the keys were last chosen afresh

    def put(self, rid: str, lesson: Lesson, writer: str) -> None:
        """Hold lesson ``rid`` (replacing what was held under that id)."""
        with self._lock:
            self._drop(rid)
            self._lessons[rid] = (lesson, writer)
            for what, counts in self._counts.items():
                counts.update(getattr(lesson, what))
            self._puts += 1
            if self._puts > max(64, len(self._lessons)):
                # Keys were chosen by how common hashes were then; as lessons accumulate,
                # choose again (amortised: one rebuild per as many new lessons as are held).
                self._puts = 0
                for key in self._keys:
                    self._rebuild(*key)
            else:
                for what, threshold in self._keys:
                    self._key(rid, lesson, what, threshold)

    def drop(self, rid: str) -> None:
        """No longer hold lesson ``rid``."""
        with self._lock:
            self._drop(rid)

    def _drop(self, rid: str) -> None:
        held = self._lessons.pop(rid, None)
        if held is None:
            return
        for what, counts in self._counts.items():
            for h in getattr(held[0], what):
                if counts[h] > 1:
                    counts[h] -= 1
                else:
                    del counts[h]
        for key, table in self._keys.items():
            for h in self._keyed[key].pop(rid, ()):
                holders = table[h]
                holders.discard(rid)
                if not holders:
                    del table[h]

    def _rebuild(self, what: str, threshold: float) -> None:
        self._keys[(what, threshold)], self._keyed[(what, threshold)] = {}, {}
        for rid, (lesson, _) in self._lessons.items():
            self._key(rid, lesson, what, threshold)

    def _key(self, rid: str, lesson: Lesson, what: str, threshold: float) -> None:
        sample = getattr(lesson, what)
        if not sample:
            return
        counts = self._counts[what]
        keys = sorted(sample, key=lambda h: (counts[h], h))[:_keys_needed(len(sample), threshold)]
        table = self._keys[(what, threshold)]
        for h in keys:
            table.setdefault(h, set()).add(rid)
        self._keyed[(what, threshold)][rid] = keys

    def best(self, sketch: frozenset[int], what: str, threshold: float, *, within: Namespace, least: int = 1,
             writers: frozenset[str] | None = None) -> tuple[str, float] | None:
        """Among lessons whose scope covers namespace ``within``, with at least ``least``
        sampled hashes of kind ``what`` (written by one of ``writers``, when given) of which
        ``sketch`` holds at least ``threshold``, the one of which it holds the largest
        fraction, and that fraction."""
        with self._lock:
            key = (what, threshold)
            if key not in self._keys:
                self._rebuild(what, threshold)
            table = self._keys[key]
            leads: set[str] = set()
            for h in sketch:
                holders = table.get(h)
                if holders:
                    leads |= holders
            found: tuple[str, float] | None = None
            for rid in leads:
                lesson, writer = self._lessons[rid]
                sample = getattr(lesson, what)
                if (len(sample) < least or (writers is not None and writer not in writers)
                        or not covers(lesson.scope, within)):
                    continue
                score = len(sample & sketch) / len(sample)
                if score >= threshold and (found is None or (score, rid) > (found[1], found[0])):
                    found = (rid, score)
            return found


class Lessons(tuple):  # type: ignore[type-arg]
    """Lesson records together with a :class:`LessonIndex` of them (what
    :class:`~memwarden.memory.caches.LessonCache` hands out)."""

    index: LessonIndex


class LessonValidator:
    """Quarantine a write that closely resembles content that was rejected or retracted in
    the write's namespace or above it (the lesson's scope covers it).

    ``threshold``: fraction of a lesson's sampled shingles the candidate must contain.
    ``word_threshold``: fraction of a lesson's sampled content words the candidate must
    contain, for lessons of at least ``min_words`` words.
    ``min_shingles``: lessons with fewer sampled shingles are too short to match on.
    ``key``: the secret the sketches are keyed with (16 to 64 bytes). None: a memory this
    validator joins gives it the store's key (see :meth:`for_store`); used alone, it draws a
    random one, never a constant.
    ``trusted_writers``: when given, only lessons written by these principals count.
    """

    name = "lessons"
    most = Outcome.QUARANTINE

    def __init__(self, *, threshold: float = DEFAULT_THRESHOLD, word_threshold: float = DEFAULT_WORD_THRESHOLD,
                 min_shingles: int = 3, min_words: int = 6, key: bytes | None = None,
                 trusted_writers: Iterable[str] | None = None) -> None:
        if not 0 < threshold <= 1 or not 0 < word_threshold <= 1:
            raise ValueError("thresholds must be in (0, 1]")
        self.threshold = threshold
        self.word_threshold = word_threshold
        self.min_shingles = min_shingles
        self.min_words = min_words
        # Whether the caller chose the key (a store then keeps it; see for_store).
        self.own_key = key is not None
        self.key = check_key(key) if key is not None else secrets.token_bytes(32)
        self.trusted_writers = frozenset(trusted_writers) if trusted_writers is not None else None
        self._index = LessonIndex()
        self._source: Sequence[MemoryRecord] | None = None
        self._held: dict[str, tuple[str, str]] = {}  # id -> (content, writer) of what _index holds
        self._lock = threading.Lock()

    def for_store(self, key: bytes) -> LessonValidator:
        """This validator as a store with secret ``key`` runs it: itself when it was given a
        key of its own, else a copy keyed with ``key`` (a copy, so that one validator handed
        to two stores reads each store's lessons with that store's key)."""
        if self.own_key:
            return self
        return LessonValidator(threshold=self.threshold, word_threshold=self.word_threshold,
                               min_shingles=self.min_shingles, min_words=self.min_words, key=key,
                               trusted_writers=self.trusted_writers)

    def lesson_content(self, record: MemoryRecord, verdicts: Sequence[object] = ()) -> str:
        """:func:`lesson_content` with this validator's key."""
        return lesson_content(record, verdicts, key=self.key)

    def _own_index(self, records: Sequence[MemoryRecord]) -> LessonIndex:
        """An index of ``records`` kept by this validator. Callers hand out the same tuple
        until the lessons change, and then one that differs by a lesson or two: only those
        are indexed or dropped (a list might be changed in place, so it is always compared)."""
        with self._lock:
            if self._source is records and isinstance(records, tuple):
                return self._index
            wanted = {r.id: (r.content, r.writer) for r in records}
            for rid in self._held.keys() - wanted.keys():
                self._index.drop(rid)
                del self._held[rid]
            for rid, (content, writer) in wanted.items():
                if self._held.get(rid) != (content, writer):
                    self._held[rid] = (content, writer)
                    lesson = parse_lesson(content)
                    if lesson is None:
                        self._index.drop(rid)
                    else:
                        self._index.put(rid, lesson, writer)
            self._source = records
            return self._index

    def check(self, record: MemoryRecord, context: ValidationContext) -> Verdict:
        """Compare the candidate with every active lesson whose scope covers its namespace."""
        if record.kind is Kind.LESSON:
            return Verdict(validator=self.name, outcome=Outcome.ACCEPT)
        records = context.lessons()
        if not records:
            return Verdict(validator=self.name, outcome=Outcome.ACCEPT)
        index = records.index if isinstance(records, Lessons) else self._own_index(records)
        shingles, words = sketches(shown_text(record.content, record.key), self.key)
        for sketch, threshold, least, what in ((shingles, self.threshold, self.min_shingles, "shingles"),
                                               (words, self.word_threshold, self.min_words, "words")):
            found = index.best(sketch, what, threshold, within=record.namespace, least=least,
                               writers=self.trusted_writers)
            if found is not None:
                return Verdict(validator=self.name, outcome=Outcome.QUARANTINE,
                               reason=f"resembles content rejected before (lesson {found[0]}, {what} "
                                      f"containment {found[1]:.2f})")
        return Verdict(validator=self.name, outcome=Outcome.ACCEPT)
