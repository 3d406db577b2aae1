"""Decimal character codes: text written as the numbers of its characters.

The detector's decoded views read base64, base32, hex, binary, Morse, ascii85, percent and
``\\uXXXX`` escapes, HTML entities and tag characters; LLMail-Inject's attackers also wrote the
order as decimal codes ("68 111 32 121 111 117 ..." is "Do you ..."). :func:`decimal_blobs`
gives the bytes of each run of at least 12 numbers from 9 to 126 (tab to tilde), separated by
spaces, commas or semicolons; the detector keeps a run's decoding when it reads as text, as it
does for the other encodings, and scans it (``obfuscation:decimal``); the classifier reads it
as one of the detector's views.

Linear time: one RE2 pattern over the text.
"""

from __future__ import annotations

import re

import re2

__all__ = ["decimal_blobs"]

_OPTIONS = re2.Options()
_OPTIONS.max_mem = 16 << 20
# RE2 (no look-arounds): the characters around a run are checked by hand.
_RUN = re2.compile(r"(?:\d{1,3}[ ,;]\s?){11,}\d{1,3}", _OPTIONS)
_NUMBER = re.compile(r"\d{1,3}")


def decimal_blobs(raw: str) -> list[bytes]:
    """The bytes of each run of decimal character codes in ``raw`` (see the module docstring)."""
    if sum(map(raw.count, " ,")) < 11:
        return []
    out = []
    for m in _RUN.finditer(raw):
        before = raw[m.start() - 1] if m.start() else " "
        after = raw[m.end():m.end() + 2]
        if before.isdigit() or before == "." or after[:1].isdigit() or (after[:1] == "." and after[1:].isdigit()):
            continue  # part of a longer number, a version or a figure
        codes = [int(n) for n in _NUMBER.findall(m.group(0))]
        if all(9 <= c <= 126 for c in codes):
            out.append(bytes(codes))
    return out
