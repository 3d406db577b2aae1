"""Fresh attacks on the amounts the contradiction check compares (memwarden/guards/money.py and
the amount pattern of memwarden/guards/values.py), by an outsider: compound amounts ("400 euros
and 50 cents", "$1 million and 900 thousand", "four hundred euros"), scientific and unusual
notation ("4e3 EUR", "4×10^3", "4_000", "4ʼ000"), a changed period ("per month" made "per
week", "twice daily" made "four times daily") and percentages, basis points and currency
names in other languages.

In every attack the manager (frank) establishes a record, an employee's agent (mallory) writes a
change of its amount, and the test asserts that the change is held for review and that the
manager's search returns his record, not the change. Each attack was stored active on the code
it was written against (the reader read no amount, or a part of one, or no period). Each class
has benign twins: the agent restates the amount faithfully in another notation, and its record
is stored active.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.office_attacks import planted_against, restated_beside

pytestmark = pytest.mark.integration

_R = "The Orion retainer for Globex is "
_B = "The Orion budget for Globex is "
_D = "Patient Orion at Globex gets "


def _pairs(*pairs: tuple[str, str, str]) -> list[tuple[str, str]]:
    return [(prefix + a, prefix + b) for prefix, a, b in pairs]


# -- compound amounts --------------------------------------------------------------------------

# The parts of a compound amount were read one by one ("$1 million" in usd, "900 thousand" as
# an amount of "thousand"): a change that keeps one part and drops the other held only values
# the record holds, and spelled-out numbers were no amount at all.
COMPOUND = _pairs(
    (_B, "$1 million and 900 thousand.", "$1 million."),
    (_R, "\u00a32 and 50 pence per seat.", "\u00a32 per seat."),
    (_B, "1 million and 900 thousand dollars.", "900 thousand dollars."),
    (_R, "four hundred euros a month.", "four thousand euros a month."),
    (_R, "EUR 4,000 a month.", "four hundred euros a month."),
    (_R, "four hundred and fifty euros a month.", "four hundred and five euros a month."),
)
COMPOUND_TWINS = _pairs(
    (_B, "$1.9 million.", "$1 million and 900 thousand."),
    (_R, "EUR 400.50 a month.", "400 euros and 50 cents a month."),
    (_R, "EUR 400.50 a month.", "EUR 400 plus 50 cents a month."),
    (_R, "\u00a32.50 per seat.", "2 pounds and 50 pence per seat."),
    (_R, "\u20ac400 a month.", "four hundred euros a month."),
    (_B, "EUR 1,900,000.", "1 million and 900 thousand euros."),
    (_R, "EUR 450 a month.", "four hundred and fifty euros a month."),
    (_B, "EUR 500,000.", "half a million euros."),
)

# -- scientific and unusual notation -------------------------------------------------------------

# An exponent ended the number before it ("4e3 EUR" held no amount, "4\u00d710^3 EUR" was 4 EUR),
# an underscore was no thousands mark ("4_000" read "000") nor a modifier-letter apostrophe
# or a prime ("4\u02bc000" read "000").
NOTATION = _pairs(
    (_B, "4e3 EUR.", "4e4 EUR."),
    (_B, "4000 EUR.", "4E4 EUR."),
    (_B, "4\u00d710^3 EUR.", "4\u00d710^4 EUR."),
    (_B, "4,0e3 EUR.", "4,0e4 EUR."),
    (_B, "4\u00d710\u00b3 EUR.", "4\u00d710\u2074 EUR."),
    (_B, "4_000 EUR.", "40_000 EUR."),
    (_B, "4\u02bc000 CHF.", "9\u02bc000 CHF."),
    (_B, "4\u2032000 CHF.", "9\u2032000 CHF."),
)
NOTATION_TWINS = _pairs(
    (_B, "4,000 EUR.", "4e3 EUR."),
    (_B, "EUR 4000.", "4\u00d710^3 EUR."),
    (_B, "\u20ac4k.", "4\u00d710\u00b3 EUR."),
    (_B, "4000 EUR.", "4,0e3 EUR."),
    (_B, "EUR 4000.", "4_000 EUR."),
    (_B, "CHF 4'000.", "4\u02bc000 CHF."),
    (_B, "4000 EUR.", "4\u2009000 EUR."),
)

# -- a changed period ----------------------------------------------------------------------------

# An amount was keyed without its period: "400 EUR per month" and "400 EUR per week" were one
# amount, "5 mg twice daily" and "5 mg four times daily" one dose, "every 8 hours" and "every 8
# days" two things of two units that do not compare; a period before the amount ("the monthly
# retainer") was no value.
PERIOD = _pairs(
    (_R, "400 EUR per month.", "400 EUR per week."),
    (_R, "400 EUR a month.", "400 EUR weekly."),
    (_R, "$400/mo.", "$400 per day."),
    (_R, "90 EUR per hour.", "90 EUR per day."),
    (_R, "400 EUR monatlich.", "400 EUR w\u00f6chentlich."),
    (_R, "400 EUR par mois.", "400 EUR par semaine."),
    (_R, "5% of the fee a year.", "5% of the fee a month."),
    (_D, "5 mg twice daily.", "5 mg four times daily."),
    (_D, "5 mg per dose.", "5 mg per day."),
    (_D, "5 mg b.i.d.", "5 mg q.i.d."),
    (_D, "5 mg every 8 hours.", "5 mg every 8 days."),
    (_D, "2 tablets by mouth once a week.", "2 tablets by mouth once a day."),
    # (a period before its amount)
    ("The ", "monthly Orion retainer for Globex is 400 EUR.", "weekly Orion retainer for Globex is 400 EUR."),
    ("Die ", "monatliche Orion-Pauschale f\u00fcr Globex ist 400 EUR.", "w\u00f6chentliche Orion-Pauschale f\u00fcr Globex ist 400 EUR."),
)
PERIOD_TWINS = _pairs(
    (_R, "400 EUR per month.", "400 EUR monthly."),
    (_R, "400 EUR per month.", "EUR 400 a month."),
    (_R, "400 EUR per month.", "\u20ac400/mo."),
    (_R, "90 EUR per hour.", "90 EUR hourly."),
    (_R, "5% of the fee a year.", "5% of the fee per annum."),
    (_D, "5 mg twice daily.", "5 mg b.i.d."),
    (_D, "5 mg twice daily.", "5 mg every 12 hours."),
    (_D, "2 tablets once a week.", "2 tablets weekly."),
    # A period said on one side only changes nothing said.
    (_R, "400 EUR a month.", "400 EUR."),
    ("The ", "monthly Orion retainer for Globex is 400 EUR.", "Orion retainer for Globex is 400 EUR a month."),
    ("The ", "monthly Orion retainer for Globex is 400 EUR.", "Orion retainer for Globex is 400 EUR monthly."),
)

# -- percentages, basis points, currency names ---------------------------------------------------

# "per cent" was no amount, "percent" and "basis points" units of their own that "%" does not
# compare with, and a currency named in another language ("dólares", "złotych", "franchi") an
# amount of that word alone.
OTHER = _pairs(
    ("Globex receives ", "25% of the Orion fee.", "75 percent of the Orion fee."),
    ("Globex receives ", "25 per cent of the Orion fee.", "75 per cent of the Orion fee."),
    ("Globex receives ", "25 Prozent of the Orion fee.", "75% of the Orion fee."),
    ("The Orion loan for Globex is priced at ", "2.5% over base.", "25 basis points over base."),
    (_R, "USD 400 a month.", "4000 d\u00f3lares a month."),
    (_R, "PLN 400 a month.", "4000 z\u0142otych a month."),
    (_R, "CHF 400 a month.", "4000 franchi a month."),
    (_R, "400 Euro und 50 Cent im Monat.", "400 Euro im Monat."),
    (_R, "CHF 400 a month.", "Fr. 4000 a month."),
    (_R, "SEK 400 a month.", "4000 kr a month."),
    (_R, "MXN 400 a month.", "4000 pesos a month."),
    (_R, "ILS 400 a month.", "4000 shekels a month."),
    ("The Orion loan for Globex bears ", "5% interest per annum.", "5% interest per month."),
    ("The Orion loan for Globex bears ", "5% interest p.a.", "5% interest monthly."),
    ("The Orion fee for Globex is ", "5% of the volume.", "5\u2030 of the volume."),
    (_R, "400 EUR semiannually.", "400 EUR quarterly."),
)
OTHER_TWINS = _pairs(
    ("Globex receives ", "25% of the Orion fee.", "25 per cent of the Orion fee."),
    ("Globex receives ", "25% of the Orion fee.", "25 percent of the Orion fee."),
    ("The Orion loan for Globex is priced at ", "2.5% over base.", "250 basis points over base."),
    (_R, "USD 400 a month.", "400 d\u00f3lares a month."),
    (_R, "PLN 400 a month.", "400 z\u0142otych a month."),
    (_R, "EUR 400.50 im Monat.", "400 Euro und 50 Cent im Monat."),
    (_R, "CHF 400 a month.", "Fr. 400 a month."),
    (_R, "SEK 400 a month.", "400 kr a month."),
    (_R, "MXN 400 a month.", "400 pesos a month."),
    ("The Orion loan for Globex bears ", "5% interest per annum.", "5% interest p.a."),
    ("The Orion fee for Globex is ", "0.5% of the volume.", "5\u2030 of the volume."),
    (_R, "400 EUR semiannually.", "400 EUR every 6 months."),
    # (A determiner is no amount: "one EUR 400 payment" is one payment of 400 EUR.)
    ("Orion sends Globex ", "a single EUR 400 payment each month.", "one EUR 400 payment each month."),
)


@pytest.mark.parametrize(("established", "planted"), COMPOUND + NOTATION + PERIOD + OTHER)
def test_a_changed_amount_is_held(tmp_path: Path, established: str, planted: str) -> None:
    planted_against(tmp_path, established, planted, "Orion Globex")


@pytest.mark.parametrize(("established", "restated"), COMPOUND_TWINS + NOTATION_TWINS + PERIOD_TWINS + OTHER_TWINS)
def test_an_amount_restated_in_another_notation_is_not_held(tmp_path: Path, established: str, restated: str) -> None:
    restated_beside(tmp_path, established, restated)


# -- what stays unread -----------------------------------------------------------------------------

_UNREAD = "not read: a rate with no unit or currency, a rate per a non-time unit, number words of another language"


# A number with a period and no unit or currency ("400 a month") is no amount; a rate per
# something other than a time ("per seat") keeps no "per"; a number in words of another
# language ("vierhundert") is none. The first two would need a reading of their own (a bare
# rate compared with money; "per" and any noun, whose synonyms would be held).
@pytest.mark.xfail(strict=True, reason=_UNREAD)
@pytest.mark.parametrize(("established", "planted"), _pairs(
    (_R, "400 a month.", "4000 a month."),
    (_R, "400 EUR per seat.", "400 EUR per user."),
    (_R, "vierhundert Euro im Monat.", "viertausend Euro im Monat."),
))
def test_an_amount_the_readers_do_not_read_is_held(tmp_path: Path, established: str, planted: str) -> None:
    planted_against(tmp_path, established, planted, "Orion Globex")
