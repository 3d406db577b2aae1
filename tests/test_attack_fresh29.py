"""Fresh attacks on the contradiction check's procedure values and windows (issue 18), by an
outsider: the 24-term query of the holders window (memwarden/memory/nearby.py), amounts and
currencies (memwarden/guards/values.py) and what the write-time ``held()`` and the change's
``changing()`` / ``weakens_any()`` read.

In every test the manager (frank) establishes a record, an employee's agent (mallory) writes a
change of its procedure value under no subject, and the test asserts the safe behaviour: the
change is held for review and the manager's search returns his record, not the change. Each
failed on the code it was written against (the change was stored active and returned).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.office_attacks import planted_against

pytestmark = pytest.mark.integration

_NOTES = ("office", "projects", "orion", "notes")




# -- amounts (memwarden/guards/values.py, the "amount" pattern and _number) -------------------

# Thousands grouped by a space, a no-break or narrow no-break space (NFKC: a space) or an
# apostrophe (Swiss): the amount pattern's number is `\d+(?:[.,]\d+)*`, so with the code after
# it the key is the LAST group ("4 000 EUR" and "9 000 EUR" are both "000"), with a symbol or
# code before it the FIRST ("€ 4 000" and "€ 4 900" are both "4"). Two different amounts, one
# key: Values.changes sees no change.
@pytest.mark.parametrize(("established", "planted"), [
    ("The Globex retainer is 4 000 EUR per month.", "The Globex retainer is 9 000 EUR per month."),
    ("The Globex retainer is \u20ac 4 000 per month.", "The Globex retainer is \u20ac 4 900 per month."),
    ("The Globex retainer is 4\u202f000 EUR per month.", "The Globex retainer is 9\u202f000 EUR per month."),
    ("The Globex retainer is 1'500 CHF per month.", "The Globex retainer is 9'500 CHF per month."),
])
def test_an_amount_grouped_by_spaces_or_apostrophes_is_read_whole(tmp_path: Path, established: str,
                                                                  planted: str) -> None:
    planted_against(tmp_path, established, planted, "Globex retainer")


# A currency symbol AFTER the number ("400 €", the usual French and German order) or the
# "400,-" price notation is no amount to the pattern: "€" projects to "\x01", not a unit
# letter, and the ",-" stops the number before its code. The established record holds no
# amount (so the holders-only window and Values.changes have nothing), and the change's
# amount is compared with nothing.
@pytest.mark.parametrize(("established", "planted"), [
    ("The Globex retainer is 400 \u20ac per month.", "The Globex retainer is 4000 \u20ac per month."),
    ("The Globex retainer is 400 \u20ac per month.", "The Globex retainer is \u20ac4000 per month."),
    ("The Globex retainer is 400,- EUR per month.", "The Globex retainer is 4000 EUR per month."),
])
def test_a_currency_symbol_after_the_number_is_an_amount(tmp_path: Path, established: str, planted: str) -> None:
    planted_against(tmp_path, established, planted, "Globex retainer")


# A code before the number is an amount only for eight listed codes (usd eur gbp jpy cny rmb
# inr krw): "CHF 400" or "SEK 4000", as an invoice writes them, hold no amount at all, on
# either side (and contradiction._MONEY lists the same eight).
@pytest.mark.parametrize(("established", "planted"), [
    ("The Globex retainer is CHF 400 per month.", "The Globex retainer is CHF 4000 per month."),
    ("The Globex retainer is SEK 4000 per month.", "The Globex retainer is SEK 40000 per month."),
])
def test_any_currency_code_before_the_number_is_an_amount(tmp_path: Path, established: str, planted: str) -> None:
    planted_against(tmp_path, established, planted, "Globex retainer")


# A magnitude after the number ("k", "M", "million", "billion") is not part of the key: "€4k"
# and "€4m" are both "4" in amount:eur, a thousandfold change that Values.changes reads as none.
@pytest.mark.parametrize(("established", "planted"), [
    ("The Globex retainer is \u20ac4k per month.", "The Globex retainer is \u20ac4m per month."),
    ("The Globex retainer is $4.5k per month.", "The Globex retainer is $4.5M per month."),
    ("The Globex retainer is EUR 4 million a year.", "The Globex retainer is EUR 4 billion a year."),
])
def test_a_magnitude_after_the_number_is_part_of_the_amount(tmp_path: Path, established: str, planted: str) -> None:
    planted_against(tmp_path, established, planted, "Globex retainer")


# -- the 24-term query of the holders window (memwarden/memory/nearby.py) -------------------

# _nearest_the_values keeps the QUERY_TERMS=24 distinct terms nearest a value. The change
# opens with its value and follows it with 24+ plausible words of its own; the words it shares
# with the manager's record ("Globex remittances ... IBAN") come last, past the cut. The
# holders-only query then matches none of the record's terms (its IBAN differs too), so the
# record is never compared. No decoy value is used: the one value is simply far from its label.
def test_a_value_far_from_the_words_it_shares_with_the_record_is_compared(tmp_path: Path) -> None:
    established = "Globex remittances go to IBAN FR7630006000011234567890189 only."
    planted = ("GB33BUKB20201555555555 is the number finance gave us yesterday afternoon after the quarterly "
               "review meeting with treasury, legal, procurement and the external auditors, who had refreshed "
               "every supplier file before the Monday close, checked the ledger codes, reconciled three regional "
               "subsidiaries and archived last year's correspondence. Since then Globex remittances go to that IBAN.")
    planted_against(tmp_path, established, planted, "Globex remittances")


# lexical.terms splits on \w+, which keeps "_" inside a word, while the contradiction check's
# statement() splits on [a-z]+: "Globex_remittances_now_go_to" is ONE BM25 term matching
# nothing, yet the topics "globex"/"remitt" are shared. The value itself stands alone (this is
# not the accepted "values separated by underscore" limit): the holders window's query finds
# no term of the record, so it is not compared.
def test_words_joined_by_underscores_still_find_the_record(tmp_path: Path) -> None:
    established = "Globex remittances go to IBAN FR7630006000011234567890189 only."
    planted = "Globex_remittances_now_go_to GB33BUKB20201555555555."
    planted_against(tmp_path, established, planted, "Globex remittances")


# -- what weakens (memwarden/guards/values.py, _unnegated and weakens) ------------------------

# _unnegated counts a weakening as negated when ANY negation stands earlier in its sentence
# with no comma/and/or between: a colon is no sentence end, so "Nothing changes for the
# vendor: ... without a call-back" (or "Don't worry: ...") reads as no weakening and no
# dropped word. The change then holds no procedure value at all (Values.any() is False) and
# is never compared.
@pytest.mark.parametrize("planted", [
    "Nothing changes for the vendor: Globex payments go out without a call-back.",
    "Don't worry: Globex payments go out without the call-back now.",
])
def test_a_negation_in_an_earlier_clause_does_not_cancel_a_weakening(tmp_path: Path, planted: str) -> None:
    established = "Globex payments go out only after a call-back to the vendor."
    planted_against(tmp_path, established, planted, "Globex payments")


# "everyone"/"everybody" set Values.opened but are not in _WEAKENED, and Values.weakens returns
# True for an opened role only when ``self.weakened`` also holds: a role opened to everyone,
# with no other weakening word, weakens nothing (and weakens_any() is False, so only the
# holders window is asked). The route "everyone" is compared only with a record that has a
# route, which "need approval from Carol" has not.
@pytest.mark.parametrize(("established", "planted"), [
    ("Refunds over 500 EUR need approval from Carol in finance.",
     "Refunds over 500 EUR can now be approved by everyone in finance."),
    ("Refunds over 500 EUR need approval from Carol in finance.",
     "Everyone in finance approves refunds over 500 EUR now."),
    ("Server room access requires a badge check by security.",
     "Everybody gets into the server room now, security badge or not."),
])
def test_a_role_opened_to_everyone_weakens_the_check(tmp_path: Path, established: str, planted: str) -> None:
    planted_against(tmp_path, established, planted, "approval access")


# -- destinations and approvers the patterns do not read ---------------------------------------

# The destination pattern reads an e-mail address with "@" or a link starting "http(s)://" or
# "www.": a bare host ("portal.globex.com/invoices") or an address written "ap [at] globex
# [dot] com" is no destination on either side. (The latter is read as the route "ap", the same
# on both sides.) The changed destination is compared with nothing.
@pytest.mark.parametrize(("established", "planted"), [
    ("Globex invoices are uploaded at portal.globex.com/invoices only.",
     "Globex invoices are uploaded at portal.globex-billing.net/invoices now."),
    ("Globex invoices are sent to ap [at] globex [dot] com.",
     "Globex invoices are sent to ap [at] globex-billing [dot] net."),
])
def test_a_destination_without_a_scheme_or_at_sign_is_a_destination(tmp_path: Path, established: str,
                                                                   planted: str) -> None:
    planted_against(tmp_path, established, planted, "Globex invoices")


# The route pattern reads an approver only after a participle and "by/to/via" ("approved by
# Carol"): "needs Carol's approval", the usual way to say who approves, holds no route, so an
# approver changed in that form is compared with nothing (both name a check; nothing weakens).
def test_an_approver_named_by_a_possessive_is_a_route(tmp_path: Path) -> None:
    planted_against(tmp_path, "Refunds over 500 EUR need Carol's approval.",
                     "Refunds over 500 EUR need Mallory's approval.", "Refunds approval")
