"""Policy text as CSV records: the one tokenizer every policy source goes through.

A policy file, a ``memwarden policy import`` and the rows of a policy database all end up as
records of fields here. The whole text is read by the csv module, so a properly quoted field
may span lines exactly as ``csv.writer`` writes it. Splitting the text into lines first would
turn a line break inside a quoted field into a second rule: ``csv.writer`` happily quotes
``"read\\np, mallory, office/hr/**, read"`` into a field that a line-based reader sees as two
lines. So the records are found by CSV, and then any line-break character inside any field
(every character ``str.splitlines`` splits on) is refused with the ``source:line`` where the
record starts. No policy field ever needs one, and a viewer that breaks lines on U+2028 or
U+0085 would otherwise show a rule that is not there, or hide one that is.

Other rules of the format, in one place:
- a record ends at ``\n`` or ``\r\n``. A lone ``\r`` that does not end the text is refused, not
  read as a line end: ``csv.writer(..., lineterminator="\n")`` leaves a ``\r`` inside a field
  unquoted, so reading it as a line end would let that field start a new rule;
- a UTF-8 byte-order mark at the very start of the text is an encoding signature, not content;
- a record whose first field starts with ``#`` is a comment, and a blank record is ignored
  (the line-break rule holds for them too: a comment cannot hide a line);
- spaces and tabs around each field are dropped; nothing else is stripped, so other
  whitespace at the edge of a field is refused where it matters (a name, an action);
- quoting is strict: ``"a"b`` is an error rather than ``ab``.
"""

from __future__ import annotations

import csv
import io
import unicodedata
from collections.abc import Iterator, Sequence

from memwarden.core.errors import PolicyError

#: Every character ``str.splitlines`` breaks on; none may appear inside a policy field.
LINE_BREAKS = frozenset("\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029")
BOM = "\ufeff"
_PAD = " \t"


def record_fields(raw: Sequence[str], where: str) -> list[str] | None:
    """The fields of one record as the parser uses them, or None for a blank or comment record.

    Raises PolicyError, naming ``where``, when a field holds a line-break character.
    """
    for number, value in enumerate(raw, start=1):
        brk = next((ch for ch in value if ch in LINE_BREAKS), None)
        if brk is not None:
            name = unicodedata.name(brk, "a control character")
            hint = " (a quoted field spanning lines, or an unclosed quote?)" if brk in "\r\n" else ""
            raise PolicyError(f"{where}: field {number} holds a line break, U+{ord(brk):04X} ({name}); a policy "
                              f"field is always on one line{hint}")
    fields = [value.strip(_PAD) for value in raw]
    # Only whole-record comments: a trailing "#" could silently cut off a field (a typo like
    # "read#, deny" would turn a deny into an allow), so "#" after the first field is literal.
    if not fields or fields == [""] or fields[0].startswith("#"):
        return None
    return fields


def policy_lines(text: str, *, source: str = "<policy>",
                 errors: list[tuple[int, PolicyError]] | None = None) -> Iterator[tuple[int, list[str]]]:
    """(line number, fields) of every record that is not blank or a comment.

    The line number is where the record starts. A malformed record raises PolicyError
    ``source:line: ...``; with ``errors`` given, ``(line, error)`` is appended there instead and
    reading goes on with the next record (for lint, which reports every malformed line).
    """
    if text.startswith(BOM):
        text = text[len(BOM):]
    # newline="\n": lines are split at \n only, and the csv module refuses a \r inside one.
    reader = csv.reader(io.StringIO(text, newline="\n"), skipinitialspace=True, strict=True)
    consumed = 0
    while True:
        start = consumed + 1
        try:
            raw = next(reader, None)
            consumed = reader.line_num
            if raw is None:
                return
            fields = record_fields(raw, f"{source}:{start}")
        except (csv.Error, PolicyError) as exc:
            consumed = reader.line_num
            error = exc if isinstance(exc, PolicyError) else PolicyError(f"{source}:{start}: {_csv_problem(exc)}")
            if errors is None:
                raise error from None
            errors.append((start, error))
            continue
        if fields is not None:
            yield start, fields


def _csv_problem(exc: csv.Error) -> str:
    if "new-line character" in str(exc):
        return ("a carriage return (U+000D) that does not end a line; policy lines end with \\n or \\r\\n, and "
                "a field that needs one is refused")
    return f"not valid CSV: {exc}"


def csv_line(fields: Sequence[str]) -> str:
    """One record as a policy line (``, `` between fields) that :func:`policy_lines` reads
    back as the same fields: a field is quoted only when it is empty or holds a comma or a
    quote. (Fields never hold line breaks, and pads at their edges are not kept.)"""
    return ", ".join('"' + v.replace('"', '""') + '"' if v == "" or "," in v or '"' in v else v for v in fields)
