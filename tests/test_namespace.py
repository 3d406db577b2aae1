"""Namespace canonicalisation: what is accepted, what it becomes, and the exact refusal messages."""

from __future__ import annotations

import re

import pytest

from memwarden.core.errors import InvalidRequest
from memwarden.core.namespace import (
    MAX_DEPTH, MAX_LABEL_CHARS, canonical_label, canonical_namespace, namespace_text, split_namespace,
)

pytestmark = pytest.mark.unit

# -- labels that are accepted, and their canonical form ---------------------------------------

ACCEPTED = [
    ("ward3", "ward3"),
    ("ｗａｒｄ３", "ward3"),                 # full-width folds (NFKC)
    ("ﬁle", "file"),                       # ligature folds
    ("Ⅸ", "IX"),                           # roman numeral folds
    ("e\u0301", "\u00e9"),                 # decomposed é composes
    ("ALICE", "ALICE"),                    # no case folding: a different label than "alice"
    ("\u0430lice", "\u0430lice"),          # Cyrillic а stays Cyrillic: a different label
    ("alice*", "alice*"),                  # '*' inside a label is a literal character
    ("a b", "a b"),                        # inner whitespace is fine
    ("...", "..."),                        # only '.' and '..' are reserved
    ("a.b", "a.b"),
    ("100%", "100%"),                      # '%' not followed by hex is literal
    ("%41", "%41"),                        # percent-encoding of something harmless is kept as is
    ("x" * MAX_LABEL_CHARS, "x" * MAX_LABEL_CHARS),
    ("日本語", "日本語"),
]


@pytest.mark.parametrize(("raw", "canonical"), ACCEPTED, ids=[repr(r)[:30] for r, _ in ACCEPTED])
def test_accepted_labels(raw: str, canonical: str) -> None:
    assert canonical_label(raw) == canonical
    # canonical form is a fixed point
    assert canonical_label(canonical) == canonical


# -- labels that are refused, with the message that says why -------------------------------

REJECTED = [
    ("", "namespace label is empty"),
    ("..", "namespace label '..' is reserved"),
    (".", "namespace label '.' is reserved"),
    ("*", "namespace label '*' is reserved"),
    ("**", "namespace label '**' is reserved"),
    ("\uff0e\uff0e", "namespace label '．．' is reserved"),                # full-width dots fold to '..'
    ("\u2025", "namespace label '‥' is reserved"),                      # two-dot leader folds to '..'
    ("\uff0a", "namespace label '＊' is reserved"),                      # full-width star folds to '*'
    ("%2e%2e", "namespace label '%2e%2e' percent-decodes to '..'"),
    ("%2E%2e", "namespace label '%2E%2e' percent-decodes to '..'"),
    ("%2e", "namespace label '%2e' percent-decodes to '.'"),
    ("%2f", "namespace label '%2f' percent-decodes to '/'"),
    ("%2F", "namespace label '%2F' percent-decodes to '/'"),
    ("a%2fb", "namespace label 'a%2fb' percent-decodes to 'a/b'"),
    ("a%5cb", "namespace label 'a%5cb' percent-decodes to 'a\\\\b'"),
    ("a%00", "namespace label 'a%00' percent-decodes to 'a\\x00'"),
    ("%2a", "namespace label '%2a' percent-decodes to '*'"),
    ("%252e%252e", "namespace label '%252e%252e' percent-decodes to '..'"),     # double encoding
    ("%25252f", "namespace label '%25252f' percent-decodes to '/'"),           # triple encoding
    ("a/b", "namespace label 'a/b' contains a path separator"),
    ("a\\b", "namespace label 'a\\\\b' contains a path separator"),
    ("a\uff0fb", "namespace label 'a／b' contains a path separator"),     # full-width solidus folds to '/'
    ("alice\n", "namespace label 'alice\\n' has leading or trailing whitespace"),
    (" alice", "namespace label ' alice' has leading or trailing whitespace"),
    ("alice\t", "namespace label 'alice\\t' has leading or trailing whitespace"),
    ("alice\u00a0", "namespace label 'alice\\xa0' has leading or trailing whitespace"),
    ("alice\u3000", "namespace label 'alice\\u3000' has leading or trailing whitespace"),
    ("alice\u2028", "namespace label 'alice\\u2028' has leading or trailing whitespace"),
    ("a\x00b", "namespace label 'a\\x00b' contains the control or invisible character U+0000"),
    ("a\nb", "namespace label 'a\\nb' contains the control or invisible character U+000A"),
    ("a\rb", "namespace label 'a\\rb' contains the control or invisible character U+000D"),
    ("a\x7fb", "namespace label 'a\\x7fb' contains the control or invisible character U+007F"),
    ("ali\u200bce", "namespace label 'ali\\u200bce' contains the control or invisible character U+200B"),
    ("ali\u200dce", "namespace label 'ali\\u200dce' contains the control or invisible character U+200D"),
    ("\ufeffalice", "namespace label '\\ufeffalice' contains the control or invisible character U+FEFF"),
    ("alice\ufeff", "namespace label 'alice\\ufeff' contains the control or invisible character U+FEFF"),
    ("a\u202eb", "namespace label 'a\\u202eb' contains the control or invisible character U+202E"),
    ("a\u2066b", "namespace label 'a\\u2066b' contains the control or invisible character U+2066"),
    ("alice\U000e0041", "namespace label 'alice\\U000e0041' contains the control or invisible character U+E0041"),
    ("a\u00adb", "namespace label 'a\\xadb' contains the control or invisible character U+00AD"),
    ("alice\ufe0f", "namespace label 'alice\ufe0f' contains the control or invisible character U+FE0F"),
    ("alice\u034f", "namespace label 'alice\u034f' contains the control or invisible character U+034F"),
    ("a\u3164b", "namespace label 'a\u3164b' contains the control or invisible character U+1160"),   # Hangul filler
    ("a\ue000b", "namespace label 'a\\ue000b' contains the control or invisible character U+E000"),  # private use
    ("a\ud800b", "namespace label 'a\\ud800b' contains the control or invisible character U+D800"),  # lone surrogate
    ("a\U0010ffffb", "namespace label 'a\\U0010ffffb' contains the control or invisible character U+10FFFF"),
    ("x" * (MAX_LABEL_CHARS + 1), f"namespace label is {MAX_LABEL_CHARS + 1} characters long; the limit is {MAX_LABEL_CHARS}"),
    ("\ufdfa" * 8, f"namespace label is 144 characters long; the limit is {MAX_LABEL_CHARS}"),   # NFKC expands 18x
    (7, "namespace label must be a string, got int"),
    (None, "namespace label must be a string, got NoneType"),
    (b"alice", "namespace label must be a string, got bytes"),
    (("a",), "namespace label must be a string, got tuple"),
]


