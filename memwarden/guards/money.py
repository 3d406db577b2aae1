"""Amounts of money in a memory's text, for the procedure values (memwarden/guards/values.py).

An amount of money is a number with a currency on either side: a currency symbol (any
character of Unicode category ``Sc``: "$", "€", "₹", "₩", "₪", "₺", "₫", "¢", ...; "US$",
"A$", "R$" name their dollar or real), an ISO 4217 code (:data:`CURRENCY_CODES`, in capitals
or one of :data:`LOWER_CASE_CODES`; the Swiss "Fr."), or a currency's name ("euros", "rupees",
"Rs.", "cents", "pence"; in the other languages too: "dólares", "złotych", "franchi"). Its key
is its value:

* read with any thousands separator (a space, a no-break or thin space, an apostrophe, right
  quote, modifier letter apostrophe or prime, an underscore, a dot or a comma before groups of
  three digits) or the Indian grouping ("5,00,000"), with its exponent ("4e3", "4×10^3",
  "4×10³"), or in English words ("four hundred and fifty", "a thousand");
* times a magnitude after it (:data:`MAGNITUDES`: "k", "bn", "Mio.", "Mrd.", "lakh", "crore",
  "trillion", ...): "€4k" is 4000 euros;
* with its sign ("-400 EUR", "−€400", "$-400" are a negative amount; "+400" is 400);
* in its currency's main unit: "40000 cents" is $400, "40000 euro cents" €400, "40000 pence"
  £400 (a change written in cents compares with the dollars it changes);
* a range ("400-500 EUR", "EUR 400–500", "400 to 500 EUR") is both its ends;
* a compound is one amount, its parts added: "400 euros and 50 cents" is 400.50 euros, "$1
  million and 900 thousand" and "1 million and 900 thousand dollars" 1.9 million dollars (a
  part kept and the other dropped is a changed amount);
* with its period after a slash (:mod:`memwarden.guards.periods`): "400 EUR per month",
  "monthly" and "€400/mo" are "400/1mo", "400 EUR per week" "400/168h" (a changed period is a
  changed amount; an amount whose period one text leaves unsaid is the same, see
  memwarden/guards/value_set.py). The dose pattern of memwarden/guards/values.py reads the
  same periods: "5 mg twice daily", "every 12 hours" and "b.i.d." are "5/12h".

"5 grand", and a currency name several currencies share ("kr", "pesos", "dinars"), is money in
no named currency (category ``amount:money``): it compares with an amount of any currency
(:func:`is_money`).

A fraction ("1/2 of the fee", "½", "1⁄4"; with a plain slash only before "of" or "the" and
their kin in the other languages: "due 3/12" is a date) is a share: a percentage (category ``amount:%``,
which "50%", "50 per cent", "50 Prozent", "500‰" and "5000 basis points" have too), so "½" and
"50%" are one amount and "¾" changes "25%". A mixed number
("1½ tablets") is its decimal (1.5) wherever it stands.

Linear time: the patterns run on RE2 over the rule engine's one-byte-per-character projection
(memwarden/guards/ruleset.py), each repeat bounded.
"""

from __future__ import annotations

import re
import unicodedata
from decimal import Decimal, InvalidOperation

import re2

from memwarden.guards.number_words import SPELLED, plain, spelled
from memwarden.guards.periods import PERIOD, period_of
from memwarden.guards.ruleset import ASCII_LOWER, MAX_MATCHES, compile_projected, project
from memwarden.guards.ruleset import DIGIT as _D

__all__ = ["CURRENCY_CODES", "LOWER_CASE_CODES", "MAGNITUDES", "SC_CHARS", "SYMBOLS", "is_money", "plain_numbers", "read_money",
           "read_shares"]





