"""The injection detector's phrase rules, compiled for RE2, and the literal prefilter that
decides which rules run, and where.

**Linear time.** A backtracking engine (Python's ``re``) can take time quadratic or worse in
the length of the text on a pattern with nested or adjacent unbounded repeats, and an
attacker chooses the text: a 32 KB write of a repeated punctuation pair took seconds. RE2
(the ``google-re2`` wheel) runs every rule in time linear in the text, and releases the GIL
while it matches. Rules are written in Python's syntax, within the subset of
:mod:`memwarden.guards.rule_syntax` (no look-arounds), and translated.

**One byte per character.** RE2's classes are ASCII (``\\w`` is ``[0-9A-Za-z_]``), Python's
are Unicode, and RE2 counts positions in bytes. Every text is therefore *projected* before
matching (:func:`project`): each character becomes one ASCII byte that every rule treats as
it treats the character itself, so positions stay character positions and RE2's answer is
Python's. A rule never holds an upper-case letter (it reads folded text), so:

* a non-ASCII decimal digit becomes ``B`` (``\\d`` is emitted as ``[0-9B]``), any other letter
  or digit that is not lower-case ASCII becomes ``A``;
* whitespace RE2 does not know (``\\v``, ``\\x1c``-``\\x1f``, non-ASCII spaces) becomes ``\\t``;
* a character of :data:`~memwarden.guards.rule_syntax.RESERVED` becomes its control byte, and
  any other character becomes ``\\x01``.

**Prefilter.** Running 250 regexes over every view of a long text is what costs time, and most
rules cannot match because a word they require is absent. Each rule's required literals
(every set of literals one of which occurs in any match) are read off its parsed pattern; one
Aho-Corasick pass finds where they occur, and only the rules whose literals occur run. A rule
whose every match begins with one of a few literals is tried only at their occurrences; on a
long text, any other rule is searched only around the occurrences of its rarest literals.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import ahocorasick_rs
import re2

from memwarden.guards.rule_syntax import (MIN_LITERAL, RESERVED, Node, literal_sets, max_width, parse,
                                          start_literals, to_re2, top_level_alternatives)

__all__ = ["ASCII_LOWER", "DIGIT", "LETTER", "MAX_MATCHES", "WORD_CHAR", "Rule", "RuleSet", "compile_projected", "compile_rule", "project"]

# -- the projection ---------------------------------------------------------------------------

_ASCII_UPPER = re.compile(r"[A-Z]+")
_ASCII_ODD_SPACE = re.compile(r"[\x0b\x1c-\x1f]")
_RESERVED_BYTES = tuple(RESERVED.values())
# (Each is one character class: a scan in linear time. Python's own \d, \w and \s decide, so
# the projection agrees with Python's reading of the text by construction.)
_NON_ASCII_DIGITS = re.compile(r"[^\D\x00-\x7f]+")
_NON_ASCII_WORD = re.compile(r"[^\W\x00-\x7f]+")
_NON_ASCII_SPACE = re.compile(r"[^\S\x00-\x7f]+")
_NON_ASCII = re.compile(r"[^\x00-\x7f]+")
_NEEDS_WORK = re.compile(r"[A-Z\x0b\x1c-\x1f" + "".join(_RESERVED_BYTES) + r"]|[^\x00-\x7f]")


def _fill(char: str):
    return lambda m: char * (m.end() - m.start())


def project(text: str) -> bytes:
    """``text`` as the rule engine reads it: one ASCII byte per character (see above)."""
    if not _NEEDS_WORK.search(text):
        return text.encode("ascii")
    text = _ASCII_UPPER.sub(_fill("A"), text)
    text = _ASCII_ODD_SPACE.sub("\t", text)
    for code in _RESERVED_BYTES:
        text = text.replace(code, "\x01")
    if not text.isascii():
        text = _NON_ASCII_DIGITS.sub(_fill("B"), text)
        text = _NON_ASCII_WORD.sub(_fill("A"), text)
        text = _NON_ASCII_SPACE.sub(_fill("\t"), text)
        for char, code in RESERVED.items():
            text = text.replace(char, code)
        text = _NON_ASCII.sub(_fill("\x01"), text)
    return text.encode("ascii")


#: Character classes of the projection (:func:`project`), for patterns compiled with
#: :func:`compile_projected` over a text whose ASCII letters were lowered first: a letter
#: (any other letter reads as "A"), a digit (any other digit reads as "B"), and a word's
#: character, which takes "\x01" too (an invisible or other character stays part of a value).
LETTER = r"[a-zA]"
DIGIT = r"[0-9B]"
WORD_CHAR = r"[a-zA0-9B\x01]"
#: ASCII letters lowered, as those patterns expect before :func:`project` ("A" stays another letter's).
ASCII_LOWER = str.maketrans({chr(c): chr(c + 32) for c in range(65, 91)})

#: Matches read per pattern by the procedure values' readers. Each match costs Python work, and
#: a 32 KB text of "$0$0..." holds 16k of them (200 ms); a text with more values than this is no
#: fact about one procedure.
MAX_MATCHES = 512


_PROJECTED = re2.Options()
_PROJECTED.max_mem = 64 << 20


def compile_projected(pattern: str) -> re2._Regexp:
    """``pattern`` compiled by RE2 (linear time) to match texts as :func:`project` writes them:
    the value, money and negation readers' patterns."""
    return re2.compile(pattern.encode("ascii"), _PROJECTED)

