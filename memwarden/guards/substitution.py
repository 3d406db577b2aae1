"""Substituted facts: an untrusted writer's account of an established subject that puts a new
name or number where the established record had another.

The procedure values (:mod:`memwarden.guards.values`) are one kind of value an untrusted writer
may change: an account, an amount, a destination. Any fact has values of its own: who did
something, where, when, what it is called. PoisonedRAG's passages retell the established
record of a question with one of them changed ("His destination was the city of Sicily" /
"he directed his journey towards his destined home, Rome"), and nothing but that value tells
them apart from a faithful retelling. So a retelling by an untrusted writer is compared with
the established record *value by value*: its **names** (capitalised words that do not start a
sentence) and its **numbers** (years, days, counts). A retelling *substitutes* when, for one
of the two kinds, it brings a value the established record does not hold and either leaves
out one the established record holds, or denies or corrects something ("not Sicily but
Rome", "actually", "rather than"): it then tells another story of the same thing.

A retelling that keeps every value and adds others ("... from Carthage and Queen Dido, to
Sicily") substitutes nothing. Values are compared folded (case, accents, look-alike letters)
and as words: a name of the established record is kept when its word occurs anywhere in the
retelling, capitalised or not ("the Romans" keeps nothing of "Rome"; "king" keeps "King").

Limits: a retelling that keeps the established value and adds the new one as an addition
("passing Sicily, he settled in Rome") is not caught; a paraphrase that names the same thing
otherwise ("MLK" for "Martin Luther King") and adds a name reads as a substitution, which
sends a faithful retelling to review.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache

from memwarden.guards.folding import fold_run
from memwarden.guards.function_words import NEGATIONS, NOT_CONTENT

__all__ = ["Told", "substituted", "told"]

# A word of letters (any script) with inner apostrophes or hyphens; a number that stands
# alone (a year, a day, a count): not part of a code ("GB33", "teammate0"), nor a group of a
# longer number ("1,200", "3704 0044"), whose values the procedure values compare.
_WORD = re.compile(r"[^\W\d_]+(?:['’\-][^\W\d_]+)*|(?<![\w])(?<!\d[ .,'’])\d{1,4}(?![ .,'’]?\d)(?![^\W\d])")
# What ends a sentence, so that the next word's capital is the sentence's, not a name's.
_SENTENCE_END = frozenset(".!?;:\n")
# Between a sentence's end and its first word: spaces, quotes, brackets, list marks.
_OPENERS = frozenset(" \t\r\"'“”‘’«»([{*-•–—")
# Words that correct what was said before them (folded), and those that, with a negation,
# put one thing in another's place ("not Sicily but Rome").
_CORRECTS = frozenset("""actually contrary incorrect incorrectly wrong wrongly mistaken mistakenly erroneously
correction corrected misreported falsely""".split())
_IN_PLACE = frozenset("but instead rather".split())


@dataclass(frozen=True, slots=True)
class Told:
    """A text's values as :func:`substituted` compares them: its folded words, its names and
    numbers (folded), and whether it denies or corrects something."""

    words: frozenset[str]
    names: frozenset[str]
    numbers: frozenset[str]
    corrects: bool


def _starts_sentence(text: str, start: int) -> bool:
    i = start - 1
    while i >= 0 and text[i] in _OPENERS:
        i -= 1
    return i < 0 or text[i] in _SENTENCE_END


def _key(word: str) -> str:
    """A word folded as :func:`~memwarden.guards.folding.fold` folds it, without its
    possessive "'s". Not through ``fold`` itself: its small cache holds the contents the
    validators of one write share, and a word per call would push them out."""
    folded = word.lower() if word.isascii() else fold_run(word)
    return folded[:-2] if folded.endswith(("'s", "’s")) else folded


@lru_cache(maxsize=1024)
def told(text: str) -> Told:
    """``text`` prepared for :func:`substituted` (cached: an established record is compared
    with write after write)."""
    words: set[str] = set()
    names: set[str] = set()
    numbers: set[str] = set()
    for match in _WORD.finditer(unicodedata.normalize("NFKC", text)):
        raw = match.group()
        if raw.isdigit():
            numbers.add(raw.lstrip("0") or "0")
            continue
        key = _key(raw)
        words.add(key)
        # An acronym ("IBAN", "RCT", "NFL") names a kind of thing more often than one thing.
        if raw[0].isupper() and not (raw.isupper() and len(raw) <= 5) and key not in NOT_CONTENT and len(key) > 1 \
                and not _starts_sentence(match.string, match.start()):
            names.add(key)
    corrects = bool(words & _CORRECTS) or bool(words & NEGATIONS and words & _IN_PLACE)
    return Told(frozenset(words), frozenset(names), frozenset(numbers), corrects)


def substituted(new: str, established: str) -> str | None:
    """``"name"`` or ``"number"`` when ``new`` tells ``established``'s story with a value of
    that kind replaced (see the module docstring), else None."""
    a, b = told(new), told(established)
    for kind, brought, held, seen_new, seen_old in (("name", a.names, b.names, a.words, b.words),
                                                    ("number", a.numbers, b.numbers, a.numbers, b.numbers)):
        added = brought - seen_old
        if not added:
            continue
        dropped = held - seen_new
        if dropped or a.corrects:
            return kind
    return None