#: The active ISO 4217 currency codes (and "RMB", the renminbi as it is often written). An amount
#: is money with one of them next to its number, on either side ("CHF 400", "400 CHF"); written
#: in lower case only the codes of :data:`LOWER_CASE_CODES` are (a code may be a word: "all",
#: "top", "try", "mad", "pen", "sos", "rub 2 drops").
CURRENCY_CODES = frozenset("""
    aed afn all amd ang aoa ars aud awg azn bam bbd bdt bgn bhd bif bmd bnd bob bov brl bsd btn bwp
    byn bzd cad cdf chf clp cny cop crc cuc cup cve czk djf dkk dop dzd egp ern etb eur fjd fkp gbp
    gel ghs gip gmd gnf gtq gyd hkd hnl htg huf idr ils inr iqd irr isk jmd jod jpy kes kgs khr kmf
    kpw krw kwd kyd kzt lak lbp lkr lrd lsl lyd mad mdl mga mkd mmk mnt mop mru mur mvr mwk mxn myr
    mzn nad ngn nio nok npr nzd omr pab pen pgk php pkr pln pyg qar ron rsd rub rwf sar sbd scr sdg
    sek sgd shp sle sll sos srd ssp stn svc syp szl thb tjs tmt tnd top try ttd twd tzs uah ugx usd
    uyu uzs ved ves vnd vuv wst xaf xcd xof xpf yer zar zmw zwg zwl rmb""".split())
#: The codes that are money written in lower case too ("400 chf"): none of them is a word.
LOWER_CASE_CODES = frozenset("usd eur gbp jpy cny rmb inr krw chf sek nok dkk pln czk huf aud nzd hkd sgd zar "
                             "brl mxn thb uah aed idr ils vnd ngn php".split())
#: What multiplies an amount of money written after its number ("€4k", "EUR 4 million", "4 Mio.",
#: "₹5 lakh", "2 crore rupees", "$2 trillion").
MAGNITUDES = {**dict.fromkeys(("k", "thousand", "thousands", "tsd", "tausend", "grand"), 3),
              **dict.fromkeys(("lakh", "lakhs", "lac", "lacs", "lakh's"), 5),
              **dict.fromkeys(("m", "mn", "mm", "mln", "mio", "million", "millions", "millionen", "mil"), 6),
              **dict.fromkeys(("crore", "crores", "cr"), 7),
              **dict.fromkeys(("bn", "b", "bln", "mld", "mrd", "md", "mds", "billion", "billions", "milliard", "milliarden",
                               "milliards"), 9),
              **dict.fromkeys(("tn", "trn", "trillion", "trillions"), 12)}
#: Every currency symbol (Unicode category Sc), for a character class of Python's re.
SC_CHARS = "".join(chr(c) for c in (*range(0x24, 0x3000), *range(0xA800, 0x10000), *range(0x11FD0, 0x11FF0),
                                    *range(0x1E2F0, 0x1E300), *range(0x1ECB0, 0x1ECC0))
                   if unicodedata.category(chr(c)) == "Sc")
#: Currency symbols by their key (any other character of category Sc is its own key).
SYMBOLS = {"$": "usd", "€": "eur", "£": "gbp", "¥": "jpy", "₹": "inr", "₩": "krw", "₽": "rub", "₪": "ils",
           "₺": "try", "₫": "vnd", "₦": "ngn", "₱": "php", "₴": "uah", "₸": "kzt", "₼": "azn", "₾": "gel",
           "฿": "thb", "₡": "crc", "₲": "pyg", "₵": "ghs", "₭": "lak", "₮": "mnt", "₨": "inr", "₿": "btc",
           "﷼": "sar", "৳": "bdt", "៛": "khr", "₣": "chf", "₥": "usd", "¢": "usd"}
# The letters before a dollar sign that name its dollar ("US$400", "A$", "HK$") or the real (R$).
_DOLLARS = {"us": "usd", "a": "aud", "au": "aud", "c": "cad", "ca": "cad", "hk": "hkd", "nz": "nzd", "s": "sgd",
            "sg": "sgd", "nt": "twd", "mx": "mxn", "r": "brl"}
