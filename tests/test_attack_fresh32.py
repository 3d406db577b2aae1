"""Fresh attacks on the procedure value readers after "fresh31" (memwarden/guards/values.py,
money.py, value_set.py, negation.py), by an outsider who has read them.

In every attack the manager (frank) establishes a record, an employee's agent (mallory) writes a
change of one of its procedure values under no subject, and the test asserts that the change is
held for review and that the manager's search returns his record, not the change
(:func:`tests.office_attacks.planted_against`). Each strict xfail was stored ACTIVE on the code it
was written against (d3b97b3): its reason names the mechanism. Each class has benign twins (a
faithful restatement in another notation) that must stay active; a twin that is held today is a
strict xfail too.

The classes, by mechanism:

1. a destination in a notation the destination pattern does not read (a bare host in a top-level
   domain outside _TLDS, an IP address, an address spelt in another language, an address as HTML
   character references or percent-encoded, a share path as "//server/share"): the change holds no
   destination, so nothing is compared;
2. an account in a notation the account pattern does not read (a BIC in lower case, a sort code
   with dots, "…9921", "last digits are", groups four spaces apart or wrapped onto an indented line);
3. a credential's key folds case and cuts at the first symbol outside [#@._-]; a credential set by
   a verb or in a language the pattern does not know ("was reset to", "Passwort ist");
4. money in another named currency compares with nothing (value_set.Values._compared): "400 EUR"
   made "4000 USD" or "£400" made "₤4000" (a look-alike symbol of its own category);
5. magnitudes the money reader does not know fold amounts ("4 bln" and "4 mln" are both 4, "9
   hundred euros" is 100);
6. a period away from its amount is compared only with the established text's period adverbs:
   "400 EUR per month" yields no amount:period, so "400 EUR. It is payable daily." changes nothing;
7. shares and doses in notations not read (the Arabic percent sign, "percentage points", a dose in
   number words, a dose moved to another dimension "5 mg" -> "5 ml"); money in a currency name several
   currencies share ("kr", "dinars") compares by value alone with any currency; a period added to an
   amount that had none ("a one-off 400 EUR" made "400 EUR per day") is no change;
8. a threshold's comparator is no part of its key ("over 1,000 EUR" made "under 1,000 EUR"), and
   a threshold added where none was established is compared with nothing;
9. routes: a pronoun ("me") is a stop word _who drops, an alternative approver after a bracket, a
   slash or an inserted phrase ends the route, "approved by: X" and German "vom CFO genehmigt" are not
   read;
10. a check weakened in words no list holds (an exception clause, a past tense, "isn't required",
    "not mandatory", "omitted", "deprecated", "up to the clerk", "following payment"), or in another
    language ("freiwillig", "facultatif");
11. the scope of a negation: a negation in a clause *about* the check ("no wonder", "the call-back
    nobody likes", "no-risk payments") governs the weakening, which is read as denied;
12. MAX_MATCHES: unnegated(), read_periods() and _respelt() stop at 512 matches without setting
    Values.overflow, so 512 harmless matches before the change hide it.

Twins held today: a punycode host, a host's root dot, "EUR 4 mln", an approver in apposition ("the
CFO, Jane Doe"). Some notations named above ("Passwort ist", "percentage points", "not mandatory",
"deprecated", "up to the clerk", "the account ending with the digits", a drive letter "Z:\\...")
were stored active as well when probed, but are left out of the parametrization to keep the file
small. Tried and held (not here, or here as plain tests): look-alike Cyrillic letters in "optional",
"skipped", "approved", "EUR", "month", "sort code", "account", "password", "percent"; an address
half in words ("ap@globex-billing dot com"); a period after the amount's comma; "by myself"; the
linear-time promise (random 32-64 KB mixes of the patterns' own tokens scale linearly, < 60 ms).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.office_attacks import planted_against, restated_beside

pytestmark = pytest.mark.integration

_LINK = "Orion invoices from Globex are paid through {}."
_MAIL = "Orion remittance advice for Globex goes to {}."
_SHARE = "Orion invoices from Globex are filed on {}."
_PAID = "Orion payments to Globex go to {}."
_VAULT = "The Orion vault password for Globex is {}."
_R = "The Orion retainer for Globex is {}"
_D = "Patient Orion at Globex gets {}"
_APPROVED = "Orion refunds to Globex are approved by the CFO."
_CALL_BACK = "A call-back is mandatory for every Orion payment to Globex."
_Q = "Orion Globex"


def _pairs(template: str, pairs: list[tuple[str, str]]) -> list[tuple[str, str]]:
    return [(template.format(a), template.format(b)) for a, b in pairs]


# The changes held since an unread value fails closed (memwarden/guards/unread.py): a value-like
# token no reader reads, or reads as a value of another family, is a change of an established
# text that holds procedure values and not that token.
_FIXED = frozenset(t.format(v) for t, v in [
    (_LINK, "portal.globex.be/pay"), (_LINK, "203.0.113.5/pay"), (_MAIL, "ap at globex dot it"),
    (_MAIL, "ap arroba globex-billing punto com"), (_MAIL, "ap&#64;globex-billing&#46;com"),
    (_MAIL, "ap%40globex-billing%2Ecom"), (_SHARE, "//fileserver2/finance/invoices"),
    (_PAID, "IBAN GB33    BUKB    2020    1555    5555    99"), (_PAID, "account 3192\n    9921"),
    (_PAID, "swift deutdeff500"), (_PAID, "the account \u20269921"), (_PAID, "the account whose last digits are 9921"),
]) | {"Globex receives 75\u066a of the Orion fee.", "The Orion vault password for Globex was reset to hunter3."} | {
    # and by the comparisons fixed beside it: a credential's case and symbols kept, "mln"/"bln"
    # read, a dose's dimension compared
    _VAULT.format("hUNTER2"), _VAULT.format("Tr0ub4dor&4"), _D.format("5 ml twice daily."),
    "The Orion budget for Globex is EUR 4 mln."}


def _xfail(reason: str, cases: list[tuple[str, str]]) -> list:
    return [pytest.param(a, b, marks=() if b in _FIXED else pytest.mark.xfail(strict=True, reason=reason))
            for a, b in cases]


# -- 1. destinations the destination pattern does not read ------------------------------------

_UNREAD_HOST = ("a bare host is read only when it ends in a top-level domain of values._TLDS (no .be, .it, "
                "no IP address), and an address in words only before one: the change holds no destination")
_UNREAD_SPELT = "an address spelt in words is read only with the English 'at' and 'dot' (values._SPELT)"
_ENCODED = ("an address with its '@' and dots as HTML character references or percent-encoding is read as none: "
            "nothing decodes '&#64;', '&#46;', '%40', '%2E' before the destination pattern runs")
_UNREAD_SHARE = ("a share path is read only as '\\\\server\\share' or a link with a scheme: '//server/share' and a "
                 "drive letter are no destination")

DESTINATIONS = [
    *_xfail(_UNREAD_HOST, _pairs(_LINK, [("portal.globex.com/pay", "portal.globex.be/pay"),
                                         ("portal.globex.com/pay", "203.0.113.5/pay")])
            + _pairs(_MAIL, [("ap@globex.com", "ap at globex dot it")])),
    *_xfail(_UNREAD_SPELT, _pairs(_MAIL, [("ap@globex.com", "ap arroba globex-billing punto com")])),
    *_xfail(_ENCODED, _pairs(_MAIL, [("ap@globex.com", "ap&#64;globex-billing&#46;com"),
                                     ("ap@globex.com", "ap%40globex-billing%2Ecom")])),
    *_xfail(_UNREAD_SHARE, _pairs(_SHARE, [("\\\\fileserver\\finance\\invoices", "//fileserver2/finance/invoices")])),
]


@pytest.mark.parametrize(("established", "planted"), DESTINATIONS)
def test_a_destination_in_an_unread_notation_is_held(tmp_path: Path, established: str, planted: str) -> None:
    planted_against(tmp_path, established, planted, _Q)


_PUNYCODE = ("an internationalised host and its IDNA spelling ('bücher-globex.de', 'xn--bcher-globex-llb.de') are "
             "two keys: values._destination does not decode punycode")
_FQDN = "a host's root dot ('portal.globex.com./pay') stays in its key: only the sentence's full stop is dropped"

DESTINATION_TWINS = [
    *_xfail(_PUNYCODE, _pairs(_LINK, [("https://bücher-globex.de/pay", "https://xn--bcher-globex-llb.de/pay")])),
    *_xfail(_FQDN, _pairs(_LINK, [("portal.globex.com/pay", "portal.globex.com./pay")])),
]


@pytest.mark.parametrize(("established", "restated"), DESTINATION_TWINS)
def test_a_destination_restated_is_not_held(tmp_path: Path, established: str, restated: str) -> None:
    restated_beside(tmp_path, established, restated)


# -- 2. accounts the account pattern does not read --------------------------------------------

_UNREAD_ACCOUNT = ("the account pattern reads a BIC in capitals only, a sort code with hyphens or spaces only, last "
                   "digits after 'ending (in|with)', '****' or 'last four': '…9921', 'ending with the digits', "
                   "'last digits are', 'deutdeff' and '40.11.62' hold no account")

_SPACED_ACCOUNT = ("values._SEP and _SEP_RUN take at most three spaces or a line break between groups: an IBAN "
                   "aligned with four spaces or an account number wrapped onto an indented line holds no account")

ACCOUNTS = _xfail(_SPACED_ACCOUNT, [
    (_PAID.format("IBAN GB33 BUKB 2020 1555 5555 55"), _PAID.format("IBAN GB33    BUKB    2020    1555    5555    99")),
    (_PAID.format("account 3192 4471"), _PAID.format("account 3192\n    9921")),
]) + _xfail(_UNREAD_ACCOUNT, _pairs(_PAID, [
    ("SWIFT BUKBGB22", "swift deutdeff500"),
    ("sort code 20-00-00", "sort code 40.11.62"),
    ("the account ending 4471", "the account \u20269921"),
    ("the account ending 4471", "the account whose last digits are 9921"),
]))

ACCOUNT_TWINS = _pairs(_PAID, [("the account ending 4471", "the account ending: 4471"),
                               ("account 31924471", "account no. 3192 4471")])


@pytest.mark.parametrize(("established", "planted"), ACCOUNTS)
def test_an_account_in_an_unread_notation_is_held(tmp_path: Path, established: str, planted: str) -> None:
    planted_against(tmp_path, established, planted, _Q)


@pytest.mark.parametrize(("established", "restated"), ACCOUNT_TWINS)
def test_an_account_restated_is_not_held(tmp_path: Path, established: str, restated: str) -> None:
    restated_beside(tmp_path, established, restated)


# -- 3. credentials ------------------------------------------------------------------------------

_FOLDED_CREDENTIAL = ("a credential's key is case-folded (values._key) and its value cut at the first character "
                      "outside [#@._-] (values._PATTERNS['credential']): 'Hunter2' is 'hUNTER2', 'Tr0ub4dor&3' "
                      "is 'Tr0ub4dor&4'")
_UNREAD_CREDENTIAL = ("a credential is read only after 'is', ':', '=', 'now', 'changed to', 'set to' and English "
                      "names: 'was reset to' and 'Passwort ist' hold none")

CREDENTIALS = [
    *_xfail(_FOLDED_CREDENTIAL, _pairs(_VAULT, [("Hunter2", "hUNTER2"), ("Tr0ub4dor&3", "Tr0ub4dor&4")])),
    *_xfail(_UNREAD_CREDENTIAL, [
        (_VAULT.format("hunter2"), "The Orion vault password for Globex was reset to hunter3.")]),
]


@pytest.mark.parametrize(("established", "planted"), CREDENTIALS)
def test_a_changed_credential_is_held(tmp_path: Path, established: str, planted: str) -> None:
    planted_against(tmp_path, established, planted, "Orion Globex vault")


def test_a_credential_restated_is_not_held(tmp_path: Path) -> None:
    restated_beside(tmp_path, _VAULT.format("hunter-2"), "The Orion vault password for Globex: hunter-2.")


# -- 4.-7. amounts -------------------------------------------------------------------------------

_CURRENCY = ("money of one named currency compares only with money of that currency or of none "
             "(value_set.Values._compared): '400 EUR' made '4000 USD', or '£' made the look-alike lira sign '₤' "
             "(its own category), is compared with nothing")
_MAGNITUDE = ("a magnitude money.MAGNITUDES lacks ('mln', 'bln') is dropped and a digit before 'hundred' is lost: "
              "'EUR 4 bln' and 'EUR 4 mln' are both 4, '100 EUR' and '9 hundred euros' both 100")
_DETACHED_PERIOD = ("a period away from its amount is an amount:period only from an adverb (money.read_periods), and "
                    "an established period after its amount ('per month') yields none: a changed period said apart "
                    "from the amount is compared with nothing, and the amount itself restates by value._unsaid_period")
_UNREAD_SHARE_OR_DOSE = ("a share or a dose in a notation the readers do not read: the Arabic percent sign '٪', "
                         "'percentage points', a dose in number words, a dose moved to another dimension (mg to ml, "
                         "values._measure)")
_NO_NAMED_CURRENCY = ("a currency name several currencies share ('kr', 'dinars', 'pesos') is money in no named "
                      "currency, which compares by value alone with every currency (value_set.ANY_MONEY): '400 kr' "
                      "(SEK) restates '400 EUR', '400 dinars' (KWD) '400 USD'")
_PERIOD_ADDED = ("a period said on one side only is no change (value_set._unsaid_period) in either direction, "
                 "and 'one-off' is no period: a one-off 400 EUR made '400 EUR per day' restates it")

AMOUNTS = [
    *_xfail(_CURRENCY, _pairs(_R, [("400 EUR a month.", "4000 USD a month."),
                                   ("\u00a3400 a month.", "\u20a44000 a month.")])),
    *_xfail(_MAGNITUDE, [("The Orion budget for Globex is EUR 4 bln.", "The Orion budget for Globex is EUR 4 mln."),
                         (_R.format("100 EUR a month."), _R.format("9 hundred euros a month."))]),
    *_xfail(_DETACHED_PERIOD, [(_R.format("400 EUR per month."), _R.format("400 EUR. It is payable daily.")),
                               (_R.format("400 EUR per month."), "The Orion retainer for Globex is paid daily: 400 EUR.")]),
    *_xfail(_UNREAD_SHARE_OR_DOSE, [
        ("Globex receives 25% of the Orion fee.", "Globex receives 75\u066a of the Orion fee."),
        (_D.format("5 mg twice daily."), _D.format("fifty milligrams twice daily.")),
        (_D.format("5 mg twice daily."), _D.format("5 ml twice daily."))]),
    *_xfail(_NO_NAMED_CURRENCY, _pairs(_R, [("400 kr a month.", "400 EUR a month."),
                                            ("400 USD a month.", "400 dinars a month.")])),
    *_xfail(_PERIOD_ADDED, [("The Orion set-up fee for Globex is a one-off 400 EUR.",
                             "The Orion set-up fee for Globex is 400 EUR per day.")]),
]


@pytest.mark.parametrize(("established", "planted"), AMOUNTS)
def test_a_changed_amount_is_held(tmp_path: Path, established: str, planted: str) -> None:
    planted_against(tmp_path, established, planted, _Q)


AMOUNT_TWINS = [
    *_pairs(_R, [("400 EUR a month.", "\u20ac400 a month."), ("5 grand a month.", "5000 USD a month.")]),
    ("The monthly Orion retainer for Globex is 400 EUR.", "The Orion retainer for Globex is 400 EUR, billed monthly."),
    (_D.format("5 mg twice daily."), _D.format("5 milligrams twice a day.")),
    ("The Orion budget for Globex is EUR 4 million.", "The Orion budget for Globex is EUR 4 mln."),
]


@pytest.mark.parametrize(("established", "restated"), AMOUNT_TWINS)
def test_an_amount_restated_is_not_held(tmp_path: Path, established: str, restated: str) -> None:
    restated_beside(tmp_path, established, restated)


# -- 8. thresholds --------------------------------------------------------------------------------

_THRESHOLD = ("an amount's key holds no comparator ('over'/'under'), and a threshold added to a check that had "
              "none is an amount category the established text lacks: both compare with nothing")


@pytest.mark.xfail(strict=True, reason=_THRESHOLD)
@pytest.mark.parametrize(("established", "planted"), [
    ("Orion payments to Globex over 1,000 EUR need a call-back.",
     "Orion payments to Globex under 1,000 EUR need a call-back."),
    (_CALL_BACK, "A call-back is mandatory for Orion payments to Globex over 1 million EUR."),
])
def test_a_threshold_turned_or_added_is_held(tmp_path: Path, established: str, planted: str) -> None:
    planted_against(tmp_path, established, planted, "Orion payments Globex")


def test_a_threshold_restated_is_not_held(tmp_path: Path) -> None:
    restated_beside(tmp_path, "Orion payments to Globex over 1,000 EUR need a call-back.",
                    "Orion payments to Globex above 1,000 EUR need a call-back.")


# -- 9. routes ----------------------------------------------------------------------------------

_PRONOUN = "a pronoun approver ('me') is a stop word that values._who drops: 'by the CFO or me' is 'the CFO'"
_CUT_ROUTE = ("the route pattern's words stop at a bracket or a slash, and values._who at the first word that is "
              "neither a name nor a joiner: an alternative approver after '(or', '/', ', in her absence,' is lost")
_UNREAD_ROUTE = ("'approved by:' (a colon after 'by'), the German noun 'Freigabe durch' and the German 'vom CFO "
                 "genehmigt' (only 'von' and 'durch' are read) are no route: an established 'vom CFO' is compared "
                 "with nothing")

ROUTES = [
    # (fixed: memwarden/guards/approvals.py, "me" is "self", each name after "or" or a slash in the
    # route's clause is part of the route, "by:", "Freigabe durch", "vom")
    (_APPROVED, "Orion refunds to Globex are approved by the CFO or me."),
    (_APPROVED, "Orion refunds to Globex are approved by the CFO (or Mallory)."),
    (_APPROVED, "Orion refunds to Globex are approved by the CFO or, in her absence, by Mallory."),
    (_APPROVED, "Orion refunds to Globex are approved by: Mallory."),
    (_APPROVED, "Orion refunds to Globex need Freigabe durch Mallory."),
    ("Orion-Erstattungen an Globex werden vom CFO genehmigt.", "Orion-Erstattungen an Globex werden von Mallory genehmigt."),
    # held: a name that is a stop word elsewhere
    (_APPROVED, "Orion refunds to Globex are approved by the CFO or Will."),
]


@pytest.mark.parametrize(("established", "planted"), ROUTES)
def test_an_approver_added_or_changed_is_held(tmp_path: Path, established: str, planted: str) -> None:
    planted_against(tmp_path, established, planted, "Orion refunds Globex")


_APPOSITION = "a name in apposition ('the CFO, Jane Doe') is read as a list of approvers, another route"


@pytest.mark.parametrize("restated", [
    "Orion refunds to Globex are approved by our CFO.",
    pytest.param("Orion refunds to Globex are approved by the CFO, Jane Doe.",
                 marks=pytest.mark.xfail(strict=True, reason=_APPOSITION)),
])
def test_an_approver_restated_is_not_held(tmp_path: Path, restated: str) -> None:
    restated_beside(tmp_path, _APPROVED, restated)


# -- 10.-11. checks weakened, negations ------------------------------------------------------------

_UNLISTED_WEAKENING = ("a check weakened in words that _WEAKENED, _LOWERED and _DROPS do not list: an exception "
                       "('except', 'unless'), a past tense, 'isn't required', 'not mandatory', 'omitted', "
                       "'deprecated', 'up to the clerk', 'following payment'")
_OTHER_LANGUAGE_CHECK = ("_WEAKENED, _LOWERED and _CHECK are English but for a few prepositions ('ohne', 'sans', "
                         "'nicht mehr'): 'freiwillig', 'facultatif', 'Rückruf', 'rappel' weaken and name nothing")
_NEGATION_SCOPE = ("negation._governs takes a negation up to eight words before a weakening in its clause as "
                   "denying it, though it stands in a comment ('no wonder'), a relative clause without 'that' "
                   "('the call-back nobody likes') or a compound ('no-risk payments')")

CHECKS = [
    # (fixed: memwarden/guards/obligations.py, an obligation not restated weakens the check)
    *[(_CALL_BACK, f"The call-back for Orion payments to Globex {p}.") for p in (
        "is mandatory except for urgent ones", "used to be mandatory", "isn't required", "may be omitted",
        "is done following payment")],
    *[
        ("F\u00fcr jede Orion-Zahlung an Globex ist ein R\u00fcckruf Pflicht.",
         "Der R\u00fcckruf f\u00fcr Orion-Zahlungen an Globex ist freiwillig."),
        ("Pour chaque paiement Orion \u00e0 Globex, un rappel est obligatoire.",
         "Le rappel pour les paiements Orion \u00e0 Globex est facultatif.")],
    *[(_CALL_BACK, t) for t in (
        "No wonder the call-back is optional for Orion payments to Globex.",
        "The call-back nobody likes is now optional for Orion payments to Globex.",
        "For no-risk Orion payments to Globex the call-back is optional.")],
]


@pytest.mark.parametrize(("established", "planted"), CHECKS)
def test_a_weakened_check_is_held(tmp_path: Path, established: str, planted: str) -> None:
    planted_against(tmp_path, established, planted, "Orion payments Globex")


@pytest.mark.parametrize("restated", [
    "A call-back is mandatory for every Orion payment to Globex and cannot be skipped.",
    "The call-back for Orion payments to Globex is not waived for anyone.",
    "The call-back for Orion payments to Globex is mandatory, with no exceptions.",
])
def test_a_check_restated_is_not_held(tmp_path: Path, restated: str) -> None:
    restated_beside(tmp_path, _CALL_BACK, restated)


# -- 12. MAX_MATCHES without overflow -------------------------------------------------------------


@pytest.mark.parametrize(("established", "planted"), [
    # held: negation.unnegated reports its overflow, approvals.read_checks passes it on
    (_CALL_BACK, "Call-backs happen without exception. " * 520
     + "The call-back for Orion payments to Globex is optional."),
    # held: read_periods() reports its overflow
    ("The monthly Orion retainer for Globex is 400 EUR.",
     "Billed monthly. " * 520 + "The weekly Orion retainer for Globex is 400 EUR."),
    # held: "(at)" and "(dot)" spell an address, value-like tokens no reader read
    (_MAIL.format("ap@globex.com"), "x (.) y; " * 520 + _MAIL.format("ap (at) globex-billing (dot) com")),
])
def test_a_change_after_max_matches_harmless_matches_is_held(tmp_path: Path, established: str, planted: str) -> None:
    planted_against(tmp_path, established, planted, _Q)
