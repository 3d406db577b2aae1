"""Amounts of money in a memory's text, for the procedure values (memwarden/guards/values.py).

An amount of money is a number with a currency on either side: a currency symbol (any
character of Unicode category ``Sc``: "$", "€", "₹", "₩", "₪", "₺", "₫", "¢", ...; "US$",
"A$", "R$" name their dollar or real), an ISO 4217 code (:data:`CURRENCY_CODES`, in capitals
or one of :data:`LOWER_CASE_CODES`), or a currency's name ("euros", "rupees", "Rs.", "cents",
"pence"). Its key is its value:

* read with any thousands separator (a space, a no-break or thin space, an apostrophe or right
  quote, a dot or a comma before groups of three digits) or the Indian grouping ("5,00,000");
* times a magnitude after it (:data:`MAGNITUDES`: "k", "bn", "Mio.", "Mrd.", "lakh", "crore",
  "trillion", ...): "€4k" is 4000 euros;
* with its sign ("-400 EUR", "−€400", "$-400" are a negative amount; "+400" is 400);
* in its currency's main unit: "40000 cents" is $400, "40000 euro cents" €400, "40000 pence"
  £400 (a change written in cents compares with the dollars it changes);
* a range ("400-500 EUR", "EUR 400–500", "400 to 500 EUR") is both its ends.

"5 grand" is money in no named currency (category ``amount:money``): it compares with an amount
of any currency (:func:`is_money`).

A fraction ("1/2 of the fee", "½", "1⁄4"; with a plain slash only before "of" or "the" and
their kin in the other languages: "due 3/12" is a date) is a share: a percentage (category ``amount:%``,
which "50%" has too), so "½" and "50%" are one amount and "¾" changes "25%". A mixed number
("1½ tablets") is its decimal (1.5) wherever it stands.

Linear time: the patterns run on RE2 over the rule engine's one-byte-per-character projection
(memwarden/guards/ruleset.py), each repeat bounded.
"""

from __future__ import annotations

import re
import unicodedata
from decimal import Decimal, InvalidOperation

import re2

from memwarden.guards.ruleset import compile_projected, project

