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

    if not getattr(args, "otlp", None):
        result = run_demo(args.data, console)
        return 0 if result.audit_ok else 1

    from memwarden.integrations.otel_setup import setup_tracing

    try:
        telemetry = setup_tracing(otlp=args.otlp, service_name="memwarden-demo", project="memwarden-demo",
                                  set_global=False)
    except (ValueError, RuntimeError) as exc:
        console.print(f"[red]error:[/] --otlp: {exc}")
        return 2
    try:
        # One root span, so the whole demo is one trace with a span per memory operation.
        with telemetry.span("memwarden demo", **{"memwarden.demo.scenario": "ward3"}):
            result = run_demo(args.data, console)
    finally:
        flushed = telemetry.shutdown()
        if telemetry.failed or not flushed:
            console.print(f"[yellow]traces:[/] {telemetry.exported} spans exported to {args.otlp}, "
                          f"{telemetry.failed} could not be delivered" + ("" if flushed else " (flush timed out)"))
        else:
            console.print(f"traces: {telemetry.exported} spans exported to {args.otlp}")
    return 0 if result.audit_ok else 1


def _audit_log(args: argparse.Namespace, console: Console):  # noqa: ANN202 - AuditLog, imported lazily
    from memwarden.memory.audit import AuditLog

    path = Path(args.data) / "audit.sqlite3"
    if not path.is_file():
        console.print(f"[red]no audit log at {path}[/]")
        return None
    return AuditLog(path)


def _audit_verify(args: argparse.Namespace, console: Console) -> int:
    log = _audit_log(args, console)
    if log is None:
        return 2
    try:
        report = log.verify()
    finally:
        log.close()
    if report.ok:
        signed = f", {report.authenticated} signed" if report.authenticated else ""
        console.print(f"[green]ok[/]: {report.entries} entries{signed}, hash chain and MACs intact")
        return 0
    console.print(f"[red]TAMPERED[/]: {len(report.problems)} problem(s) in {report.entries} entries"
                  + (f"; first bad entry: {report.bad_entries[0]}" if report.bad_entries else ""))
    for problem in report.problems[:50]:
        console.print(f"  - {problem}", markup=False)
    if len(report.problems) > 50:
        console.print(f"  ... and {len(report.problems) - 50} more")
    return 1


def _audit_flows(args: argparse.Namespace, console: Console) -> int:
    from memwarden.integrations.flows import build_flows, render_html, render_table

    log = _audit_log(args, console)
    if log is None:
        return 2
    try:
        report = build_flows(log.entries(), verify=log.verify())
    finally:
        log.close()
    render_table(report, console)
    if args.html:
        out = Path(args.html)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(render_html(report, title=f"memwarden audit flows: {args.data}"), encoding="utf-8")
        console.print(f"flow graph written to {out}")
    return 0 if report.verify is None or report.verify.ok else 1


def _policy_check(args: argparse.Namespace, console: Console) -> int:
    from memwarden.policies.engine import PolicyEngine
    from memwarden.policies.namespace import canonical_label, canonical_namespace

    engine = PolicyEngine(args.policy)
    principal = canonical_label(args.principal, what="principal id")
    roles = tuple(canonical_label(r, what="role") for r in args.role)
    decision = engine.decide(engine.subjects(principal, roles), args.action, canonical_namespace(args.namespace))
    console.print(decision.explain(), markup=False, soft_wrap=True)
    return 0 if decision.allowed else 1


def _policy_lint(args: argparse.Namespace, console: Console) -> int:
    from memwarden.policies.loading import BUNDLED_POLICIES, bundled_policy_path
    from memwarden.policies.tools import lint_file

    path = bundled_policy_path(args.policy) if args.policy in BUNDLED_POLICIES and not Path(args.policy).exists() \
        else Path(args.policy)
    findings = lint_file(path)
    for finding in findings:
        colour = {"error": "red", "warning": "yellow"}.get(finding.severity, "cyan")
        console.print(f"[{colour}]{finding.severity}[/] {finding.origin} {finding.code}: ", end="")
        console.print(finding.message, markup=False, soft_wrap=True)
    errors = sum(f.severity == "error" for f in findings)
    console.print(f"{len(findings)} finding(s), {errors} error(s) in {path}")
    return 1 if errors else 0