# -- rules ----------------------------------------------------------------------------------------

_OPTIONS = re2.Options()
_OPTIONS.encoding = re2.Options.Encoding.LATIN1  # (the projected text is ASCII: one byte, one character)
_OPTIONS.never_capture = True

# Words so frequent in any text that a rule keyed on them would run almost always.
_FREQUENT = frozenset("""
the and you your with for all any this that how not do not don't never are is will can has have from what when who
out now new user text more only just one use make give tell show get write say answer response reply message content
time data list send return print output add put run call there here they them their our its was were been being
into about over after before then than also some such each every other same first last next act like want need
""".split()) | {"do not", "you are", "the user", "of the", "in the", "to the"}


def _cost(literal: str) -> float:
    """How often ``literal`` is expected to occur in ordinary text (a rough rank, not a rate)."""
    word = literal.strip()
    return 1.0 if word in _FREQUENT else 0.3 if len(word) <= 4 else 0.1


def _score(lits: frozenset[str]) -> float:
    # Key each rule on the literals least likely to occur: it then runs, and in long texts
    # is searched around, as few places as possible.
    return -sum(map(_cost, lits))


# A rule runs only when its rarest required literal sets all occur (up to this many sets).
_MAX_NEEDS = 3
# Long texts are searched only around the occurrences of a rule's rarest literals: as far on
# each side as the rule's longest match reaches in folded text (where a run of whitespace is
# one character; a margin covers the few two-character runs of derived texts), and never
# farther than _WINDOW. RE2 reads the text on both sides of a span (a match must lie inside
# it), so anchors and word boundaries at its edges see the real text: a span may end inside a
# word. (Extending it to the next word's end, as a truncating engine would need, reads to the
# end of a text without a word break once per span: quadratic.)
_LONG = 2000
# A rule is tried at the occurrences of its start literals when they are this few; beyond,
# one search costs less than the calls (each call costs microseconds, a search nanoseconds
# per character).
_MAX_ANCHORED = 32
_WINDOW = 400
_MARGIN = 24


@dataclass(frozen=True, slots=True)
class Rule:
    """One phrase rule: its signal, its source (Python ``re`` syntax, read with
    ``re.MULTILINE``), its compiled RE2 form, and what the prefilter knows of its matches:
    literal sets one literal of each occurs in any match (``needs``, rarest first), the
    literals every match begins with (``starts``), and how far a match reaches (``reach``)."""

    family: str
    weight: float
    source: str
    engine: re2._Regexp
    needs: tuple[frozenset[str], ...] | None
    starts: frozenset[str] | None
    reach: int

    def search(self, text: str) -> bool:
        """Whether the rule matches anywhere in ``text``."""
        return self.engine.search(project(text)) is not None


def compile_rule(family: str, weight: float, source: str, node: Node | None = None) -> Rule:
    """``source`` parsed (unless ``node`` is its parse), analysed and compiled
    (RuleSyntaxError outside the subset)."""
    node = parse(source) if node is None else node
    sets = sorted(set(literal_sets(node, _score)), key=lambda s: (_score(s), sorted(s)), reverse=True)
    starts = start_literals(node)
    width = max_width(node)
    return Rule(family, weight, source, re2.compile(f"(?m){to_re2(node)}".encode("ascii"), _OPTIONS),
                tuple(sets[:_MAX_NEEDS]) or None,
                starts if starts and min(map(len, starts)) >= MIN_LITERAL else None,
                _WINDOW if width is None else min(_WINDOW, width + _MARGIN))


