"""The comparison form of a text (:func:`fold`), shared by the injection detector, its phrase
cues, the lessons and the contradiction check: NFKC, look-alike letters to ASCII, invisible
characters removed, case folded, accents removed, whitespace collapsed."""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

__all__ = ["BIDI_RE", "COMBINING_RE", "CONFUSABLES", "CONFUSABLES_RE", "INDEX_WORD", "ZERO_WIDTH_RE", "fold", "fold_run",
           "index_words", "prepare_rule", "signature_tokens"]

# Look-alike letters that NFKC leaves alone: Cyrillic and Greek letters drawn like Latin ones,
# plus a few Latin-extended and symbol forms. (NFKC already folds full-width forms and the
# mathematical alphanumerics.) Only letters that *look* Latin are mapped, so that the map can
# double as a mixed-script check; micro sign / mu (as in "250 µg") is deliberately absent.
CONFUSABLES = {
    # Cyrillic lower case
    "а": "a", "в": "b", "е": "e", "ё": "e", "к": "k", "м": "m", "н": "h", "о": "o", "р": "p",
    "с": "c", "т": "t", "у": "y", "х": "x", "і": "i", "ї": "i", "ј": "j", "ѕ": "s", "ԁ": "d",
    "ԛ": "q", "ԝ": "w", "һ": "h", "ӏ": "l", "ɡ": "g", "ս": "u", "ո": "n", "օ": "o", "ց": "g",
    # Cyrillic upper case
    "А": "A", "В": "B", "Е": "E", "К": "K", "М": "M", "Н": "H", "О": "O", "Р": "P", "С": "C",
    "Т": "T", "У": "Y", "Х": "X", "І": "I", "Ј": "J", "Ѕ": "S", "Ԁ": "D", "Ԛ": "Q", "Ԝ": "W",
    "Ӏ": "I",
    # Greek
    "α": "a", "ε": "e", "ι": "i", "κ": "k", "ν": "v", "ο": "o", "ρ": "p", "τ": "t", "υ": "u",
    "χ": "x", "ϲ": "c", "ϳ": "j", "Α": "A", "Β": "B", "Ε": "E", "Ζ": "Z", "Η": "H", "Ι": "I",
    "Κ": "K", "Μ": "M", "Ν": "N", "Ο": "O", "Ρ": "P", "Τ": "T", "Υ": "Y", "Χ": "X",
    # Latin look-alikes and letter-like symbols
    "ı": "i", "ȷ": "j", "ℓ": "l", "ǀ": "l", "ꓲ": "I", "ꓳ": "O", "ꓴ": "U", "ꓮ": "A",
}
# str.translate walks every character of a long text; a regex finds the few look-alikes fast.
CONFUSABLES_RE = re.compile("[" + "".join(CONFUSABLES) + "]")

# Zero-width and other invisible format characters (removed from every view).
_ZERO_WIDTH = "\u200b\u200c\u200d\u2060\u2061\u2062\u2063\u2064\u180e\ufeff\u00ad\u034f"
_BIDI = "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
_INVISIBLE_RE = re.compile(f"[{_ZERO_WIDTH}{_BIDI}\u200e\u200f\U000e0000-\U000e007f\ufe00-\ufe0f]")
BIDI_RE = re.compile(f"[{_BIDI}]")
ZERO_WIDTH_RE = re.compile(f"[{_ZERO_WIDTH}]")
COMBINING_RE = re.compile("[\u0300-\u036f\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f]")
# Only whitespace that changes is matched: a single space, or a bare line break, is left as it
# is without a replacement per word. (_NEWLINES_RE runs after _SPACES_RE: the whitespace left
# is spaces and line breaks.)
# (Written to begin with a character class, so that the regex engine skips ahead to the next
# whitespace instead of trying at every character: "[^\S\n]{2,}|[^\S \n]", reordered.)
_SPACES_RE = re.compile(r"[^\S\n](?:[^\S\n]+|(?<=[^\S \n]))")
_ODD_SPACE_RE = re.compile(r"[^\S \n]")
_NEWLINES_RE = re.compile(r"(?: \n|\n[ \n])[ \n]*")


