"""The syntax of the injection detector's rules: a small parser of the regex subset they use,
what a parsed pattern says about its matches, and its RE2 form.

The rules (:mod:`memwarden.guards.injection`) are written in Python's ``re`` syntax and run on
RE2 (:mod:`memwarden.guards.ruleset`), whose matching time is linear in the text, where a
backtracking engine can take quadratic or exponential time on text an attacker writes. RE2
has no look-arounds, back-references or possessive quantifiers, so this subset has none
either: anything outside it is refused when the rules are built, naming the construct and
where it is.

The subset: literal characters and escaped punctuation, ``.``, the classes ``\\s \\S \\w \\W
\\d`` and bracket classes (ranges within ``a-z`` or ``0-9``), the anchors ``\\b \\B ^ $ \\A
\\Z``, groups ``(...)`` and ``(?:...)``, alternation, and the quantifiers ``? * + {m} {m,}
{,n} {m,n}``, greedy or lazy. Rules read folded (lower-case) text, so they hold no upper-case
letter, and no non-ASCII character but those of :data:`RESERVED`. Within the subset a source
means the same to Python's ``re`` (with ``re.MULTILINE``) as its :func:`to_re2` form means to
RE2 on the projected text (``tests/test_ruleset.py`` checks this on random and corpus texts).

What the prefilter needs to know of a rule is read off the parsed pattern (in place of
CPython's private ``re._parser``): :func:`literal_sets`, :func:`start_literals` and
:func:`max_width`.
"""

from __future__ import annotations

import string
from dataclasses import dataclass

__all__ = ["RESERVED", "Alt", "Anchor", "Group", "Lit", "Node", "Repeat", "RuleSyntaxError", "Seq", "Set", "literal_sets",
           "max_width", "not_followed_by", "parse", "start_literals", "to_re2", "top_level_alternatives"]

# Non-ASCII characters a rule may hold, and the ASCII control character the engine reads each
# one as (it reads every character as one ASCII byte: memwarden.guards.ruleset.project).
RESERVED = {"“": "\x02", "«": "\x03", "»": "\x04", "‹": "\x05", "›": "\x06"}

# Characters that may stand for themselves in a rule (escaped or not).
_PLAIN = frozenset(string.ascii_lowercase + string.digits + string.punctuation + " \n") | frozenset(RESERVED)
_CLASS_ESCAPES = frozenset("sSwWd")
_ANCHOR_ESCAPES = {"b": r"\b", "B": r"\B", "A": r"\A", "Z": r"\Z"}


class RuleSyntaxError(ValueError):
    """A rule is malformed or uses a construct outside the subset: says which, and where."""

    def __init__(self, source: str, at: int, what: str) -> None:
        super().__init__(f"{what}, at character {at} of the rule {source!r}")


@dataclass(frozen=True, slots=True)
class Lit:
    """One literal character."""

    char: str


@dataclass(frozen=True, slots=True)
class Set:
    """A class of characters: ``.`` (``dot``), an escape such as ``\\s`` (``items == ("\\\\s",)``,
    not ``bracket``), or a bracket class, whose ``items`` are characters, ``(low, high)``
    ranges and escapes (two characters, ``"\\\\w"``)."""

    items: tuple[str | tuple[str, str], ...] = ()
    negated: bool = False
    bracket: bool = False
    dot: bool = False

    @property
    def is_space(self) -> bool:
        """The class is ``\\s``: whitespace, a phrase's word gap."""
        return not self.bracket and self.items == ("\\s",)


@dataclass(frozen=True, slots=True)
class Anchor:
    """A zero-width assertion: ``\\b``, ``\\B``, ``^``, ``$``, ``\\A`` or ``\\Z``."""

    kind: str


@dataclass(frozen=True, slots=True)
class Seq:
    """Items matched one after another."""

    items: tuple[Node, ...]


@dataclass(frozen=True, slots=True)
class Alt:
    """Alternatives, tried in order."""

    options: tuple[Seq, ...]


@dataclass(frozen=True, slots=True)
class Group:
    """A group, capturing or not (the engine captures nothing)."""

    body: Seq | Alt


@dataclass(frozen=True, slots=True)
class Repeat:
    """``body`` repeated ``low`` to ``high`` times (``high`` None: no limit)."""

    body: Node
    low: int
    high: int | None
    lazy: bool = False


Node = Lit | Set | Anchor | Seq | Alt | Group | Repeat


