"""Hospital ward: a physician, a nurse, a billing clerk and a privacy officer share one memory.

A team (router + isolated workers, ``memwarden.orchestrator.Team``) handles three requests on
ward 3 under the bundled ``hospital`` policy:

1. Patient 12 is discharged. The router sends three tasks in parallel: the physician reviews
   the chart and records the discharge plan, the nurse records discharge vitals, the billing
   clerk drafts the invoice. The clerk tries to read the chart and is denied; her search of
   the whole ward returns the billing records only, and the rest is withheld.
2. Patient 14 asks for erasure. The privacy officer erases every memory about p14, cascading
   to whatever was derived from it, and gets a content-free receipt.
3. The physician checks what the ward still knows about patient 14: nothing.

It ends with a scorecard from the audit log: what every role was shown and what was withheld.

    memwarden demo                                  # offline, scripted models (what `make demo` runs)
    python examples/hospital_ward.py --model openai:gpt-4o-mini  # a real model

``run_demo(data_dir=None, console=None)`` (also ``run_hospital``) runs it and returns the Scorecard.
"""

from __future__ import annotations

import re
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from langgraph.checkpoint.memory import InMemorySaver
from pydantic import BaseModel, Field
from rich.console import Console
from rich.table import Table
from rich.text import Text

from memwarden import ErasureReceipt, InvalidRequest, Memory, Principal, Session
from memwarden.integrations.flows_terminal import DENIED, WITHHELD
from memwarden.integrations.terminal import safe_console
from memwarden.orchestrator import Scorecard, ScriptedChatModel, Team, Worker, calls, scorecard, tool_call
from memwarden.orchestrator.examples import (
    Catalog, example_embedding, example_parser, load_chat_model, recalled, tool_errors,
)

# -- who is on the ward, and what the ward already knows ----------------------------------

ALICE = Principal("alice", roles=["physician"])
BOB = Principal("bob", roles=["nurse"])
CAROL = Principal("carol", roles=["billing_clerk"])
DPO = Principal("dpo", roles=["privacy_officer"])

HISTORY = [
    (ALICE, "ward3/patients/p12", "Patient 12 is allergic to penicillin.", ["p12"]),
    (ALICE, "ward3/patients/p12", "Patient 12 had an appendectomy on 3 May; recovery is on track.", ["p12"]),
    (ALICE, "ward3/patients/p14", "Patient 14 takes 5 mg warfarin daily; check INR every Monday.", ["p14"]),
    (BOB, "ward3/patients/p12", "Night shift: patient 12 slept well, pain score 2 of 10.", ["p12"]),
    (BOB, "ward3/notes/handover", "Handover: bed 4 call bell is broken, maintenance informed.", []),
    (BOB, "ward3/patients/p14", "Patient 14 asked for a vegetarian diet.", ["p14"]),
    (CAROL, "ward3/billing/p12", "Invoice 5531 for patient 12: appendectomy, insurer AOK, unpaid.", ["p12"]),
    (CAROL, "ward3/billing/p14", "Patient 14 prefers paper invoices sent to the home address.", ["p14"]),
]

# A note derived from patient 14's diet record (provenance), about no one in particular: an
# erasure of p14 cascades to it through its parent link.
DERIVED = (BOB, "ward3/notes/kitchen", "Kitchen list: bed 6 gets vegetarian meals.",
           "Patient 14 asked for a vegetarian diet.")

REQUESTS = [
    "Patient 12 goes home today: review the chart and set the discharge medication, record the "
    "discharge vitals, and draft the discharge invoice.",
    "Patient 14 has asked us to erase everything we hold about them (GDPR article 17).",
    "Check what the ward still knows about patient 14.",
]

# -- what each worker returns (only these validated results reach the team) ---------------


class ClinicalReview(BaseModel):
    """The physician's review of a chart."""

    patient: str
    findings: list[str] = Field(description="What the chart says that matters for this task.")
    plan: str


class NursingNote(BaseModel):
    """The nurse's discharge note."""

    patient: str
    vitals: str
    observations: list[str]


class InvoiceDraft(BaseModel):
    """The billing clerk's invoice draft."""

    patient: str
    items: list[str]
    denied: list[str] = Field(default_factory=list, description="What the clerk asked for and was refused.")
    status: str


