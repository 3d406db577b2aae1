"""The values a procedure turns on, read out of a memory's text: where things are sent, which
account is paid, a credential or where it is kept, an amount or a dose, who approves or is
trusted, and whether a check is weakened.

A destination is an address, a link of any scheme ("https://", "sftp://", "s3://", a defanged
"hxxp://") or "www.", a bare host name ending in a known top-level domain
("portal.globex.com/invoices", "globex.ai", "pay.us"; :data:`_TLDS`), an address spelled "ap
[at] globex [dot] com" (and a link "hxxps[:]//...") or in words where its shape is an
address's ("ap at globex dot co dot uk"), or a share path ("\\\\fileserver\\finance"). Ideographic
and small full stops ("。", "｡", "．") are dots. An account is an IBAN, a run of digits, a
sort code or BSB, a BIC or IFSC (in capitals), or the last digits an account is named by
("the card ending in 4471", "**** 4471"). Who approves (a route) and whether a check is
weakened are read by :mod:`memwarden.guards.approvals`.

:func:`procedure_values` returns them by category, each value in a comparison *key*: NFKC
(full-width and mathematical digits are the digits they stand for), case-folded; an account's,
a number's or a route's without the spaces, hyphens, dots and slashes people group digits
with. A destination's and a credential's keep them: "portal-globex.com", "a.p@globex.com" and
"hunter2" are another host, mailbox and password than "portal.globex.com", "ap@globex.com" and
"hunter-2" (a key without them made such a change no change;
tests/test_attack_fresh31_destinations.py). A destination's key drops only what names the same
place again: the "https://" of a link (a bare host is one), its scheme's default port, a
trailing slash, the full stop of the sentence; a share path is its "smb://" link. Last digits
("*4471") restate an account that ends in them (:class:`~memwarden.guards.value_set.Values`),
not the other way round. Nothing else is folded:
a Cyrillic letter in an IBAN, an Arabic-Indic digit, a zero-width space or a letter O for the
digit 0 leaves a *different* key, because a payment system reads the characters, not their
look. :func:`skeleton` folds those away too, so that a caller can tell a look-alike of a
known value (an attack on the reader's eyes) from a plainly different one.

Money is read by :mod:`memwarden.guards.money`: a number with a currency on either side (any
currency symbol of Unicode category Sc, an ISO 4217 code, a currency's name), keyed by its
value whatever its separators, times its magnitude ("k", "lakh", "crore", "Mio.", "Mrd.",
"trillion"), with its sign, in the currency's main unit ("40000 cents" is $400), both ends of a
range, a compound's parts added ("400 euros and 50 cents"), and its period; a fraction ("1/2",
"½"), a percentage or basis points is a share, keyed as the percentage it is. Any other amount
is a number and its unit ("5 mg", "3 tablets"; "1½ tablets" is 1.5), its number normalised
("50.0%" is "50%"), with its period as money has it ("5 mg twice daily" is "5/12h").

Linear time: the patterns run on RE2 (``google-re2``), whose matching time is linear in the
text, over the rule engine's one-byte-per-character projection of it.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable, Iterator
from decimal import Decimal, InvalidOperation
from functools import lru_cache

import re2

from memwarden.guards.function_words import ORDINAL_SUFFIXES, STOP_WORDS
from memwarden.guards.injection import fold
from memwarden.guards.money import CURRENCY_CODES, LOWER_CASE_CODES, MAGNITUDES, plain_numbers, read_money, read_shares
from memwarden.guards.approvals import ROUTE, approver, read_checks
from memwarden.guards.ruleset import DIGIT as _D
from memwarden.guards.ruleset import LETTER as _L
from memwarden.guards.periods import PERIOD, period_key, read_periods
from memwarden.guards.ruleset import ASCII_LOWER, MAX_MATCHES, compile_projected, project
from memwarden.guards.ruleset import WORD_CHAR as _WI
from memwarden.guards.unread import unread_tokens
from memwarden.guards.value_set import Values

__all__ = ["CATEGORIES", "CURRENCY_CODES", "LOWER_CASE_CODES", "MAGNITUDES", "Values", "procedure_values", "skeleton"]


# The patterns read the text as the rule engine does (memwarden.guards.ruleset.project): one
# ASCII byte per character, so a match's positions are the text's (its classes: _L, _D, _WI).
_EDGE = r"(?:^|[^a-zA0-9B\x01])"
_NUM = r"[0-9B\x01oli]"
# What people group an account's digits with: a hyphen, or up to three spaces or a line break;
# a run of digits also takes a dot or a slash.
# Any other character the projection reads as "\x01" separates too (a non-breaking hyphen, an
# en dash, a middle dot, a zero-width space: "GB33\u2011BUKB\u2011..." held no account at all,
# so an agent's IBAN typeset so was compared with nothing); it stays in the key unless it is
# a dash or a middle dot (_GROUPING), so an invisible one still makes a look-alike.
_SEP = r"(?:[ \t\r\n]{1,3}| ?[\-\x01] ?)?"
_SEP_RUN = r"(?:[ \t\r\n]{1,3}| ?[\-./\x01] ?)?"
# What joins a value to what names it ("sort code: 20-00-00", "the last four digits are").
_IS = r"(?:(?:is|are|of|now)\s+|[:=\-]\s*)?"




# Units of one dimension, by their size in its base unit: 5 mg and 5 g are one quantity in two
# units, so they compare (a thousandfold dose is a changed dose), and 5000 mg is 5 g.
_MASS = {"mcg": "0.001", "\u03bcg": "0.001", "ug": "0.001", "microgram": "0.001", "mg": "1", "milligram": "1",
         "g": "1000", "gram": "1000", "gr": "1000", "kg": "1000000", "kilogram": "1000000"}
_VOLUME = {"ml": "1", "milliliter": "1", "millilitre": "1", "cc": "1", "cl": "10", "dl": "100",
           "l": "1000", "liter": "1000", "litre": "1000"}
_SCALES = {unit: (dimension, Decimal(size)) for dimension, sizes in (("mass:mg", _MASS), ("volume:ml", _VOLUME))
           for unit, size in sizes.items()}
_MEASURES = "|".join(sorted((u + "s?" for u in _SCALES if u.isascii()), key=len, reverse=True))


# Top-level domains a bare host name may end in: the common generic ones and country codes that
# are no English word or file extension ("it", "in", "at", "no", "me" are left out: "done.It
# was" is a missing space).
_TLDS = ("com|net|org|edu|gov|mil|int|biz|info|io|co|app|dev|cloud|online|site|tech|xyz|shop|store|"
         "eu|uk|de|fr|es|nl|ch|se|dk|fi|pl|ie|pt|ca|au|nz|jp|cn|ru|br|mx|ar|"
         # Newer generic ones, and country codes used as generic ones ("globex.ai", "pay.us",
         # "portal.gg"); "sh", "rs", "ps" and "so" stay out (a script, a Rust file, a library).
         "ai|us|gg|ly|tv|cc|ws|fm|la|vc|pro|live|email|digital|finance|financial|money|bank|pay|network|"
         "systems|solutions|services|support|global|group|company|agency|link|click|top|vip|club|zone|space|"
         "website|page|host|hosting|works|tools|team|life|world|today|news|media|law|legal|capital|ventures|"
         "fund|exchange|trade|market|markets|business|cash|credit|loans|invest|ltd|llc|inc|gmbh|"
         "ro|hu|cz|sk|si|hr|bg|gr|tr|ua|kz|il|ae|sa|qa|za|ng|ke|eg|tn|sg|hk|tw|kr|th|vn|ph|pk|bd|lk|np|"
         "cl|pe|uy|ve|cr|pa|lt|lv|ee|lu|li|mt|cy|gl|su|ir|iq|"
         # an internationalised one, as IDNA spells it
         "xn--[a-z0-9]{2,20}")
# An address spelled out against harvesters: "ap [at] globex [dot] com", "(at)", "[.]".
_OBFUSCATED = compile_projected(r"\s*[\[({]\s*(at|dot|@|\.|:)\s*[\])}]\s*")
# Or in bare words where the shape is an address's: a word, "at", labels and "dot" up to a
# top-level domain ("ap at globex dot co dot uk"). ("Meet at noon" is none; after a function
# word, "log in at portal dot globex dot com" spells a host.)
_SPELT = compile_projected(rf"(?:^|[^a-zA0-9B\x01.@_\-])({_WI}+(?:[._\-]{_WI}+)*)\s+at\s+"
                           rf"((?:{_WI}+(?:-+{_WI}+)*\s+dot\s+)+(?:{_TLDS}))\b")
_PATTERNS: dict[str, re2._Regexp] = {
    # An address, a link, or a bare host name ("portal.globex.com/invoices", group 1): labels
    # ending in a top-level domain of :data:`_TLDS` (so no "e.g.", "v1.2", "report.pdf" or
    # "St. Mary"), with its path.
    "destination": compile_projected(rf"{_WI}(?:{_WI}|[._%+\-])*@{_WI}+(?:[.\-]{_WI}+)+|(?:[a-z][a-z0-9+.\-]{{0,15}}://|www\.)[^\s<>\"'()\[\]]+|"
                            # a share's path ("\\\\fileserver\\finance")
                            rf"\\\\{_WI}(?:{_WI}|[.\-$])*(?:\\[^\s<>\"'()\[\]\\]+)*|"
                            rf"(?:^|[^a-zA0-9B\x01.@/_\-])((?:{_WI}+(?:-+{_WI}+)*\.)+(?:{_TLDS})(?::{_D}{{1,5}})?"
                            rf"(?:/(?:[^\s<>\"'()\[\]]*[^\s<>\"'()\[\].,;:!?])?)?)"
                            rf"(?:[^a-zA0-9B\x01\-@./_]|\.(?:[^a-zA0-9B\x01]|$)|$)"),
    # IBAN-like codes (two letters, two digits, then groups) and runs of 7+ digits with the
    # separators people write them with (accounts, cards, phones, sort codes).
    # (o, l and i inside the digits stay in the value: the look-alikes of 0 and 1.)
    # (A group may be set off by up to three spaces or a line break too, as a pasted table
    # cell or a wrapped line has it: an established "FR76  3000  6000 ..." held no account, so
    # a changed IBAN was compared with nothing; tests/test_attack_collusion3.py.)
    "account": compile_projected(rf"{_EDGE}({_L}{{2}}{_D}{{2}}(?:{_SEP}[a-zA]){{0,4}}(?:{_SEP}{_NUM}){{7,29}}{_SEP}{_D})|"
                        rf"{_EDGE}(\+?{_D}(?:{_SEP_RUN}{_NUM}){{5,29}}{_SEP_RUN}{_D})|"
                        # a sort code or BSB (group 3), a BIC or IFSC (4: read in capitals only,
                        # "SWIFT transfer" is none), an account named by its last digits (5 to 7)
                        rf"\b(?:sort[- ]?code|bsb)\s*{_IS}({_D}{{2}}[\- ]?{_D}{{2}}[\- ]?{_D}{{2}}|{_D}{{3}}[\- ]?{_D}{{3}})\b|"
                        rf"\b(?:bic|swift|ifsc)(?:\s*(?:/|or|and)\s*(?:bic|swift))?(?:\s+code)?\s*{_IS}"
                        rf"([a-z]{{6}}[a-z0-9]{{2}}(?:[a-z0-9]{{3}})?|[a-z]{{4}}0[a-z0-9]{{6}})\b|"
                        rf"\b(?:account|acct|card|iban)s?\b(?:[.,]?\s+{_WI}+){{0,4}}?[.,]?\s+(?:ending|ends)(?:\s+(?:in|with))?"
                        rf"\s*:?\s*({_D}{{3,6}})\b|"
                        rf"\blast\s+(?:three|four|five|six|[3-6])(?:\s+digits)?(?:\s+of(?:\s+{_WI}+){{1,3}}?)?\s*{_IS}"
                        rf"({_D}{{3,6}})\b|{_EDGE}(?:\*{{2,}}|x{{4,}}|\x01{{2,}})(?:[ \-]?(?:\*{{2,}}|x{{4,}}|\x01{{2,}})){{0,3}}"
                        rf"[ \-]?({_D}{{3,6}})\b"),
    "credential": compile_projected(rf"\b(?:password|passcode|passphrase|pin|api key|access key|deployment key|key|token|"
                           rf"secret|login|credentials?|(?:alarm|door|gate|entry|access|lock|safe|keypad|garage|building|wi-?fi) code|"
                           rf"combination)s?\b[^.\n]{{0,30}}?\b(?:is|are|:|=|now|changed to|set to|"
                           rf"kept in|stored in|found in|lives in|posted in|shared in|reset to|updated to|now reads)\s+({_WI}[^\s]*"
                           rf"(?:\s+{_WI}[^\s]*){{0,3}})"),
    # (Not after a colon: the minutes of "17:45 Uhr" are no amount of "Uhr".)
    # A hyphen or a bracket may stand between a number and its unit ("a 50-mg tablet", "50
    # (mg)"); a unit of mass or volume a few words on is the unit of a number whose next word
    # is none ("50 of the mg", "50 de mg"): group 4. (Money is read first, by _MONEY_BEFORE
    # and _MONEY_AFTER: a number they read as money is no unit's.)
    # A period after it is part of the amount ("5 mg twice daily", periods.PERIOD).
    "route": ROUTE,
    "amount": compile_projected(rf"(?:^|[^a-zA0-9B\x01:])({_D}+(?:[.,]{_D}+)*)\s*"
                       rf"(?:-\s*|[(\[]\s*)?(x\b|%|{_L}+)(?:(?:\s+{_L}+){{0,2}}\s+({_MEASURES})\b)?{PERIOD}"),
}

_AMOUNT_GROUPS = _PATTERNS["amount"].groupindex

# The words of four letters or more: runs of ASCII letters of the projection (a translate and a
# split in C, a third of the whole reading's time when RE2 returned each match to Python).
_NOT_LETTERS = bytes.maketrans(bytes(c for c in range(256) if not 97 <= c <= 122), b" " * 230)
_DATE = re2.compile(r"^\d{4}-\d{2}-\d{2}$|^\d{1,2}[./]\d{1,2}[./]\d{2,4}$")
_GROUPING = str.maketrans("", "", " -./\t\r\n\u2010\u2011\u2012\u2013\u2014\u2015\u2212\u00b7")
# Ideographic and small full stops are dots ("portal。globex。com"; NFKC makes "．" and "｡" one).
_DOTS = str.maketrans({"\u3002": ".", "\ufe52": "."})

#: What a procedure-changing fact may change, as :func:`procedure_values` names them.
CATEGORIES = ("destination", "account", "credential", "route", "amount", "check")


# The port a scheme means when it names none ("https://portal.globex.com:443" is the portal).
_DEFAULT_PORTS = {"http": "80", "https": "443", "ftp": "21", "sftp": "22", "ssh": "22", "smb": "445"}
# Defanged schemes are the ones they stand for.
_DEFANGED = {"hxxp": "http", "hxxps": "https"}


def _key(value: str, category: str | None = None) -> str:
    """``value``'s comparison key in ``category`` (None: a number's, an account's, a route's,
    without what people group them with)."""
    value = unicodedata.normalize("NFKC", value)
    if category == "credential" and not value.translate(_GROUPING).isdigit():  # (a PIN is typed as its digits)
        # Its case and every character kept ("Hunter2" is not "hUNTER2"), but the sentence's full stop.
        return " ".join(value.split()).rstrip(".")
    value = value.casefold()
    if category == "destination":
        return _destination(value)
    return value.translate(_GROUPING)


def _destination(value: str) -> str:
    """A destination's key: its punctuation kept (a dot, a hyphen or a slash makes another
    host, mailbox or path); a share path, or a file link with a host, as the ``smb://`` link
    it is; a link without a scheme an ``https://`` one; without its scheme's default port, a
    trailing slash or the full stop after it."""
    if value.startswith("\\\\"):
        value = "smb://" + value[2:].replace("\\", "/")
    scheme, sep, rest = value.partition("://")
    if not sep:
        if "@" in value:
            return value
        scheme, rest = "https", value
    scheme = "smb" if scheme == "file" and not rest.startswith("/") else _DEFANGED.get(scheme, scheme)
    host, _, path = rest.rstrip(".,;:!?").partition("/")
    port = _DEFAULT_PORTS.get(scheme)
    host = host[:-len(port) - 1] if port and host.endswith(":" + port) else host
    host = _unicode_host(host.rstrip("."))  # (a host's root dot names it again, and so does its IDNA spelling)
    path = path.rstrip("/")
    return f"{scheme}://{host}/{path}" if path else f"{scheme}://{host}"


def _unicode_host(host: str) -> str:
    """``host`` with its punycode labels ("xn--bcher-globex-llb.de") in the Unicode they spell."""
    if "xn--" not in host:
        return host
    name, colon, port = host.rpartition(":") if ":" in host else (host, "", "")
    try:
        name = name.encode("ascii").decode("idna")
    except (UnicodeError, ValueError):
        return host
    return name + colon + port


_THOUSANDS = re2.compile(r"^\d{1,3}(?:,\d{3})+(?:\.\d+)?$")


def _number(value: str) -> str:
    """An amount's key: its decimal point kept (1.5 mg is not 15 mg), thousands commas
    dropped, a decimal comma read as a point."""
    value = unicodedata.normalize("NFKC", value)
    value = value.replace(",", "") if _THOUSANDS.search(value) else value.replace(",", ".")
    try:  # one value, one key: "50.0%" is "50%", as a fraction's "1/2" is
        return format(Decimal(value).normalize(), "f")
    except InvalidOperation:
        return value


def skeleton(value: str, category: str | None = None) -> str:
    """``value`` with look-alikes folded (Cyrillic and Greek letters, invisible characters,
    accents, as the injection detector folds them) and digit look-alikes read as digits (O as
    0, l and I as 1), keyed as ``category`` keys it (:func:`_key`): two values with one
    skeleton look the same to a reader."""
    folded = fold("".join(str(unicodedata.digit(c)) if c.isdigit() and not c.isascii() else c
                          for c in unicodedata.normalize("NFKC", value)))
    return _key(folded, category).translate(str.maketrans({"o": "0", "l": "1", "i": "1"}))





# What follows a number without being its unit: a function word of any of the five languages
# ("facture 4 de Müller", "Zimmer 12 ist frei": the number labels something), an ordinal's
# ending ("12th"), a time of day ("um 17 Uhr", "9 am": a moment, not a quantity), or a count
# word. Units of mass and volume stay units whatever they spell ("5 l").
_NOT_UNITS = (STOP_WORDS | ORDINAL_SUFFIXES | frozenset("times uhr pm".split())) - _SCALES.keys()


def _measure(unit: str, number: str) -> tuple[str, str]:
    """An amount's category and key: a unit of mass or volume in its dimension's base unit
    (``mass:mg``, ``volume:ml``), any other unit as itself."""
    scale = _SCALES.get(unit)
    if scale is None:
        return unit, number
    try:
        base = Decimal(number) * scale[1]
    except InvalidOperation:
        return unit, number
    return scale[0], format(base.normalize(), "f")



def _respelt(text: str, data: bytes, pattern: re2._Regexp,
             spell: Callable[[re2._Match, str], tuple[int, int, str]], overflowed: list[bool]) -> tuple[str, bytes]:
    """``text`` and its projection with the spans ``spell`` gives for each match of ``pattern``
    (on ``data``, the projection) replaced by what it gives."""
    parts, last = [], 0
    for n, match in enumerate(pattern.finditer(data)):
        if n == MAX_MATCHES:
            overflowed.append(True)  # (the rest were not read: Values.overflow)
            break
        start, end, spelt = spell(match, text)
        parts += [text[last:start], spelt]
        last = end
    if not parts:
        return text, data
    text = "".join(parts) + text[last:]
    return text, project(text.translate(ASCII_LOWER))


def _address(match: re2._Match, text: str) -> tuple[int, int, str]:
    """An address in words (:data:`_SPELT`) as it is written."""
    local = text[match.start(1):match.end(1)]
    host = "".join("." if word.casefold() == "dot" else word for word in text[match.start(2):match.end(2)].split())
    return match.start(1), match.end(2), local + (" at " if local.casefold() in STOP_WORDS else "@") + host


@lru_cache(maxsize=4096)
def procedure_values(text: str) -> Values:
    """The procedure-changing values of ``text`` (see the module docstring)."""
    found: dict[str, set[str]] = {}
    raw: dict[str, str] = {}

    def add(category: str, value: str, mark: str = "") -> None:
        key = mark + _key(value, category)
        # (A date read before its separators go: "2025-01-01" is no account number.)
        if key and not _DATE.search(key) and not _DATE.search(value.strip()):
            found.setdefault(category, set()).add(key)
            raw.setdefault(key, value)

    nfkc = unicodedata.normalize("NFKC", plain_numbers(text)).translate(_DOTS)
    data = project(nfkc.translate(ASCII_LOWER))

    def span(match: re2._Match, group: int = 0) -> str:
        return nfkc[match.start(group):match.end(group)]

    overflow = False

    def matches(category: str, of: bytes = data) -> Iterator[re2._Match]:
        nonlocal overflow
        for n, match in enumerate(_PATTERNS[category].finditer(of)):
            if n == MAX_MATCHES:
                overflow = True
                return
            yield match

    respelt_over: list[bool] = []
    # Destinations are read with "[at]", "[dot]" and "[:]" read as "@", "." and ":" ("hxxps[:]//"),
    # then an address in words as one.
    plain, plain_data = _respelt(nfkc, data, _OBFUSCATED, lambda match, _: (
        match.start(), match.end(), {b"at": "@", b"@": "@", b":": ":"}.get(match.group(1), ".")), respelt_over)
    plain, plain_data = _respelt(plain, plain_data, _SPELT, _address, respelt_over)
    overflow = bool(respelt_over)
    def link(match: re2._Match) -> int | None:
        """Where a link or host starts (an address's mailbox may name who approves)."""
        group = 1 if match.group(1) is not None else 0
        return match.start(group) if b"@" not in match.group(group) else None

    read: list[tuple[int, int, str]] = []  # (the spans the readers matched, for memwarden.guards.unread)
    starts = set()  # (for the routes below)
    for match in matches("destination", plain_data):
        group = 1 if match.group(1) is not None else 0
        add("destination", plain[match.start(group):match.end(group)])
        starts.add(link(match))
    if plain_data is not data:  # (where they start in the text as it was written)
        starts = {link(match) for match in matches("destination")}
    read += [(*m.span(), "destination") for m in matches("destination")]
    if plain is not nfkc:  # (an address spelt out: its "[at]" and "dot" were read)
        read += [(*m.span(), "destination") for pattern in (_OBFUSCATED, _SPELT)
                 for m in zip(range(MAX_MATCHES), pattern.finditer(data)) for m in [m[1]]]
    for match in matches("account"):
        group = next(g for g in range(1, 8) if match.group(g) is not None)
        value = span(match, group)
        if group == 4:  # a BIC, the same without its head office's "XXX"
            if not value.isupper():
                continue
            value = value[:8] if value.endswith("XXX") else value
        add("account", value, "*" if group > 4 else "")
        read.append((*match.span(group), "account"))
    for match in matches("credential"):
        add("credential", span(match, 1))
        read.append((*match.span(1), "credential"))
    for match in matches("route"):
        start, name = approver(match, nfkc)
        # (A link's scheme or host is where it goes, "paid through https://...", not who approves.)
        if name and start not in starts:
            add("route", name)
    # Money first, a currency on either side of its number (memwarden/guards/money.py): the
    # numbers it reads are no unit's, and neither are a fraction's.
    money_found, money, money_overflow, money_spans = read_money(nfkc)
    read += [(*span_, "amount") for span_ in money_spans]
    for category, keys in money_found.items():
        found.setdefault(category, set()).update(keys)
    shares, share_ends, share_overflow = read_shares(nfkc)
    if shares:
        found.setdefault("amount:%", set()).update(shares)
    money |= share_ends
    overflow = overflow or money_overflow or share_overflow
    for match in matches("amount"):
        if match.end(1) in money:
            continue  # the number of an amount of money, read above
        unit = span(match, 2).casefold()
        if (unit == "x" or fold(unit) in _NOT_UNITS) and match.group(3) is not None:
            unit = span(match, 3).casefold()
        if fold(unit) not in _NOT_UNITS:
            # One category per unit: 5 mg and 50 mg differ, 5 mg and 3 tablets do not compare.
            unit = unit.rstrip("s") or unit
            category, number = _measure(unit, _number(span(match, 1)))
            period = period_key(span(match, _AMOUNT_GROUPS[b"between"]), span(match, _AMOUNT_GROUPS[b"period"]))
            found.setdefault(f"amount:{category}", set()).add(f"{number}/{period}" if period else number)
            read.append((*match.span(), "amount"))
    # A period said before its amount ("the monthly retainer is 400 EUR") is a value of its own.
    if any(c.startswith("amount:") for c in found):
        periods, periods_over = read_periods(nfkc)
        overflow = overflow or periods_over
        if periods:
            found.setdefault("amount:period", set()).update(periods)
    checks = read_checks(data)
    tokens = unread_tokens(nfkc, read, money)
    return Values({k: frozenset(v) for k, v in found.items()}, checks.weakened, raw, overflow or checks.overflow,
                  checks.names_check, checks.opened, checks.dropped,
                  frozenset(w.decode() for w in data.translate(_NOT_LETTERS).split() if len(w) >= 4), checks.dropped_words,
                  checks.obliged, checks.unkept, tokens)