# One key per currency however it is written: "€40" and "400 EUR" are one amount changed. "$"
# reads as the dollar and "£" or "pounds" as sterling: comparing two dollars or two pounds at
# worst holds a change for review. A hundredth's name divides by 100 (:data:`_HUNDREDTHS`).
# (Names in the other languages as :func:`plain` spells them: "dólares", "złotych".)
_KEYS = {**dict.fromkeys("usd dollar buck cent cents dolar dolares dollari dollaro".split(), "usd"),
         **dict.fromkeys(("eur", "euro", "eurocent", "euro cent", "centimo", "centesimi", "centesimo"), "eur"),
         **dict.fromkeys("gbp pound sterling quid pence penny libra sterlina sterline livre".split(), "gbp"),
         **dict.fromkeys(("jpy", "yen", "cny", "rmb", "yuan"), "jpy"),
         **dict.fromkeys(("inr", "rupee", "rs", "paise"), "inr"), **dict.fromkeys(("krw", "won"), "krw"),
         **dict.fromkeys(("rub", "ruble", "rouble", "kopek", "kopeck"), "rub"),
         **dict.fromkeys("chf franc franken rappen centime franco franchi".split(), "chf"),
         **dict.fromkeys("pln zloty zlote zlotych".split(), "pln"), **dict.fromkeys("sek krona kronor".split(), "sek"),
         **dict.fromkeys("ils shekel shekels sheqel".split(), "ils"), **dict.fromkeys("thb baht".split(), "thb"),
         **dict.fromkeys("huf forint".split(), "huf"), **dict.fromkeys("czk koruna korun koruny".split(), "czk"),
         **dict.fromkeys("zar rand".split(), "zar"), **dict.fromkeys("try lira lire".split(), "try"),
         **dict.fromkeys("idr rupiah".split(), "idr"), **dict.fromkeys("myr ringgit".split(), "myr"),
         **dict.fromkeys("ngn naira".split(), "ngn"), **dict.fromkeys("aed dirham".split(), "aed"),
         **dict.fromkeys("uah hryvnia hryvnias".split(), "uah"), "sfr": "chf", "fr": "chf",
         "brl": "brl", "reais": "brl", "grand": "money",
         # Names of several currencies ("kr" is the krona and the krone, a peso Mexico's and
         # Argentina's) are money in no named one: they compare with any.
         **dict.fromkeys("kr krone kroner peso dinar riyal".split(), "money")}
# A name that is a magnitude too: "5 grand" is 5000.
_NAME_SCALES = {"grand": 3}
_HUNDREDTHS = (frozenset("cent cents eurocent pence penny paise kopek kopeck rappen centime centimo centesimi centesimo "
                         "¢".split()) | {"euro cent"})
_MONEY_KEYS = frozenset(_KEYS.values()) | frozenset(SYMBOLS.values()) | CURRENCY_CODES | {"kr", "btc"}

# (With the Swiss "Fr." and "SFr." before a number.)
_CODES = "|".join(sorted(CURRENCY_CODES | {"rs", "kr", "sfr", "fr"}, key=len, reverse=True))
# The hundredths' names, after the main unit of a compound ("400 euros and 50 cents").
_CENTS = r"euro ?cents?|eurocents?|cents?|pence|penny|rappen|centimes?|c[eA]ntimos?|centesim[io]|paise|kopec?ks?"
# The currencies' names after a number ("4 000 euros", "40000 cents", "5 grand").
_NAMES = (rf"{_CENTS}|euros?|dollars?|bucks|pounds?|francs?|franken|rupees?|yen|yuan|won|rubles?|roubles?|quid|grand|"
          r"d[oA]lar(?:es)?|dollar[io]|libras?|sterlin[ae]|livres?|franc(?:o|os|hi)|z[lA]ot(?:y|ys|e|ych)|"
          r"kron(?:a|or|e|er)|reais|shekels?|sheqel|baht|forint|korun[ay]?|rand|lir[ae]|rupiah|ringgit|naira|"
          r"dirhams?|hryvnias?|pesos?|dinars?|riyals?")