class _Parser:
    def __init__(self, source: str) -> None:
        self.source, self.at, self.depth = source, 0, 0
        self.top_spans: list[tuple[int, int]] = []  # the top-level alternatives, as slices

    def fail(self, what: str, at: int | None = None) -> RuleSyntaxError:
        return RuleSyntaxError(self.source, self.at if at is None else at, what)

    def peek(self, n: int = 1) -> str:
        return self.source[self.at:self.at + n]

    def alternatives(self) -> Seq | Alt:
        options = []
        while True:
            start = self.at
            options.append(self.sequence())
            if self.depth == 0:
                self.top_spans.append((start, self.at))
            if self.peek() != "|":
                break
            self.at += 1
        return options[0] if len(options) == 1 else Alt(tuple(options))

    def sequence(self) -> Seq:
        items: list[Node] = []
        source, end = self.source, len(self.source)
        while self.at < end and source[self.at] not in "|)":
            items.append(self.quantified(self.atom()))
        return Seq(tuple(items))

    def atom(self) -> Node:
        start, ch = self.at, self.source[self.at]
        self.at += 1
        if ch == "(":
            if self.peek(2) == "?:":
                self.at += 2
            elif self.peek() == "?":
                raise self.fail("look-arounds, inline flags and named groups are not supported (RE2 has no "
                                "look-arounds: write the condition as text the rule consumes)", start)
            self.depth += 1
            body = self.alternatives()
            self.depth -= 1
            if self.peek() != ")":
                raise self.fail("missing ')'", start)
            self.at += 1
            return Group(body)
        if ch == "[":
            return self.bracket(start)
        if ch == ".":
            return Set(dot=True)
        if ch in "^$":
            return Anchor(ch)
        if ch == "\\":
            return self.escape(start)
        if ch in "*+?" or (ch == "{" and self.counted(start) is not None):
            raise self.fail(f"nothing to repeat before {ch!r}", start)
        return Lit(self.plain(ch, start))

    def plain(self, ch: str, at: int) -> str:
        if ch not in _PLAIN:
            raise self.fail(f"character {ch!r} is not supported (rules read folded, lower-case text; a non-ASCII "
                            f"character must be listed in RESERVED)", at)
        return ch

    def escape(self, start: int) -> Node:
        ch = self.peek()
        self.at += 1
        if ch in _CLASS_ESCAPES:
            return Set(("\\" + ch,))
        if ch in _ANCHOR_ESCAPES:
            return Anchor(_ANCHOR_ESCAPES[ch])
        if ch == "n":
            return Lit("\n")
        if not ch or ch.isalnum():
            raise self.fail(f"escape \\{ch} is not supported", start)
        return Lit(self.plain(ch, start))

    def bracket(self, start: int) -> Set:
        negated = self.peek() == "^"
        self.at += negated
        items: list[str | tuple[str, str]] = []
        while True:
            ch = self.peek()
            if not ch:
                raise self.fail("missing ']'", start)
            self.at += 1
            if ch == "]" and items:
                return Set(tuple(items), negated=negated, bracket=True)
            if ch == "\\":
                esc = self.peek()
                self.at += 1
                if esc in _CLASS_ESCAPES:
                    items.append("\\" + esc)
                    continue
                if esc == "n":
                    ch = "\n"
                elif not esc or esc.isalnum():
                    raise self.fail(f"escape \\{esc} is not supported in a class", self.at - 2)
                else:
                    ch = esc
            ch = self.plain(ch, self.at - 1)
            if self.peek() == "-" and self.peek(2)[1:] not in ("]", ""):
                high = self.source[self.at + 1]
                self.at += 2
                if not ((ch.islower() and high.islower()) or (ch.isdigit() and high.isdigit())) or high < ch:
                    raise self.fail(f"range {ch}-{high} is not supported (only ranges within a-z or 0-9)", self.at - 3)
                items.append((ch, high))
            else:
                items.append(ch)

    def counted(self, at: int) -> tuple[int, int | None] | None:
        """The bounds of ``{m}``, ``{m,}``, ``{,n}`` or ``{m,n}`` starting at ``at``, or None
        (Python reads any other '{' as a literal)."""
        end = self.source.find("}", at)
        low, comma, high = self.source[at + 1:end].partition(",") if end > at else ("x", "", "")
        if not (low.isdigit() or (not low and comma and high.isdigit())) or not (high.isdigit() or not high):
            return None
        return int(low or 0), (int(high) if high else None) if comma else int(low)

    def quantified(self, atom: Node) -> Node:
        ch = self.peek()
        if not ch or ch not in "*+?{":
            return atom
        if ch in ("*", "+", "?"):
            self.at += 1
            low, high = {"*": (0, None), "+": (1, None), "?": (0, 1)}[ch]
        elif ch == "{" and (bounds := self.counted(self.at)) is not None:
            self.at = self.source.index("}", self.at) + 1
            low, high = bounds
            if high is not None and high < low:
                raise self.fail(f"repeat {{{low},{high}}}: the maximum is below the minimum")
        else:
            return atom
        if isinstance(atom, Anchor):
            raise self.fail(f"cannot repeat the anchor {atom.kind}")
        lazy = self.peek() == "?"
        self.at += lazy
        if self.peek() == "+":
            raise self.fail("possessive quantifiers are not supported")
        if self.peek() in ("*", "?") or (self.peek() == "{" and self.counted(self.at) is not None):
            raise self.fail("multiple repeat")
        return Repeat(atom, low, high, lazy)