__all__ = ["CURRENCY_CODES", "LOWER_CASE_CODES", "MAGNITUDES", "SC_CHARS", "SYMBOLS", "is_money", "mixed_fractions", "read_fractions",
           "read_money"]





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
              **dict.fromkeys(("m", "mn", "mm", "mio", "million", "millions", "millionen", "mil"), 6),
              **dict.fromkeys(("crore", "crores", "cr"), 7),
              **dict.fromkeys(("bn", "b", "mrd", "md", "mds", "billion", "billions", "milliard", "milliarden",
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
_KEYS = {**dict.fromkeys(("usd", "dollar", "buck", "cent", "cents"), "usd"),
         **dict.fromkeys(("eur", "euro", "eurocent", "euro cent"), "eur"),
         **dict.fromkeys(("gbp", "pound", "sterling", "quid", "pence", "penny"), "gbp"),
         **dict.fromkeys(("jpy", "yen", "cny", "rmb", "yuan"), "jpy"),
         **dict.fromkeys(("inr", "rupee", "rs", "paise"), "inr"), **dict.fromkeys(("krw", "won"), "krw"),
         **dict.fromkeys(("rub", "ruble", "rouble", "kopek", "kopeck"), "rub"),
         **dict.fromkeys(("chf", "franc", "franken", "rappen", "centime"), "chf"),
         "grand": "money"}
# A name that is a magnitude too: "5 grand" is 5000.
_NAME_SCALES = {"grand": 3}
_HUNDREDTHS = frozenset("cent cents eurocent pence penny paise kopek kopeck rappen centime ¢".split()) | {"euro cent"}
_MONEY_KEYS = frozenset(_KEYS.values()) | frozenset(SYMBOLS.values()) | CURRENCY_CODES | {"kr", "btc"}

_CODES = "|".join(sorted(CURRENCY_CODES | {"rs", "kr"}, key=len, reverse=True))
# The currencies' names after a number ("4 000 euros", "40000 cents", "5 grand").
_NAMES = (r"euro ?cents?|eurocents?|euros?|dollars?|bucks|pounds?|pence|penny|francs?|franken|rappen|centimes?|"
          r"rupees?|paise|yen|yuan|won|rubles?|roubles?|kopec?ks?|cents?|quid|grand")
_MAGS = "|".join(sorted(MAGNITUDES, key=len, reverse=True))
_D = r"[0-9B]"
# A number with the thousands separators people group it with, each followed by exactly three
# digits (so "4, 5 and 6" stays three numbers), or the Indian grouping (two-digit groups before
# the last three: "2,00,00,000"), and a decimal part. (At most six groups.)
_NUMBER = rf"(?:{_D}{{1,3}}(?:[ '.,]{_D}{{3}}){{1,6}}|{_D}{{1,2}}(?:,{_D}{{2}}){{1,5}},{_D}{{3}}|{_D}+)(?:[.,]{_D}+)?"
# A sign: a hyphen-minus or a minus sign (both read "-", see :data:`_DASHES`), before the number
# or the currency.
_EDGE = r"(?:^|[^a-zA0-9B\x01:])"
# The other end of a range: a dash, "to", "bis", "a" or "à" (projected "A"), then the number.
_RANGE = rf"(?:[ \t]{{0,2}}(?:-|to|bis|a|A)[ \t]{{0,2}}(?:[$\x01][ \t]?)?(-)?({_NUMBER}))?"
_MAGNITUDE = rf"(?:[ \t]{{0,3}}({_MAGS})\b\.?)?"
_BEFORE = compile_projected(rf"(?:(?:^|[^a-zA0-9B])(-)[ \t]?)?(?:(?:(?:^|[^a-zA0-9B\x01])({'|'.join(_DOLLARS)}))?([$\x01])|"
                   rf"(?:^|[^a-zA0-9B\x01])({_CODES})\b\.?)[ \t]{{0,3}}(-)?({_NUMBER}){_RANGE}{_MAGNITUDE}")
_AFTER = compile_projected(rf"{_EDGE}(?:(-)[ \t]?)?({_NUMBER}){_RANGE}{_MAGNITUDE}(?:[.,]-)?"
                  rf"[ \t]{{0,3}}(?:([$\x01])|({_CODES}|{_NAMES})\b)")
# A fraction: numerator and denominator of at most three digits, with a slash, a fraction slash
# or a division slash (\x01) between them and no other number or slash on either side (a date
# "1/2/2025" is none). A vulgar fraction ("½") is written out first (:func:`mixed_fractions`).
_FRACTION = compile_projected(rf"(?:^|[^0-9B/\x01.,])({_D}{{1,3}})[ \t]?[/\x01][ \t]?({_D}{{1,3}})(?:$|[^0-9B/\x01.,]|[.,](?:$|[^0-9B]))")
_FRACTION_SLASHES = frozenset("/\u2044\u2215")
_WHOLE_BEFORE = re.compile(r"\d[ \t]$")
# What makes "n/d" with a plain slash a share and not a day and a month ("due 3/12"): "of"
# or "the" after it, in any of the five languages ("1/2 of the fee", "1/4 des Honorars").
_SHARE_OF = re.compile(r"\s*(?:of|the|de|des|du|d'|von|vom|der|del|della|dello|di|dei)\b", re.IGNORECASE)
# What reads as a hyphen-minus before money is read: dashes and the minus sign (one character
# for one, so positions stay), and the right quote as an apostrophe (a Swiss thousands mark).
_DASHES = str.maketrans({c: "-" for c in "\u2010\u2011\u2012\u2013\u2014\u2212\ufe63\uff0d"} | {"\u2019": "'"})
_ASCII_LOWER = str.maketrans({chr(c): chr(c + 32) for c in range(65, 91)})
_VULGAR = re.compile(r"(\d?)([\u00bc-\u00be\u2150-\u215e])")
#: Matches read per pattern (see memwarden.guards.values.MAX_MATCHES).
MAX_MATCHES = 512


def is_money(category: str) -> bool:
    """Whether an amount ``category`` ("amount:eur") is money: amounts of money compare with an
    amount of money in no named currency ("5 grand")."""
    what, _, key = category.partition(":")
    return what == "amount" and (key in _MONEY_KEYS or (len(key) == 1 and unicodedata.category(key) == "Sc"))


def mixed_fractions(text: str) -> str:
    """``text`` with its vulgar fractions written out: "1½" as 1.5 and "½" alone as "1/2"
    (NFKC makes "1½" "11⁄2", eleven halves)."""
    if not _VULGAR.search(text):
        return text

    def written(match: re.Match[str]) -> str:
        value = Decimal(str(unicodedata.numeric(match.group(2)))).quantize(Decimal("0.0001"))
        if match.group(1):
            return format((Decimal(match.group(1)) + value).normalize(), "f")
        numerator, _, denominator = unicodedata.normalize("NFKC", match.group(2)).partition("\u2044")
        return f"{numerator}/{denominator}"

    return _VULGAR.sub(written, text)


def _value(number: str, magnitude: str = "", *, negative: bool = False, hundredths: bool = False) -> Decimal | None:
    """An amount's value: ``number`` read with its thousands separators ("4 000", "4.000",
    "4,000", "4'000" and "4,000.00" are 4000; "4,50" is 4.5), times its magnitude. None for a
    number grouped by no one rule (two separators for the thousands)."""
    parts = re.split(r"([^0-9])", "".join(str(unicodedata.digit(c)) if c.isdigit() else c for c in number))
    digits, seps = parts[0::2], parts[1::2]
    decimals = ""
    if seps and seps[-1] in ".," and (len(digits[-1]) != 3 or (len(seps) > 1 and seps[-2] != seps[-1])
                                      or len(digits[0]) > 3):
        decimals, digits, seps = digits[-1], digits[:-1], seps[:-1]
    if len(set(seps)) > 1 or any(s not in " '.," for s in seps):
        return None
    try:
        value = Decimal("".join(digits) + ("." + decimals if decimals else ""))
    except InvalidOperation:
        return None
    if magnitude:
        value = value.scaleb(MAGNITUDES[magnitude.casefold().rstrip(".")])
    if hundredths:
        value = value.scaleb(-2)
    return -value if negative and value else value


def _key(value: Decimal) -> str:
    return format(value.normalize(), "f")


def read_money(nfkc: str) -> tuple[dict[str, set[str]], set[int], bool]:
    """The amounts of money in ``nfkc`` (an NFKC text, its vulgar fractions written out), by
    category ("amount:eur": keys), with the end of each number read (the amount pattern of
    memwarden.guards.values skips those), and whether more matches were found than read."""
    text = nfkc.translate(_DASHES)
    data = project(text.translate(_ASCII_LOWER))
    found: dict[str, set[str]] = {}
    ends: set[int] = set()
    overflow = False

    def span(match: re2._Match, group: int) -> str:
        return text[match.start(group):match.end(group)] if match.group(group) is not None else ""

    def add(match: re2._Match, currency: str, prefix: str, signs: tuple[int, ...], numbers: tuple[int, int],
            magnitude: int) -> None:
        if len(currency) == 1 and not currency.isalnum():
            if unicodedata.category(currency) != "Sc":
                return
            key = _DOLLARS[prefix.casefold()] if currency == "$" and prefix else SYMBOLS.get(currency, currency)
            hundredths, scale = currency == "¢", 0
        else:
            # (A code in lower case may be a word: "mad", "pen", "top 5".)
            code = currency.casefold().rstrip(".")
            if code in CURRENCY_CODES and not (currency.isupper() or code in LOWER_CASE_CODES):
                return
            code = " ".join(code.split())
            code = code[:-1] if code.endswith("s") and code[:-1] in _KEYS else code
            key, hundredths, scale = _KEYS.get(code, code), code in _HUNDREDTHS, _NAME_SCALES.get(code, 0)
        negative = any(span(match, g) == "-" for g in signs)
        mag = span(match, magnitude)
        for group in numbers:
            if match.group(group) is None:
                continue
            # (The second end of a range carries its own sign: "-5 to -3 EUR".)
            value = _value(span(match, group), mag, negative=negative if group == numbers[0] else
                           span(match, numbers[1] - 1) == "-", hundredths=hundredths)
            if value is not None and scale:
                value = value.scaleb(scale)
            if value is not None:
                found.setdefault(f"amount:{key}", set()).add(_key(value))
                ends.add(match.end(group))

    for n, match in enumerate(_BEFORE.finditer(data)):
        if n == MAX_MATCHES:
            overflow = True
            break
        currency = span(match, 3) or span(match, 4)
        add(match, currency, span(match, 2), (1, 5), (6, 8), 9)
    for n, match in enumerate(_AFTER.finditer(data)):
        if n == MAX_MATCHES:
            overflow = True
            break
        add(match, span(match, 6) or span(match, 7), "", (1,), (2, 4), 5)
    return found, ends, overflow


def read_fractions(nfkc: str) -> tuple[set[str], set[int], bool]:
    """The fractions of ``nfkc`` as percentages ("1/2" is "50"; "3/2" or "24/7" is no share),
    with the end of each read, and whether more were found than read."""
    data = project(nfkc.translate(_ASCII_LOWER))
    shares: set[str] = set()
    ends: set[int] = set()
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