_MAGS = "|".join(sorted(MAGNITUDES, key=len, reverse=True))
# A power of ten after the number: "4e3", "4E3", "4×10^3", "4·10**3" ("4×10³" as
# :func:`plain_numbers` writes it), at most two digits of it.
_EXPONENT = rf"(?:e[+\-]?{_D}{{1,2}}|[ \t]?[x*\x01][ \t]?10(?:\^|\*\*)[+\-]?{_D}{{1,2}})"
_EXPONENT_PY = re.compile(r"(?:[eE]|\s?[x*×·⋅]\s?10(?:\^|\*\*))([+-]?\d+)$")
# A number with the thousands separators people group it with, each followed by exactly three
# digits (so "4, 5 and 6" stays three numbers), or the Indian grouping (two-digit groups before
# the last three: "2,00,00,000"), a decimal part and an exponent. (At most six groups.)
_NUMBER = (rf"(?:{_D}{{1,3}}(?:[ '.,_]{_D}{{3}}){{1,6}}|{_D}{{1,2}}(?:,{_D}{{2}}){{1,5}},{_D}{{3}}|{_D}+)(?:[.,]{_D}+)?"
           rf"{_EXPONENT}?")
_NUM = rf"(?:{_NUMBER}|{SPELLED})"
# A sign: a hyphen-minus or a minus sign (both read "-", see :data:`_DASHES`), before the number
# or the currency.
_EDGE = r"(?:^|[^a-zA0-9B\x01:])"
# The other end of a range: a dash, "to", "bis", "a" or "à" (projected "A"), then the number.
_RANGE = rf"(?:[ \t]{{0,2}}(?:-|to|bis|a|A)[ \t]{{0,2}}(?:[$\x01][ \t]?)?(?P<sign3>-)?(?P<end>{_NUMBER}))?"
_MAGNITUDE = rf"(?:[ \t]{{0,3}}(?P<mag>{_MAGS})\b\.?)?"
# What joins the parts of a compound amount ("$1 million and 200 thousand", "400 Euro und 50 Cent").
_JOIN = r"(?:,|and|plus|&|\+|und|et|y|e)"
# The smaller part of a compound, after the amount: hundredths or a smaller magnitude.
_PART = (rf"(?:[ \t]{{0,2}}{_JOIN}?[ \t]{{1,3}}(?P<part>{_NUM})[ \t]{{0,3}}"
         rf"(?:(?P<part_mag>{_MAGS})\b\.?|(?P<cents>{_CENTS})\b))?")


# An amount with the currency before it ("EUR 400", "US$400", "-€400") or after it ("400 EUR",
# "1 million and 900 thousand dollars": a larger part before, "lead"), the smaller part of a
# compound and a period after either.
_BEFORE = compile_projected(
    rf"(?:(?:^|[^a-zA0-9B])(?P<sign>-)[ \t]?)?(?:(?:(?:^|[^a-zA0-9B\x01])(?P<prefix>{'|'.join(_DOLLARS)}))?"
    rf"(?P<symbol>[$\x01])|(?:^|[^a-zA0-9B\x01])(?P<code>{_CODES})\b\.?)[ \t]{{0,3}}(?P<sign2>-)?(?P<number>{_NUM})"
    rf"{_RANGE}{_MAGNITUDE}{_PART}{PERIOD}")
_AFTER = compile_projected(
    rf"{_EDGE}(?:(?P<sign>-)[ \t]?)?(?:(?P<lead>{_NUM})[ \t]{{0,3}}(?P<lead_mag>{_MAGS})\b\.?[ \t]{{1,3}}"
    rf"(?:(?:and|plus|und|et|y|e)[ \t]{{1,3}})?)?(?P<number>{_NUM}){_RANGE}{_MAGNITUDE}(?:[.,]-)?[ \t]{{0,3}}(?:(?P<symbol>[$\x01])|"
    rf"(?P<code>{_CODES}|{_NAMES})\b){_PART}{PERIOD}")
# A percentage ("25%", "25 per cent", "25 Prozent"), per mille ("5‰", "5 Promille") or basis
# points ("250 bps"), a share as a fraction is.
_PERCENT = compile_projected(
    rf"{_EDGE}(?P<number>{_NUMBER})[ \t]{{0,2}}(?:(?P<permille>\x01|per[ \t]?mille|promille)|(?P<pct>%|percent|per[ \t]?cent|pct|prozent|pour[ \t]?cent|"
    rf"por[ \t]?ciento|per[ \t]?cento|por[ \t]?cento)|(?P<bp>basis[ \t]+points?|bps|bp|basispunkte|points de base|"
    rf"puntos b[aA]sicos|punti base))(?:$|[^a-zA0-9B\x01]){PERIOD}")
