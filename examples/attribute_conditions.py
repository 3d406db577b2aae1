"""Attribute conditions: policy rules that look at the record, not only at its namespace.

The three bundled policies (``hospital``, ``office``, ``household``) end some rules with a
condition on the record's kind, labels, source or writer's role (docs/policies.md). This
example runs each one on its own governed memory and shows what the conditions do:

- hospital: a note labelled ``sensitivity=restricted`` is found by the physician and never by
  the nurse, even though it is the nearest match to her query; she still gets k other hits.
  The patient portal sees only facts and events a physician wrote. A nurse may not write a
  care rule (``kind=rule``), and what she copies from a tool waits for review;
- office: the contractor sees only project notes labelled ``audience=external`` (an allow on
  ``label.x=v`` fails closed: an unlabelled note stays internal); a new project rule waits for
  a manager; HR may not paste external text into the handbook;
- household: the kids do not see what is labelled ``audience=adults``; the assistant's
  calendar entry taken from an email (``source=external``) waits for a parent; the guest may
  leave preferences but not facts.

Every scenario ends with a scorecard read from the audit log.

    python examples/attribute_conditions.py [--data DIR] [--hashing]
"""

from __future__ import annotations

import argparse
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from memwarden import AccessDenied, Memory, Principal, Session
from memwarden.orchestrator import Scorecard, scorecard
from memwarden.orchestrator.examples import EMBEDDING_ENV, example_embedding
from memwarden.policies.engine import PolicyEngine
from memwarden.policies.tools import explain

Outcome = list[tuple[str, str, str]]   # (principal, what it did, what happened)


def _attempt(log: Outcome, who: Session, what: str, action: Callable[[], Any]) -> Any:
    """Run one call and log its outcome; a denial is an outcome, not an error."""
    try:
        result = action()
    except AccessDenied as exc:
        log.append((who.principal.id, what, f"denied ({exc.rule or 'no matching rule'})"))
        return None
    status = getattr(result, "status", None)
    if isinstance(result, list):
        shown = ", ".join(f"'{h.record.content[:36]}'" for h in result) or "nothing"
        log.append((who.principal.id, what, f"{len(result)} hit(s): {shown}"))
    elif status is not None:
        log.append((who.principal.id, what, f"stored, {status.value}"))
    return result


def hospital(mem: Memory, log: Outcome) -> None:
    alice, bob, portal = (mem.session(Principal(p)) for p in ("alice", "bob", "portal"))
    ward = "ward3/patients/p12"
    alice.write("Psychiatric assessment: low mood, started sertraline", ward, kind="fact",
                labels={"sensitivity": "restricted"})
    alice.write("Mood stable on the ward, sleeping well", ward, kind="event")
    alice.write("Blood pressure 128/80, recheck tomorrow", ward, kind="fact")
    alice.write("Give sertraline with breakfast only", ward, kind="rule")
    bob.write("Patient asked about the discharge date", ward, kind="event")
    query = "psychiatric assessment low mood sertraline"
    _attempt(log, alice, f"search {query!r}, k=2", lambda: alice.search(query, "ward3/patients", k=2))
    _attempt(log, bob, f"search {query!r}, k=2", lambda: bob.search(query, "ward3/patients", k=2))
    _attempt(log, portal, "search 'mood', k=5", lambda: portal.search("mood blood pressure discharge", ward, k=5))
    _attempt(log, bob, "write a care rule (kind=rule)",
             lambda: bob.write("Double the sertraline dose", ward, kind="rule"))
    _attempt(log, bob, "write a lab value from a tool (source=tool)",
             lambda: bob.write("Lab system: sodium 131", ward, kind="fact", source="tool"))