class ErasureReport(BaseModel):
    """The privacy officer's report of an erasure."""

    subject: str
    erased: int
    cascaded: int
    audit_seq: int | None


WORKERS = {
    "physician": (ALICE, ClinicalReview, "Reviews charts, decides treatment and discharge medication."),
    "nurse": (BOB, NursingNote, "Records vitals and nursing observations on the chart."),
    "billing": (CAROL, InvoiceDraft, "Drafts invoices from the billing records."),
}

# -- the offline script: what each model says, step by step --------------------------------

DISCHARGE_PLAN = "Discharge plan for patient 12: doxycycline 100 mg twice daily for 7 days (no penicillins)."
DISCHARGE_VITALS = "Discharge vitals for patient 12: BP 124/78, pulse 72, temperature 36.8 C, wound clean."
INVOICE = "Discharge invoice draft for patient 12: 3 nights on ward 3 plus appendectomy, billed to AOK."

SCRIPTED_WRITES = [("alice", "ward3/patients/p12", DISCHARGE_PLAN), ("bob", "ward3/patients/p12", DISCHARGE_VITALS),
                   ("carol", "ward3/billing/p12", INVOICE)]


def scripted_models() -> dict[str, ScriptedChatModel]:
    """One scripted model per worker, plus the router's."""
    router = ScriptedChatModel([
        {"assignments": [
            {"worker": "physician", "task": "Review patient 12's chart for allergies and set the discharge medication."},
            {"worker": "nurse", "task": "Record patient 12's discharge vitals and check the night-shift notes."},
            {"worker": "billing", "task": "Draft the discharge invoice for patient 12, with the drugs dispensed."},
        ]},
        {"assignments": [{"worker": "privacy_officer", "task": "Erase every memory about subject p14."}]},
        {"assignments": [{"worker": "physician", "task": "List everything the chart still says about patient 14."}]},
    ], label="router")
    physician = ScriptedChatModel([
        # request 1
        calls(tool_call("recall", query="patient 12 allergies", namespace="ward3/patients/p12")),
        calls(tool_call("remember", content=DISCHARGE_PLAN, namespace="ward3/patients/p12", kind="fact",
                        subjects=["p12"])),
        lambda msgs: {"patient": "p12", "findings": recalled(msgs), "plan": DISCHARGE_PLAN},
        # request 3
        calls(tool_call("recall", query="patient 14 medication warfarin diet", namespace="ward3/patients")),
        lambda msgs: {"patient": "p14", "findings": [f for f in recalled(msgs) if "14" in f],
                      "plan": "nothing to do"},
    ], label="physician")
    nurse = ScriptedChatModel([
        calls(tool_call("recall", query="patient 12 night shift pain", namespace="ward3/patients/p12")),
        calls(tool_call("remember", content=DISCHARGE_VITALS, namespace="ward3/patients/p12", kind="event",
                        subjects=["p12"])),
        lambda msgs: {"patient": "p12", "vitals": DISCHARGE_VITALS, "observations": recalled(msgs)},
    ], label="nurse")
    billing = ScriptedChatModel([
        # The clerk asks for the chart (denied), then searches the whole ward (billing only).
        calls(tool_call("recall", query="patient 12 allergies and medication", namespace="ward3/patients/p12")),
        calls(tool_call("recall", query="patient 12 invoice appendectomy", namespace="ward3")),
        calls(tool_call("remember", content=INVOICE, namespace="ward3/billing/p12", kind="event", subjects=["p12"])),
        lambda msgs: {"patient": "p12", "items": recalled(msgs) + [INVOICE], "denied": tool_errors(msgs),
                      "status": "draft"},
    ], label="billing")
    return {"router": router, "physician": physician, "nurse": nurse, "billing": billing}


