"""The established records nearest to a write by its words, whatever its subjects.

A writer declares its own subjects, so the contradiction check also compares an untrusted
procedure change with the records of other writers that share the most words with it
(:meth:`~memwarden.memory.pipeline.Pipeline.nearby`, BM25 over the lexical index). That
window is what an attacker fills first: with records of its own, with near copies under
another of its sources, with records the writer cannot read, by writing one namespace over,
or with colleagues' near copies (tests/test_attack_contradiction2.py,
tests/test_attack_collusion.py). So the window is chosen in the query itself:

- every namespace under the write's top-level one that the writer may read (a reader's search
  of a common prefix returns both records). Not the whole store: the jailbreak benchmark's
  benign writes are spread over four top-level scenarios, and comparing across them held
  16.8% of them instead of 13.6% (benchmarks/results/poisoning_corpus_quick_s28_attack18e.json);
- never the writer's own voice (left out by the query, not after the cut);
- two windows, from one query that ranks every match with its writer and source: first
  the records that hold what the change may change (the lexical index keeps each record's
  procedure categories), then the nearest whatever they hold, so that notes without a value
  never crowd out the record a change changes (tests/test_attack_collusion2.py);
- principal by principal: every principal's best match before any principal's second, so that
  one principal's near copies, under any of its sources, take one place;
- first the records of each source more trusted than the writer's, the most trusted first (a
  user's, for an agent's change): however many principals collude, their agents' records
  never come before it; then all.

:func:`related_records` chooses the subject window (the subject index's records about the
write's subjects) the same way.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Callable, Iterable, Iterator
from itertools import islice
from typing import Any, TypeVar

from memwarden.core.fields import Meta
from memwarden.core.records import SOURCE_ORDER, MemoryRecord, Status
from memwarden.guards.validators import by_another
from memwarden.guards.values import Values, procedure_values
from memwarden.guards.contradiction import content_words
from memwarden.guards.folding import INDEX_WORD
from memwarden.memory.caches import INDEXED_KINDS, Related
from memwarden.memory.codec import from_row
from memwarden.memory.lexical import MAX_TERMS, terms
from memwarden.memory.view import StoreView
from memwarden.memory.writers import across_principals, trusted_first
from memwarden.policies.engine import ReadScope
from memwarden.policies.pushdown import Where, all_of, any_of, scope_filter

T = TypeVar("T")

__all__ = ["nearest_by_others", "related_records"]


def nearest_by_others(view: StoreView, scope: ReadScope, record: MemoryRecord, k: int,
                      sees: Callable[[MemoryRecord], bool]) -> list[MemoryRecord]:
    """Active records in ``scope`` (the writer's read scope), of the kinds the subject index
    holds, written by another than ``record``'s voice (``by_another``) and passing ``sees``,
    nearest to ``record``'s content by BM25: up to ``k`` among those that hold what it may
    change (:meth:`~memwarden.guards.values.Values.changing`), then up to ``k`` more whatever
    they hold. In each, every principal's best before any principal's second, those of each
    more trusted source first (the most trusted first), then all."""
    if not view.has_text_index or scope.empty:
        return []
    where = all_of([{Meta.STATUS.value: Status.ACTIVE.value},
                    {Meta.KIND.value: {"$in": sorted(kind.value for kind in INDEXED_KINDS)}},
                    _not_own(record), scope_filter(scope)])
    # Each query ranks every match with its writer and what it holds (the turns need all of
    # them; a query per round cost the validator chain's p99 5 ms of its 9, jailbreak benchmark).
    # Every term of the change is read, MAX_TERMS a query, the words nearest a value first: no
    # cut of the words chooses which records are compared (a change that put the words it
    # shares with the record after 24 of its own, or after a weakening, matched nothing). The
    # contradiction check holds a change of more distinct words than these read
    # (MAX_COMPARED_WORDS). A short change is one query.
    values = procedure_values(record.content)
    changing = values.changing()
    text = _nearest_the_values(record.content, values)
    queries = [" ".join(chunk) for chunk in islice(_chunks(_distinct_terms(text, record.content), MAX_TERMS),
                                                   MAX_WINDOWS)]
    if values.weakens_any() or values.overflow:  # (more values than were read: any topic holds it)
        windows = []
        for query in queries:
            ranked = view.lexical_voices(query, where, changing)
            windows += [[m for m in ranked if m[4]], ranked] if changing else [ranked]
        # A weakening of what a record names ("without countersigning" where it reads "once the
        # controller countersigns") is one whether or not the record names a check the index
        # knows: ranked by all the change's words, the established writer's own notes that it
        # echoes took every place before that record (tests/test_attack_collusion3.py). So a
        # window ranked by the dropped words alone, which those notes cannot outrank; one per
        # MAX_TERMS of them, so that words listed first never hide the rest.
        windows[1:1] = [view.lexical_voices(" ".join(chunk), where)
                        for chunk in _chunks(sorted(values.objects), MAX_TERMS)]
    else:  # only a record holding one of its categories can be changed (Values.changes)
        windows = [view.lexical_voices(query, where, changing, only_holding=True) for query in queries]
    found: list[MemoryRecord] = []
    seen = {record.id}
    for matches in windows:
        window: list[MemoryRecord] = []
        ids = (rid for rid in _turns(matches, record) if rid not in seen)
        # As many rows as the window still lacks: nearly every one passes, and reading a
        # record costs more than the query that ranked it.
        while len(window) < k and (chunk := list(islice(ids, k - len(window)))):
            seen.update(chunk)
            rows = view.rows(chunk)
            window += [r for r in (from_row(rows[rid]) for rid in chunk if rid in rows)
                       if by_another(record, r) and sees(r)]
        found += window
    return found


def related_records(entries: Iterable[Related], record: MemoryRecord, k: int, sees: Callable[[MemoryRecord], bool],
                    *, other_writers: bool = False) -> list[MemoryRecord]:
    """Up to ``k`` of the subject index's ``entries`` about ``record``'s subjects that pass
    ``sees``, those sharing the most content words with it first (only those can contradict
    it), principal by principal (one writer's paraphrases must not fill the k).

    ``other_writers``: only records written by another (``by_another``), what more trusted
    sources wrote first, the most trusted first; and, as in :func:`nearest_by_others`, up to
    ``k`` among those holding what ``record`` may change, then up to ``k`` more whatever they
    hold, so that notes without a value never crowd out the record a change changes."""
    mine = content_words(record.content)
    # Ranked first (set sizes are cheap), checked against the policy only until k are found.
    ranked = sorted(entries, key=lambda r: len(r.words & mine), reverse=True)
    if not other_writers:
        return _served(ranked, record, k, sees, other_writers=False)
    ranked = trusted_first(ranked, lambda r: r.writer[1], record.source)
    values = procedure_values(record.content)
    changing = values.changing()
    # Holding what it may change, or what it drops ("countersigns"), as in nearest_by_others.
    holding = [r for r in ranked if changing & procedure_values(r.record.content).held()
               or values.may_weaken(procedure_values(r.record.content))] if changing else []
    first = _served(holding, record, k, sees, other_writers=True)
    # Then any: a retelling can put another name or number in any record about its subject
    # (memwarden/guards/substitution.py), not only in one holding a procedure value.
    seen = {r.id for r in first}
    return first + _served([r for r in ranked if r.record.id not in seen], record, k, sees, other_writers=True)


def _served(ranked: list[Related], record: MemoryRecord, k: int, sees: Callable[[MemoryRecord], bool], *,
            other_writers: bool) -> list[MemoryRecord]:
    """The first ``k`` records of ``ranked``, principal by principal, not ``record`` itself,
    by another when ``other_writers``, passing ``sees``."""
    found: list[MemoryRecord] = []
    for related in across_principals(ranked, lambda r: r.writer):
        if (related.record.id != record.id and (not other_writers or by_another(record, related.record))
                and sees(related.record)):
            found.append(related.record)
            if len(found) == k:
                break
    return found


def _turns(ranked: list[tuple[str, float, Any, Any, bool]], record: MemoryRecord) -> Iterator[str]:
    """The ids of ``ranked`` (best first, with writer and source) in the order they are
    compared: for each source more trusted than ``record``'s, the most trusted first, its
    matches principal by principal; then every match, principal by principal. An id may come
    twice (the caller skips what it has seen)."""
    def voice(match: tuple[str, float, Any, Any, bool]) -> tuple[Any, Any]:
        return match[2], match[3]

    for source in _more_trusted(record):
        yield from (m[0] for m in across_principals((m for m in ranked if m[3] == source), voice))
    yield from (m[0] for m in across_principals(ranked, voice))


#: Distinct terms of the first query taken nearest a value; the change's other terms follow
#: in their order in the text.
QUERY_TERMS = 24
#: Queries at most (MAX_TERMS terms each): a bound on a write's look-ups. The
#: contradiction check holds for review a change of more distinct words than these read
#: (:data:`~memwarden.guards.contradiction.MAX_COMPARED_WORDS`), so none is cut short.
MAX_WINDOWS = 16
_NUMBER = re.compile(r"\d+")


def _nearest_the_values(text: str, values: Values) -> str:
    """The words of ``text`` that make the query's first QUERY_TERMS distinct terms, those
    nearest a value it holds first: a change that opened with 64 words of nonsense left none of its own
    words in the query of the window holding what it changes, and the record it changes
    matched nothing there (tests/test_attack_collusion3.py). The words that say what a value
    is for stand next to it; they are what the established record shares."""
    # (Each value's first occurrence, and a bisection per word: linear-ish on a 32 KB text.
    # Amounts keep no raw form: their numbers stand for them.)
    spots = sorted([at for raw in values.raw.values() if raw and (at := text.find(raw)) >= 0]
                   + ([m.start() for m in _NUMBER.finditer(text)] if any(c.startswith("amount") for c in values.by_category)
                      else []))
    def distance(at: int) -> int:
        i = bisect_left(spots, at)
        return min(abs(at - spots[j]) for j in (i - 1, i) if 0 <= j < len(spots))

    found = list(INDEX_WORD.finditer(text))
    words = [m.group() for m in (sorted(found, key=lambda m: distance(m.start())) if spots else found)]
    kept: list[str] = []
    seen: set[str] = set()
    for word in words:
        for term in terms(word):
            if term not in seen and len(seen) == QUERY_TERMS:
                return " ".join(kept)
            seen.add(term)
        kept.append(word)
    return " ".join(kept)


def _distinct_terms(first: str, text: str) -> list[str]:
    """The distinct index terms of ``first`` then of ``text``, in that order."""
    return list(dict.fromkeys([*terms(first), *terms(text)]))


def _chunks(items: Iterable[T], size: int) -> Iterator[list[T]]:
    """``items`` in lists of ``size`` (the last may be shorter)."""
    iterator = iter(items)
    while chunk := list(islice(iterator, size)):
        yield chunk


def _more_trusted(record: MemoryRecord) -> list[str]:
    """The sources more trusted than ``record``'s."""
    return [source.value for source in SOURCE_ORDER[:SOURCE_ORDER.index(record.source)]]


def _not_own(record: MemoryRecord) -> Where:
    """Rows not in ``record``'s own voice as ``by_another`` counts it: another writer, or the
    same writer from a more trusted source."""
    other: Where = {Meta.WRITER.value: {"$ne": record.writer}}
    trusted = _more_trusted(record)
    return any_of([other, {Meta.SOURCE.value: {"$in": trusted}}]) if trusted else other
