"""In-process caches that keep validators off the store on the write path.

Every write is checked against the lesson records and against related records about the same
subject. Reading either from Chroma costs a query per write (several milliseconds, more on a
busy machine); these caches hold them in the Memory instead.

Both are filled through loaders that the Memory passes in (the caches never hold the
backend, so the governed path stays the only way to the data), are bounded, and, with a
``ttl``, are reloaded after that many seconds so that records written or removed by another
process against the same Chroma server are seen within that time. The Memory clears them whenever an
operation may have removed or changed a record (forget, erase, review, retract, update,
sweep, eviction): a cache never outlives an erasure made through this Memory.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from memwarden.guards.contradiction import content_words
from memwarden.guards.lessons import LessonIndex, Lessons, parse_lesson
from memwarden.core.records import SOURCE_ORDER, Kind, MemoryRecord, Source, Status
from memwarden.core.schema import LESSONS_NAMESPACE
from memwarden.memory.writers import record_writer

__all__ = ["LessonCache", "SubjectIndex", "Related", "INDEXED_KINDS"]

# The kinds that state something that can be contradicted (events are about moments).
INDEXED_KINDS = frozenset({Kind.FACT, Kind.RULE, Kind.PREFERENCE})


def _stale(loaded_at: float, ttl: float | None) -> bool:
    return ttl is not None and time.monotonic() - loaded_at > ttl


def kept_first(lessons: Iterable[MemoryRecord]) -> list[MemoryRecord]:
    """Lesson records in the order a bounded cache keeps them: those people decided
    (:attr:`~memwarden.guards.lessons.Lesson.decided`) first, then the rest, newest first in
    each. A writer can make any number of rejected writes, each leaving a lesson; by age alone
    they pushed a reviewers' lesson out (tests/test_attack_flooding.py)."""
    def rank(record: MemoryRecord) -> tuple[bool, float]:
        lesson = parse_lesson(record.content)
        return (lesson is None or not lesson.decided, -record.created_at.timestamp())
    return sorted(lessons, key=rank)


class LessonCache:
    """The active lesson records (at most ``limit``, as :func:`kept_first` orders them), handed out as one
    :class:`~memwarden.guards.lessons.Lessons` tuple that stays the same object until the
    set changes, with a :class:`~memwarden.guards.lessons.LessonIndex` of them that is kept
    up to date here, as lessons are stored, so that no checked write pays for it.

    ``writer``: the core's principal id, the only writer whose lessons count (a policy that
    lets anyone write into ``memwarden/lessons``, an administrator's ``**``, would otherwise
    let them forge lessons, "decided" ones that push the real ones out included); the loader
    must keep to it too."""

    def __init__(self, load: Callable[[int], list[MemoryRecord]], *, writer: str, limit: int = 500,
                 ttl: float | None = None) -> None:
        self._load, self._limit, self._ttl, self._writer = load, limit, ttl, writer
        self._lock = threading.Lock()
        self._lessons: Lessons | None = None
        self._loaded_at = 0.0

    def get(self) -> Lessons:
        """The lessons, loaded on first use (and when older than ``ttl`` seconds)."""
        with self._lock:
            if self._lessons is None or _stale(self._loaded_at, self._ttl):
                index = LessonIndex()
                records = self._load(self._limit)
                for record in records:
                    _index_one(index, record)
                self._lessons = _lessons(records, index)
                self._loaded_at = time.monotonic()
            return self._lessons

    def add(self, lesson: MemoryRecord) -> None:
        """A lesson was just stored: the next write already consults it. Only what a reload
        reads (an active lesson in ``memwarden/lessons`` by the core): a ``lesson`` record
        stored anywhere else, or by anyone else, is an ordinary record, never a lesson."""
        if lesson.status is not Status.ACTIVE or lesson.kind is not Kind.LESSON or lesson.namespace != LESSONS_NAMESPACE \
                or lesson.writer != self._writer:
            return
        with self._lock:
            if self._lessons is not None:
                index = self._lessons.index
                ordered = kept_first([lesson, *(r for r in self._lessons if r.id != lesson.id)])
                _index_one(index, lesson)
                for gone in ordered[self._limit:]:
                    index.drop(gone.id)
                self._lessons = _lessons(ordered[:self._limit], index)

    def clear(self) -> None:
        """Forget everything; the next use reloads."""
        with self._lock:
            self._lessons = None


