"""The audit log exported to a file, and checked from that file with the public key alone.

JSON Lines (``--format jsonl``): one entry per line, ``{"seq", "prev", "hash", "body"}``, where
``body`` is the entry's exact JSON text (its hash is ``sha256(prev + "\\n" + body)``), then one
last line ``{"head": <signed head>}`` (:mod:`memwarden.memory.anchor`).

CSV (``--format csv``): a header row, then one row per entry: ``seq, prev, hash`` and ``body``
as above, and for reading, columns taken from the body (``ts, op, principal, roles, action,
namespace, decision, outcome, records``; lists as JSON). The signed head goes to a file of
its own (``--head``). A verifier checks the reading columns against the body, so a changed
cell is found like a changed body.

Entries hold no content (ids, counts, decisions); an export can be handed to an auditor.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Sequence
from typing import Any

from memwarden.core.errors import ProofError
from memwarden.memory.anchor import check_head, verify_head
from memwarden.memory.chain import Findings, Row, VerifyReport, check_chain
from memwarden.memory.signing import PublicKeys

FORMATS = ("jsonl", "csv")
_CHAIN_COLUMNS = ["seq", "prev", "hash", "body"]
_READING_COLUMNS = ["ts", "op", "principal", "roles", "action", "namespace", "decision", "outcome", "records"]
SIGNED_HEAD = "signed head"


def _cell(value: Any) -> str:
    if value is None:
        return ""
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True)


def _reading(body: str) -> list[str]:
    try:
        fields = json.loads(body)
    except json.JSONDecodeError:
        fields = {}
    if not isinstance(fields, dict):
        fields = {}
    return [_cell(fields.get(name)) for name in _READING_COLUMNS]


def to_jsonl(rows: Sequence[Row], head: dict[str, Any]) -> str:
    """The JSON Lines export of ``rows`` with the signed head as its last line."""
    lines = [json.dumps({"seq": seq, "prev": prev, "hash": digest, "body": body})
             for seq, body, prev, digest, _ in rows]
    return "\n".join([*lines, json.dumps({"head": head})]) + "\n"


def to_csv(rows: Sequence[Row]) -> str:
    """The CSV export of ``rows`` (the signed head goes to a file of its own)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(_CHAIN_COLUMNS + _READING_COLUMNS)
    for seq, body, prev, digest, _ in rows:
        writer.writerow([seq, prev, digest, body, *_reading(body)])
    return out.getvalue()


def _from_jsonl(text: str, where: str) -> tuple[list[Row], dict[str, Any] | None]:
    rows: list[Row] = []
    head = None
    lines = text.splitlines()
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except json.JSONDecodeError:
            raise ProofError(f"{where}:{n}: not a JSON line") from None
        if isinstance(item, dict) and set(item) == {"head"}:
            if head is not None or any(rest.strip() for rest in lines[n:]):
                raise ProofError(f"{where}:{n}: the signed head must be the last line, and only one")
            head = item["head"]
            continue
        if (not isinstance(item, dict) or set(item) != set(_CHAIN_COLUMNS) or isinstance(item["seq"], bool)
                or not isinstance(item["seq"], int) or not all(isinstance(item[k], str) for k in ("prev", "hash", "body"))):
            raise ProofError(f"{where}:{n}: an entry line must be {{\"seq\": int, \"prev\", \"hash\", \"body\": str}}")
        rows.append((item["seq"], item["body"], item["prev"], item["hash"], None))
    return rows, head


def _from_csv(text: str, where: str, problem: Findings) -> list[Row]:
    reader = csv.reader(io.StringIO(text, newline=""))
    header = next(reader, None)
    if header != _CHAIN_COLUMNS + _READING_COLUMNS:
        raise ProofError(f"{where}: not a memwarden audit CSV (its header must be "
                         f"{','.join(_CHAIN_COLUMNS + _READING_COLUMNS)})")
    rows: list[Row] = []
    for record in reader:
        n = reader.line_num
        if len(record) != len(header) or not record[0].isdigit():
            raise ProofError(f"{where}:{n}: a row must have {len(header)} cells and a sequence number first")
        seq, prev, digest, body = int(record[0]), record[1], record[2], record[3]
        if record[4:] != _reading(body):
            problem(f"entry {seq}: its CSV columns do not match its body (a cell was edited)", seq)
        rows.append((seq, body, prev, digest, None))
    return rows


def read_export(text: str, where: str, problem: Findings) -> tuple[list[Row], dict[str, Any] | None]:
    """The entries of an exported log and its embedded head (None for CSV, or when absent)."""
    if text.lstrip().startswith("{"):
        return _from_jsonl(text, where)
    if text.startswith(",".join(_CHAIN_COLUMNS)):
        return _from_csv(text, where, problem), None
    raise ProofError(f"{where} is neither a memwarden audit export in JSON Lines nor in CSV")


def verify_export(text: str, public: PublicKeys, where: str, head: dict[str, Any] | None = None) -> VerifyReport:
    """Check an exported log against a signed head, with the public keys alone: every entry's
    hash and link, the sequence from 1 without gaps, and that the log is exactly as long as
    the head says and ends where it says. ``head`` (a separate head file) or the head
    embedded in the export; with both, they must be the same. ProofError for a file that
    cannot be read as an export or a head that does not verify."""
    problem = Findings()
    rows, embedded = read_export(text, where, problem)
    if head is not None and embedded is not None and head != embedded:
        raise ProofError(f"{where} embeds a signed head that is not the head given beside it")
    head = head if head is not None else embedded
    if head is None:
        raise ProofError(f"{where} has no signed head: give the head file (--head) that was exported with it")
    count, last_hash = verify_head(head, public, f"the {SIGNED_HEAD}")
    check_chain(rows, problem)
    check_head(count, last_hash, rows, problem, SIGNED_HEAD, exact=True)
    return problem.report(len(rows), len(rows) if not problem.problems else 0)
