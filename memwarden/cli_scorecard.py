"""``memwarden audit scorecard``: each trace's governance scorecard (records returned, withheld
and denied per principal), printed and attached in Phoenix as span annotations (docs/cli.md)."""

from __future__ import annotations

import argparse
import urllib.error
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from memwarden.cli_common import audit_log, styled


def add_scorecard_command(audit: Any) -> None:
    """Add ``audit scorecard`` to the audit subcommands."""
    card = audit.add_parser("scorecard", help="per trace: records returned, withheld and denied per principal, "
                                              "attached in Phoenix as span annotations")
    card.add_argument("--phoenix", required=True, metavar="URL", help="the Phoenix server, e.g. http://127.0.0.1:6006")
    card.add_argument("--project", default="memwarden-demo", help="the Phoenix project (default memwarden-demo)")
    card.add_argument("--trace", action="append", default=[], metavar="TRACE_ID",
                      help="only this trace (repeatable; default: every trace with memory spans)")
    where = card.add_mutually_exclusive_group()
    where.add_argument("--data", help="count from this memory's audit log (verified first), joined to the spans "
                                      "by memwarden.audit.seq; without it the spans' own attributes are counted")
    where.add_argument("--audit", help="the audit log itself: a SQLite file, sqlite:/// or postgresql:// URL")
    card.add_argument("--key", help="the audit key file (default: $MEMWARDEN_AUDIT_KEY_FILE, else audit.key "
                                    "beside a SQLite log)")
    card.add_argument("--dry-run", action="store_true", help="print the scorecards, post nothing")
    card.set_defaults(run=audit_scorecard)


def audit_scorecard(args: argparse.Namespace, console: Console) -> int:
    """Run ``audit scorecard``: 0 posted (or printed), 1 the log does not verify or a span
    contradicts it (nothing posted), 2 bad input or Phoenix unreachable."""
    from memwarden.integrations.phoenix import annotations, fetch_spans, post_annotations, trace_scorecards

    entries = None
    if args.data is not None or args.audit is not None:
        log = audit_log(args, console)
        if isinstance(log, int):
            return log
        try:
            report = log.verify()
            entries = {int(e["seq"]): e for e in log.entries()}
        finally:
            log.close()
        if not report.ok:
            console.print(styled("TAMPERED", "red", f": the audit log does not verify ({report.problems[0]}); "
                                 "nothing posted (run `memwarden audit verify`)"))
            return 1
    try:
        spans = fetch_spans(args.phoenix, args.project, trace_ids=args.trace)
    except ValueError as exc:
        console.print(styled("error:", "red", f" --phoenix: {exc}"))
        return 2
    except (urllib.error.URLError, OSError) as exc:
        console.print(styled("error:", "red", f" cannot read spans of project {args.project!r} from "
                             f"{args.phoenix}: {exc}"))
        return 2
    try:
        cards = trace_scorecards(spans, entries, every_trace=bool(args.trace))
    except ValueError as exc:
        console.print(styled("MISMATCH", "red", f": {exc}; nothing posted"))
        return 1
    if not cards:
        console.print(Text(f"no trace with memwarden memory spans in project {args.project!r}"))
        return 0
    posted = 0
    for trace in cards:
        _print(trace, console)
        if not args.dry_run:
            try:
                posted += post_annotations(args.phoenix, annotations(trace))
            except (urllib.error.URLError, OSError, ValueError) as exc:
                console.print(styled("error:", "red", f" cannot post annotations to {args.phoenix}: {exc}"))
                return 2
    if not args.dry_run:
        console.print(Text(f"{posted} span annotation(s) posted to {args.phoenix} (project {args.project})"))
    return 0


def _print(trace: Any, console: Console) -> None:
    # Principals come from spans and the audit log, i.e. from users: Text, never markup.
    table = Table(title=Text(f"trace {trace.trace_id} ({trace.root_name}), counted from the {trace.source}"))
    table.add_column("principal")
    for column in ("reads", "returned", "withheld", "denied"):
        table.add_column(column, justify="right")
    for row in [*trace.card.principals.values(), trace.card.total()]:
        table.add_row(Text("all" if row.principal == "*" else row.principal),
                      *(str(getattr(row, c)) for c in ("reads", "returned", "withheld", "denied")))
    console.print(table)