def erase_subject(task: str, session: Session, receipts: list[ErasureReceipt] | None = None) -> ErasureReport:
    """The privacy officer: a plain function, no model. Erases the patient the task names;
    the signed receipt goes to ``receipts`` (the report that crosses back holds no proof)."""
    found = re.search(r"\bp\d+\b", task) or re.search(r"patient\s+(\d+)", task, re.IGNORECASE)
    if not found:
        raise ValueError("the erasure task names no patient id (p12, p14, ...)")
    subject = found.group(0) if found.group(0).startswith("p") else f"p{found.group(1)}"
    receipt = session.erase(subject=subject)
    if receipts is not None:
        receipts.append(receipt)
    return ErasureReport(subject=subject, erased=receipt.count, cascaded=receipt.cascaded, audit_seq=receipt.audit_seq)


def build_team(mem: Memory, model: Any = None, receipts: list[ErasureReceipt] | None = None,
               ) -> tuple[Team, dict[str, ScriptedChatModel]]:
    """The ward team: scripted models unless ``model`` (a real chat model) is given; the
    privacy officer's signed receipts are kept in ``receipts``."""
    models: dict[str, Any] = scripted_models() if model is None else {}
    workers = [
        Worker.react(name, principal, models.get(name, model), schema, description=description)
        for name, (principal, schema, description) in WORKERS.items()
    ]
    workers.append(Worker("privacy_officer", DPO, partial(erase_subject, receipts=receipts), ErasureReport,
                          description="Handles erasure requests: give it the patient id (e.g. p14) to erase."))
    return Team(models.get("router", model), workers, mem), models


def _show_round(console: Console, team: Team, n: int, request: str, state: dict[str, Any]) -> None:
    # Requests, tasks and worker output are user and model text: Text, never markup.
    table = Table(title=Text(f"Request {n}: {request}"), show_lines=True, title_justify="left")
    table.add_column("worker (principal)")
    table.add_column("task")
    table.add_column("validated result")
    tasks = {a["task_id"]: a["task"] for a in state["assignments"]}
    for result in state["results"]:
        output = team.outputs(state)[result["task_id"]]
        retry = f"\n(after {result['attempts']} attempts)" if result["attempts"] > 1 else ""
        table.add_row(Text(f"{result['worker']} ({result['principal']})"), Text(tasks[result["task_id"]]),
                      Text(output.model_dump_json(indent=1) + retry))
    console.print(table)


def run_demo(data_dir: str | Path | None = None, console: Console | None = None, *,
             model: Any = None, embedding: Any = None) -> Scorecard:
    """Run the ward scenario and print it; returns the scorecard read from the audit log.

    ``data_dir`` must be new or empty (InvalidRequest otherwise): the scenario writes, forgets
    and erases records, and a real store named there by habit (``--data`` is also the demo's
    option) would lose the records it holds about the demo's subjects.
    """
    if data_dir is not None and Path(data_dir).exists() and (not Path(data_dir).is_dir()
                                                            or any(Path(data_dir).iterdir())):
        raise InvalidRequest(f"--keep {str(data_dir)!r} is not a new or empty directory: the demo writes, forgets "
                             "and erases records there, so it never runs in an existing store; give it a new one")
    console = console or safe_console()
    started = time.perf_counter()
    catalog = Catalog()
    with tempfile.TemporaryDirectory(prefix="memwarden-ward-") as scratch:
        root = Path(data_dir) if data_dir else Path(scratch)
        with Memory.open(root, policy="hospital", embedding=example_embedding(embedding),
                         count_withheld=True) as mem:
            sessions = {p.id: mem.session(p) for p in (ALICE, BOB, CAROL)}
            for principal, namespace, content, subjects in HISTORY:
                sessions[principal.id].write(content, namespace=namespace, subjects=subjects)
                catalog.add(principal.id, namespace, content)
            principal, namespace, content, source = DERIVED
            parent = next(catalog.add(p.id, ns, text) for p, ns, text, _ in HISTORY if text == source)
            sessions[principal.id].write(content, namespace=namespace, parents=[parent])
            catalog.add(principal.id, namespace, content)
            for writer, namespace, content in SCRIPTED_WRITES:
                catalog.add(writer, namespace, content)
            console.print(Text.assemble(("Ward 3", "bold"), f": {len(HISTORY) + 1} memories from earlier shifts, "
                                        f"in one governed store at {root}"))

            receipts: list[ErasureReceipt] = []
            team, _ = build_team(mem, model, receipts)
            app = team.compile(checkpointer=InMemorySaver())
            receipt: ErasureReport | None = None
            for n, request in enumerate(REQUESTS, 1):
                state = app.invoke({"request": request}, {"configurable": {"thread_id": f"ward3-{n}"}})
                _show_round(console, team, n, request, state)
                receipt = team.output(state, "privacy_officer") or receipt

            card = scorecard(mem, title="Ward 3: what every role was shown, and what was withheld",
                             seconds=time.perf_counter() - started)
            if receipt is not None:
                card.notes.append(f"erasure of {receipt.subject}: {receipt.erased} records erased "
                                  f"({receipt.cascaded} by cascade), audit entry {receipt.audit_seq}")
            card.print(console, describe=_describer(mem, catalog))
            console.print(Text(f"{WITHHELD}.\n{DENIED}.", style="dim"))
            if receipts:
                _show_proof(console, mem, root, receipts[-1], kept=data_dir is not None)
    _show_next(console, root if data_dir else None)
    return card