def _spans(text: str, needs: frozenset[str], where: dict[str, list[int]], reach: int) -> list[tuple[int, int]]:
    """The spans of ``text`` within ``reach`` of an occurrence of ``needs``, merged where they
    touch."""
    positions = sorted(p for lit in needs for p in where.get(lit, ()))
    if not positions:
        return []
    spans, first, last = [], positions[0], positions[0]
    for pos in positions:
        if pos - last > 2 * reach:
            spans.append((max(0, first - reach), min(len(text), last + reach)))
            first = pos
        last = pos
    spans.append((max(0, first - reach), min(len(text), last + reach)))
    return spans


class RuleSet:
    """Rules compiled from ``(family, weight, source)`` rows (each top-level alternative of a
    source its own rule: smaller regexes, sharper prefilters), with their prefilter."""

    def __init__(self, table: Iterable[tuple[str, float, str]]) -> None:
        self.rules = tuple(compile_rule(family, weight, alt, node)
                           for family, weight, source in table for alt, node in top_level_alternatives(source))
        self.strong = frozenset(i for i, r in enumerate(self.rules) if r.weight >= 0.8)
        # Strongest rules first, so that a scan with a budget stops early.
        self._rank = {i: rank for rank, i in enumerate(sorted(range(len(self.rules)),
                                                              key=lambda i: -self.rules[i].weight))}
        # The rules worth trying when a literal occurs (keyed by each literal of a rule's
        # rarest set), and the rules that need no literal.
        self._by_literal: dict[str, list[int]] = {}
        for i, rule in enumerate(self.rules):
            for lit in (rule.needs[0] if rule.needs else ()):
                self._by_literal.setdefault(lit, []).append(i)
        self._unkeyed = frozenset(i for i, r in enumerate(self.rules) if r.needs is None)
        # One pass over the text finds every occurrence of every literal (overlapping ones
        # too), in time linear in the text. (A DFA: a few MB and ~40 ms to build, and twice as
        # fast to run as the default NFA.)
        self.literals = tuple(sorted({lit for r in self.rules if r.needs for s in r.needs for lit in s}
                                     | {lit for r in self.rules if r.starts for lit in r.starts}))
        self._automaton = ahocorasick_rs.AhoCorasick(self.literals, matchkind=ahocorasick_rs.MatchKind.Standard,
                                                     implementation=ahocorasick_rs.Implementation.DFA)

    def occurrences(self, flat: str) -> dict[str, list[int]]:
        """literal -> its start positions in ``flat`` (text with line breaks read as spaces),
        in order; only the literals that occur are keys."""
        where: dict[str, list[int]] = {}
        for i, start, _ in self._automaton.find_matches_as_indexes(flat, overlapping=True):
            where.setdefault(self.literals[i], []).append(start)
        return where

    def hits(self, text: str, only: frozenset[int] | None = None, budget: float | None = None) -> dict[str, float]:
        """family -> weight of the rules matching ``text`` (the strongest rule of each family);
        with ``only``, of those rules alone; with ``budget``, stop once the weights reach it."""
        found: dict[str, float] = {}
        where = self.occurrences(text.replace("\n", " "))
        present = set(where)
        candidates = set(self._unkeyed).union(*(self._by_literal.get(lit, ()) for lit in present))
        if only is not None:
            candidates &= only
        long_text = len(text) > _LONG
        data: bytes | None = None
        for i in sorted(candidates, key=self._rank.__getitem__):
            rule = self.rules[i]
            if rule.needs is not None and any(map(present.isdisjoint, rule.needs)):
                continue
            if rule.weight <= found.get(rule.family, 0.0):
                continue
            if data is None:
                data = project(text)
            starts = [at for lit in rule.starts for at in where.get(lit, ())] if rule.starts is not None else None
            if starts is not None and len(starts) <= _MAX_ANCHORED:
                # Every match begins at an occurrence of a start literal: a handful of anchored
                # attempts instead of a search of the whole text.
                hit = any(rule.engine.match(data, at) for at in starts)
            elif long_text and rule.needs is not None:
                hit = any(rule.engine.search(data, start, end)
                          for start, end in _spans(text, rule.needs[0], where, rule.reach))
            else:
                hit = rule.engine.search(data) is not None
            if hit:
                found[rule.family] = rule.weight
                if budget is not None and sum(found.values()) >= budget:
                    break
        return found

    def matching(self, text: str, only: Sequence[int] | None = None) -> set[int]:
        """The rules (indexes) matching ``text``, each searched in the whole text: what the
        prefilter must agree with."""
        data = project(text)
        return {i for i in (range(len(self.rules)) if only is None else only)
                if self.rules[i].engine.search(data) is not None}
