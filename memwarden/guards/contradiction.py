"""``ContradictionCheck``: a write that contradicts what is already known about its subject
goes to review instead of silently competing with it.

A-MemGuard's observation is that a poisoned memory looks harmless alone and gives itself
away against its neighbours. This check asks the core for the nearest active records that
share a subject with the candidate and that the writer may read (``context.related``), and
compares the candidate with each using cheap heuristics:

* **negation flip**: the same statement with and without a negation ("p12 is allergic to
  penicillin" / "p12 is not allergic to penicillin"), in en/de/fr/es/it;
* **antonym swap**: the same statement with one word replaced by its opposite ("visitors
  are allowed" / "visitors are forbidden", "always" / "never", "increase" / "decrease");
* **number mismatch**: the same statement with a different quantity of the same unit
  ("5 mg" / "50 mg", "17:45" / "16:30", "3 times a day" / "6 times a day").

"The same statement" means: after folding (case, accents, look-alikes) and removing stop
words, the two sentences differ in at most ``max_diff`` content words besides the negation,
antonym or number. A hit quarantines the write; the reason names the kind of conflict and
the id of the related record (never content).

**Provenance trust** (issue 18, item 3): a fact written by an untrusted writer (an agent, a
tool or an external source by default) that *changes a procedure* compared with an
established record by a different writer is held for review, however much else differs:
a new destination (e-mail address, URL), account (IBAN, account, card or phone number),
credential (or where one is kept), amount or dose (same unit, another value), whom to trust or
who approves ("approved by ..."), or a check weakened ("checked by the giving nurse alone").
Values are compared as :mod:`memwarden.guards.values` keys them: an account's grouping
spaces, full-width digits, a link's "https://" or default port do not make a value new; a
destination's or a credential's dot or hyphen does, and so does a look-alike letter, a digit of
another script or an invisible character (the reason then says it looks like the established
value).
"Compared with" means the two records share at least ``min_shared`` content words (the same
topic) and a subject, or are among the nearest by words (``context.nearby``). A user's own write, or one by the established record's writer, is
not held by this rule: the owner of a value may change it. The owner is the writer *and*
its source: a user's agent does not own what the user wrote herself
(:func:`~memwarden.guards.validators.by_another`). The records compared are the nearest
among those by others alone, so that a writer's own records cannot crowd them out.

Limits: these are surface heuristics. They miss paraphrased contradictions ("is fine with
penicillin"), contradictions spread over several records, and conflicts with records the
writer cannot read (by design: a verdict must not leak them). They also flag legitimate
changes that are written as new records instead of as updates (an update supersedes its
predecessor and is never compared with it). Quarantine is the outcome because a reviewer,
not a regex, should decide which of two conflicting memories is true.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import lru_cache

from memwarden.guards.folding import fold, index_words, signature_tokens
from memwarden.guards.function_words import MOMENTS, NEGATIONS, NOT_CONTENT
from memwarden.guards.validators import Outcome, ValidationContext, Verdict, by_another
from memwarden.guards.substitution import substituted
from memwarden.guards.money import CURRENCY_CODES, MAGNITUDES, SC_CHARS
from memwarden.guards.values import procedure_values, skeleton
from memwarden.core.records import Kind, MemoryRecord, Source

__all__ = ["MAX_COMPARED_WORDS", "ContradictionCheck", "Statement", "conflict", "content_words", "content_words_of", "find_contradiction",
           "statement", "topic_stem"]


#: Distinct words of an untrusted procedure change compared with the records it may change,
#: counted as the lexical index reads words (:func:`~memwarden.guards.folding.index_words`, any
#: script): the nearest windows look for those records with every term
#: (memwarden/memory/nearby.py), and a longer change is held for review rather than compared
#: with some of its words.
MAX_COMPARED_WORDS = 512

_ANTONYMS = [
    ("allowed", "forbidden"), ("allowed", "prohibited"), ("allowed", "banned"), ("permitted", "forbidden"),
    ("permitted", "prohibited"), ("safe", "unsafe"), ("safe", "dangerous"), ("positive", "negative"),
    ("increase", "decrease"), ("increased", "decreased"), ("higher", "lower"), ("raise", "lower"),
    ("more", "less"), ("always", "never"), ("true", "false"), ("open", "closed"), ("enabled", "disabled"),
    ("enable", "disable"), ("approved", "rejected"), ("approved", "denied"), ("accepted", "rejected"),
    ("likes", "dislikes"), ("likes", "hates"), ("loves", "hates"), ("like", "dislike"), ("can", "cannot"),
    ("present", "absent"), ("stable", "unstable"), ("active", "inactive"), ("start", "stop"),
    ("started", "stopped"), ("continue", "stop"), ("continue", "discontinue"), ("before", "after"),
    ("morning", "evening"), ("yes", "no"), ("confirmed", "cancelled"), ("confirmed", "canceled"),
    ("available", "unavailable"), ("required", "optional"), ("mandatory", "optional"), ("paid", "unpaid"),
    ("left", "right"), ("with", "without"),
    ("erlaubt", "verboten"), ("sicher", "gefahrlich"), ("positiv", "negativ"), ("immer", "nie"),
    ("mag", "hasst"), ("erhohen", "senken"), ("morgens", "abends"), ("bezahlt", "unbezahlt"),
    ("links", "rechts"), ("mit", "ohne"),
    ("autorise", "interdit"), ("permis", "interdit"), ("toujours", "jamais"), ("positif", "negatif"),
    ("augmenter", "diminuer"), ("matin", "soir"), ("gauche", "droite"), ("avec", "sans"),
    ("permitido", "prohibido"), ("siempre", "nunca"), ("positivo", "negativo"), ("aumentar", "disminuir"),
    ("manana", "noche"), ("izquierda", "derecha"), ("con", "sin"),
    ("permesso", "vietato"), ("consentito", "vietato"), ("sempre", "mai"), ("aumentare", "diminuire"),
    ("mattina", "sera"), ("sinistra", "destra"), ("con", "senza"),
]
_OPPOSITE: dict[str, frozenset[str]] = {}
for _a, _b in _ANTONYMS:
    _OPPOSITE[_a] = _OPPOSITE.get(_a, frozenset()) | {_b}
    _OPPOSITE[_b] = _OPPOSITE.get(_b, frozenset()) | {_a}
# "with"/"without" and friends are opposites only when nothing else differs; they are
# stop words for the overlap test but must stay visible to the antonym test.
_KEEP = frozenset(w for pair in _ANTONYMS for w in pair)

_UNITS = (r"mg|mcg|ug|µg|\u03bcg|g|kg|ml|l|iu|units?|einheiten|unites|unidades|unita|%|mmol|mmhg|tablets?|tabletten|"
          r"comprimes?|comprimidos?|compresse|pills?|drops?|tropfen|gouttes|gotas|gocce|puffs?|times|mal|fois|veces|"
          r"volte|x|h|hours?|hrs?|stunden|heures|horas|ore|days?|tage|jours|dias|giorni|weeks?|wochen|semaines|"
          r"semanas|settimane|minutes?|mins?|minuten|minutos|minuti|am|pm|uhr|eur|euros?|euro|usd|dollars?|chf|"
          r"gbp|pounds?|years?|jahre|ans|anos|anni|kcal|cm|mm|m|km|"
          # (a share in words is no label: "receives 25 per cent", memwarden/guards/money.py)
          r"percent|per ?cent|pct|prozent|pour ?cent|por ?ciento|per ?cento|bps|bp|basis points?")
_QUANTITY = re.compile(rf"(?<![\w.])(\d+(?:[.,]\d+)?)\s*({_UNITS})(?![\w])")
_CLOCK = re.compile(r"(?<![\w:.])([01]?\d|2[0-3])[:.h]([0-5]\d)(?![\w:])")
_CURRENCY = re.compile(r"([$€£])\s*(\d+(?:[.,]\d+)?)")
# Money, which labels nothing: a symbol or an ISO code before the number, or a code after it
# ("USD 400" against "USD 40" read as two things labelled "usd", so the changed amount was
# never held).
_CODES = "|".join(sorted(CURRENCY_CODES, key=len, reverse=True))
# (Bounded repeats, each group three digits: linear time on Python's re, whose each start may
# scan only a few characters on.)
_AMOUNT = r"(?:\d{1,3}(?:[ '’.,]\d{3}){1,6}|\d+)(?:[.,]\d+)?"
_MAGNITUDE = "|".join(sorted(MAGNITUDES, key=len, reverse=True))
# (Any currency symbol, Unicode category Sc; a magnitude abbreviated "Mio.", "Mrd.".)
_SC = re.escape(SC_CHARS)
_MONEY = re.compile(rf"(?:[{_SC}]|\b(?:{_CODES}|rs)\b\.?)[ \t]{{0,3}}{_AMOUNT}(?:[ \t]{{0,3}}(?:{_MAGNITUDE})\b\.?)?|"
                    rf"\b{_AMOUNT}(?:[ \t]{{0,3}}(?:{_MAGNITUDE})\b\.?)?(?:[.,][-–])?[ \t]{{0,3}}"
                    rf"(?:[{_SC}]|(?:{_CODES})\b)")
# A fraction, a share of something ("1/4 of the fee", "¼" as NFKC writes it), labels nothing: its
# numerator read as a label made "1/4" and "3/4 of the fee" two things.
_FRACTION = re.compile(r"(?<![\d/.,])\d{1,3} ?[/\u2044\u2215] ?\d{1,3}(?![\d/])")
_CONTRACTED = {"can't": "can", "won't": "will", "shan't": "shall", "ain't": "is"}
_TOKEN = re.compile(r"[a-z]+(?:'[a-z]+)?|\d+(?:[.,]\d+)?")


def _spelt_out(tok: str) -> list[str]:
    if tok.endswith("n't"):
        stem = _CONTRACTED.get(tok, tok[:-3])
        return ["not", stem] if stem else ["not"]
    return [tok.replace("'", "")]


def _words(folded: str) -> list[str]:
    tokens = _TOKEN.findall(folded)
    if "'" not in folded:  # nothing to spell out
        return tokens
    out: list[str] = []
    for tok in tokens:
        if "'" in tok:
            out.extend(_spelt_out(tok))
        else:
            out.append(tok)
    return out


def _quantities(folded: str) -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for value, unit in _QUANTITY.findall(folded):
        unit = unit.rstrip("s") if len(unit) > 2 else unit
        found.setdefault(unit, set()).add(value.replace(",", "."))
    for hh, mm in _CLOCK.findall(folded):
        found.setdefault("clock", set()).add(f"{int(hh)}:{mm}")
    for symbol, value in _CURRENCY.findall(folded):
        found.setdefault(symbol, set()).add(value.replace(",", "."))
    return found


def _content(words: list[str]) -> set[str]:
    kept = set(words) - NOT_CONTENT
    return {w for w in kept if not w[0].isdigit()}


@dataclass(frozen=True)
class Statement:
    """A text prepared for comparison, once: folded, its words, content words and negation,
    and the stems of its content words of three letters or more (:func:`topic_stem`), but
    those every link has ("https", "www", "com")."""

    folded: str
    words: tuple[str, ...]
    content: frozenset[str]
    negated: bool
    topic: frozenset[str] = frozenset()


_INFLECTION = re.compile(r"(?:ing|ed|es|s)$")
# The parts every link has: two texts that each hold a link share them and nothing else
# ("https://docs.python.org" and "https://shop.example.com" are no topic).
_LINK_WORDS = frozenset("http https www com org net html htm php aspx".split())


def topic_stem(word: str) -> str:
    """What two inflections of a content word share, for telling that two texts are about the
    same thing: an English ending dropped where four letters stay, then six letters at most
    ("invoice"/"invoices", "approved"/"approval", "Rechnung"/"Rechnungen" are one topic; an
    agent's "Pay the Acme invoice to ..." is about Acme's "invoices are paid to ...")."""
    bare = _INFLECTION.sub("", word)
    return (bare if len(bare) >= 4 else word)[:6]


# Related records come back write after write (the same subject's records): each is prepared once.
@lru_cache(maxsize=1024)
def statement(text: str) -> Statement:
    """``text`` prepared for :func:`conflict`."""
    folded = fold(text)
    words = _words(folded)
    content = frozenset(_content(words))
    return Statement(folded, tuple(words), content, any(w in NEGATIONS for w in words),
                     frozenset(topic_stem(w) for w in content - _LINK_WORDS if len(w) > 2))


# The word alternative of _TOKEN alone: a number never covers a letter, so this finds the
# same words as _TOKEN does, without the numbers that content words leave out anyway.
_WORD = re.compile(r"[a-z]+(?:'[a-z]+)?")


def content_words(text: str, *, folded: bool = False) -> frozenset[str]:
    """The content words of ``text`` as :func:`find_contradiction` compares them (folded, no
    stop words, negations or numbers): two statements can conflict only if they share some.
    ``folded``: ``text`` is already folded."""
    return content_words_of(signature_tokens(text, folded=folded))


def content_words_of(tokens: Iterable[str]) -> frozenset[str]:
    """:func:`content_words` of a text from its signature tokens
    (:func:`~memwarden.guards.injection.signature_tokens`), which lesson sketches have at hand.

    A word of _WORD is made of letters and apostrophes, which signature tokens keep whole:
    each word lies within one token. So the words are the all-letter tokens, plus the words
    _WORD finds in the few others (with an apostrophe, or a number written as "#"); words
    with an apostrophe are then spelt out as :func:`statement` spells them.
    """
    distinct = set(tokens)
    found = set(filter(str.isalpha, distinct))
    for token in distinct - found:
        for word in _WORD.findall(token):
            if "'" in word:
                found.update(_spelt_out(word))
            else:
                found.add(word)
    return frozenset(found - NOT_CONTENT)


# A number that measures nothing (no unit, no clock, no currency) labels something: "room
# 305", "patient 12", "invoice 4", "class 7B". Words and numbers are read on the text with its
# quantities blanked, so "5 mg" is a dose and "12" in "patient 12" a label. A label is the
# word it follows (its *head*: "room", "patient") with its value: a number after a function
# word or a moment ("since 2024", "in March 2025") labels nothing, it dates.
_LABEL_WORD = re.compile(r"\w+")
# Words that stand between a head and its number ("invoice no. 4", "Zimmer Nr. 12").
_NUMBER_WORDS = frozenset("no nr n num number nummer numero".split())
# Words between the ends of a range ("1 to 5", "1 bis 5", "1 à 5", "1 a 5", "1 al 5").
_RANGE = frozenset("to till until through bis a al au alle".split())


def _label_key(value: str) -> str:
    """A label's value as a reader reads it: look-alike digits and letters folded ("l2", "١٢"
    and "12" are one patient to whoever reads them) and leading zeros dropped ("012")."""
    return skeleton(value).lstrip("0") or "0"


@lru_cache(maxsize=1024)
def _labels(folded: str) -> frozenset[tuple[str, str]]:
    """The labels of a folded text, as (head, key) pairs: its numbers (and codes with a digit)
    outside quantities, after a content word."""
    for pattern in (_CLOCK, _QUANTITY, _MONEY, _FRACTION):  # a clock first: "17:45 Uhr" is no "45 Uhr"
        folded = pattern.sub(" ", folded)
    words = _LABEL_WORD.findall(folded)
    found = set()
    for i, word in enumerate(words):
        if not any(c.isdigit() for c in word) or (i > 1 and words[i - 1] in _RANGE and words[i - 2].isdigit()):
            continue
        if i + 2 < len(words) and words[i + 1] in _RANGE and words[i + 2].isdigit():
            continue  # a range ("questions 1 to 5") counts, it labels nothing
        j = i - 1
        if j >= 1 and words[j] in _NUMBER_WORDS:
            j -= 1
        head = words[j] if j >= 0 else ""
        if head.isalpha() and len(head) > 1 and head not in NOT_CONTENT and head not in MOMENTS:
            found.add((head, _label_key(word)))
    return frozenset(found)


def _other_things(a: Statement, b: Statement) -> bool:
    """True when ``a`` and ``b`` label different things: a head labelled on both sides, and no
    head both sides label with the same value ("the meeting in room 305 ..." and "the meeting
    in room 21 ..."). Two statements about different rooms, patients or invoices do not
    contradict each other, however alike their words. A label on one side only ("(ref 44)"),
    a date ("since 2025"), a look-alike of the same number ("patient l2") or one thing both
    name alike ("patient 12, room 3" and "patient 12, room 4") does not make another thing."""
    la, lb = _labels(a.folded), _labels(b.folded)
    heads = {h for h, _ in la} & {h for h, _ in lb}
    return bool(heads) and not any(label in lb for label in la if label[0] in heads)


def conflict(a: Statement, b: Statement, *, max_diff: int = 1, min_shared: int = 2) -> str | None:
    """:func:`find_contradiction` on prepared statements."""
    found = _conflict(a, b, max_diff=max_diff, min_shared=min_shared)
    # Checked last: only a pair that would conflict pays for reading its labels.
    return None if found is None or _other_things(a, b) else found


def _conflict(a: Statement, b: Statement, *, max_diff: int, min_shared: int) -> str | None:
    ca, cb = a.content, b.content
    if len(ca & cb) < min_shared:
        return None
    diff = ca ^ cb
    if a.negated != b.negated and len(diff) <= max_diff:
        return "negation"
    # Antonyms: one word swapped for its opposite, everything else the same.
    sa, sb = set(a.words) & _KEEP | ca, set(b.words) & _KEEP | cb
    for word in sa - sb:
        for opposite in _OPPOSITE.get(word, ()):
            if opposite in sb - sa:
                rest = (sa - {word}) ^ (sb - {opposite})
                if len(rest - _KEEP) <= max_diff and not (rest & _KEEP):
                    return "antonym"
    # Numbers: the same unit with different values, the words otherwise the same.
    if len(diff) <= max_diff:
        qa, qb = _quantities(a.folded), _quantities(b.folded)
        for unit in qa.keys() & qb.keys():
            if qa[unit] != qb[unit] and not (qa[unit] & qb[unit]):
                return f"number:{unit}"
    return None


def find_contradiction(a: str, b: str, *, max_diff: int = 1, min_shared: int = 2) -> str | None:
    """The kind of conflict between statements ``a`` and ``b`` ("negation", "antonym",
    "number:<unit>"), or None when they look compatible (or unrelated)."""
    return conflict(statement(a), statement(b), max_diff=max_diff, min_shared=min_shared)


class ContradictionCheck:
    """Quarantine a write that likely contradicts a related record about the same subject.

    ``k``: how many related records to compare with (nearest first).
    ``kinds``: the record kinds compared (events are about moments, so they may differ); an
    untrusted writer's procedure change is compared whatever kind it declares.
    ``max_diff``: content words allowed to differ besides the conflicting one.
    ``max_chars``: longer content is not one statement and is not compared (two texts only
    conflict here when they differ in at most ``max_diff`` content words); the procedure
    values of longer content are still compared (their patterns run in linear time).
    ``untrusted_sources`` / ``min_trust``: whose procedure-changing facts are held for review
    (see the module docstring); ``min_shared``: content words two records must share to be
    about the same thing; ``nearby_k``: the size of each window of records by other writers
    nearest by words (``context.nearby``: those holding what the change may change, then
    any) a procedure change is compared with, as many principals as must collude to push the
    established record out (comparing is cheap; each compared record may also hold a benign
    write). ``review_blind``: an untrusted writer's record that the writer itself may not read
    goes to review (see the module docstring); False accepts it unchecked. ``retellings``: an
    untrusted writer's account of a subject's record by another writer that puts another name
    or number in it goes to review (:mod:`memwarden.guards.substitution`); off by default, as
    faithful summaries that restate a number otherwise read as retellings too.
    """

    name = "contradiction"
    most = Outcome.QUARANTINE

    def __init__(self, *, k: int = 5, kinds: tuple[Kind, ...] = (Kind.FACT, Kind.RULE, Kind.PREFERENCE),
                 max_diff: int = 1, max_chars: int = 1000,
                 untrusted_sources: tuple[str | Source, ...] = (Source.AGENT, Source.TOOL, Source.EXTERNAL),
                 min_trust: float = 0.5, min_shared: int = 2, nearby_k: int = 20, review_blind: bool = True,
                 retellings: bool = False) -> None:
        if k < 1 or nearby_k < 1:
            raise ValueError("k and nearby_k must be at least 1")
        if min_shared < 1:
            raise ValueError("min_shared must be at least 1")
        self.k = k
        self.kinds = frozenset(Kind(x) for x in kinds)
        self.max_diff = max_diff
        self.max_chars = max_chars
        self.untrusted_sources = frozenset(Source(s) for s in untrusted_sources)
        self.min_trust = min_trust
        self.min_shared = min_shared
        self.nearby_k = nearby_k
        self.review_blind = review_blind
        self.retellings = retellings

    def untrusted(self, record: MemoryRecord) -> bool:
        """True when ``record``'s procedure-changing facts need review."""
        return record.source in self.untrusted_sources or record.trust < self.min_trust

    def check(self, record: MemoryRecord, context: ValidationContext) -> Verdict:
        """Compare the candidate with the version it replaces and its nearest related records."""
        untrusted = self.untrusted(record)
        # The version another writer established, which the write replaces or which the
        # writer's own updates replaced before it, is compared whatever the new version's kind,
        # subjects and words: an update or a keyed put that drops the subjects, changes the
        # kind or rewrites every other word still changes that record's procedure, and so does
        # a chain of updates that each change nothing.
        replaced = context.replaced if context.established is None else context.established
        if untrusted and replaced is not None and replaced.kind in self.kinds and by_another(record, replaced):
            changed = self._changes_procedure(record, statement(record.content), replaced,
                                              statement(replaced.content), same_record=True)
            if changed:
                return Verdict(validator=self.name, outcome=Outcome.QUARANTINE,
                               reason=f"{changed} of the record it replaces ({replaced.id}) by another writer: "
                                      "needs review")
        # The writer declares the kind and the subjects too: an untrusted writer's procedure
        # value is compared whatever kind it is declared as (an "event" that changes the
        # account) and whatever subjects (or none) it names.
        procedural = untrusted and procedure_values(record.content).any()
        compared = record.kind in self.kinds
        # A writer that may not read what it writes is shown none of the records it could
        # contradict (a verdict must not leak them), so nothing here can decide: a person does.
        if untrusted and self.review_blind and (compared or procedural) and context.blind():
            return Verdict(validator=self.name, outcome=Outcome.QUARANTINE,
                           reason="written by an untrusted writer that may not read what it writes: the records "
                                  "it may contradict cannot be compared; needs review")
        if not (compared or procedural) or not (record.subjects or untrusted):
            return Verdict(validator=self.name, outcome=Outcome.ACCEPT)
        short = len(record.content) <= self.max_chars
        if not short and not untrusted:
            return Verdict(validator=self.name, outcome=Outcome.ACCEPT, reason="too long to compare as one statement")
        mine = statement(record.content)
        about = bool(record.subjects)  # the subject index has nothing for a record about nobody
        for other in self._comparable(record, context.related(record, self.k) if short and about and compared else []):
            found = conflict(mine, statement(other.content), max_diff=self.max_diff)
            if found:
                return Verdict(validator=self.name, outcome=Outcome.QUARANTINE,
                               reason=f"likely contradicts related record {other.id} ({found})")
        # Established procedures are the nearest records by *other* writers, ranked among
        # themselves: records of the writer's own would otherwise fill the k nearest.
        established = context.related_by_others(record, self.k) if untrusted and about else []
        about_it = list(self._comparable(record, established))
        if procedural and len(set(index_words(record.content))) > MAX_COMPARED_WORDS:
            return Verdict(validator=self.name, outcome=Outcome.QUARANTINE,
                           reason=f"a procedure value in more than {MAX_COMPARED_WORDS} distinct words, more than "
                                  "are compared with the records it may change: needs review")
        if procedural:
            # A change written under another subject (or none) is compared with what a
            # reader's search would find beside it too.
            seen = {r.id for r in established}
            established += [r for r in context.nearby(record, self.nearby_k) if r.id not in seen]
        for other in self._comparable(record, established):
            changed = self._changes_procedure(record, mine, other, statement(other.content))
            if changed:
                return Verdict(validator=self.name, outcome=Outcome.QUARANTINE,
                               reason=f"{changed} of related record {other.id} by another writer: needs review")
        # Any other value of a record about the same subject (a name, a year): only the
        # subject's records, which the writer declared its text to be about.
        for other in about_it if self.retellings and short and compared else ():
            kind = self._substitutes(mine, record, other)
            if kind:
                return Verdict(validator=self.name, outcome=Outcome.QUARANTINE,
                               reason=f"puts another {kind} in the account of related record {other.id} "
                                      "by another writer: needs review")
        return Verdict(validator=self.name, outcome=Outcome.ACCEPT)

    def _comparable(self, record: MemoryRecord, others: Iterable[MemoryRecord]) -> Iterator[MemoryRecord]:
        """The records of ``others`` that ``record`` is compared with: not itself nor the
        version it replaces, and of a compared kind."""
        return (o for o in others if o.id not in (record.id, record.supersedes) and o.kind in self.kinds)

    def _substitutes(self, mine: Statement, record: MemoryRecord, other: MemoryRecord) -> str | None:
        """The kind of value (:func:`~memwarden.guards.substitution.substituted`) the
        candidate replaces in an established record about the same subject and topic."""
        theirs = statement(other.content)
        if len(mine.topic & theirs.topic) < self.min_shared or len(other.content) > self.max_chars \
                or _other_things(mine, theirs):
            return None
        return substituted(record.content, other.content)

    def _changes_procedure(self, record: MemoryRecord, mine: Statement, other: MemoryRecord,
                           theirs: Statement, *, same_record: bool = False) -> str | None:
        """What the candidate changes of an established record's procedure, or None.
        ``same_record``: ``other`` is the version the candidate replaces, about the same thing
        whatever their words."""
        # Words of two letters or fewer are mostly pieces of codes ("gb" of an IBAN): they
        # do not make two texts about the same thing; inflections of one word do.
        if not same_record and len(mine.topic & theirs.topic) < self.min_shared:
            return None
        new, old = procedure_values(record.content), procedure_values(other.content)
        if new.overflow:
            return "holds more values than can be compared with those"
        for category, value, established in new.changes(old):
            what = category.split(":", 1)[0]
            # An amount of another labelled thing (class 7C's trip, invoice 7) changes nothing
            # established; a destination, an account or an approver is held whatever it is
            # said to be for (a "new invoice" paid to a new account is the fraud itself).
            if what == "amount" and not same_record and _other_things(mine, theirs):
                continue
            if skeleton(new.raw.get(value, value), what) == skeleton(old.raw.get(established, established), what):
                return f"changes the {what} to a look-alike"
            return f"changes the {what}"
        if new.weakens(old):
            return "weakens a check"
        return None