def _describer(mem: Memory, catalog: Catalog) -> Callable[[str], str | None]:
    """What the final table lists for a record: its text, and "gone" when it was erased or
    forgotten after it was shown (the audit log says which)."""
    from memwarden.integrations.flows import REMOVED, build_flows

    gone = {f.id: f.status for f in build_flows(mem.audit_log.entries()).records if f.status in REMOVED}

    def describe(rid: str) -> str | None:
        text = catalog.describe(rid)
        if text is None or rid not in gone:
            return text
        return f"[{gone[rid]} since: gone from the store] {text}"

    return describe


def _show_next(console: Console, kept: Path | None) -> None:
    """The commands to look further: at the kept data, or how to keep it."""
    if kept is None:
        console.print(Text("run `memwarden demo --keep DIR` to keep the data and look further: audit verify, "
                           "audit flows, records list"))
        return
    console.print(Text(f"the data is kept in {kept}"))
    # A line of its own: wrapped after a long path, "look further:" was split in two.
    console.print(Text("look further:", style="bold"))
    for command in (f"memwarden audit verify --data {kept}",
                    f"memwarden audit flows --data {kept} --html {kept / 'flows.html'}",
                    f"memwarden records list --data {kept} --policy hospital --principal carol",
                    f"memwarden records list --data {kept} --policy hospital --principal alice --namespace "
                    "ward3/patients",
                    "memwarden policy who-can --policy hospital --action read --namespace ward3/patients/p12"):
        console.print(Text(f"  {command}"), soft_wrap=True)  # whole, to copy and paste


def _show_proof(console: Console, mem: Memory, root: Path, receipt: ErasureReceipt, *, kept: bool) -> None:
    """Write the signed receipt and the store's public keys beside the data, check the
    receipt as an auditor would, and print the command that does it."""
    from memwarden.memory.receipts import load_receipt
    from memwarden.memory.signing import PublicKeys

    path, pub = root / "erasure-receipt.json", root / "key.pub"
    path.write_text(receipt.model_dump_json(indent=1) + "\n", encoding="utf-8")
    pub.write_text(mem.audit_log.signing_keys().public.to_json(), encoding="utf-8")
    checked = load_receipt(path, PublicKeys.load(pub))
    console.print(Text(f"signed erasure receipt: {path}\n  key {checked.key_id}, {checked.count} records, digest "
                       f"{checked.records_digest[:16]}...; verified with the public key alone:"))
    console.print(f"  memwarden keys export-public --data {root} -o {pub}\n"
                  f"  memwarden receipt verify {path} --public-key {pub}", markup=False, soft_wrap=True)
    if not kept:
        console.print("  (the demo's directory is temporary: `memwarden demo --keep DIR` keeps both files)")


def main(argv: list[str] | None = None) -> int:
    """Command line entry point."""
    args = example_parser(__doc__.splitlines()[0]).parse_args(argv)
    card = run_demo(args.data, model=load_chat_model(args.model),
                        embedding=example_embedding(hashing=args.hashing))
    return 0 if card.audit_ok else 1


#: The name the examples use for the same scenario.
run_hospital = run_demo

if __name__ == "__main__":
    raise SystemExit(main())
