"""Canonical namespaces: the only form in which labels are ever compared or stored.

A namespace is a tuple of labels, as in LangGraph; ``"ward3/patients/p12"`` is accepted as
shorthand. Every label is NFKC-normalised and then checked, so that two spellings that look
alike either become the same label or are refused. Matching elsewhere is label by label on
these tuples, never on raw strings.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence
from urllib.parse import unquote

from memwarden.core.errors import InvalidRequest

Namespace = tuple[str, ...]

#: Longest label, in characters after normalisation.
MAX_LABEL_CHARS = 128
#: Deepest namespace; records store one metadata field per level, so depth is bounded.
MAX_DEPTH = 8

# Format (Cf) covers zero-width and bidi controls; Co/Cn/Cs are private, unassigned and
# surrogate code points. None of them has a visible spelling, so none belongs in a label.
_FORBIDDEN_CATEGORIES = {"Cc", "Cf", "Co", "Cn", "Cs", "Zl", "Zp"}
_RESERVED = {".", "..", "*", "**"}
# Unicode's Default_Ignorable_Code_Point ranges: rendered as nothing, so a label holding one
# looks exactly like a label without it. Most are Cf (caught above); these are not: variation
# selectors, the combining grapheme joiner, Hangul fillers and a few reserved blocks.
_DEFAULT_IGNORABLE = (
    (0x00AD, 0x00AD), (0x034F, 0x034F), (0x061C, 0x061C), (0x115F, 0x1160), (0x17B4, 0x17B5),
    (0x180B, 0x180F), (0x200B, 0x200F), (0x202A, 0x202E), (0x2060, 0x206F), (0x3164, 0x3164),
    (0xFE00, 0xFE0F), (0xFEFF, 0xFEFF), (0xFFA0, 0xFFA0), (0xFFF0, 0xFFF8), (0x1BCA0, 0x1BCA3),
    (0x1D173, 0x1D17A), (0xE0000, 0xE0FFF),
)
#: Percent-decoding rounds tried on a label (catches double and triple encoding).
_MAX_DECODE_ROUNDS = 4


def _invisible(ch: str) -> bool:
    code = ord(ch)
    if code < 0x80:
        return code < 0x20 or code == 0x7F
    if unicodedata.category(ch) in _FORBIDDEN_CATEGORIES:
        return True
    return any(lo <= code <= hi for lo, hi in _DEFAULT_IGNORABLE)


def _percent_decodings(text: str) -> list[str]:
    """The label after one, two, ... rounds of percent-decoding, until nothing changes."""
    out = []
    for _ in range(_MAX_DECODE_ROUNDS):
        decoded = unicodedata.normalize("NFKC", unquote(text))
        if decoded == text:
            break
        out.append(text := decoded)
    return out


def canonical_label(label: object, *, what: str = "namespace label") -> str:
    """Return the canonical form of one label, or raise InvalidRequest saying what is wrong."""
    if not isinstance(label, str):
        raise InvalidRequest(f"{what} must be a string, got {type(label).__name__}")
    text = unicodedata.normalize("NFKC", label)
    if not text:
        raise InvalidRequest(f"{what} is empty")
    if len(text) > MAX_LABEL_CHARS:
        raise InvalidRequest(f"{what} is {len(text)} characters long; the limit is {MAX_LABEL_CHARS}")
    if text != text.strip():
        raise InvalidRequest(f"{what} {label!r} has leading or trailing whitespace")
    for ch in text:
        if _invisible(ch):
            raise InvalidRequest(f"{what} {label!r} contains the control or invisible character U+{ord(ch):04X}")
    if "/" in text or "\\" in text:
        raise InvalidRequest(f"{what} {label!r} contains a path separator")
    if text in _RESERVED:
        raise InvalidRequest(f"{what} {label!r} is reserved")
    # A label is never decoded here, but a downstream system might: refuse labels that
    # percent-decode into traversal or separators so no consumer can be tricked later.
    for decoded in _percent_decodings(text):
        if decoded in _RESERVED or "/" in decoded or "\\" in decoded or "\x00" in decoded:
            raise InvalidRequest(f"{what} {label!r} percent-decodes to {decoded!r}")
    return text


def split_namespace(namespace: object) -> tuple[object, ...]:
    """Turn the accepted input forms (tuple, list or "a/b/c") into a raw tuple of labels."""
    if isinstance(namespace, str):
        return tuple(namespace.split("/")) if namespace else ()
    if isinstance(namespace, (tuple, list)):
        return tuple(namespace)
    raise InvalidRequest(f"namespace must be a tuple of labels or an 'a/b/c' string, got {type(namespace).__name__}")


def canonical_namespace(namespace: object, *, allow_empty: bool = False) -> Namespace:
    """Canonicalise a namespace; raise InvalidRequest naming the first bad label."""
    labels = split_namespace(namespace)
    if not labels and not allow_empty:
        raise InvalidRequest("namespace is empty; give at least one label")
    if len(labels) > MAX_DEPTH:
        raise InvalidRequest(f"namespace has {len(labels)} labels; the limit is {MAX_DEPTH}")
    return tuple(canonical_label(label, what=f"namespace label {i}") for i, label in enumerate(labels))


def namespace_text(namespace: Sequence[str]) -> str:
    """The display and storage form of a canonical namespace ("a/b/c")."""
    return "/".join(namespace)


# Scripts whose letters imitate Latin ones. A value that mixes two of them is almost always a
# spoof ("rеstricted" with a Cyrillic е), so it is refused rather than compared.
_LOOKALIKE_SCRIPTS = frozenset({"LATIN", "CYRILLIC", "GREEK", "ARMENIAN", "CHEROKEE", "COPTIC"})


def is_label_name(name: object) -> bool:
    """True for a valid label name (the ``x`` of ``label.x``): ASCII letters, digits or '_'."""
    return isinstance(name, str) and bool(name) and all(c.isascii() and (c.isalnum() or c == "_") for c in name)


def lookalike_scripts(text: str) -> tuple[str, ...]:
    """The look-alike scripts ``text`` mixes (two or more), or () when it mixes none."""
    scripts = set()
    for ch in text:
        if ch.isalpha():
            script = "LATIN" if ch.isascii() else unicodedata.name(ch, "").split(" ", 1)[0]
            if script in _LOOKALIKE_SCRIPTS:
                scripts.add(script)
    return tuple(sorted(scripts)) if len(scripts) > 1 else ()


def canonical_value(value: object, *, what: str) -> str:
    """An attribute value in canonical form (a label value, a role), or InvalidRequest.

    The rules of namespace labels apply (NFKC, no invisible or control characters, no
    separators or reserved spellings), and a value may not mix look-alike scripts.
    """
    text = canonical_label(value, what=what)
    mixed = lookalike_scripts(text)
    if mixed:
        raise InvalidRequest(f"{what} {value!r} mixes {' and '.join(s.title() for s in mixed)} letters "
                             "(a look-alike of another value?)")
    return text
