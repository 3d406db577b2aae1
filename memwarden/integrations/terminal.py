"""A console whose output a terminal can never read as commands.

Record content, principals, namespaces, rules and audit fields are users' strings. Rich strips
only a few control characters (BEL, BS, VT, FF, CR) and passes ESC, the C1 controls and the
bidirectional overrides through, so a record holding ``ESC [2J`` clears the operator's screen,
``ESC ] 52`` writes their clipboard, ``ESC [8m`` hides what follows, and U+202E reorders a line.

:func:`safe_console` returns a Console with a render hook that replaces each such character,
in every segment of every renderable printed (text, tables, error lines), by one visible
stand-in (the Control Pictures symbol for C0 and DEL, U+FFFD otherwise). Newline and tab keep
their meaning. Rich's own styling is emitted after the hook, so colours still work.
:func:`json_line` writes JSON that stays exact and is as safe to print.
"""

from __future__ import annotations

import json
from typing import Any

from rich.console import Console, ConsoleOptions, RenderHook, RenderResult
from rich.segment import Segment

#: Bidirectional controls (Trojan Source): they reorder what a terminal shows.
_BIDI = (0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A))

#: Character -> its stand-in, for str.translate. One character each, so styled spans of a
#: Text keep their offsets.
STAND_INS: dict[int, str] = {
    **{c: chr(0x2400 + c) for c in range(0x20) if c not in (0x09, 0x0A)},
    0x7F: "\u2421",
    **{c: "\ufffd" for c in range(0x80, 0xA0)},
    **{c: "\ufffd" for c in _BIDI},
}


#: The same characters as JSON escapes: JSON output stays exact and still safe to print.
_JSON_ESCAPES: dict[int, str] = {c: f"\\u{c:04x}" for c in STAND_INS}


def json_line(value: Any) -> str:
    """``value`` as one line of JSON (keys sorted, non-ASCII text as is) holding no terminal
    control character: they are written as ``\\uXXXX`` escapes, which JSON readers decode."""
    return json.dumps(value, ensure_ascii=False, sort_keys=True).translate(_JSON_ESCAPES)


def defuse(text: str) -> str:
    """``text`` with every terminal control character replaced by a visible stand-in."""
    return text.translate(STAND_INS)


class _Defused:
    """A renderable printed through :func:`defuse`, segment by segment."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        for segment in console.render(self.inner, options):
            # Control segments are rich's own cursor moves, not user text.
            yield segment if segment.control else Segment(defuse(segment.text), segment.style)


class _DefuseHook(RenderHook):
    def process_renderables(self, renderables: list[Any]) -> list[Any]:
        return [_Defused(r) for r in renderables]


def safe_console(**options: Any) -> Console:
    """A rich Console (``options`` as for Console) whose output holds no terminal control
    character from any printed string."""
    console = Console(**options)
    console.push_render_hook(_DefuseHook())
    return console
