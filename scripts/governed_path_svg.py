"""Draw the governed path (README's picture) as a self-contained SVG: docs/governed-path.svg.

    python scripts/governed_path_svg.py            # rewrite the file
    python scripts/governed_path_svg.py --check    # exit 1 if the checked-in file is stale

Hand-written SVG (no Graphviz, no fonts to embed, byte-for-byte reproducible), so that
tests/test_readme_picture.py can check the checked-in file is what this script draws. The
steps are those of memwarden/memory/pipeline.py, in its order.
"""

from __future__ import annotations

import sys
from pathlib import Path
from xml.sax.saxutils import escape

OUT = Path(__file__).resolve().parent.parent / "docs" / "governed-path.svg"

WIDTH, STEP_H, GAP, TOP = 870, 58, 22, 70
MAIN_X, MAIN_W = 250, 360
SIDE_X, SIDE_W = 635, 200
EXIT_X, EXIT_W = 20, 190

#: (title, detail, exit on the left or None, store on the right or None)
STEPS: list[tuple[str, str, str | None, str | None]] = [
    ("Session(principal).op(...)", "a LangGraph node, a memory tool, the store adapter", None, None),
    ("span start; canonicalise + validate", "namespaces, subjects, ids: NFKC, no invisibles", "InvalidRequest", None),
    ("policy decides first", "Casbin, deny by default, before any look-up", "AccessDenied (audited)", None),
    ("handler: governed reads, guards", "policy pushed down as a where filter; every result re-checked; "
                                        "validators on writes", "WriteRejected / quarantine", "Chroma"),
    ("audit entry, before any change", "hash chain, HMAC, anchored head; no content", None, "audit log"),
    ("effects applied to the store", "writes, forgets, physical erasure; caches follow", None, "Chroma"),
    ("span end with the real outcome", "principal, decision, rule, returned / withheld", None, "OTLP backend"),
    ("results", "returned; withheld counted, never named", None, None),
]

SIDE_DETAIL = {"Chroma": "embedded or server", "audit log": "SQLite or PostgreSQL",
               "OTLP backend": "Phoenix, Jaeger, Tempo, Langfuse"}

STYLE = """
  text { font-family: DejaVu Sans, Arial, Helvetica, sans-serif; fill: #1f2933; }
  .title { font-size: 15px; font-weight: bold; }
  .detail { font-size: 11px; fill: #52606d; }
  .head { font-size: 18px; font-weight: bold; }
  .exit { font-size: 12px; fill: #9b1c1c; }
  .side { font-size: 13px; font-weight: bold; }
  .main { fill: #e8f1fb; stroke: #2b6cb0; stroke-width: 1.5; }
  .deny { fill: #fdecec; stroke: #c53030; stroke-width: 1.2; }
  .store { fill: #eef8ee; stroke: #2f855a; stroke-width: 1.2; }
  .flow { stroke: #2b6cb0; stroke-width: 2; fill: none; marker-end: url(#arrow); }
  .out { stroke: #c53030; stroke-width: 1.4; fill: none; stroke-dasharray: 4 3; marker-end: url(#arrow-red); }
  .io { stroke: #2f855a; stroke-width: 1.4; fill: none; marker-end: url(#arrow-green); }
"""


def _text(x: float, y: float, text: str, cls: str, anchor: str = "middle") -> str:
    return f'<text x="{x:g}" y="{y:g}" class="{cls}" text-anchor="{anchor}">{escape(text)}</text>'


def _wrap(text: str, width: int) -> list[str]:
    lines, line = [], ""
    for word in text.split():
        if line and len(line) + 1 + len(word) > width:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}".strip()
    return [*lines, line] if line else lines


def _marker(name: str, colour: str) -> str:
    return (f'<marker id="{name}" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" '
            f'orient="auto-start-reverse"><path d="M 0 0 L 10 5 L 0 10 z" fill="{colour}"/></marker>')


def render() -> str:
    """The SVG document, as text."""
    height = TOP + len(STEPS) * (STEP_H + GAP) + 10
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" '
           f'viewBox="0 0 {WIDTH} {height}" role="img" aria-label="memwarden: the governed path">',
           "<title>memwarden: the governed path of every memory operation</title>",
           f"<style>{STYLE}</style>",
           "<defs>" + _marker("arrow", "#2b6cb0") + _marker("arrow-red", "#c53030")
           + _marker("arrow-green", "#2f855a") + "</defs>",
           _text(MAIN_X + MAIN_W / 2, 30, "One governed path: memwarden/memory/pipeline.py", "head"),
           _text(MAIN_X + MAIN_W / 2, 50, "every read, write, forget and erasure, whoever calls", "detail")]
    sides: dict[str, float] = {}
    for i, (title, detail, exit_, side) in enumerate(STEPS):
        y = TOP + i * (STEP_H + GAP)
        mid = y + STEP_H / 2
        out.append(f'<rect x="{MAIN_X}" y="{y}" width="{MAIN_W}" height="{STEP_H}" rx="8" class="main"/>')
        out.append(_text(MAIN_X + MAIN_W / 2, y + 21, title, "title"))
        for j, line in enumerate(_wrap(detail, 62)[:2]):
            out.append(_text(MAIN_X + MAIN_W / 2, y + 37 + 13 * j, line, "detail"))
        if i:
            out.append(f'<path d="M {MAIN_X + MAIN_W / 2:g} {y - GAP:g} L {MAIN_X + MAIN_W / 2:g} {y - 2:g}" '
                       'class="flow"/>')
        if exit_:
            ey = mid - 16
            out.append(f'<rect x="{EXIT_X}" y="{ey:g}" width="{EXIT_W}" height="32" rx="6" class="deny"/>')
            out.append(_text(EXIT_X + EXIT_W / 2, ey + 20, exit_, "exit"))
            out.append(f'<path d="M {MAIN_X:g} {mid:g} L {EXIT_X + EXIT_W + 2:g} {mid:g}" class="out"/>')
        if side:
            if side not in sides:
                sides[side] = mid
                out.append(f'<rect x="{SIDE_X}" y="{mid - 22:g}" width="{SIDE_W}" height="44" rx="6" class="store"/>')
                out.append(_text(SIDE_X + SIDE_W / 2, mid - 4, side, "side"))
                out.append(_text(SIDE_X + SIDE_W / 2, mid + 12, SIDE_DETAIL[side], "detail"))
                out.append(f'<path d="M {MAIN_X + MAIN_W:g} {mid:g} L {SIDE_X - 2:g} {mid:g}" class="io"/>')
            else:  # the same store again: around the boxes between, into its right side
                x = SIDE_X + SIDE_W + 15
                out.append(f'<path d="M {MAIN_X + MAIN_W:g} {mid:g} L {x:g} {mid:g} L {x:g} {sides[side]:g} '
                           f'L {SIDE_X + SIDE_W + 2:g} {sides[side]:g}" class="io"/>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def main(argv: list[str]) -> int:
    """Write the file, or with ``--check`` say whether it is current."""
    text = render()
    if "--check" in argv:
        current = OUT.is_file() and OUT.read_text(encoding="utf-8") == text
        print(f"{OUT}: {'current' if current else 'stale: run python scripts/governed_path_svg.py'}")
        return 0 if current else 1
    OUT.write_text(text, encoding="utf-8")
    print(f"wrote {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