@pytest.mark.parametrize(("raw", "message"), REJECTED, ids=[repr(r)[:30] for r, _ in REJECTED])
def test_rejected_labels(raw: object, message: str) -> None:
    with pytest.raises(InvalidRequest) as info:
        canonical_label(raw)
    assert str(info.value) == message
    assert isinstance(info.value, ValueError)


def test_label_error_names_what_was_checked() -> None:
    with pytest.raises(InvalidRequest, match=r"^principal id 'a/b' contains a path separator$"):
        canonical_label("a/b", what="principal id")


@pytest.mark.parametrize("code_point", [0x200B, 0x200C, 0x200D, 0x2060, 0xFEFF, 0x202A, 0x202E, 0x2066, 0x2069,
                                        0x180E, 0xFE00, 0xFE0F, 0x034F, 0x115F, 0x1160, 0x3164, 0xFFA0, 0xE0001,
                                        0xE0041, 0xE007F, 0xE0100, 0x1D173])
def test_every_invisible_code_point_is_refused_anywhere(code_point: int) -> None:
    ch = chr(code_point)
    for label in (f"{ch}alice", f"ali{ch}ce", f"alice{ch}", ch):
        with pytest.raises(InvalidRequest, match="control or invisible character"):
            canonical_label(label)


# -- whole namespaces -------------------------------------------------------------------------

NAMESPACES_OK = [
    ("ward3/patients/p12", ("ward3", "patients", "p12")),
    (("ward3", "patients", "p12"), ("ward3", "patients", "p12")),
    (["ward3", "patients", "p12"], ("ward3", "patients", "p12")),
    ("ｗａｒｄ３/patients", ("ward3", "patients")),
    (("ｗａｒｄ３", "ｐ１２"), ("ward3", "p12")),
    ("a", ("a",)),
    ("/".join(["x"] * MAX_DEPTH), ("x",) * MAX_DEPTH),
]


@pytest.mark.parametrize(("raw", "canonical"), NAMESPACES_OK, ids=[repr(r)[:30] for r, _ in NAMESPACES_OK])
def test_accepted_namespaces(raw: object, canonical: tuple[str, ...]) -> None:
    assert canonical_namespace(raw) == canonical
    assert canonical_namespace(namespace_text(canonical)) == canonical