def _acting_session(args: argparse.Namespace):  # noqa: ANN202 - (Memory, Session)
    from memwarden.memory.memory import Memory
    from memwarden.memory.records import Principal

    memory = Memory.open(args.data, policy=args.policy)
    return memory, memory.session(Principal(args.principal, roles=args.role))


def _erase(args: argparse.Namespace, console: Console) -> int:
    memory, session = _acting_session(args)
    with memory:
        receipt = session.erase(subject=args.subject, ids=args.id)
    console.print_json(receipt.model_dump_json())
    return 0


def _sweep(args: argparse.Namespace, console: Console) -> int:
    memory, session = _acting_session(args)
    with memory:
        removed = session.sweep(args.namespace or ())
    console.print(f"{removed} invisible record(s) removed")
    return 0


def _bench(args: argparse.Namespace, console: Console) -> int:
    import importlib
    import sys

    # Benchmarks live beside the package in a source checkout (they are not installed).
    root = Path(__file__).resolve().parent.parent
    if not (root / "benchmarks" / f"{args.name}.py").is_file():
        console.print(f"[red]error:[/] benchmarks/{args.name}.py is not here; run from a memwarden source checkout")
        return 2
    sys.path.insert(0, str(root))
    return importlib.import_module(f"benchmarks.{args.name}").main(args.rest)


def _add_actor(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--data", required=True, help="the memory directory (as given to Memory.open)")
    parser.add_argument("--policy", required=True, help="policy CSV file or bundled policy name")
    parser.add_argument("--principal", required=True, help="who acts (policy decides what it may do)")
    parser.add_argument("--role", action="append", default=[], help="a role given to the principal (repeatable)")


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``memwarden`` command."""
    parser = argparse.ArgumentParser(prog="memwarden", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    demo = sub.add_parser("demo", help="run the hospital-ward demo offline")
    demo.add_argument("--data", help="directory to keep the demo's memory in (default: a temporary one)")
    demo.add_argument("--otlp", metavar="URL",
                      help="export the demo's spans over OTLP/HTTP, e.g. http://127.0.0.1:6006/v1/traces (Phoenix)")
    demo.set_defaults(run=_demo)

    audit = sub.add_parser("audit", help="audit log tools").add_subparsers(dest="audit_command", required=True)
    verify = audit.add_parser("verify", help="check the hash chain and MACs of a memory's audit log")
    verify.add_argument("--data", required=True, help="the memory directory (as given to Memory.open)")
    verify.set_defaults(run=_audit_verify)
    flows = audit.add_parser("flows", help="who wrote which record and who read it, from the audit log")
    flows.add_argument("--data", required=True, help="the memory directory (as given to Memory.open)")
    flows.add_argument("--html", metavar="OUT", help="also write a self-contained HTML page with the flow graph")
    flows.set_defaults(run=_audit_flows)

    policy = sub.add_parser("policy", help="policy tools").add_subparsers(dest="policy_command", required=True)
    check = policy.add_parser("check", help="print the decision and the deciding rule for one request")
    check.add_argument("--policy", required=True, help="policy CSV file or bundled policy name")
    check.add_argument("--principal", required=True)
    check.add_argument("--role", action="append", default=[], help="a role given to the principal (repeatable)")
    check.add_argument("--action", required=True)
    check.add_argument("--namespace", required=True, help="e.g. ward3/patients/p12")
    check.set_defaults(run=_policy_check)
    lint = policy.add_parser("lint", help="report malformed, never-matching, duplicate and shadowed rules")
    lint.add_argument("--policy", required=True, help="policy CSV file or bundled policy name")
    lint.set_defaults(run=_policy_lint)

    erase = sub.add_parser("erase", help="erase every record about a subject (or ids) and print the receipt")
    _add_actor(erase)
    erase.add_argument("--subject", help="the subject to erase")
    erase.add_argument("--id", action="append", default=[], help="a record id to erase (repeatable)")
    erase.set_defaults(run=_erase)

    sweep = sub.add_parser("sweep", help="physically remove forgotten, expired and rejected records")
    _add_actor(sweep)
    sweep.add_argument("--namespace", help="only at or below this namespace (default: all the principal administers)")
    sweep.set_defaults(run=_sweep)

    bench = sub.add_parser("bench", help="run a benchmark from benchmarks/ (source checkout)")
    bench.add_argument("name", choices=["governance", "retrieval"], help="which benchmark")
    bench.add_argument("rest", nargs=argparse.REMAINDER, help="its own options (see --help after the name)")
    bench.set_defaults(run=_bench)
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