def _parser(source: str) -> tuple[_Parser, Seq | Alt]:
    parser = _Parser(source)
    node = parser.alternatives()
    if parser.at != len(source):
        raise parser.fail("unbalanced ')'")
    return parser, node


def parse(source: str) -> Seq | Alt:
    """The parsed pattern; raises :class:`RuleSyntaxError` outside the subset."""
    return _parser(source)[1]


def top_level_alternatives(source: str) -> list[tuple[str, Seq]]:
    """``a|b|c`` -> ``[("a", <a parsed>), ("b", ...), ("c", ...)]``: the alternatives outside
    any group, as written and parsed."""
    parser, node = _parser(source)
    options = node.options if isinstance(node, Alt) else (node,)
    return [(source[start:end], option) for (start, end), option in zip(parser.top_spans, options)]


# -- look-aheads without look-arounds ---------------------------------------------------------


def not_followed_by(words: list[str], *, gap_before: bool = False, gap_after: bool = False) -> str:
    """A pattern that matches, consuming a few characters, exactly where the text does not go
    on with one of ``words``: the look-ahead ``(?!\\s+(?:w1|w2|...)\\s+)`` written without
    look-arounds (the ``\\s+`` before the words with ``gap_before``, after with ``gap_after``).
    A word is lower-case letters and punctuation, or ``\\d`` for any digit.

    Where a rule only asks whether it matches, the two mean the same: the pattern reads the
    text one character at a time along the words it could still be, and stops at the first
    character no word goes on with, or at the end of the text. The gap before the words is
    read whole (what follows it is no whitespace), as the look-ahead's ``\\s+`` would be.
    """
    trie: dict = {}
    for word in words:
        node = trie
        for symbol in ([word] if word == "\\d" else word):
            node = node.setdefault(symbol, {})
        node[None] = {}  # a word ends here

    def atom(symbol: str, in_class: bool) -> str:
        if symbol in ("\\d", "\\s"):
            return symbol
        return "\\" + symbol if symbol in ("\\]^-[" if in_class else "\\.^$|?*+()[]{}") else symbol

    def proof(node: dict, *, no_space: bool) -> str | None:
        ends = None in node
        if ends and not gap_after:
            return None  # one of the words follows
        nexts = sorted(k for k in node if k is not None)
        # A character no word goes on with (after a whole word, whitespace would complete it).
        other = "".join(atom(k, True) for k in nexts + ["\\s"] * (ends or no_space))
        options = [r"\Z", f"[^{other}]"]
        for k in nexts:
            rest = proof(node[k], no_space=False)
            if rest is not None:
                options.append(f"{atom(k, False)}(?:{rest})")
        return "|".join(options)

    words_proof = proof(trie, no_space=gap_before)
    return rf"(?:\Z|\S|\s+(?:{words_proof}))" if gap_before else f"(?:{words_proof})"


# -- what a pattern says about its matches ---------------------------------------------------

# Literals shorter than this occur in almost any text: a prefilter keyed on them saves nothing.
MIN_LITERAL = 3


def _items(node: Node) -> tuple[Node, ...]:
    return node.items if isinstance(node, Seq) else (node,)


def _minimal(lits: frozenset[str], *, prefixes: bool) -> frozenset[str]:
    """``lits`` without those that hold another one (at their start, with ``prefixes``): where
    the longer one occurs, the shorter one does too."""
    return frozenset(a for a in lits if not any(b != a and (a.startswith(b) if prefixes else b in a) for b in lits))