# A fraction: numerator and denominator of at most three digits, with a slash, a fraction slash
# or a division slash (\x01) between them and no other number or slash on either side (a date
# "1/2/2025" is none). A vulgar fraction ("½") is written out first (:func:`plain_numbers`).
_FRACTION = compile_projected(rf"(?:^|[^0-9B/\x01.,])({_D}{{1,3}})[ \t]?[/\x01][ \t]?({_D}{{1,3}})(?:$|[^0-9B/\x01.,]|[.,](?:$|[^0-9B]))")
_FRACTION_SLASHES = frozenset("/\u2044\u2215")
_WHOLE_BEFORE = re.compile(r"\d[ \t]$")
# What makes "n/d" with a plain slash a share and not a day and a month ("due 3/12"): "of"
# or "the" after it, in any of the five languages ("1/2 of the fee", "1/4 des Honorars").
_SHARE_OF = re.compile(r"\s*(?:of|the|de|des|du|d'|von|vom|der|del|della|dello|di|dei)\b", re.IGNORECASE)
# What reads as a hyphen-minus before money is read: dashes and the minus sign (one character
# for one, so positions stay), and the right quote as an apostrophe (a Swiss thousands mark).
# (The modifier letter apostrophe, the prime and the acute accent are typed for it too: "4ʼ000".)
_DASHES = str.maketrans({c: "-" for c in "\u2010\u2011\u2012\u2013\u2014\u2212\ufe63\uff0d"}
                        | dict.fromkeys("\u2019\u2018\u02bc\u2032\u00b4", "'"))
_VULGAR = re.compile(r"(\d?)([\u00bc-\u00be\u2150-\u215e])")


def is_money(category: str) -> bool:
    """Whether an amount ``category`` ("amount:eur") is money: amounts of money compare with an
    amount of money in no named currency ("5 grand")."""
    what, _, key = category.partition(":")
    return what == "amount" and (key in _MONEY_KEYS or (len(key) == 1 and unicodedata.category(key) == "Sc"))


def plain_numbers(text: str) -> str:
    """``text`` with its vulgar fractions written out, "1½" as 1.5 and "½" alone as "1/2" (NFKC
    makes "1½" "11⁄2", eleven halves), and a power of ten's superscript as "^" ("10³" is "10^3";
    NFKC makes it 103)."""
    if _SUPERSCRIPT.search(text):
        text = _SUPERSCRIPT.sub(lambda m: "10^" + m[1].translate(_SUPERSCRIPTS), text)
    if not _VULGAR.search(text):
        return text

    def written(match: re.Match[str]) -> str:
        value = Decimal(str(unicodedata.numeric(match.group(2)))).quantize(Decimal("0.0001"))
        if match.group(1):
            return format((Decimal(match.group(1)) + value).normalize(), "f")
        numerator, _, denominator = unicodedata.normalize("NFKC", match.group(2)).partition("\u2044")
        return f"{numerator}/{denominator}"

    return _VULGAR.sub(written, text)


_SUPERSCRIPTS = str.maketrans("⁰¹²³⁴⁵⁶⁷⁸⁹⁺⁻", "0123456789+-")
_SUPERSCRIPT = re.compile(r"10([⁺⁻]?[⁰¹²³⁴⁵⁶⁷⁸⁹]{1,2})(?![⁰¹²³⁴⁵⁶⁷⁸⁹])")



