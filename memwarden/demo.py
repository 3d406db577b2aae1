"""The scenario ``memwarden demo`` runs: three roles share one governed memory on a ward.

It runs offline on the embedded default (local Chroma, bundled hospital policy, bundled
MiniLM embedding) and prints, for every role, what it saw and how much was withheld.
"""

from __future__ import annotations

import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console
from rich.table import Table

from memwarden.errors import AccessDenied
from memwarden.memory.memory import Memory
from memwarden.memory.records import Principal

WARD = [
    ("alice", "ward3/patients/p12", "Patient 12 is allergic to penicillin.", ["p12"]),
    ("alice", "ward3/patients/p12", "Patient 12 had an appendectomy on 3 May; recovery is on track.", ["p12"]),
    ("alice", "ward3/patients/p14", "Patient 14 takes 5 mg warfarin daily; check INR every Monday.", ["p14"]),
    ("bob", "ward3/patients/p12", "Night shift: patient 12 slept well, pain score 2 of 10.", ["p12"]),
    ("bob", "ward3/notes/handover", "Handover: bed 4 call bell is broken, maintenance informed.", []),
    ("bob", "ward3/patients/p14", "Patient 14 asked for a vegetarian diet.", ["p14"]),
    ("carol", "ward3/billing/p12", "Invoice 5531 for patient 12: appendectomy, insurer AOK, unpaid.", ["p12"]),
    ("carol", "ward3/billing/p14", "Patient 14 prefers paper invoices sent to the home address.", ["p14"]),
]

QUESTIONS = [
    ("alice", "Does patient 12 have any drug allergies?", "ward3"),
    ("bob", "What medication does patient 14 take?", "ward3/patients"),
    ("carol", "Is the bill for patient 12's surgery paid?", "ward3"),
    ("carol", "Does patient 12 have any drug allergies?", "ward3/patients"),
]

ROLES = {"alice": "physician", "bob": "nurse", "carol": "billing_clerk"}


@dataclass
class DemoResult:
    """What the demo observed, for the scorecard and for tests."""

    writes: int
    seen: dict[str, int]
    withheld: dict[str, int]
    denied: int
    audit_ok: bool
    seconds: float


def run_demo(data_dir: str | Path | None = None, console: Console | None = None) -> DemoResult:
    """Run the ward scenario and print what each role saw; returns the figures."""
    console = console or Console()
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="memwarden-demo-") as scratch:
        root = Path(data_dir) if data_dir else Path(scratch)
        with Memory.open(root, policy="hospital", count_withheld=True) as mem:
            sessions = {pid: mem.session(Principal(pid, roles=[role])) for pid, role in ROLES.items()}
            for pid, namespace, content, subjects in WARD:
                sessions[pid].write(content, namespace=namespace, subjects=subjects)
            console.print(f"[bold]{len(WARD)} memories written[/] by {', '.join(ROLES)} into one shared store at {root}")

            table = Table(title="What each role saw", show_lines=True)
            for col in ("principal (role)", "question", "returned memories", "withheld"):
                table.add_column(col)
            seen: dict[str, int] = {}
            withheld: dict[str, int] = {}
            denied = 0
            for pid, question, namespace in QUESTIONS:
                who = f"{pid} ({ROLES[pid]})"
                try:
                    hits = sessions[pid].search(question, namespace=namespace, k=3)
                except AccessDenied as exc:
                    denied += 1
                    table.add_row(who, question, f"[red]denied[/]: {exc}", "-")
                    continue
                entry = list(mem.audit_log.entries())[-1]
                seen[pid] = seen.get(pid, 0) + len(hits)
                withheld[pid] = withheld.get(pid, 0) + (entry["withheld"] or 0)
                shown = "\n".join(f"{h.score:.2f}  {h.record.content}" for h in hits) or "(nothing)"
                table.add_row(who, question, shown, str(entry["withheld"]))
            console.print(table)
            report = mem.audit_log.verify()
            console.print(f"audit log: {report.entries} entries, chain "
                          + ("[green]verified[/]" if report.ok else f"[red]BROKEN[/]: {report.problems}"))
    result = DemoResult(len(WARD), seen, withheld, denied, report.ok, time.perf_counter() - started)
    console.print(f"done in {result.seconds:.1f} s")
    return result
