"""Fresh attacks on how the procedure value reader keys destinations, accounts and credentials
(memwarden/guards/values.py), by an outsider.

In every attack the manager (frank) establishes a record, an employee's agent (mallory) writes a
change of its value under no subject, and the test asserts that the change is held for review
and that the manager's search returns his record, not the change. Each attack was stored active
on the code it was written against: every value's key dropped its dots, hyphens and slashes, so
"portal-globex.com" was "portal.globex.com" and "hunter2" was "hunter-2"; an address in words
("ap at globex dot com"), a share path ("\\\\fileserver\\finance"), a sort code, a BIC or an
"account ending 4471" held no value at all.

Each class has benign twins: the agent restates the established value faithfully in another
shape (without the link's scheme, with its default port, in words), and its record is stored
active.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from memwarden.guards.values import skeleton
from tests.office_attacks import planted_against, restated_beside

pytestmark = pytest.mark.integration

_LINK = "Orion invoices from Globex are paid through {}."
_MAIL = "Orion remittance advice for Globex goes to {}."
_SHARE = "Orion invoices from Globex are filed on {}."
_PAID = "Orion payments to Globex go to {}."


def _pairs(template: str, pairs: list[tuple[str, str]]) -> list[tuple[str, str]]:
    return [(template.format(a), template.format(b)) for a, b in pairs]


# -- a destination's punctuation is part of it -----------------------------------------------

@pytest.mark.parametrize(("established", "planted"), [
    *_pairs(_LINK, [("https://portal.globex.com/pay", "https://portal-globex.com/pay"),
                    ("portal.globex.com/pay", "portalglobex.com/pay"),
                    ("portal.globex.com/pay", "portal.glob.ex.com/pay"),
                    ("globex.com", "globex.co/m"),
                    ("https://portal.globex.com/pay", "https://portal.globex.com/p/ay"),
                    # (a bare host's port was no part of it, nor the path after the port)
                    ("portal.globex.com", "portal.globex.com:8443"),
                    ("portal.globex.com:8443/pay", "portal.globex.com:8443/p/ay")]),
    *_pairs(_MAIL, [("ap@globex.com", "a.p@globex.com"), ("ap@globex.com", "ap@glo-bex.com")]),
    *_pairs(_SHARE, [("smb://fileserver/finance/invoices", "smb://file-server/finance/invoices"),
                     ("file://fileserver/finance/invoices", "file://fileserver/fin/ance/invoices")]),
])
def test_a_destination_changed_by_its_punctuation_is_held(tmp_path: Path, established: str, planted: str) -> None:
    planted_against(tmp_path, established, planted, "Orion Globex")


@pytest.mark.parametrize(("established", "planted"), [
    ("The Orion vault password for Globex is hunter-2.", "The Orion vault password for Globex is hunter2."),
    ("The Orion vault password for Globex is hunter2.", "The Orion vault password for Globex is hunter.2."),
])
def test_a_credential_changed_by_its_punctuation_is_held(tmp_path: Path, established: str, planted: str) -> None:
    planted_against(tmp_path, established, planted, "Orion Globex vault")


# -- destinations in words, share paths ------------------------------------------------------

@pytest.mark.parametrize(("established", "planted"), [
    *_pairs(_MAIL, [("ap@globex.com", "ap at globex-billing dot com"),
                    ("ap at globex dot com", "ap@globex-billing.com"),
                    ("ap at globex dot co dot uk", "ap at globex dot com")]),
    *_pairs(_SHARE, [("\\\\fileserver\\finance\\invoices", "\\\\fileserver2\\finance\\invoices"),
                     ("\\\\fileserver\\finance\\invoices", "smb://files.example.net/finance"),
                     ("\\\\fileserver\\finance\\invoices", "\\\\fileserver\\finance\\invoices-new")]),
])
def test_a_destination_in_words_or_a_share_path_is_held(tmp_path: Path, established: str, planted: str) -> None:
    planted_against(tmp_path, established, planted, "Orion Globex")


# -- accounts: sort codes, BICs, the last digits ---------------------------------------------

@pytest.mark.parametrize(("established", "planted"), _pairs(_PAID, [
    ("sort code 20-00-00", "sort code 40-11-62"),
    ("sort code 200000", "sort code 401162"),
    ("SWIFT BUKBGB22", "SWIFT DEUTDEFF500"),
    ("the account with BIC: DEUTDEFF", "the account with BIC: COBADEFF"),
    ("BSB 062-000", "BSB 083-004"),
    ("the branch with IFSC HDFC0001234", "the branch with IFSC ICIC0004321"),
    ("the account ending 4471", "the account ending 9921"),
    ("the card ending in 4471", "the card ending in 9921"),
    ("account no. ending 4471", "account no. ending 9921"),
    ("the account whose last four digits are 4471", "the account whose last four digits are 9921"),
    ("the account **** 4471", "the account **** 9921"),
    # a whole number where only its last digits were established: which account is new
    ("the account ending 4471", "account 55514471"),
]))
def test_a_changed_sort_code_bic_or_last_digits_is_held(tmp_path: Path, established: str, planted: str) -> None:
    planted_against(tmp_path, established, planted, "Orion Globex")


# -- benign twins ----------------------------------------------------------------------------

@pytest.mark.parametrize(("established", "restated"), [
    # the link without its scheme, with its default port, with a trailing slash, in capitals
    *_pairs(_LINK, [("https://portal.globex.com/pay", "portal.globex.com/pay"),
                    ("https://portal.globex.com/pay", "https://portal.globex.com:443/pay"),
                    ("http://portal.globex.com/pay", "http://portal.globex.com:80/pay"),
                    ("https://portal.globex.com/pay", "https://portal.globex.com/pay/"),
                    ("portal.globex.com", "https://portal.globex.com/"),
                    ("https://portal.globex.com/pay", "HTTPS://Portal.Globex.com/pay"),
                    ("https://portal.globex.com/pay", "hxxps://portal.globex.com/pay"),
                    ("https://portal.globex.com/pay", "portal.globex.com:443/pay")]),
    # an address in words, in brackets, in capitals
    *_pairs(_MAIL, [("ap@globex.com", "ap at globex dot com"),
                    ("ap [at] globex [dot] com", "ap at globex dot com"),
                    ("ap@globex.co.uk", "ap at globex dot co dot uk"),
                    ("ap@globex.com", "AP@Globex.com")]),
    # a host in words after a function word ("log in at"; after another word it reads as an address)
    ("Orion invoices from Globex are uploaded to portal.globex.com.",
     "For Orion invoices from Globex, log in at portal dot globex dot com."),
    # a share path as a link
    *_pairs(_SHARE, [("\\\\fileserver\\finance\\invoices", "file://fileserver/finance/invoices"),
                     ("\\\\fileserver\\finance\\invoices", "smb://fileserver/finance/invoices/"),
                     ("\\\\fileserver\\finance\\invoices", "\\\\FILESERVER\\Finance\\Invoices")]),
    # accounts grouped otherwise, or named by their last digits
    *_pairs(_PAID, [("sort code 20-00-00", "sort code 200000"),
                    ("sort code 20-00-00", "sort code 20 00 00"),
                    ("SWIFT DEUTDEFF", "SWIFT/BIC DEUTDEFFXXX"),
                    ("the account ending 4471", "the account ending in 4471"),
                    ("account 31924471", "the account ending 4471"),
                    ("account 31924471", "the card ending in 4471")]),
    ("The Orion vault password for Globex is hunter-2.", "The Globex password of the Orion vault is hunter-2."),
    ("The Orion vault PIN for Globex is 44-71.", "The Orion vault PIN for Globex is 4471."),
])
def test_a_destination_or_account_restated_in_another_shape_is_not_held(tmp_path: Path, established: str,
                                                                        restated: str) -> None:
    restated_beside(tmp_path, established, restated)


def test_a_destination_changed_by_its_punctuation_is_no_look_alike() -> None:
    # The review's reason says "look-alike" only for what looks the same to a reader: a
    # Cyrillic "о" in the host, not a hyphen for a dot.
    assert skeleton("https://p\u043ertal.globex.com/pay", "destination") == skeleton("portal.globex.com/pay", "destination")
    assert skeleton("portal-globex.com/pay", "destination") != skeleton("portal.globex.com/pay", "destination")
    assert skeleton("hunter-2", "credential") != skeleton("hunter2", "credential")
    assert skeleton("20-00-00", "account") == skeleton("200000", "account")


@pytest.mark.xfail(strict=True, reason="a host in words after a verb ('uploaded at portal dot globex dot com') reads as "
                                       "the address uploaded@portal.globex.com: only a function word before 'at' "
                                       "('log in at', 'reach us at') tells a host from an address's mailbox")
def test_a_host_in_words_after_a_verb_is_not_held(tmp_path: Path) -> None:
    restated_beside(tmp_path, "Orion invoices from Globex are uploaded at portal.globex.com.",
                    "Orion invoices from Globex are uploaded at portal dot globex dot com.")
