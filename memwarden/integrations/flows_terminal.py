"""The memory flows report for a terminal: one block per record, lines not table cells, so
that full ids, namespaces and principals read whole at any width (80 columns included).

Principals, namespaces, ids and rules come from the audit log, that is from users: all of it
is printed as Text, never as markup.
"""

from __future__ import annotations

from collections.abc import Mapping

from rich.console import Console
from rich.text import Text

from memwarden.integrations.flows import Access, FlowReport
from memwarden.integrations.terminal import safe_console

STATUS_STYLE = {"active": "green", "quarantined": "yellow", "superseded": "dim", "forgotten": "magenta",
                "erasing": "magenta", "erased": "red", "swept": "red"}

#: What the two words mean, printed under the heading (the demo uses them too).
WITHHELD = "withheld: records a read's policy filter kept out of its results (counted, never named)"
DENIED = "denied: requests the policy refused outright (nothing was read or changed)"


def when(access: Access | None) -> str:
    """An event's time as ``YYYY-MM-DD HH:MM:SS`` (UTC, as logged), or ``?``."""
    t = access.time if access is not None else None
    return t.strftime("%Y-%m-%d %H:%M:%S") if t is not None else "?"


def who(principal: str, roles: Mapping[str, tuple[str, ...]]) -> str:
    """A principal with the roles it acted with."""
    r = roles.get(principal) or ()
    return f"{principal} ({', '.join(r)})" if r else principal


def readers_text(accesses: list[Access]) -> str:
    """``bob ×2, alice``: each reader with how often it read, in order of first read."""
    counts: dict[str, int] = {}
    for access in accesses:
        counts[access.principal] = counts.get(access.principal, 0) + 1
    return ", ".join(f"{p} ×{n}" if n > 1 else p for p, n in counts.items())


def render_table(report: FlowReport, console: Console | None = None) -> None:
    """Print the report: per namespace, each record with who wrote it when, who read it, what
    it derives from, and who removed it when; then denials and withheld counts."""
    console = console or safe_console()
    first, last = report.span
    title = Text(f"Memory flows: {len(report.records)} records from {report.entries} audit entries")
    if report.selection != "all":
        title.append(f" ({report.selection})")
    if first is not None:
        title.append(f", {first.strftime('%Y-%m-%d %H:%M:%S')} to {last.strftime('%Y-%m-%d %H:%M:%S')}")
    if report.verify is not None:
        title.append(" - audit log ")
        title.append("verified" if report.verify.ok else "TAMPERED", style="green" if report.verify.ok else "red")
    console.print(title)
    console.print(Text(WITHHELD + "; " + DENIED, style="dim"))
    namespace: object = object()
    for flow in report.records:
        if flow.namespace != namespace:
            namespace = flow.namespace
            console.print(Text(f"\n{flow.namespace or '(namespace unknown)'}", style="bold"))
        console.print(Text.assemble("  ", flow.id, "  ", (flow.status, STATUS_STYLE.get(flow.status, "white"))))
        for access in flow.writers:
            console.print(Text(f"    written  {when(access)}  {who(access.principal, report.roles)}"))
        if flow.parents:
            console.print(Text(f"    derived from  {', '.join(flow.parents)}"))
        if flow.supersedes:
            console.print(Text(f"    supersedes  {flow.supersedes}"))
        if flow.readers:
            console.print(Text(f"    read by  {readers_text(flow.readers)} (last {when(flow.readers[-1])})"))
        if flow.superseded_by:
            console.print(Text(f"    superseded by  {flow.superseded_by}"))
        if flow.held_by is not None:
            console.print(Text(f"    held  {when(flow.held_by)}  {who(flow.held_by.principal, report.roles)} "
                               f"retracted {flow.retracted_from}, which it derives from"))
        if flow.removed_by is not None:
            how = {"erasing": "erasure started", "swept": "swept"}.get(flow.status, flow.status)
            console.print(Text(f"    {how}  {when(flow.removed_by)}  {who(flow.removed_by.principal, report.roles)}"))
            if flow.cascade_from:
                console.print(Text(f"    by cascade from  {flow.cascade_from}"))
    if report.denied:
        console.print(Text("\ndenied", style="bold"))
        for access in report.denied:
            console.print(Text(f"  {when(access)}  {who(access.principal, report.roles)} {access.op} "
                               f"{access.namespace or '(no namespace)'}"))
            console.print(Text(f"    rule  {access.rule or 'none recorded'}"))
    withheld = report.withheld
    if withheld:
        console.print(Text("\nwithheld", style="bold"))
        for principal, (records, reads) in withheld.items():
            console.print(Text(f"  {who(principal, report.roles)}: {records} record(s) in {reads} read(s)"))
    if report.unmatched_erasures:
        console.print(Text(f"{report.unmatched_erasures} erased record(s) were never written or read in this log"))