NAMESPACES_BAD = [
    ("", "namespace is empty; give at least one label"),
    ((), "namespace is empty; give at least one label"),
    ("a//b", "namespace label 1 is empty"),
    ("a/b/", "namespace label 2 is empty"),
    ("/a", "namespace label 0 is empty"),
    ("mem/alice/../bob/x", "namespace label 2 '..' is reserved"),
    ("mem/./x", "namespace label 1 '.' is reserved"),
    ("mem/alice/%2e%2e/bob", "namespace label 2 '%2e%2e' percent-decodes to '..'"),
    ("mem/alice%2fbob", "namespace label 1 'alice%2fbob' percent-decodes to 'alice/bob'"),
    (("mem", "alice/../bob"), "namespace label 1 'alice/../bob' contains a path separator"),
    (("mem", "alice\x00"), "namespace label 1 'alice\\x00' contains the control or invisible character U+0000"),
    ("mem/alice\n", "namespace label 1 'alice\\n' has leading or trailing whitespace"),
    ("mem/alice\n/x", "namespace label 1 'alice\\n' has leading or trailing whitespace"),
    (("mem", 1), "namespace label 1 must be a string, got int"),
    (("mem", None), "namespace label 1 must be a string, got NoneType"),
    ("/".join(["x"] * (MAX_DEPTH + 1)), f"namespace has {MAX_DEPTH + 1} labels; the limit is {MAX_DEPTH}"),
    (("x",) * 100, f"namespace has 100 labels; the limit is {MAX_DEPTH}"),
    (None, "namespace must be a tuple of labels or an 'a/b/c' string, got NoneType"),
    (b"a/b", "namespace must be a tuple of labels or an 'a/b/c' string, got bytes"),
    ({"a": 1}, "namespace must be a tuple of labels or an 'a/b/c' string, got dict"),
    (42, "namespace must be a tuple of labels or an 'a/b/c' string, got int"),
]


@pytest.mark.parametrize(("raw", "message"), NAMESPACES_BAD, ids=[repr(r)[:30] for r, _ in NAMESPACES_BAD])
def test_rejected_namespaces(raw: object, message: str) -> None:
    with pytest.raises(InvalidRequest) as info:
        canonical_namespace(raw)
    assert str(info.value) == message


def test_empty_namespace_only_when_allowed() -> None:
    assert canonical_namespace((), allow_empty=True) == ()
    assert canonical_namespace("", allow_empty=True) == ()
    with pytest.raises(InvalidRequest, match="label 0 is empty"):
        canonical_namespace("/", allow_empty=True)


@pytest.mark.parametrize("ns", ["a/b/c", "ward3/patients/p12", "ｗａｒｄ３/ｐａｔｉｅｎｔｓ", "x/y/z/w/v/u/t/s"])
def test_string_and_tuple_forms_are_equivalent(ns: str) -> None:
    labels = split_namespace(ns)
    assert canonical_namespace(ns) == canonical_namespace(tuple(labels)) == canonical_namespace(list(labels))


def test_string_form_cannot_smuggle_a_separator_the_tuple_form_refuses() -> None:
    # The string form splits on '/', so "a/b" is two labels; the tuple form refuses '/' in a label.
    assert canonical_namespace("a/b") == ("a", "b")
    with pytest.raises(InvalidRequest, match="path separator"):
        canonical_namespace(("a/b",))


def test_depth_limit_is_checked_before_labels_are_inspected() -> None:
    # Nine garbage labels: the depth is what is reported, labels are never normalised.
    with pytest.raises(InvalidRequest, match=re.escape(f"the limit is {MAX_DEPTH}")):
        canonical_namespace((object(),) * (MAX_DEPTH + 1))


def test_very_long_label_is_refused_quickly() -> None:
    import time

    start = time.perf_counter()
    with pytest.raises(InvalidRequest, match="characters long"):
        canonical_namespace(("mem", "a" * 1_000_000))
    assert time.perf_counter() - start < 2.0


def test_canonical_namespace_is_idempotent_on_tricky_input() -> None:
    for raw in ["ｍｅｍ/ａｌｉｃｅ/ｘ", "ﬁ/Ⅸ/e\u0301"]:
        once = canonical_namespace(raw)
        assert canonical_namespace(once) == once
        assert all(canonical_label(label) == label for label in once)
