"""Numbers in English words, and words as the rule engine's projection spells them: for the
money and period readers (:mod:`memwarden.guards.money`, :mod:`memwarden.guards.periods`)."""

from __future__ import annotations

import re
import unicodedata
from decimal import Decimal

__all__ = ["ONES", "SPELLED", "WORD_VALUES", "plain", "projected", "spelled"]


_PLAIN = str.maketrans("łŁøØ", "lLoO")


def plain(word: str) -> str:
    """``word`` case-folded, without its accents ("dólares" is "dolares", "złotych" "zlotych")."""
    return "".join(c for c in unicodedata.normalize("NFKD", word.casefold().translate(_PLAIN))
                   if not unicodedata.combining(c))


def projected(words: str) -> str:
    """A pattern of ``words`` (ASCII) that matches them as :func:`project` writes them accented:
    a vowel or an "n" may be any other letter ("A": "täglich", "año")."""
    return "|".join(sorted((re.sub("[aeioun]", lambda m: f"[{m[0]}A]", w) for w in words.split()), key=len, reverse=True))



#: A number in English words ("four hundred and fifty", "a thousand", "half a million"), at most
# ten of them.
ONES = ("zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
         "seventeen eighteen nineteen").split()
WORD_VALUES = ({w: i for i, w in enumerate(ONES)} | {w: 10 * i for i, w in enumerate(
    "twenty thirty forty fifty sixty seventy eighty ninety".split(), 2)})
_WORD_SCALES = {"hundred": 2, "thousand": 3, "million": 6, "billion": 9}
_WORD = "|".join(sorted([*WORD_VALUES, *_WORD_SCALES], key=len, reverse=True))
SPELLED = rf"(?:half[ \t]+)?(?:an?[ \t]+)?(?:{_WORD})(?:(?:[ \t]+and[ \t]+|[ \t\-]+)(?:{_WORD})){{0,9}}\b"


def spelled(words: str) -> Decimal:
    """A number in English words ("four hundred and fifty", "a thousand", "half a million")."""
    total = current = 0
    for word in re.findall(r"[a-z]+", words.casefold()):
        if word in WORD_VALUES:
            current += WORD_VALUES[word]
        elif word == "hundred":
            current = (current or 1) * 100
        elif word in _WORD_SCALES:
            total, current = total + (current or 1) * 10 ** _WORD_SCALES[word], 0
    return Decimal(total + current) / (2 if words[:4].casefold() == "half" else 1)