def _value(number: str, magnitude: str = "", *, negative: bool = False, hundredths: bool = False) -> Decimal | None:
    """An amount's value: ``number`` read with its thousands separators ("4 000", "4.000",
    "4,000", "4'000", "4_000" and "4,000.00" are 4000; "4,50" is 4.5) and its exponent ("4e3"),
    or its words, times its magnitude. None for a number grouped by no one rule (two separators
    for the thousands)."""
    if number[:1].isalpha():
        value = spelled(number)
    else:
        exponent = _EXPONENT_PY.search(number)
        if exponent:
            number = number[:exponent.start()]
        parts = re.split(r"([^0-9])", "".join(str(unicodedata.digit(c)) if c.isdigit() else c for c in number))
        digits, seps = parts[0::2], parts[1::2]
        decimals = ""
        if seps and seps[-1] in ".," and (len(digits[-1]) != 3 or (len(seps) > 1 and seps[-2] != seps[-1])
                                          or len(digits[0]) > 3):
            decimals, digits, seps = digits[-1], digits[:-1], seps[:-1]
        if len(set(seps)) > 1 or any(s not in " '.,_" for s in seps):
            return None
        try:
            value = Decimal("".join(digits) + ("." + decimals if decimals else ""))
        except InvalidOperation:
            return None
        if exponent:
            value = value.scaleb(int(exponent[1]))
    if magnitude:
        value = value.scaleb(_scale(magnitude))
    if hundredths:
        value = value.scaleb(-2)
    return -value if negative and value else value


def _scale(magnitude: str) -> int:
    return MAGNITUDES[magnitude.casefold().rstrip(".")]


def _key(value: Decimal, period: str = "") -> str:
    """An amount's key: its value, and after a slash its period ("400/1mo")."""
    return format(value.normalize(), "f") + (f"/{period}" if period else "")


def _groups(pattern: re2._Regexp) -> dict[str, int]:
    return {name.decode(): number for name, number in pattern.groupindex.items()}


_BEFORE_GROUPS, _AFTER_GROUPS, _PERCENT_GROUPS = _groups(_BEFORE), _groups(_AFTER), _groups(_PERCENT)


def read_money(nfkc: str) -> tuple[dict[str, set[str]], set[int], bool, list[tuple[int, int]]]:
    """The amounts of money in ``nfkc`` (an NFKC text, its numbers :func:`plain_numbers`), by
    category ("amount:eur": keys), with the end of each number read (the amount pattern of
    memwarden.guards.values skips those), whether more matches were found than read, and the
    spans of the matches."""
    text = nfkc.translate(_DASHES)
    data = project(text.translate(ASCII_LOWER))
    found: dict[str, set[str]] = {}
    ends: set[int] = set()
    spans: list[tuple[int, int]] = []  # (what was matched: memwarden.guards.unread)
    overflow = False

    def add(match: re2._Match, groups: dict[str, int]) -> None:
        def span(name: str) -> str:
            g = groups.get(name)
            return text[match.start(g):match.end(g)] if g is not None and match.group(g) is not None else ""

        currency = span("symbol") or span("code")
        if len(currency) == 1 and not currency.isalnum():
            if unicodedata.category(currency) != "Sc":
                return
            prefix = span("prefix")
            key = _DOLLARS[prefix.casefold()] if currency == "$" and prefix else SYMBOLS.get(currency, currency)
            hundredths, scale = currency == "¢", 0
        else:
            # (A code in lower case may be a word: "mad", "pen", "top 5".)
            code = plain(currency).rstrip(".")
            if code in CURRENCY_CODES and not (currency.isupper() or code in LOWER_CASE_CODES):
                return
            code = " ".join(code.split())
            code = code[:-1] if code.endswith("s") and code[:-1] in _KEYS else code
            key, hundredths, scale = _KEYS.get(code, code), code in _HUNDREDTHS, _NAME_SCALES.get(code, 0)
        if span("code").isupper() and span("number").casefold() in ("one", "zero"):
            return  # a determiner: "one EUR 400 payment"
        negative = span("sign") == "-" or span("sign2") == "-"
        mag, period = span("mag"), period_of(match, groups, text)
        values = []
        for name in ("number", "end"):
            if not span(name):
                continue
            # (The second end of a range carries its own sign: "-5 to -3 EUR".)
            value = _value(span(name), mag, negative=negative if name == "number" else span("sign3") == "-",
                           hundredths=hundredths)
            if value is None:
                continue
            values.append(value.scaleb(scale) if scale else value)
            g = groups[name]
            ends.add(match.end(g))
            exponent = _EXPONENT_PY.search(span(name))
            if exponent:  # (the amount pattern reads "4" of "4e3" as 4 of "e")
                ends.add(match.start(g) + exponent.start())
        if len(values) == 1 and not span("end"):
            values[0] += _compound(span, values[0], mag, hundredths, key, found, period)
        for value in values:
            found.setdefault(f"amount:{key}", set()).add(_key(value, period))

    for pattern, groups in ((_BEFORE, _BEFORE_GROUPS), (_AFTER, _AFTER_GROUPS)):
        for n, match in enumerate(pattern.finditer(data)):
            if n == MAX_MATCHES:
                overflow = True
                break
            read = len(ends)
            add(match, groups)
            if len(ends) > read:
                spans.append(match.span())
    return found, ends, overflow, spans