# The same few runs ("’", "—", "é") recur throughout a text and from one text to the next.
@lru_cache(maxsize=4096)
def fold_run(run: str) -> str:
    """The folded form of a run of non-ASCII characters (cached: ``fold_run.cache_clear()``)."""
    run = CONFUSABLES_RE.sub(lambda m: CONFUSABLES[m.group(0)], unicodedata.normalize("NFKC", run))
    run = COMBINING_RE.sub("", unicodedata.normalize("NFKD", _INVISIBLE_RE.sub("", run).casefold()))
    return run.replace("’", "'").replace("‘", "'")


_NON_ASCII_RUN = re.compile(r"[^\x00-\x7f]+")


# The validators of one write fold the same content in turn (detector, lessons, the core's
# choice of related records, contradiction): the last few results are kept.
@lru_cache(maxsize=64)
def fold(text: str) -> str:
    """The comparison form of ``text``: NFKC, look-alikes to ASCII, invisible characters
    removed, case-folded, accents removed, whitespace collapsed (newlines kept)."""
    # Only the runs of non-ASCII characters need Unicode work (an accent that combines with
    # the ASCII letter before it is removed all the same); ASCII needs only lower case.
    if not text.isascii():
        text = _NON_ASCII_RUN.sub(lambda m: fold_run(m.group(0)), text)
    text = text.lower().replace("`", "'")
    # Most texts have nothing for these regexes to collapse, and that is found out faster by
    # looking for the few substrings a match could begin with.
    if "  " in text or _ODD_SPACE_RE.search(text):
        text = _SPACES_RE.sub(" ", text)
    if " \n" in text or "\n " in text or "\n\n" in text:
        text = _NEWLINES_RE.sub("\n", text)
    return text.strip()


_WORD_RE = re.compile(r"[a-z0-9#']+")
_DIGITS_RE = re.compile(r"\d+")


def signature_tokens(text: str, *, folded: bool = False) -> list[str]:
    """Words of the folded text with digits replaced by ``#`` (so that a changed address,
    token or order number does not change the signature). Used by the lesson validator.
    ``folded``: ``text`` is already folded."""
    return _WORD_RE.findall(_DIGITS_RE.sub("#", text if folded else fold(text)))


_UMLAUTS = {"ä": "(?:ae|a)", "ö": "(?:oe|o)", "ü": "(?:ue|u)"}


def prepare_rule(source: str) -> str:
    """Pattern source as written (accents, spaces) -> source that matches folded text."""
    for letter, alt in _UMLAUTS.items():
        source = source.replace(letter, alt)
    source = COMBINING_RE.sub("", unicodedata.normalize("NFKD", source))
    for spaced, regex in ((" ?", r"\s*"), (" *", r"\s*"), (" +", r"\s+"), (" ", r"\s+")):
        source = source.replace(spaced, regex)
    return source


#: A word as the lexical index reads it: letters and digits of any script. Not "_":
#: "Globex_remittances" is two words to a reader and to the contradiction check.
INDEX_WORD = re.compile(r"[^\W_]+")
_LATIN_MARKS = re.compile("[\u0300-\u036f]")


def index_words(text: str) -> list[str]:
    """The words of ``text`` as the lexical index reads them, in order: NFKC, case-folded,
    accents of Latin letters removed ("Glóbex" is "globex", as :func:`fold` reads it; marks of
    other scripts stay, they spell their words). The contradiction check counts them to know
    how many terms the windows of an untrusted change read (memwarden/memory/nearby.py)."""
    text = unicodedata.normalize("NFKC", text).casefold()
    if not text.isascii():
        text = unicodedata.normalize("NFC", _LATIN_MARKS.sub("", unicodedata.normalize("NFD", text)))
    return INDEX_WORD.findall(text)