def _index_one(index: LessonIndex, record: MemoryRecord) -> None:
    lesson = parse_lesson(record.content)
    if lesson is None:
        index.drop(record.id)
    else:
        index.put(record.id, lesson, record.writer)


def _lessons(records: Iterable[MemoryRecord], index: LessonIndex) -> Lessons:
    lessons = Lessons(records)
    lessons.index = index
    return lessons


def _by_principal(entries: OrderedDict[str, Related]) -> dict[str, dict[str, list[str]]]:
    """The ids of ``entries`` (oldest first) by principal, then source; each list oldest first."""
    held: dict[str, dict[str, list[str]]] = {}
    for rid, related in entries.items():
        held.setdefault(related.writer[0], {}).setdefault(related.writer[1], []).append(rid)
    return held


def _oldest(sources: dict[str, list[str]]) -> str:
    """A principal's record that goes first: the oldest of its source holding the most (ties:
    the least trusted), so that its agent's flood goes before what it wrote itself."""
    return max(sources.items(), key=lambda item: (len(item[1]), SOURCE_ORDER.index(Source(item[0]))))[1][0]


@dataclass(frozen=True, slots=True)
class Related:
    """A record about a subject, with its content words and its writer (computed once)."""

    record: MemoryRecord
    words: frozenset[str]
    #: :func:`~memwarden.memory.writers.record_writer`: the windows group by it on every write.
    writer: tuple[str, str]

    @classmethod
    def of(cls, record: MemoryRecord) -> Related:
        """The entry of ``record``."""
        return cls(record, content_words(record.content), record_writer(record))


