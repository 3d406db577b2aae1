"""What the CLI's commands share: styled output without markup, acting as a named principal
through the governed Session API, opening the audit log a command names, and printing a
verification report."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from rich.console import Console
from rich.text import Text


def styled(label: str, style: str, rest: str = "") -> Text:
    """``label`` in ``style`` followed by plain ``rest``: styling without markup, so no user
    string in ``rest`` is ever interpreted."""
    return Text.assemble((label, style), rest)


def audit_log(args: argparse.Namespace, console: Console):  # AuditLog | exit code
    """The log ``--data``/``--audit`` names, or the exit code when there is none to open: 2 for
    nothing there, 1 for a SQLite log that is gone although its key is still beside it."""
    from memwarden.databases import is_database_url, kind, sqlite_path
    from memwarden.memory.audit import KEY_ENV, KEY_FILE, AuditLog

    if args.audit is None:
        path = Path(args.data) / "audit.sqlite3"
    elif not is_database_url(args.audit):
        path = Path(args.audit)
    elif kind(args.audit) == "sqlite":
        path = sqlite_path(args.audit)
    else:
        return AuditLog(args.audit, key_path=args.key)
    if not path.is_file():
        key = Path(args.key or os.environ.get(KEY_ENV) or path.parent / KEY_FILE)
        if key.is_file():
            console.print(styled("TAMPERED", "red", f": there is no audit log at {path}, but its key {key} exists "
                          "(the log was deleted)"))
            return 1
        console.print(styled(f"no audit log at {path}", "red"))
        return 2
    return AuditLog(path, key_path=args.key)


def print_report(report, console: Console, what: str) -> int:  # VerifyReport
    if report.ok:
        console.print(styled("ok", "green", f": {report.entries} entries{what}"))
        return 0
    console.print(styled("TAMPERED", "red", f": {len(report.problems)} problem(s) in {report.entries} entries"
                  + (f"; first bad entry: {report.bad_entries[0]}" if report.bad_entries else "")))
    for problem in report.problems[:50]:
        console.print(f"  - {problem}", markup=False, soft_wrap=True)
    if len(report.problems) > 50:
        console.print(f"  ... and {len(report.problems) - 50} more")
    return 1


def add_actor(parser: argparse.ArgumentParser, *, changes: bool = True) -> None:
    """The options that say which memory, which policy and who acts (``changes``: the command
    may change the store, so it may create one with ``--create``)."""
    parser.add_argument("--data", required=True, help="the memory directory (as given to Memory.open)")
    parser.add_argument("--policy", required=True, help="policy CSV file, bundled policy name or database URL")
    parser.add_argument("--audit", help="the audit log, if not the memory directory's: a SQLite file or postgresql:// URL")
    parser.add_argument("--principal", required=True, help="who acts (policy decides what it may do)")
    parser.add_argument("--role", action="append", default=[], help="a role given to the principal (repeatable)")
    if changes:
        parser.add_argument("--create", action="store_true",
                            help="create an empty store when --data holds none (otherwise that is an error)")


def acting_session(args: argparse.Namespace, *, read_only: bool = False):  # (Memory, Session)
    """The memory ``args`` name and a session acting as ``--principal`` with ``--role``s: every
    command that reads or changes records goes through the governed path, as that principal.
    ``read_only`` shares the store with a running application (docs/deployment.md)."""
    from memwarden.core.records import Principal
    from memwarden.memory.embeddings import HashingEmbedding, UnloadedEmbedder
    from memwarden.memory.memory import Memory

    # A command that embeds nothing opens any store, whatever model wrote it (the store checks
    # the model of one that embeds: see docs/embeddings.md).
    embedding: object = UnloadedEmbedder()
    if getattr(args, "query", None) is not None:
        embedding = HashingEmbedding() if args.embedding == "hashing" else None
    # A mistyped --data must not become a new, empty store that "erases" nothing successfully.
    memory = Memory.open(args.data, policy=args.policy, audit=args.audit, read_only=read_only,
                         create=getattr(args, "create", False), embedding=embedding)
    try:
        return memory, memory.session(Principal(args.principal, roles=args.role))
    except BaseException:
        memory.close()
        raise
