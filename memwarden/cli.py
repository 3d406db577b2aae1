"""The ``memwarden`` command: the demo, audit verification and policy tools."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from rich.console import Console

from memwarden.errors import MemwardenError


def _demo(args: argparse.Namespace, console: Console) -> int:
    from memwarden.demo import run_demo

    result = run_demo(args.data, console)
    return 0 if result.audit_ok else 1


def _audit_verify(args: argparse.Namespace, console: Console) -> int:
    from memwarden.memory.audit import AuditLog

    path = Path(args.data) / "audit.sqlite3"
    if not path.is_file():
        console.print(f"[red]no audit log at {path}[/]")
        return 2
    log = AuditLog(path)
    report = log.verify()
    log.close()
    if report.ok:
        console.print(f"[green]ok[/]: {report.entries} entries, hash chain intact")
        return 0
    console.print(f"[red]TAMPERED[/]: {len(report.problems)} problem(s) in {report.entries} entries")
    for problem in report.problems:
        console.print(f"  - {problem}")
    return 1


def _policy_check(args: argparse.Namespace, console: Console) -> int:
    from memwarden.policies.engine import PolicyEngine
    from memwarden.policies.namespace import canonical_label, canonical_namespace

    engine = PolicyEngine(args.policy)
    principal = canonical_label(args.principal, what="principal id")
    roles = tuple(canonical_label(r, what="role") for r in args.role)
    decision = engine.decide(engine.subjects(principal, roles), args.action, canonical_namespace(args.namespace))
    console.print(decision.explain(), markup=False)
    return 0 if decision.allowed else 1


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``memwarden`` command."""
    parser = argparse.ArgumentParser(prog="memwarden", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    demo = sub.add_parser("demo", help="run the hospital-ward demo offline")
    demo.add_argument("--data", help="directory to keep the demo's memory in (default: a temporary one)")
    demo.set_defaults(run=_demo)

    audit = sub.add_parser("audit", help="audit log tools").add_subparsers(dest="audit_command", required=True)
    verify = audit.add_parser("verify", help="check the hash chain of a memory's audit log")
    verify.add_argument("--data", required=True, help="the memory directory (as given to Memory.open)")
    verify.set_defaults(run=_audit_verify)

    policy = sub.add_parser("policy", help="policy tools").add_subparsers(dest="policy_command", required=True)
    check = policy.add_parser("check", help="print the decision and the deciding rule for one request")
    check.add_argument("--policy", required=True, help="policy CSV file or bundled policy name")
    check.add_argument("--principal", required=True)
    check.add_argument("--role", action="append", default=[], help="a role given to the principal (repeatable)")
    check.add_argument("--action", required=True)
    check.add_argument("--namespace", required=True, help="e.g. ward3/patients/p12")
    check.set_defaults(run=_policy_check)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; bad input prints a one-line error and exits with status 2."""
    args = build_parser().parse_args(argv)
    console = Console()
    try:
        return args.run(args, console)
    except MemwardenError as exc:
        console.print(f"[red]error:[/] {exc}", markup=True)
        return 2


if __name__ == "__main__":
    sys.exit(main())