def literal_sets(node: Node, score) -> list[frozenset[str]]:
    """Sets of literals of which every match of ``node`` holds at least one, each at least
    MIN_LITERAL long. A word gap (``\\s+``) inside a phrase reads as one space, as the
    prefilter reads text; a literal line break ends a phrase. ``score`` ranks sets (higher:
    rarer); of a group, the rarest of its own sets is kept."""
    found: list[frozenset[str]] = []
    run: list[str] = []

    def add(lits: frozenset[str] | None) -> None:
        lits = _minimal(frozenset(lit.strip() for lit in lits), prefixes=False) if lits else None
        if lits and min(map(len, lits)) >= MIN_LITERAL:
            found.append(lits)

    def flush() -> None:
        if run:
            add(frozenset({"".join(run)}))
            run.clear()

    for item in _items(node):
        if isinstance(item, Lit) and item.char != "\n":
            run.append(item.char)
            continue
        if isinstance(item, Repeat) and not item.lazy and item.low >= 1 and run and isinstance(item.body, Set) \
                and item.body.is_space:
            run.append(" ")
            continue
        flush()
        if isinstance(item, Group):
            add(_required(item.body, score))
        elif isinstance(item, Alt):
            subs = [_required(option, score) for option in item.options]
            if all(subs):
                add(frozenset().union(*subs))
        elif isinstance(item, Repeat) and item.low >= 1:
            add(_required(item.body, score))
    flush()
    return found


def _required(node: Node, score) -> frozenset[str] | None:
    return max(literal_sets(node, score), key=score, default=None)


def start_literals(node: Node) -> frozenset[str] | None:
    """Literals one of which every match of ``node`` begins with, character for character, or
    None when the pattern does not say. Only literal characters up to the first word gap
    count (a gap may be two characters in a derived text, where a one-space literal is not
    found)."""
    items = _items(node)
    i = 0
    while i < len(items) and isinstance(items[i], Anchor):
        i += 1
    run: list[str] = []
    while i < len(items) and isinstance(items[i], Lit) and items[i].char != "\n":
        run.append(items[i].char)
        i += 1
    if run:
        return frozenset({"".join(run)})
    if i == len(items):
        return None
    first = items[i]
    if isinstance(first, Group):
        return start_literals(first.body)
    if isinstance(first, Alt):
        subs = [start_literals(option) for option in first.options]
        return _minimal(frozenset().union(*subs), prefixes=True) if all(subs) else None
    if isinstance(first, Repeat) and first.low >= 1:
        return start_literals(first.body)
    return None


def max_width(node: Node) -> int | None:
    """The most characters a match of ``node`` spans (None: no limit), a word gap (``\\s+``,
    ``\\s*``) counting as one character, as in folded text."""
    if isinstance(node, Anchor):
        return 0
    if isinstance(node, (Lit, Set)):
        return 1
    if isinstance(node, Group):
        return max_width(node.body)
    if isinstance(node, Alt):
        widths = [max_width(option) for option in node.options]
        return None if None in widths else max(widths)
    if isinstance(node, Seq):
        widths = [max_width(item) for item in node.items]
        return None if None in widths else sum(widths)
    if isinstance(node.body, Set) and node.body.is_space and node.low <= 1 and node.high is None:
        return 1
    inner = max_width(node.body)
    return None if node.high is None or inner is None else inner * node.high


# -- the RE2 form ---------------------------------------------------------------------------

# As RE2 reads the engine's projected text: a non-ASCII decimal digit is read as "B" there, so
# \d is [0-9B]; \s, \w, \W, \S and \b read the projection as Python reads the original.
_RE2_CLASS = {"\\d": "0-9B"}


def _re2_char(ch: str, in_class: bool) -> str:
    if ch in RESERVED:
        return f"\\x{ord(RESERVED[ch]):02x}"
    if ch == "\n":
        return r"\n"
    return "\\" + ch if ch in ("\\]^-[" if in_class else "\\.^$|?*+()[]{}") else ch


def to_re2(node: Node) -> str:
    """``node`` in RE2 syntax, for the engine's projected text (no group captures)."""
    if isinstance(node, Lit):
        return _re2_char(node.char, False)
    if isinstance(node, Set):
        if node.dot:
            return "."
        if not node.bracket:
            return "[0-9B]" if node.items == ("\\d",) else node.items[0]
        parts = [f"{_re2_char(item[0], True)}-{_re2_char(item[1], True)}" if isinstance(item, tuple)
                 else _RE2_CLASS.get(item, item) if len(item) == 2 else _re2_char(item, True) for item in node.items]
        return "[" + "^" * node.negated + "".join(parts) + "]"
    if isinstance(node, Anchor):
        return r"\z" if node.kind == r"\Z" else node.kind
    if isinstance(node, Seq):
        return "".join(map(to_re2, node.items))
    if isinstance(node, Alt):
        return "|".join(map(to_re2, node.options))
    if isinstance(node, Group):
        return f"(?:{to_re2(node.body)})"
    bounds = {(0, None): "*", (1, None): "+", (0, 1): "?"}.get((node.low, node.high))
    if bounds is None:
        bounds = f"{{{node.low}}}" if node.low == node.high else f"{{{node.low},{'' if node.high is None else node.high}}}"
    return to_re2(node.body) + bounds + "?" * node.lazy
