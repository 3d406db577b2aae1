"""How often an amount is due or a dose is given, after the amount ("400 EUR per month",
"$400/mo", "5 mg twice daily", "every 8 hours", "5 mg b.i.d.") or anywhere in a text that holds
an amount ("the monthly retainer"): keyed as its length over how often in it, in hours, months
or doses ("twice daily" and "every 12 hours" are "12h"), for the amount readers of
:mod:`memwarden.guards.money` and :mod:`memwarden.guards.values`.

Linear time: the patterns run on RE2 over the rule engine's projection, each repeat bounded.
"""

from __future__ import annotations

import re
from decimal import Decimal

import re2

from memwarden.guards.number_words import ONES, WORD_VALUES, plain, projected
from memwarden.guards.ruleset import ASCII_LOWER, MAX_MATCHES, compile_projected, project
from memwarden.guards.ruleset import DIGIT as _D

__all__ = ["PERIOD", "period_key", "period_of", "read_periods"]

# A period's words by what they count (:data:`_SIZES`), as :func:`plain` spells them: the nouns
# after "per", "a", "every", "/" ..., and the adverbs ("monthly", "täglich").
_PERIOD_NOUNS = {
    "h": "hour hours hr hrs h stunde stunden heure heures hora horas ora ore",
    "d": "day days d night nights tag tage tagen jour jours dia dias giorno giorni",
    "w": "week weeks wk wks w woche wochen semaine semaines semana semanas settimana settimane",
    "f": "fortnight fortnights",
    "m": "month months mo mos mth mths monat monate monaten mois mes meses mese mesi",
    "q": "quarter quarters qtr quartal quartale trimestre trimestres",
    "s": "semester semesters semestre semestres",
    "y": "year years yr yrs y annum jahr jahre jahren an ans annee annees ano anos anno anni",
    "dose": "dose doses dosis"}
_PERIOD_ADVERBS = {
    "h": "hourly stundlich",
    "d": "daily nightly taglich quotidien quotidienne quotidiennement diario diaria diariamente giornaliero "
         "giornaliera quotidiano quotidiana",
    "w": "weekly wochentlich hebdomadaire semanal semanalmente settimanale settimanalmente",
    "f": "fortnightly",
    "m": "monthly monatlich mensuel mensuelle mensuellement mensual mensualmente mensile mensilmente",
    "q": "quarterly quartalsweise trimestriel trimestrielle trimestral trimestrale",
    "s": "semiannually semiannual halbjahrlich semestriel semestrielle semestral semestrale",
    "y": "yearly annually annual jahrlich annuel annuelle annuellement anual anualmente annuale annualmente"}
# Each in hours or months (a month is no number of days) or doses.
_SIZES = {"h": (1, "h"), "d": (24, "h"), "w": (168, "h"), "f": (336, "h"), "m": (1, "mo"), "q": (3, "mo"),
          "s": (6, "mo"), "y": (12, "mo"), "dose": (1, "dose")}
_PERIOD_UNITS = {w: u for words in (_PERIOD_NOUNS, _PERIOD_ADVERBS) for u, ws in words.items() for w in ws.split()}
# How often in a period: "twice daily", "3 times a day", "3x/day", "dreimal täglich"; the
# prescriptions' abbreviations ("b.i.d.", "t.d.s.", "q4h": every four hours).
_TIMES = {"once": 1, "twice": 2, "thrice": 3, "einmal": 1, "zweimal": 2, "dreimal": 3, "viermal": 4}
_PRESCRIBED = {"bid": (2, "d"), "bd": (2, "d"), "tid": (3, "d"), "tds": (3, "d"), "qid": (4, "d"), "qds": (4, "d"),
               "qd": (1, "d"), "qh": (1, "h"), "pa": (1, "y")}
_TIMES_WORDS = frozenset("times time x mal fois veces volte".split())
_COUNT = rf"(?:{_D}{{1,3}}|other|second|{'|'.join(ONES[2:13])})"
_HOW_OFTEN = rf"(?:{'|'.join(_TIMES)}|(?:{_D}{{1,2}}|{'|'.join(ONES[1:13])})[ \t]*(?:{'|'.join(_TIMES_WORDS)}))"
_INTRO = (r"per|an?|each|every|pro|par|por|al|je|im|am|alle|ogni|cada|chaque|tous les|toutes les|todos los|"
          r"todas las|tutti i|tutte le")