def office(mem: Memory, log: Outcome) -> None:
    frank, kim, erin, hana = (mem.session(Principal(p)) for p in ("frank", "kim", "erin", "hana"))
    notes = "office/projects/apollo/notes"
    frank.write("Apollo launch moved to 3 March", notes, kind="event", labels={"audience": "external"})
    frank.write("Apollo budget overrun of 12 percent, do not share", notes, kind="fact")
    _attempt(log, kim, "search 'Apollo launch budget'", lambda: kim.search("Apollo launch budget", notes, k=5))
    _attempt(log, erin, "write a project rule (kind=rule)",
             lambda: erin.write("Every Apollo change needs a ticket", notes, kind="rule"))
    _attempt(log, hana, "write to the handbook from an external source",
             lambda: hana.write("Leave policy copied from a website", "office/handbook/leave", source="external"))
    _attempt(log, hana, "write to the handbook as a user",
             lambda: hana.write("Leave: 28 days a year", "office/handbook/leave", source="user"))


def household(mem: Memory, log: Outcome) -> None:
    maria, lena, homebot, gus = (mem.session(Principal(p)) for p in ("maria", "lena", "homebot", "gus"))
    maria.write("Birthday present for Lena: a bike, hidden in the garage", "home/shared/presents",
                labels={"audience": "adults"})
    maria.write("Lena's birthday party on Sunday at 15:00", "home/shared/party", kind="event")
    _attempt(log, lena, "search 'birthday'", lambda: lena.search("Lena birthday present party", "home/shared", k=5))
    _attempt(log, maria, "search 'birthday'", lambda: maria.search("Lena birthday present party", "home/shared", k=5))
    _attempt(log, homebot, "calendar entry from an email (source=external)",
             lambda: homebot.write("Dentist on Tuesday at 9:00", "home/shared/calendar/tuesday", kind="event",
                                   source="external"))
    _attempt(log, gus, "leave a preference", lambda: gus.write("Gus prefers tea", "home/guest/notes",
                                                              kind="preference"))
    _attempt(log, gus, "leave a fact", lambda: gus.write("The boiler is broken", "home/guest/notes", kind="fact"))


SCENARIOS: dict[str, Callable[[Memory, Outcome], None]] = {
    "hospital": hospital, "office": office, "household": household,
}


def run_conditions(data_dir: str | Path | None = None, console: Console | None = None, *,
                   embedding: Any = None) -> dict[str, Scorecard]:
    """Run the three scenarios, print what happened and return a scorecard per policy."""
    console = console or Console()
    root = Path(data_dir) if data_dir is not None else Path(tempfile.mkdtemp(prefix="memwarden-conditions-"))
    cards = {}
    for name, scenario in SCENARIOS.items():
        log: Outcome = []
        with Memory.open(root / name, policy=name, embedding=example_embedding(embedding), count_withheld=True) as mem:
            scenario(mem, log)
            table = Table(title=f"{name}: attribute conditions", show_lines=False)
            for column in ("principal", "did", "outcome"):
                table.add_column(column, overflow="fold")
            for row in log:
                table.add_row(*row)
            console.print(table)
            cards[name] = scorecard(mem, title=f"{name} scorecard")
            cards[name].print(console)
    # The nurse's reads, asked of the policy directly (what `memwarden policy check` prints).
    engine = PolicyEngine("hospital")
    for labels in ({"sensitivity": "restricted"}, {}, None):
        console.print(explain(engine, "bob", [], "read", "ward3/patients/p12", labels=labels).explain(),
                      markup=False, soft_wrap=True)
    return cards


def main(argv: list[str] | None = None) -> int:
    """Command line: ``--data DIR`` keeps the memories, ``--hashing`` starts faster."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", help="directory to keep the memories in (default: a temporary one)")
    parser.add_argument("--hashing", action="store_true",
                        help=f"use the fast hashing test embedding (also {EMBEDDING_ENV}=hashing)")
    args = parser.parse_args(argv)
    cards = run_conditions(args.data, embedding=example_embedding(hashing=args.hashing))
    return 0 if all(card.audit_ok for card in cards.values()) else 1


if __name__ == "__main__":
    raise SystemExit(main())
