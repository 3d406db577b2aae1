"""The ``memwarden`` verbs that make and check proof for someone outside: ``keys export-public``
and ``keys rotate``, ``audit export``, ``receipt verify`` and ``audit verify --log``.

Exit codes: 0 verified (or done), 1 does not verify (tampered, or signed by another key), 2 a
file that is missing or is not what it should be.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rich.console import Console

from memwarden.cli_common import audit_log, print_report, styled
from memwarden.core.errors import ProofError, SignatureInvalid
from memwarden.integrations.terminal import safe_console


def _fail(console: Console, exc: ProofError) -> int:
    """Report a proof that does not hold (1) or a file that cannot be used (2)."""
    if isinstance(exc, SignatureInvalid):
        console.print(styled("INVALID", "red", f": {exc}"))
        return 1
    console.print(styled("error:", "red", f" {exc}"))
    return 2


def _write(out: str | None, text: str, console: Console, what: str) -> None:
    if out:
        Path(out).write_text(text, encoding="utf-8")
        console.print(f"{what} written to {out}", markup=False, soft_wrap=True)
    else:
        sys.stdout.write(text)


def _signing_key_file(args: argparse.Namespace) -> Path:
    from memwarden.memory.audit import KEY_ENV, KEY_FILE
    from memwarden.memory.signing import signing_key_path

    if args.key:
        return signing_key_path(Path(args.key))
    if args.data:
        return signing_key_path(Path(args.data) / KEY_FILE)
    if os.environ.get(KEY_ENV):
        return signing_key_path(Path(os.environ[KEY_ENV]))
    raise ProofError("say whose keys: --data DIR (a memory directory) or --key AUDIT.KEY")


def _keys_export_public(args: argparse.Namespace, console: Console) -> int:
    from memwarden.memory.signing import SigningKeys

    path = _signing_key_file(args)
    try:
        keys = SigningKeys.load(path)
    except ProofError as exc:
        return _fail(console, exc)
    if keys is None:
        console.print(styled("error:", "red", f" there is no signing key at {path} (it is made with the store's first "
                      "audit entry)"))
        return 2
    _write(args.out, keys.public.to_json(), console, "public keys")
    if args.out:
        console.print(f"{len(keys.public.keys)} key(s); the store's fingerprint (its first key id) is "
                      f"{keys.public.first_id}, signing now with {keys.key_id}", soft_wrap=True)
    return 0


def _keys_rotate(args: argparse.Namespace, console: Console) -> int:

    log = audit_log(args, console)
    if isinstance(log, int):
        return log
    try:
        old, new, seq = log.rotate_signing_key(args.principal)
    finally:
        log.close()
    console.print(f"signing key rotated: {old} -> {new} (endorsed by {old}), audit entry {seq}; "
                  "export the public keys again", soft_wrap=True)
    return 0


def _audit_export(args: argparse.Namespace, console: Console) -> int:
    from memwarden.memory.audit_export import to_csv, to_jsonl

    if args.format == "csv" and not args.head:
        console.print(styled("error:", "red", " a CSV export needs --head FILE for its signed head"))
        return 2
    log = audit_log(args, console)
    if isinstance(log, int):
        return log
    try:
        report, rows, head = log.export()
    finally:
        log.close()
    if head is None:
        console.print(styled("refusing to export", "red", ": the log does not verify, and a signed head over it would vouch "
                      "for what was done to it"))
        print_report(report, console, "")
        return 1
    text = to_jsonl(rows, head) if args.format == "jsonl" else to_csv(rows)
    # The file goes to stdout when no -o is given, so messages go to stderr.
    notes = console if args.out else safe_console(stderr=True)
    _write(args.out, text, notes, f"{len(rows)} entries")
    if args.head:
        Path(args.head).write_text(json.dumps(head, indent=1) + "\n", encoding="utf-8")
        notes.print(f"signed head written to {args.head}", markup=False, soft_wrap=True)
    return 0


def _read_json(path: str, what: str) -> Any:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ProofError(f"cannot read the {what} {path}: {exc}") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ProofError(f"the {what} {path} is not JSON ({exc})") from None


def verify_exported(args: argparse.Namespace, console: Console) -> int:
    """``memwarden audit verify --log FILE --public-key KEY.PUB [--head HEAD.JSON]``."""
    from memwarden.memory.audit_export import verify_export
    from memwarden.memory.signing import PublicKeys

    if args.log is None or args.public_key is None:
        console.print(styled("error:", "red", " an exported log is checked with both --log FILE and --public-key KEY.PUB"))
        return 2
    try:
        public = PublicKeys.load(args.public_key)
        head = _read_json(args.head, "head file") if args.head else None
        try:
            text = Path(args.log).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ProofError(f"cannot read the exported log {args.log}: {exc}") from None
        report = verify_export(text, public, args.log, head)
    except ProofError as exc:
        return _fail(console, exc)
    return print_report(report, console, f", hash chain intact and exactly as long as the head signed by "
                                          f"store {public.first_id} says")


def _receipt_verify(args: argparse.Namespace, console: Console) -> int:
    from memwarden.memory.receipts import load_receipt
    from memwarden.memory.signing import PublicKeys

    try:
        public = PublicKeys.load(args.public_key)
        receipt = load_receipt(args.receipt, public)
    except ProofError as exc:
        return _fail(console, exc)
    about = f"subject {receipt.subject!r}" if receipt.subject is not None else f"{len(receipt.requested_ids)} id(s)"
    console.print(styled("ok", "green", f": signed by key {receipt.key_id} of store {public.first_id}: {about}, "
                  f"{receipt.count} record(s) erased ({receipt.cascaded} by cascade) by {receipt.actor} at "
                  f"{receipt.erased_at.isoformat()}, audit entries {list(receipt.audit_seqs)}, under: "
                  f"{'; '.join(receipt.rules)}"))
    return 0


def add_proof_commands(sub: Any, audit: Any, add_log: Callable[..., None]) -> None:
    """Add ``keys``, ``receipt`` and ``audit export`` to the parser (``sub``: the top-level
    subcommands, ``audit``: the audit subcommands, ``add_log``: cli._add_log)."""
    keys = sub.add_parser("keys", help="the store's Ed25519 signing keys").add_subparsers(dest="keys_command",
                                                                                          required=True)
    export_public = keys.add_parser("export-public", help="write the store's public keys, for auditors")
    where = export_public.add_mutually_exclusive_group()
    where.add_argument("--data", help="the memory directory (its audit.signing.key)")
    where.add_argument("--key", help="the audit key file; its signing key is beside it "
                                     "(default: $MEMWARDEN_AUDIT_KEY_FILE)")
    export_public.add_argument("--out", "-o", metavar="KEY.PUB", help="file to write (default: standard output)")
    export_public.set_defaults(run=_keys_export_public)
    rotate = keys.add_parser("rotate", help="replace the signing key (the old one endorses the new; audited)")
    add_log(rotate)
    rotate.add_argument("--principal", default="operator", help="who rotates, for the audit entry")
    rotate.set_defaults(run=_keys_rotate)

    export = audit.add_parser("export", help="write the audit log and a signed head, for checking offline")
    add_log(export)
    export.add_argument("--format", choices=["jsonl", "csv"], default="jsonl",
                        help="jsonl (the signed head is its last line) or csv (the head goes to --head)")
    export.add_argument("--out", "-o", metavar="FILE", help="file to write (default: standard output)")
    export.add_argument("--head", metavar="HEAD.JSON", help="also write the signed head to this file")
    export.set_defaults(run=_audit_export)

    receipt = sub.add_parser("receipt", help="erasure receipts").add_subparsers(dest="receipt_command", required=True)
    check = receipt.add_parser("verify", help="check an erasure receipt with the store's public key, offline")
    check.add_argument("receipt", help="the receipt JSON file")
    check.add_argument("--public-key", required=True, metavar="KEY.PUB", help="memwarden keys export-public's file")
    check.set_defaults(run=_receipt_verify)