class SubjectIndex:
    """Active records of the kinds in :data:`INDEXED_KINDS` per subject, chosen principal by principal.

    Per subject, each principal's ``per_principal`` newest records (its sources in turn), and at
    most ``per_subject`` records in all, for at most ``subjects`` subjects (least recently used
    go first). A principal's new record past its ``per_principal`` evicts its own oldest: one
    principal's flood never evicts another's records (a flood of harmless records evicted the
    established record the contradiction check compares a change with; with one bound per
    subject, a fair half of it, the established record its writer had followed with records of
    its own). Past ``per_subject``, the principal holding the most loses its oldest. The
    loader is called as ``load(subject, per_principal, per_subject)``. At most ``entries``
    records are held in all (least recently used subjects go first): the bound on memory that
    64 records for each of 4,096 subjects gave before subjects held up to 256.
    """

    def __init__(self, load: Callable[[str, int, int], list[MemoryRecord]], *, per_principal: int = 64,
                 per_subject: int = 256, subjects: int = 4096, entries: int = 4096 * 64,
                 ttl: float | None = None) -> None:
        self._load, self._per_subject, self._subjects, self._ttl = load, per_subject, subjects, ttl
        self._per_principal, self._max_entries, self._held = per_principal, entries, 0
        self._lock = threading.Lock()
        self._by_subject: OrderedDict[str, tuple[float, OrderedDict[str, Related]]] = OrderedDict()
        # Per subject being loaded, one log per load of what was added (or dropped: None) meanwhile.
        self._loading: dict[str, list[list[tuple[str, Related | None]]]] = {}

    def about(self, subjects: Iterable[str]) -> list[Related]:
        """The indexed records about any of ``subjects``, each once, newest first."""
        found: dict[str, Related] = {}
        for subject in subjects:
            for related in self._entries(subject):
                found.setdefault(related.record.id, related)
        return list(found.values())

    def add(self, record: MemoryRecord) -> None:
        """A record was just stored: index it under every subject already loaded."""
        if record.status is not Status.ACTIVE or record.kind not in INDEXED_KINDS:
            return
        related = Related.of(record)
        with self._lock:
            for subject in record.subjects:
                for log in self._loading.get(subject, ()):
                    log.append((record.id, related))
                held = self._by_subject.get(subject)
                if held is not None:
                    before = len(held[1])
                    self._put(held[1], record.id, related)
                    self._held += len(held[1]) - before
            self._evict()

    def _put(self, entries: OrderedDict[str, Related], rid: str, related: Related | None) -> None:
        """Index ``related`` under ``rid`` in one subject's ``entries`` (None: drop ``rid``);
        past its principal's bound the principal loses its oldest, past the subject's the
        principal holding the most does. One pass, no sort: it runs on every write."""
        if related is None:
            entries.pop(rid, None)
            return
        entries[rid] = related
        entries.move_to_end(rid)
        if len(entries) <= self._per_principal:
            return  # no principal can hold more than the subject does
        held = _by_principal(entries)
        mine = held[related.writer[0]]
        if sum(map(len, mine.values())) > self._per_principal:
            del entries[_oldest(mine)]
        elif len(entries) > self._per_subject:
            del entries[_oldest(max(held.values(), key=lambda sources: sum(map(len, sources.values()))))]

    def discard(self, records: Iterable[MemoryRecord]) -> None:
        """These records are no longer what the store holds under their ids."""
        with self._lock:
            for record in records:
                for subject in record.subjects:
                    for log in self._loading.get(subject, ()):
                        log.append((record.id, None))
                    held = self._by_subject.get(subject)
                    if held is not None and held[1].pop(record.id, None) is not None:
                        self._held -= 1

    def clear(self) -> None:
        """Forget everything; subjects are reloaded on next use."""
        with self._lock:
            self._by_subject.clear()
            self._held = 0

    def _evict(self) -> None:
        """Drop the least recently used subjects past either bound (called with the lock held)."""
        while self._by_subject and (len(self._by_subject) > self._subjects or self._held > self._max_entries):
            _, (_, gone) = self._by_subject.popitem(last=False)
            self._held -= len(gone)

    def _entries(self, subject: str) -> list[Related]:
        """A snapshot of the subject's records, newest first (loaded when missing or stale)."""
        with self._lock:
            held = self._by_subject.get(subject)
            if held is not None and not _stale(held[0], self._ttl):
                self._by_subject.move_to_end(subject)
                return list(reversed(held[1].values()))
            # Loaded outside the lock (a store query). What is stored or removed meanwhile
            # (a search loads outside the write lock) is logged and replayed on the result:
            # without it, a record stored during the load was missing until the next reload,
            # and a record erased during it came back.
            log: list[tuple[str, Related | None]] = []
            self._loading.setdefault(subject, []).append(log)
        try:
            records = sorted((r for r in self._load(subject, self._per_principal, self._per_subject)
                              if r.kind in INDEXED_KINDS and r.status is Status.ACTIVE), key=lambda r: r.created_at)
            entries = OrderedDict((r.id, Related.of(r)) for r in records)
        except BaseException:
            with self._lock:
                self._stop_logging(subject, log)
            raise
        with self._lock:  # one hold: no change falls between the log and the entries
            self._stop_logging(subject, log)
            for rid, related in log:
                self._put(entries, rid, related)
            stale = self._by_subject.get(subject)
            self._held += len(entries) - (len(stale[1]) if stale is not None else 0)
            self._by_subject[subject] = (time.monotonic(), entries)
            self._by_subject.move_to_end(subject)
            self._evict()
            return list(reversed(entries.values()))

    def _stop_logging(self, subject: str, log: list[tuple[str, Related | None]]) -> None:
        """This load's log is no longer written to (called with the lock held)."""
        others = [other for other in self._loading.get(subject, ()) if other is not log]
        if others:
            self._loading[subject] = others
        else:
            self._loading.pop(subject, None)
