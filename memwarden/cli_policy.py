"""``memwarden policy show`` and ``memwarden policy who-can``: read a policy as an operator
asks of it, "what does it say (for this principal)?" and "who may do this here?".

Both read the policy through the engine the governed path uses (same parsing, same ``g``
closure, same decisions), never the file's text on its own.
"""

from __future__ import annotations

import argparse
from typing import Any

from rich.console import Console
from rich.text import Text


def _record_attributes(args: argparse.Namespace) -> dict[str, Any]:
    """The record attributes of ``policy check`` and ``policy who-can`` (see add_record_options)."""
    from memwarden.core.errors import InvalidRequest

    labels: dict[str, str] | None = {} if args.no_labels else None
    for item in args.label:
        name, eq, value = item.partition("=")
        if not eq:
            raise InvalidRequest(f"--label takes NAME=VALUE, got {item!r}")
        if labels is None:
            labels = {}
        if name in labels:
            raise InvalidRequest(f"--label {name!r} is given twice")
        labels[name] = value
    return {"kind": args.kind, "source": args.source, "content": args.content, "labels": labels,
            "writer_roles": args.writer_role if args.writer_role else None}


def add_record_options(parser: argparse.ArgumentParser) -> None:
    """The options that describe the record a decision is about."""
    record = parser.add_argument_group(
        "record attributes", "the record read (or written); an attribute not given is unknown, and a decision that "
        "depends on it is a fail-closed deny that names the rule it depends on")
    record.add_argument("--kind", help="fact, event, rule, preference or lesson")
    record.add_argument("--source", help="user, agent, tool or external")
    record.add_argument("--content", help="statement or directive (the content class a write is classified as)")
    record.add_argument("--label", action="append", default=[], metavar="NAME=VALUE",
                        help="a label of the record (repeatable; the record has exactly these labels)")
    record.add_argument("--no-labels", action="store_true", help="the record has no labels")
    record.add_argument("--writer-role", action="append", default=[], metavar="ROLE",
                        help="a role its writer held (repeatable)")


def policy_check(args: argparse.Namespace, console: Console) -> int:
    """``policy check``: the decision and the deciding rule for one request."""
    from memwarden.policies.sources import open_policy
    from memwarden.policies.tools import explain

    engine, close = open_policy(args.policy)
    try:
        decision = explain(engine, args.principal, args.role, args.action, args.namespace, **_record_attributes(args))
    finally:
        close()
    console.print(Text(decision.explain()))
    return 0 if decision.allowed else 1


def _lifecycle_line(rule: Any) -> str:  # LifecycleRule
    from memwarden.policies.tokenizer import csv_line

    if rule.what == "ttl":
        fields = [rule.what, rule.pattern.text, rule.kind or "*", f"{rule.value:g}s"]
    elif rule.what == "decay":
        fields = [rule.what, rule.pattern.text, f"{rule.value:g}s"]
    else:
        fields = [rule.what, rule.pattern.text, str(int(rule.value))]
    return csv_line(fields)


