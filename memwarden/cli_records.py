"""``memwarden records list|show|history``: read records as a named principal.

Every verb acts as ``--principal`` (with ``--role``s) through the governed Session API: the
policy decides, withheld records stay withheld, hidden and missing records get the same
answer, and each read is audited like any other. There is no operator bypass. The store is
opened read-only: nothing is changed, and several readers may share it (a writer holds it
alone, docs/deployment.md).

Exit codes: 0 found, 1 nothing visible (no record, or not one this principal may see), 2 bad
input or a denied request.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from typing import Any

from rich.console import Console
from rich.text import Text

from memwarden.cli_common import acting_session, add_actor
from memwarden.integrations.terminal import json_line

#: Longest content shown per record in a listing (``records show`` prints it whole).
PREVIEW_CHARS = 120


def _when(value: Any) -> str:
    return value.isoformat(timespec="seconds") if value is not None else ""


def _preview(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= PREVIEW_CHARS else flat[:PREVIEW_CHARS - 1] + "…"


def _print_json(console: Console, records: Sequence[Any], scores: Sequence[float | None] | None = None) -> None:
    for n, record in enumerate(records):
        row = json.loads(record.model_dump_json())
        if scores is not None and scores[n] is not None:
            row["score"] = scores[n]
        console.print(Text(json_line(row)))


def _print_listing(console: Console, records: Sequence[Any], scores: Sequence[float | None] | None = None) -> None:
    """Two lines a record: who wrote what kind where and when, then the content. Lines, not a
    table, so that ids, namespaces and content read whole at any terminal width."""
    for n, record in enumerate(records):
        score = f"  score {scores[n]:.3f}" if scores is not None and scores[n] is not None else ""
        status = "" if record.status.value == "active" else f"  [{record.status.value}]"
        console.print(Text.assemble((record.id, "bold"), f"  {'/'.join(record.namespace)}  {record.kind.value}  "
                                    f"v{record.version}  by {record.writer}  {_when(record.created_at)}{status}{score}"))
        console.print(Text(f"    {_preview(record.content)}"))


def records_list(args: argparse.Namespace, console: Console) -> int:
    """``records list``: the records at or below ``--namespace`` the principal may see (most
    relevant first with ``--query``, else a listing)."""
    memory, session = acting_session(args, read_only=True)
    with memory:
        hits = session.search(args.query, args.namespace or (), k=args.limit, offset=args.offset,
                              kinds=args.kind or None)
    records, scores = [h.record for h in hits], [h.score for h in hits]
    if args.json:
        _print_json(console, records, scores)
    else:
        _print_listing(console, records, scores if args.query is not None else None)
        console.print(Text(f"{len(records)} record(s) visible to {args.principal}"
                           + (" (more with --offset)" if len(records) == args.limit else "")))
    return 0 if records else 1


#: What ``records show`` prints, in order: provenance first, then lifecycle and review.
_FIELDS = ("namespace", "kind", "status", "version", "supersedes", "writer", "writer_roles", "source", "parents",
           "subjects", "labels", "created_at", "valid_from", "valid_to", "expires_at", "trust", "approvals",
           "rejections", "reviewed")


def _not_visible(console: Console, args: argparse.Namespace) -> int:
    # The same words for a record that does not exist and one the principal may not see.
    console.print(Text(f"no record {args.id} visible to {args.principal}"))
    return 1


def records_show(args: argparse.Namespace, console: Console) -> int:
    """``records show ID``: one record whole, with its provenance."""
    memory, session = acting_session(args, read_only=True)
    with memory:
        record = session.get(args.id)
    if record is None:
        return _not_visible(console, args)
    if args.json:
        _print_json(console, [record])
        return 0
    console.print(Text(record.id, "bold"))
    for name in _FIELDS:
        value = getattr(record, name)
        if value in (None, (), {}, ""):
            continue
        if name == "namespace":
            value = "/".join(value)
        elif hasattr(value, "isoformat"):
            value = _when(value)
        elif isinstance(value, tuple):
            value = ", ".join(map(str, value))
        elif isinstance(value, dict):
            value = ", ".join(f"{k}={v}" for k, v in value.items())
        console.print(Text(f"  {name:<13} {getattr(value, 'value', value)}"))
    console.print(Text("  content"))
    console.print(Text(f"    {record.content}"))
    return 0


def records_history(args: argparse.Namespace, console: Console) -> int:
    """``records history ID``: every version of a record the principal may see, oldest first."""
    from memwarden.core.errors import NotFound

    memory, session = acting_session(args, read_only=True)
    try:
        with memory:
            versions = session.history(args.id)
    except NotFound:
        versions = []
    if not versions:
        return _not_visible(console, args)
    if args.json:
        _print_json(console, versions)
    else:
        _print_listing(console, versions)
        console.print(Text(f"{len(versions)} version(s)"))
    return 0


def add_records_commands(sub: Any) -> None:
    """Add ``records list|show|history`` to the top-level subcommands."""
    records = sub.add_parser("records", help="read records as a named principal, through the policy").add_subparsers(
        dest="records_command", required=True)
    listing = records.add_parser("list", help="the records at or below a namespace this principal may see "
                                              "(with --query: a search)")
    add_actor(listing, changes=False)
    listing.add_argument("--namespace", help="at or below this namespace (default: everywhere the principal reads)")
    listing.add_argument("--query", "-q", help="rank by relevance to this text (hybrid search) instead of listing")
    listing.add_argument("--kind", action="append", default=[], help="only this kind (repeatable)")
    listing.add_argument("--limit", "-k", type=int, default=20, help="at most this many (default 20)")
    listing.add_argument("--offset", type=int, default=0, help="skip this many first")
    listing.add_argument("--json", action="store_true", help="one JSON object a line")
    listing.add_argument("--embedding", choices=["minilm", "hashing"], default="minilm",
                         help="the embedding the store was written with, for --query (default: minilm, "
                              "memwarden's bundled model; hashing: the test embedding)")
    listing.set_defaults(run=records_list)
    for name, run, what in (("show", records_show, "one record with its provenance"),
                            ("history", records_history, "every version of a record, oldest first")):
        verb = records.add_parser(name, help=what)
        add_actor(verb, changes=False)
        verb.add_argument("id", help="the record id (mem_ + 32 hex digits)")
        verb.add_argument("--json", action="store_true", help="JSON (one object a line)")
        verb.set_defaults(run=run)