#: A period after an amount, for the amount patterns here and in memwarden/guards/values.py (its
#: groups "between" and "period", read by :func:`period_key`): "400 EUR per month", "$400/mo",
#: "5 mg twice daily", "every 8 hours", "5 mg b.i.d.", up to three words after the amount
#: ("2 tablets by mouth once a week").
PERIOD = (rf"(?:[ \t,]{{0,3}}(?P<between>(?:[a-zA]+[ \t]+){{0,3}}?)(?P<period>(?:{_HOW_OFTEN}[ \t]*)?/[ \t]{{0,2}}"
          rf"(?:{_COUNT}[ \t\-]{{0,2}})?(?:{projected(' '.join(_PERIOD_NOUNS.values()))})|"
          rf"(?:{_HOW_OFTEN}[ \t]+)?(?:(?:{_INTRO})[ \t]+(?:{_COUNT}[ \t\-]{{0,2}})?"
          rf"(?:{projected(' '.join(_PERIOD_NOUNS.values()))})|{projected(' '.join(_PERIOD_ADVERBS.values()))})|"
          rf"p\.a|b\.?i\.?d|b\.?d|t\.?i\.?d|t\.?d\.?s|q\.?i\.?d|q\.?d\.?s|q\.?d|q\.?h|q[ \t]?{_D}{{1,2}}[ \t]?h(?:rs?|ours?)?)"
          rf"\b\.?)?")
# Words between an amount and a period that make the period another thing's ("400 EUR within a
# week", "400 EUR and reviewed annually").
_NOT_BETWEEN = frozenset("and or but plus then within in after before until till for over next last from than since "
                         "und oder et ou y o e".split())


def period_key(between: str, period: str) -> str:
    """The key of ``period`` read after an amount, with ``between`` the words between them: its
    length over how often in it, in hours, months or doses ("twice daily" and "every 12 hours"
    are "12h", "per month" and "monthly" "1mo"); "" for none."""
    if not period or any(plain(w) in _NOT_BETWEEN for w in between.split()):
        return ""
    count, every, unit = 1, 1, None
    words = re.findall(r"[^\W\d_]+|\d+", plain(period).replace(".", ""))
    for i, word in enumerate(words):
        after = words[i + 1] if i + 1 < len(words) else ""
        number = int(word) if word.isdigit() else WORD_VALUES.get(word, 2 if word in ("other", "second") else None)
        if word in _TIMES:
            count = _TIMES[word]
        elif word in _PRESCRIBED:
            count, unit = _PRESCRIBED[word]
        elif number is not None and after in _TIMES_WORDS:
            count = number
        elif number is not None:
            every = number
        elif word in _PERIOD_UNITS:
            unit = _PERIOD_UNITS[word]
    if unit is None or not count:
        return ""
    size, base = _SIZES[unit]
    return f"{(Decimal(size * every) / count).normalize():f}{base}"


# A period's adverb or adjective anywhere ("the monthly retainer", "die monatliche Pauschale").
_PERIOD_WORD = compile_projected(rf"(?:^|[^a-zA0-9B\x01])({projected(' '.join(_PERIOD_ADVERBS.values()))})(?:e|en|er|es)?\b")


def read_periods(nfkc: str) -> tuple[set[str], bool]:
    """The keys (:func:`period_key`) of the periods' adverbs and adjectives of ``nfkc``, for a
    text that holds an amount: "the weekly retainer is 400 EUR" changes "the monthly retainer is
    400 EUR" though neither period follows the amount; and whether more than MAX_MATCHES were
    found (the rest unread: Values.overflow)."""
    keys: set[str] = set()
    for n, m in enumerate(_PERIOD_WORD.finditer(project(nfkc.translate(ASCII_LOWER)))):
        if n == MAX_MATCHES:
            return keys, True
        if key := period_key("", nfkc[m.start(1):m.end(1)]):
            keys.add(key)
    return keys, False


def period_of(match: re2._Match, groups: dict[str, int], text: str) -> str:
    """The key of the period a match of a pattern holding :data:`PERIOD` read (its groups by
    name in ``groups``), "" for none."""
    def span(name: str) -> str:
        g = groups[name]
        return text[match.start(g):match.end(g)] if match.group(g) is not None else ""

    return period_key(span("between"), span("period"))