def policy_show(args: argparse.Namespace, console: Console) -> int:
    """``policy show``: every rule, role link and lifecycle line, normalised, with where it
    comes from; with ``--principal``, the roles it holds and only the rules that apply to it."""
    from memwarden.policies.sources import open_policy

    engine, close = open_policy(args.policy)
    try:
        data, names = engine.data, engine.names
        rules, links = data.rules, data.links
        if args.principal is not None:
            from memwarden.core.namespace import exact_name

            # Checked exactly as an operation would check them.
            principal = exact_name(args.principal, what="principal id")
            given = tuple(dict.fromkeys(exact_name(r, what="role") for r in args.role))
            engine.require_known(principal, given)
            subjects = engine.subjects(principal, given)
            rules = tuple(r for r in rules if names.subject(r) in subjects.tags)
            held = ", ".join(sorted(subjects.roles)) or "none"
            console.print(Text(f"{args.principal} holds: {held} (given: {', '.join(args.role) or 'none'}; "
                               "the rest from g lines)"))
            links = tuple(link for link in links if link.member == args.principal or link.member in subjects.roles)
        lifecycle = data.lifecycle if args.principal is None else ()
        lines = [(r.origin, r.text) for r in rules] + [(link.origin, f"g, {link.member}, {link.role}") for link in links]
        lines += [(rule.origin, _lifecycle_line(rule)) for rule in lifecycle]
        # Policy lines as the engine read them, normalised, each with its line in the source:
        # one line each reads at any terminal width.
        sources = {origin.rpartition(":")[0] for origin, _ in lines}
        common = sources.pop() if len(sources) == 1 else None
        console.print(Text(f"{len(rules)} rule(s), {len(links)} role link(s), {len(lifecycle)} lifecycle line(s)"
                           + (f" from {common}" if common else "")))
        for origin, text in lines:
            where = origin.rpartition(":")[2] if common else origin
            console.print(Text(f"  {where:>4}  {text}"))
    finally:
        close()
    return 0


def policy_who_can(args: argparse.Namespace, console: Console) -> int:
    """``policy who-can``: every role and declared principal, and whether it may do the
    action on the namespace (exit 0 when someone may, 1 when no one may)."""
    from memwarden.policies.sources import open_policy
    from memwarden.policies.tools import who_can

    engine, close = open_policy(args.policy)
    try:
        holders = who_can(engine, args.action, args.namespace, **_record_attributes(args))
    finally:
        close()
    # One line per answer, most permissive first: it reads at any terminal width.
    order = {"allow": 0, "review": 1, "depends": 2, "deny": 3}
    rows = []
    for holder in holders:
        decision = holder.decision
        if decision.allowed:
            answer = "review" if decision.review else "allow"
        else:
            answer = "depends" if decision.depends is not None else "deny"
        rule = decision.rule_text if decision.depends is None else f"{decision.depends.text} (if the record matches)"
        who = f"role {holder.name}" if holder.is_role else f"{holder.name} ({', '.join(holder.roles) or 'no roles'})"
        rows.append((order[answer], answer, who, rule))
    console.print(Text(f"who may {args.action} {args.namespace}:"))
    colours = {"allow": "green", "review": "cyan", "depends": "yellow", "deny": "red"}
    for _, answer, who, rule in sorted(rows, key=lambda row: row[0]):
        console.print(Text.assemble("  ", (f"{answer:<8}", colours[answer]), f"{who}: {rule}"))
    allowed = sum(1 for row in rows if row[0] < 2)
    if any(row[1] == "depends" for row in rows):
        console.print(Text("depends: allowed only for records with the attributes the rule names "
                           "(ask about one record with --kind, --content, --label, --source, --writer-role)"))
    return 0 if allowed else 1


def add_policy_commands(policy: Any) -> None:
    """Add ``show`` and ``who-can`` to the ``policy`` subcommands."""
    show = policy.add_parser("show", help="print the policy's rules, role links and lifecycle lines "
                                          "(with --principal: those that apply to it)")
    show.add_argument("--policy", required=True, help="policy CSV file, bundled policy name or database URL")
    show.add_argument("--principal", help="only the rules that apply to this principal, and the roles it holds")
    show.add_argument("--role", action="append", default=[], help="a role given to the principal (repeatable)")
    show.set_defaults(run=policy_show)
    who = policy.add_parser("who-can", help="which roles and principals may do ACTION on NAMESPACE, "
                                            "and the rule that decides for each")
    who.add_argument("--policy", required=True, help="policy CSV file, bundled policy name or database URL")
    who.add_argument("--action", required=True, help="read, write, update, forget, erase, approve, admin, history or claim")
    who.add_argument("--namespace", required=True, help="e.g. ward3/patients/p12")
    add_record_options(who)
    who.set_defaults(run=policy_who_can)
