"""The ``memwarden`` command: the demo, governed record reads, audit, policy and proof tools (docs/cli.md)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from datetime import timezone
from pathlib import Path

from rich.console import Console
from rich.text import Text

from memwarden.cli_common import acting_session, add_actor, audit_log, print_report, styled
from memwarden.core.errors import MemwardenError
from memwarden.integrations.terminal import safe_console


def _demo(args: argparse.Namespace, console: Console) -> int:
    from memwarden.demo import run_demo

    if not getattr(args, "otlp", None):
        result = run_demo(args.data, console)
        return 0 if result.audit_ok else 1

    from memwarden.integrations.otel_setup import setup_tracing

    try:
        telemetry = setup_tracing(otlp=args.otlp, service_name="memwarden-demo", project="memwarden-demo",
                                  set_global=False, scorecard=True)
    except (ValueError, RuntimeError) as exc:
        console.print(styled("error:", "red", f" --otlp: {exc}"))
        return 2
    from memwarden.integrations.run_spans import instrument_langchain

    # With OpenInference's LangChain instrumentation installed, the team's workers, nodes and
    # tools get spans too, and each memory span nests under the worker that made the call.
    undo = instrument_langchain(telemetry.tracer_provider)
    try:
        # One root span, so the whole demo is one trace with a span per memory operation.
        with telemetry.span("memwarden demo",
                            **{"memwarden.demo.scenario": "ward3", "openinference.span.kind": "CHAIN"}):
            result = run_demo(args.data, console)
    finally:
        if undo is not None:
            undo()
        flushed = telemetry.shutdown()
        if telemetry.failed or not flushed:
            console.print(styled("traces:", "yellow", f" {telemetry.exported} spans exported to {args.otlp}, "
                                  f"{telemetry.failed} could not be delivered" + ("" if flushed else " (flush timed out)")))
        else:
            console.print(f"traces: {telemetry.exported} spans exported to {args.otlp}")
            base = args.otlp.split("/v1/", 1)[0]
            console.print(Text(f"open {base} (project memwarden-demo) to see them, if that is Phoenix "
                               "(`make dashboard`)"))
    return 0 if result.audit_ok else 1


def _audit_verify(args: argparse.Namespace, console: Console) -> int:
    if args.log is not None or args.public_key is not None:
        from memwarden.cli_proof import verify_exported

        return verify_exported(args, console)
    if args.head is not None:
        console.print(styled("error:", "red", " --head goes with --log and --public-key (an exported log)"))
        return 2
    log = audit_log(args, console)
    if isinstance(log, int):
        return log
    try:
        report = log.verify()
    finally:
        log.close()
    signed = f", {report.authenticated} signed" if report.authenticated else ""
    return print_report(report, console, f"{signed}, hash chain, MACs and anchored head intact")


def _audit_flows(args: argparse.Namespace, console: Console) -> int:
    from memwarden.integrations.flows import build_flows, parse_time, select
    from memwarden.integrations.flows_html import render_html
    from memwarden.integrations.flows_terminal import render_table

    window = {}
    for name in ("since", "until"):
        text = getattr(args, name)
        if text is not None:
            moment = parse_time(text)
            if moment is None:
                console.print(styled("error:", "red", f" --{name} takes an ISO 8601 time (2026-12-01T14:00:00+00:00 "
                                     f"or 2026-12-01), got {text!r}"))
                return 2
            window[name] = moment if moment.tzinfo is not None else moment.replace(tzinfo=timezone.utc)
    log = audit_log(args, console)
    if isinstance(log, int):
        return log
    try:
        report = build_flows(log.entries(), verify=log.verify())
        tag = log.subject_tag(args.subject) if args.subject is not None else None
    finally:
        log.close()
    report = select(report, record=args.record, principal=args.principal, subject_tag=tag, **window)
    render_table(report, console)
    if args.html:
        out = Path(args.html)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(render_html(report, title=f"memwarden audit flows: {args.data or args.audit}"),
                       encoding="utf-8")
        console.print(Text(f"flow graph written to {out}"))
    return 0 if report.verify is None or report.verify.ok else 1


def _policy_lint(args: argparse.Namespace, console: Console) -> int:
    from memwarden.policies.loading import policy_path
    from memwarden.policies.tools import lint_file

    path = policy_path(args.policy)
    findings = lint_file(path)
    for finding in findings:
        colour = {"error": "red", "warning": "yellow"}.get(finding.severity, "cyan")
        console.print(styled(finding.severity, colour, f" {finding.origin} {finding.code}: {finding.message}"))
    errors = sum(f.severity == "error" for f in findings)
    console.print(Text(f"{len(findings)} finding(s), {errors} error(s) in {path}"))
    return 1 if errors else 0


def _policy_import(args: argparse.Namespace, console: Console) -> int:
    from memwarden.databases import redacted
    from memwarden.policies.loading import policy_path
    from memwarden.policies.sources import import_policy

    path = policy_path(args.file)
    rows, version = import_policy(path, args.db, table=args.table)
    console.print(Text(f"{rows} policy line(s) from {path} now make up {redacted(args.db)}#{args.table} "
                       f"(version {version})"))
    return 0


def _policy_export(args: argparse.Namespace, console: Console) -> int:
    from memwarden.databases import redacted
    from memwarden.policies.sources import export_policy

    lines = export_policy(args.db, table=args.table)
    text = "".join(line + "\n" for line in lines)
    if args.out:
        Path(args.out).write_text(text, encoding="utf-8")
        console.print(Text(f"{len(lines)} policy line(s) from {redacted(args.db)}#{args.table} written to {args.out}"))
    else:
        sys.stdout.write(text)
    return 0


def _erase(args: argparse.Namespace, console: Console) -> int:
    memory, session = acting_session(args)
    with memory:
        receipt = session.erase(subject=args.subject, ids=args.id)
    if args.out:
        Path(args.out).write_text(receipt.model_dump_json(indent=1) + "\n", encoding="utf-8")
        console.print(f"receipt written to {args.out}; check it with: memwarden receipt verify {args.out} "
                      "--public-key KEY.PUB", markup=False, soft_wrap=True)
    else:
        console.print_json(receipt.model_dump_json())
    return 0


def _sweep(args: argparse.Namespace, console: Console) -> int:
    memory, session = acting_session(args)
    with memory:
        removed = session.sweep(args.namespace or ())
    console.print(Text(f"{removed} invisible record(s) removed"))
    return 0


def _bench(args: argparse.Namespace, console: Console) -> int:
    import importlib
    import sys

    # Benchmarks live beside the package in a source checkout (they are not installed).
    root = Path(__file__).resolve().parent.parent
    if not (root / "benchmarks" / f"{args.name}.py").is_file():
        console.print(styled("error:", "red", f" benchmarks/{args.name}.py is not here; run from a memwarden source "
                              "checkout"))
        return 2
    sys.path.insert(0, str(root))
    return importlib.import_module(f"benchmarks.{args.name}").main(args.rest)


def _add_log(parser: argparse.ArgumentParser, *, exported: bool = False) -> None:
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--data", help="the memory directory (as given to Memory.open); its audit.sqlite3")
    where.add_argument("--audit", help="the audit log itself: a SQLite file, sqlite:/// or postgresql:// URL")
    if exported:
        where.add_argument("--log", metavar="FILE", help="an exported log (memwarden audit export), checked with "
                                                          "--public-key alone, offline")
    parser.add_argument("--key", help="the audit key file (default: $MEMWARDEN_AUDIT_KEY_FILE, else audit.key "
                                      "beside a SQLite log); the signing key and head file are beside it")


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``memwarden`` command."""
    from memwarden import __version__

    parser = argparse.ArgumentParser(prog="memwarden", description=__doc__)
    parser.add_argument("--version", action="version", version=f"memwarden {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    demo = sub.add_parser("demo", help="run the hospital-ward demo offline")
    demo.add_argument("--keep", "--data", dest="data", metavar="DIR",
                      help="keep the demo's memory in DIR and print commands to look further (default: a "
                           "temporary directory, removed at the end)")
    demo.add_argument("--otlp", metavar="URL",
                      help="export the demo's spans over OTLP/HTTP, e.g. http://127.0.0.1:6006/v1/traces (Phoenix)")
    demo.set_defaults(run=_demo)

    audit = sub.add_parser("audit", help="audit log tools").add_subparsers(dest="audit_command", required=True)
    verify = audit.add_parser("verify", help="check a memory's audit log (hash chain, MACs, anchored head), "
                                             "or an exported log with the store's public key")
    _add_log(verify, exported=True)
    verify.add_argument("--public-key", metavar="KEY.PUB", help="the store's public keys (memwarden keys export-public)")
    verify.add_argument("--head", metavar="HEAD.JSON", help="the signed head exported with the log (default: the "
                                                            "one embedded in a JSON Lines export)")
    verify.set_defaults(run=_audit_verify)
    flows = audit.add_parser("flows", help="who wrote which record and who read it, from the audit log")
    _add_log(flows)
    flows.add_argument("--html", metavar="OUT", help="also write a self-contained HTML page with the flow graph")
    flows.add_argument("--since", metavar="TIME", help="only events at or after this ISO 8601 time (UTC if no zone)")
    flows.add_argument("--until", metavar="TIME", help="only events at or before this ISO 8601 time")
    flows.add_argument("--record", metavar="ID", help="only this record, its versions and its provenance (both ways)")
    flows.add_argument("--principal", help="only what this principal wrote, read, removed or was denied")
    flows.add_argument("--subject", help="only the records about this subject and their provenance (looked up by "
                                         "its keyed hash: needs the audit key)")
    flows.set_defaults(run=_audit_flows)

    from memwarden.cli_policy import add_policy_commands, add_record_options, policy_check
    from memwarden.cli_proof import add_proof_commands
    from memwarden.cli_records import add_records_commands
    from memwarden.cli_scorecard import add_scorecard_command

    add_proof_commands(sub, audit, _add_log)
    add_scorecard_command(audit)
    add_records_commands(sub)

    policy = sub.add_parser("policy", help="policy tools").add_subparsers(dest="policy_command", required=True)
    check = policy.add_parser("check", help="print the decision and the deciding rule for one request")
    check.add_argument("--policy", required=True, help="policy CSV file, bundled policy name or database URL")
    check.add_argument("--principal", required=True)
    check.add_argument("--role", action="append", default=[], help="a role given to the principal (repeatable)")
    check.add_argument("--action", required=True)
    check.add_argument("--namespace", required=True, help="e.g. ward3/patients/p12")
    add_record_options(check)
    check.set_defaults(run=policy_check)
    add_policy_commands(policy)
    lint = policy.add_parser("lint", help="report malformed, never-matching, duplicate and shadowed rules")
    lint.add_argument("--policy", required=True, help="policy CSV file or bundled policy name")
    lint.set_defaults(run=_policy_lint)
    load = policy.add_parser("import", help="validate a policy file and make it the whole policy in a database")
    load.add_argument("file", help="policy CSV file or bundled policy name")
    load.add_argument("--db", required=True, help="sqlite:///policy.db or postgresql://user@host/db")
    load.add_argument("--table", default="casbin_rule", help="the adapter's table (default casbin_rule)")
    load.set_defaults(run=_policy_import)
    dump = policy.add_parser("export", help="write a database's policy as a CSV policy file")
    dump.add_argument("--db", required=True, help="sqlite:///policy.db or postgresql://user@host/db")
    dump.add_argument("--table", default="casbin_rule", help="the adapter's table (default casbin_rule)")
    dump.add_argument("--out", "-o", help="file to write (default: standard output)")
    dump.set_defaults(run=_policy_export)

    erase = sub.add_parser("erase", help="erase every record about a subject (or ids) and print the receipt")
    add_actor(erase)
    erase.add_argument("--subject", help="the subject to erase")
    erase.add_argument("--id", action="append", default=[], help="a record id to erase (repeatable)")
    erase.add_argument("--out", "-o", metavar="RECEIPT.JSON", help="write the signed receipt here (default: print it)")
    erase.set_defaults(run=_erase)

    sweep = sub.add_parser("sweep", help="physically remove forgotten, expired and rejected records")
    add_actor(sweep)
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
    # markup=False: nothing printed is ever read as rich markup, whatever a user string holds
    # (a principal "[/x]" or "[link=...]"); styling is done with Text only (see _styled).
    # soft_wrap: paths, ids and messages are printed whole, never broken at the terminal width.
    # safe_console: no control character of a user string reaches the terminal (terminal.py).
    console = safe_console(markup=False, soft_wrap=True)
    try:
        return args.run(args, console)
    except MemwardenError as exc:
        console.print(styled("error:", "red", f" {exc}"))
        return 2


if __name__ == "__main__":
    sys.exit(main())
