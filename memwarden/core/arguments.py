"""Type checks for the arguments of memwarden's public calls, where Python would silently coerce.

The trap these close: ``tuple("p12")`` is ``('p', '1', '2')``, so a caller who passes one
string where a list is expected (``subjects="p12"``, ``roles="physician"``) would get a record
about three one-letter subjects, which an erasure of "p12" never finds. Every public entry
point checks the type it was given, before converting anything, and refuses with an
InvalidRequest that names the argument.
"""

from __future__ import annotations

import reprlib
from collections.abc import Iterable, Mapping
from typing import Any

from memwarden.core.errors import InvalidRequest

#: The containers accepted where a list is expected (a set's order is not kept).
SEQUENCES = (list, tuple, set, frozenset)

_short = reprlib.Repr()
_short.maxstring = 60
_short.maxother = 60


def shown(value: object) -> str:
    """``repr(value)``, shortened, for error messages about arbitrary input."""
    return _short.repr(value)


def _not_one_text(value: object, what: str, expected: str) -> None:
    if isinstance(value, str):
        raise InvalidRequest(f"{what} must be {expected}, not one string {shown(value)} "
                             f"(for one, write [{shown(value)}])")
    if isinstance(value, (bytes, bytearray, memoryview)):
        raise InvalidRequest(f"{what} must be {expected}, got {type(value).__name__}")


def sequence_argument(value: object, what: str, *, of: str = "strings", limit: int | None = None) -> tuple[Any, ...]:
    """``value`` as a tuple when it is a list, tuple, set or frozenset (of at most ``limit``
    items); InvalidRequest naming ``what`` for anything else, one string above all."""
    _not_one_text(value, what, f"a list of {of}")
    if not isinstance(value, SEQUENCES):
        raise InvalidRequest(f"{what} must be a list of {of}, got {type(value).__name__}")
    if limit is not None and len(value) > limit:
        raise InvalidRequest(f"{what} has {len(value)} entries; the limit is {limit}")
    return tuple(value)


def iterable_argument(value: object, what: str, *, of: str) -> list[Any]:
    """``value`` as a list when it is any iterable except a string, bytes or a mapping (a
    generator of operations is fine; the characters of a string are not operations)."""
    _not_one_text(value, what, f"an iterable of {of}")
    if isinstance(value, Mapping) or not isinstance(value, Iterable):
        raise InvalidRequest(f"{what} must be an iterable of {of}, got {type(value).__name__}")
    return list(value)


def flag_argument(value: object, what: str) -> bool:
    """``value`` when it is True or False (not 0, 1, "yes" or None)."""
    if not isinstance(value, bool):
        raise InvalidRequest(f"{what} must be True or False, got {shown(value)}")
    return value


def integer_argument(value: object, what: str, *, minimum: int, maximum: int | None = None) -> int:
    """``value`` when it is an int (not a bool) from ``minimum`` to ``maximum``."""
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum \
            or (maximum is not None and value > maximum):
        bound = f"from {minimum} to {maximum}" if maximum is not None else f"of at least {minimum}"
        raise InvalidRequest(f"{what} must be an integer {bound}, got {shown(value)}")
    return value


def encodable(value: str, what: str) -> str:
    """``value`` when it is valid Unicode, else InvalidRequest naming ``what``: a lone
    surrogate (from a bad "\\ud800" JSON escape, say) is a str no store, index or audit log can
    encode, so it is refused at the edge rather than failing half-way through a write."""
    if not value.isascii():
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as err:
            raise InvalidRequest(f"{what} contains the lone surrogate U+{ord(value[err.start]):04X} at "
                                 f"position {err.start}; text must be valid Unicode") from None
    return value


def text_argument(value: object, what: str, limit: int) -> str:
    """``value`` when it is a non-blank string of at most ``limit`` characters, with no NUL and
    encodable; InvalidRequest naming ``what`` otherwise."""
    if not isinstance(value, str):
        raise InvalidRequest(f"{what} must be a string, got {type(value).__name__}")
    if not value.strip():
        raise InvalidRequest(f"{what} is empty")
    if len(value) > limit:
        raise InvalidRequest(f"{what} is {len(value)} characters long; the limit is {limit}")
    if "\x00" in value:
        raise InvalidRequest(f"{what} contains a NUL character")
    encodable(value, what)
    return value
