"""Research team: a scout, an analyst, an intern and a reviewer work on one question.

Policy ``examples/policies/research.csv``: researchers keep the literature and the findings,
analysts alone read the embargoed cohort data, reviewers read every project record but never
the data, interns read the literature and write the newsletter.

Request 1 goes to three workers in parallel: the scout records a finding from the literature,
the analyst estimates the effect from the embargoed cohort and records an aggregate analysis
(derived from the data record, so its provenance is kept), and the intern drafts a newsletter
item. The analyst's first answer does not match its result schema: it is refused with the
reason, the analyst answers again, and only the valid answer reaches the team.

Request 2 goes to the reviewer. Workers never see each other's messages; the reviewer learns
what the others found only through the governed memory, where the embargoed data stays
withheld from her.

    python examples/research_team.py [--model openai:gpt-4o-mini] [--hashing]
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import Any, Literal

from langchain_core.messages import HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from pydantic import BaseModel, Field
from rich.console import Console
from rich.table import Table

from memwarden import Memory, Principal
from memwarden.orchestrator import Scorecard, ScriptedChatModel, Team, Worker, calls, scorecard, tool_call
from memwarden.orchestrator.examples import (
    Catalog, example_embedding, example_parser, load_chat_model, recalled, recalled_ids,
)

POLICY = Path(__file__).resolve().parent / "policies" / "research.csv"

LEE = Principal("lee", roles=["lead"])
RUI = Principal("rui", roles=["researcher"])
ADA = Principal("ada", roles=["analyst"])
VIK = Principal("vik", roles=["reviewer"])
IVY = Principal("ivy", roles=["intern"])

HISTORY = [
    (LEE, "lab/literature/drug-x", "Smith 2021, RCT with 1,200 heart-failure patients: drug X cut 30-day "
                                   "readmissions from 21% to 17%."),
    (RUI, "lab/literature/drug-x", "Okafor 2023 meta-analysis: drug X's effect on readmissions is not "
                                   "significant in patients over 80."),
    (LEE, "lab/data/cohort-a", "Cohort A (embargoed, 412 patients): 30-day readmission 11.2% on drug X vs "
                               "15.9% without; patient-level rows stay under the ethics embargo."),
    (VIK, "lab/projects/xr/reviews", "Review guideline for project xr: every claim needs two independent sources."),
]

REQUESTS = [
    "Does drug X reduce hospital readmissions? Gather the evidence for project xr and draft a newsletter item.",
    "Review project xr's evidence on drug X before it goes to the lead.",
]


class Finding(BaseModel):
    """The scout's finding."""

    claim: str
    sources: list[str]
    confidence: Literal["low", "medium", "high"]


class Analysis(BaseModel):
    """The analyst's estimate, in percentage points of readmission avoided."""

    effect_pp: float = Field(description="Absolute reduction in 30-day readmission, percentage points.")
    summary: str
    derived_from: list[str] = Field(description="Ids of the memories the analysis rests on.")


class NewsItem(BaseModel):
    """The intern's newsletter item."""

    headline: str
    body: str


class Review(BaseModel):
    """The reviewer's verdict."""

    verdict: Literal["accept", "revise", "reject"]
    reasons: list[str]
    evidence_seen: int


WORKERS = {
    "scout": (RUI, Finding, "Searches the literature and records findings per project."),
    "analyst": (ADA, Analysis, "Estimates effects from the lab's (embargoed) cohort data."),
    "intern": (IVY, NewsItem, "Writes short newsletter items from the published literature."),
    "reviewer": (VIK, Review, "Reviews a project's findings and analyses against the lab's guidelines."),
}

FINDING = ("Drug X reduced 30-day readmissions by 4 percentage points in one RCT (Smith 2021); "
           "the effect is not significant over 80 (Okafor 2023).")
ANALYSIS = "Cohort A: drug X associated with 4.7 pp fewer 30-day readmissions (11.2% vs 15.9%, n=412)."
NEWS = "Drug X and readmissions: one trial shows fewer readmissions; the picture is less clear for the over-80s."
REVIEW = "Review of project xr: finding and analysis agree (4-4.7 pp); two independent sources; accept."

SCRIPTED_WRITES = [("rui", "lab/projects/xr/findings", FINDING), ("ada", "lab/projects/xr/analysis", ANALYSIS),
                   ("ivy", "lab/newsletter/2024-06", NEWS), ("vik", "lab/projects/xr/reviews", REVIEW)]


