"""The value-like tokens of a text that no value reader read: an unread value fails closed.

A change whose value the readers of :mod:`memwarden.guards.values` do not read (an IP address, a
host in a top-level domain outside their list, an address spelt in another language or
percent-encoded, "//server/share", a lower-case BIC, "…9921", "75٪") held nothing to compare, so
it passed. Whatever the notation, such a value is a *token* that holds a digit (of any script),
"@", "://", a leading "//" or "\\\\", a currency or percent sign, a host-like dotted label
("globex.be"), or a word that spells an address ("dot", "arroba"). :func:`unread_tokens` returns
the tokens outside every span a reader matched, and every such token, keyed (NFKC, case-folded,
without the punctuation around it); :meth:`~memwarden.guards.value_set.Values.changes` holds a
change that has an unread token the established text does not hold, where that text holds a
procedure value.

Not value-like: dates ("2026-12-03", "3/12/2025", "03.12.2025"), times ("9:30", "9am", "17h"),
years (1900-2099), ordinals ("12th"), and a list's numbering at the start of a line ("1.", "2)",
"(3)"), and "(3)" or "[2]" anywhere (a note's or a copy's number): a restatement adds them freely, and no procedure value is one.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable

__all__ = ["unread_tokens"]

# (Python's re on patterns without nested repetition: linear in the text.)
_TOKEN = re.compile(r"\S+")
_STRIP = "\"'()[]{}<>.,;:!?*\u2026\u00ab\u00bb\u201c\u201d\u2018\u2019"
_NOT_VALUES = re.compile(r"^(?:\d{4}-\d{1,2}-\d{1,2}|\d{1,2}[./-]\d{1,2}[./-]\d{2,4}|\d{1,2}:\d{2}(?::\d{2})?(?:am|pm|h)?"
                         r"|\d{1,2}(?:am|pm|h|uhr)|(?:19|20)\d{2}s?|\d+(?:st|nd|rd|th|er|e|ème|º|ª)|\d{1,2}[./]\d{1,2})$")
_NUMBERING = re.compile(r"^\(?\d{1,2}[.)]$")
# A numbered note or copy anywhere ("(3)", "[2]"): a reference, no value.
_REFERENCE = re.compile(r"^[(\[]\d{1,2}[)\]][.,;:]?$")
_SPELLING = frozenset({"dot", "arroba", "chiocciola", "(at)", "[at]", "(dot)", "[dot]"})


def _value_like(token: str) -> bool:
    if "@" in token or "://" in token or token.startswith(("//", "\\\\")) or token in _SPELLING:
        return True
    if any(c.isdigit() or c in "%\u066a\u2030" or unicodedata.category(c) == "Sc" for c in token):
        return True
    # A host-like dotted label ("globex.be", "portal.globex.nu/pay"): labels of two letters or digits
    # or more, the last of letters (no "e.g", "v1.2" is read by its digit). (No pattern: linear.)
    labels = token.split("/")[0].split(":")[0].split(".")
    return (len(labels) > 1 and all(len(label) >= 2 and label.replace("-", "").isalnum() for label in labels)
            and labels[-1].isalpha())


def unread_tokens(nfkc: str, spans: Iterable[tuple[int, int, str]], ends: Iterable[int] = ()) -> dict[str, frozenset[str]]:
    """The value-like tokens of ``nfkc``, keyed, each with the families of the values that read
    it ("destination", "account", "amount"; none: unread). ``spans``: what the readers matched
    (start, end, family); ``ends``: where a number of money or a share they read ends. A
    token read as a value of another family than the established text holds (an IP address
    read as an account where a link was established) is compared as an unread one is."""
    covered: list[set[str] | None] = [None] * (len(nfkc) + 1)
    for start, end, family in spans:
        for i in range(max(start, 0), min(max(end, 0), len(nfkc))):
            covered[i] = (covered[i] or set()) | {family}
    ended = set(ends)
    tokens: dict[str, set[str]] = {}
    for match in _TOKEN.finditer(nfkc):
        raw = match.group()
        key = unicodedata.normalize("NFKC", raw).casefold().strip(_STRIP)
        if not key or not _value_like(key) or _NOT_VALUES.match(key):
            continue
        start = match.start()
        if _NUMBERING.match(raw) and (start == 0 or nfkc[start - 1] == "\n") or _REFERENCE.match(raw):
            continue
        families = tokens.setdefault(key, set())
        families.update(*(c for c in covered[start:match.end()] if c))
        if any(e in ended for e in range(start + 1, match.end() + 1)):
            families.add("amount")
    return {key: frozenset(families) for key, families in tokens.items()}
