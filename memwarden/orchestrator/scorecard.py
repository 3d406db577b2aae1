"""``Scorecard``: what every principal did, saw and was denied, read from the audit log.

The audit log holds no content, only ids, counts and decisions, so a scorecard is built from
it alone: searches and reads with the records returned and withheld, writes (and how many of
them were replays of a write already stored), denials, forgets and erasures, and whether the
hash chain verifies. ``Scorecard.print`` renders it with rich; give it a ``describe`` function
(record id -> short text) to also list what each principal was shown.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console

    from memwarden.memory.memory import Memory

from memwarden.integrations.governance import READS as _READS

__all__ = ["RoleRow", "Scorecard", "scorecard"]


@dataclass
class RoleRow:
    """One principal's figures."""

    principal: str
    roles: tuple[str, ...] = ()
    reads: int = 0
    returned: int = 0
    withheld: int = 0
    denied: int = 0
    writes: int = 0
    replays: int = 0
    rejected: int = 0
    updates: int = 0
    forgets: int = 0
    erased: int = 0
    seen: list[str] = field(default_factory=list)

    @property
    def label(self) -> str:
        """``principal (role, ...)``."""
        return f"{self.principal} ({', '.join(self.roles) or '-'})"


@dataclass
class Scorecard:
    """Per-principal figures from the audit log, plus the chain check and the run time."""

    rows: dict[str, RoleRow]
    entries: int
    audit_ok: bool
    audit_problems: list[str] = field(default_factory=list)
    seconds: float | None = None
    title: str = "memwarden scorecard"
    notes: list[str] = field(default_factory=list)

    @property
    def withheld(self) -> int:
        """Records withheld from all principals together."""
        return sum(r.withheld for r in self.rows.values())

    @property
    def denied(self) -> int:
        """Denied operations, all principals together."""
        return sum(r.denied for r in self.rows.values())

    @property
    def replays(self) -> int:
        """Writes that were replays of a write already stored (no-ops)."""
        return sum(r.replays for r in self.rows.values())

    def row(self, principal: str) -> RoleRow:
        """The row of ``principal`` (an empty one if it did nothing)."""
        return self.rows.get(principal) or RoleRow(principal)

    def as_dict(self) -> dict[str, Any]:
        """A JSON-safe summary."""
        return {
            "title": self.title, "entries": self.entries, "audit_ok": self.audit_ok, "seconds": self.seconds,
            "principals": {p: {k: v for k, v in vars(r).items() if k != "seen"} | {"seen": len(r.seen)}
                           for p, r in self.rows.items()},
        }

    def print(self, console: Console | None = None, *, describe: Callable[[str], str | None] | None = None) -> None:
        """Render the scorecard; ``describe`` maps a record id to a short text to list."""
        from rich.table import Table

        from memwarden.integrations.terminal import safe_console
        from rich.text import Text

        # Labels, memory texts and notes come from users: rendered as Text, never as markup.
        console = console or safe_console()
        table = Table(title=Text(self.title), show_lines=False)
        table.add_column("principal (roles)", no_wrap=True)
        always = ("reads", "returned", "withheld", "denied", "writes")
        optional = ("replays", "rejected", "updates", "forgets", "erased")
        shown = [*always, *(c for c in optional if any(getattr(r, c) for r in self.rows.values()))]
        for col in shown:
            table.add_column({"returned": "shown"}.get(col, col), justify="right")
        for row in self.rows.values():
            table.add_row(Text(row.label), *(str(getattr(row, c)) for c in shown))
        console.print(table)
        if describe is not None:
            seen = Table(title="What each principal was shown", show_lines=True)
            seen.add_column("principal (roles)")
            seen.add_column("memories returned to it")
            seen.add_column("withheld", justify="right")
            for row in self.rows.values():
                if not row.reads:
                    continue
                texts = [describe(i) or f"{i} (written during the run)" for i in row.seen]
                seen.add_row(Text(row.label), Text("\n".join(f"- {t}" for t in texts) or "(nothing)"), str(row.withheld))
            console.print(seen)
        for note in self.notes:
            console.print(Text(note))
        chain = Text("verified", style="green") if self.audit_ok else Text.assemble(
            ("BROKEN", "red"), f": {'; '.join(self.audit_problems)}")
        timing = f", {self.seconds:.1f} s" if self.seconds is not None else ""
        console.print(Text.assemble(f"audit log: {self.entries} entries, hash chain ", chain, timing))


def scorecard(memory: Memory, *, since: int = 0, title: str = "memwarden scorecard",
              seconds: float | None = None) -> Scorecard:
    """Build the scorecard from ``memory``'s audit log (entries after sequence ``since``)."""
    rows: dict[str, RoleRow] = {}
    entries = list(memory.audit_log.entries())
    for entry in entries:
        if entry.get("seq", 0) <= since:
            continue
        row = rows.setdefault(entry["principal"], RoleRow(entry["principal"]))
        row.roles = tuple(entry.get("roles") or row.roles)
        _count(row, entry)
    report = memory.audit_log.verify()
    return Scorecard(dict(sorted(rows.items())), len(entries), report.ok, list(report.problems), seconds, title)


def _count(row: RoleRow, entry: Mapping[str, Any]) -> None:
    op, outcome = entry["op"], entry["outcome"]
    if outcome == "denied":
        row.denied += 1
        return
    if outcome == "rejected":
        row.rejected += 1
        return
    if outcome != "ok":
        return
    if op in _READS:
        row.reads += 1
        row.returned += entry.get("returned") or 0
        row.withheld += entry.get("withheld") or 0
        if op != "list" and entry.get("returned"):
            row.seen.extend(i for i in entry.get("records") or [] if i not in row.seen)
    elif op == "write":
        if entry.get("replay"):
            row.replays += 1
        else:
            row.writes += 1
    elif op == "update":
        row.updates += 1
    elif op == "forget":
        row.forgets += 1
    elif op == "erase":
        row.erased += entry.get("returned") or 0