def scripted_models() -> dict[str, ScriptedChatModel]:
    """One scripted model per worker, plus the router's."""
    router = ScriptedChatModel([
        {"assignments": [
            {"worker": "scout", "task": "Collect the literature on drug X and readmissions; record a finding "
                                        "for project xr."},
            {"worker": "analyst", "task": "Estimate drug X's effect on 30-day readmission from the cohort data; "
                                          "record the analysis for project xr."},
            {"worker": "intern", "task": "Draft a two-sentence newsletter item on drug X and readmissions."},
        ]},
        {"assignments": [{"worker": "reviewer", "task": "Review project xr's evidence on drug X."}]},
    ], label="router")
    scout = ScriptedChatModel([
        calls(tool_call("recall", query="drug X readmissions trial", namespace="lab/literature")),
        calls(tool_call("remember", content=FINDING, namespace="lab/projects/xr/findings", kind="fact",
                        subjects=["drug-x"])),
        lambda msgs: {"claim": FINDING, "sources": recalled(msgs), "confidence": "medium"},
    ], label="scout")
    analyst = ScriptedChatModel([
        calls(tool_call("recall", query="cohort readmission drug X", namespace="lab/data")),
        lambda msgs: calls(tool_call("remember", content=ANALYSIS, namespace="lab/projects/xr/analysis",
                                     kind="fact", subjects=["drug-x"], derived_from=recalled_ids(msgs))),
        # First answer: prose where a number is required, and a missing field: refused.
        {"effect_pp": "about five points", "summary": ANALYSIS},
        # The refusal comes back with the reason, in a fresh context: the analyst looks the
        # sources up again (a read; the analysis is already stored) and answers validly.
        calls(tool_call("recall", query="cohort readmission drug X", namespace="lab/data")),
        lambda msgs: {"effect_pp": 4.7, "summary": ANALYSIS, "derived_from": recalled_ids(msgs)},
    ], label="analyst")
    intern = ScriptedChatModel([
        # The intern asks about the cohort too: the policy gives interns nothing under lab/data.
        calls(tool_call("recall", query="drug X readmissions cohort", namespace="lab/data")),
        calls(tool_call("recall", query="drug X readmissions", namespace="lab/literature")),
        calls(tool_call("remember", content=NEWS, namespace="lab/newsletter/2024-06", kind="event")),
        {"headline": "Drug X and readmissions", "body": NEWS},
    ], label="intern")
    reviewer = ScriptedChatModel([
        calls(tool_call("recall", query="drug X readmissions evidence analysis finding guideline", namespace="lab",
                        k=10)),
        calls(tool_call("remember", content=REVIEW, namespace="lab/projects/xr/reviews", kind="event")),
        lambda msgs: {"verdict": "accept", "reasons": ["finding and analysis agree", "two independent sources"],
                      "evidence_seen": len(recalled(msgs))},
    ], label="reviewer")
    return {"router": router, "scout": scout, "analyst": analyst, "intern": intern, "reviewer": reviewer}


def refused(model: ScriptedChatModel) -> list[str]:
    """The refusal notices a scripted worker model was sent (what a retry starts from)."""
    return list(dict.fromkeys(
        str(m.content) for received in model.received for m in received
        if isinstance(m, HumanMessage) and str(m.content).startswith("Your previous answer was refused")))


def build_team(mem: Memory, model: Any = None) -> tuple[Team, dict[str, ScriptedChatModel]]:
    """The research team: scripted models unless ``model`` (a real chat model) is given."""
    models: dict[str, Any] = scripted_models() if model is None else {}
    workers = [Worker.react(name, principal, models.get(name, model), schema, description=description)
               for name, (principal, schema, description) in WORKERS.items()]
    return Team(models.get("router", model), workers, mem), models


def run_research(data_dir: str | Path | None = None, console: Console | None = None, *,
                 model: Any = None, embedding: Any = None) -> Scorecard:
    """Run the research scenario and print it; returns the scorecard."""
    console = console or Console()
    started = time.perf_counter()
    catalog = Catalog()
    with tempfile.TemporaryDirectory(prefix="memwarden-lab-") as scratch:
        root = Path(data_dir) if data_dir else Path(scratch)
        with Memory.open(root, policy=POLICY, embedding=example_embedding(embedding), count_withheld=True) as mem:
            for principal, namespace, content in HISTORY:
                mem.session(principal).write(content, namespace=namespace, subjects=["drug-x"])
                catalog.add(principal.id, namespace, content)
            for writer, namespace, content in SCRIPTED_WRITES:
                catalog.add(writer, namespace, content)
            team, models = build_team(mem, model)
            app = team.compile(checkpointer=InMemorySaver())
            for n, request in enumerate(REQUESTS, 1):
                state = app.invoke({"request": request}, {"configurable": {"thread_id": f"xr-{n}"}})
                table = Table(title=f"Request {n}: {request}", show_lines=True, title_justify="left")
                for col in ("worker (principal)", "attempts", "validated result"):
                    table.add_column(col)
                outputs = team.outputs(state)
                for result in state["results"]:
                    table.add_row(f"{result['worker']} ({result['principal']})", str(result["attempts"]),
                                  outputs[result["task_id"]].model_dump_json(indent=1))
                console.print(table)
            for name, scripted in models.items():
                for refusal in refused(scripted):
                    console.print(f"[yellow]{name}: an answer was refused and sent back[/]: {refusal}")
            card = scorecard(mem, title="Research lab: what every role was shown, and what was withheld",
                             seconds=time.perf_counter() - started)
            card.print(console, describe=catalog.describe)
    return card


def main(argv: list[str] | None = None) -> int:
    """Command line entry point."""
    args = example_parser(__doc__.splitlines()[0]).parse_args(argv)
    card = run_research(args.data, model=load_chat_model(args.model), embedding=example_embedding(hashing=args.hashing))
    return 0 if card.audit_ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