def _compound(span, value: Decimal, mag: str, hundredths: bool, key: str, found: dict[str, set[str]],
              period: str) -> Decimal:
    """What the parts of a compound amount around the one read add to it: a larger part before
    ("1 million and" 900 thousand dollars), a smaller one after ($1 million "and 900 thousand",
    400 euros "and 50 cents"). A part of no smaller unit is another amount: hundredths of their
    own (50 cents "and 20 cents"), or no money (400 EUR "and 2 million" users)."""
    added, whole = Decimal(0), abs(value)
    if span("lead_mag"):
        lead = _value(span("lead"), span("lead_mag"))
        if lead is not None and whole < Decimal(10) ** _scale(span("lead_mag")):
            added += lead
    if span("cents"):
        part = _value(span("part"), hundredths=True)
        if part is not None and hundredths:
            found.setdefault(f"amount:{key}", set()).add(_key(part, period))
        elif part is not None and part < 1:
            added += part
    elif span("part_mag") and mag:
        part = _value(span("part"), span("part_mag"))
        if part is not None and part < Decimal(10) ** _scale(mag):
            added += part
    return -added if value < 0 else added


def read_shares(nfkc: str) -> tuple[set[str], set[int], bool]:
    """The shares of ``nfkc`` as percentages: its fractions ("1/2" is "50"; "3/2" or "24/7" is no
    share), percentages ("25%", "25 per cent"), per mille ("5‰" is "0.5") and basis points ("250 bps" is "2.5"), each with
    its period ("5% a year" is "5/12mo"); with the end of each number read, and whether more
    were found than read."""
    data = project(nfkc.translate(ASCII_LOWER))
    shares: set[str] = set()
    ends: set[int] = set()
    for n, match in enumerate(_PERCENT.finditer(data)):
        if n == MAX_MATCHES:
            return shares, ends, True
        g = _PERCENT_GROUPS
        value = _value(nfkc[match.start(g["number"]):match.end(g["number"])])
        per_mille = match.group(g["permille"])
        if value is None or per_mille == b"\x01" and nfkc[match.start(g["permille"])] != "\u2030":
            continue  # (another symbol: "5 €")
        scale = -2 if match.group(g["bp"]) is not None else -1 if per_mille is not None else 0
        shares.add(_key(value.scaleb(scale), period_of(match, g, nfkc)))
        ends.add(match.end(g["number"]))
    for n, match in enumerate(_FRACTION.finditer(data)):
        if n == MAX_MATCHES:
            return shares, ends, True
        slash = nfkc[match.end(1):match.start(2)].strip()
        if slash not in _FRACTION_SLASHES or (slash == "/" and not _SHARE_OF.match(nfkc, match.end(2))):
            continue
        if _WHOLE_BEFORE.search(nfkc, max(0, match.start(1) - 2), match.start(1)):
            continue  # a mixed number ("59 1/2 the age"): a number, no share
        numerator, denominator = (int("".join(str(unicodedata.digit(c)) for c in nfkc[match.start(g):match.end(g)]))
                                  for g in (1, 2))
        if 0 < numerator < denominator:
            share = (Decimal(100) * numerator / denominator).quantize(Decimal("0.01"))
            shares.add(_key(share))
            ends.add(match.end(2))
    return shares, ends, False
