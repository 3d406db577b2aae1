"""Household assistant: a family's shared memory, a home assistant, a kid and a guest.

Policy ``examples/policies/household.csv``: parents run everything; the family shares
home/shared; each kid has a private space; the guest sees the guest space and the wifi note;
the assistant keeps the calendar and the shopping list but may not read health or finances.

One request fans out to three workers, each acting as its own principal:

- the planner (the assistant, ``homebot``) checks the house rules, puts snacks on the shopping
  list and asks a parent before it changes the shared calendar. The question is a LangGraph
  ``interrupt``: the run pauses with its state in the checkpointer, and resumes when a parent
  answers. The resumed planner runs again from the top, so its shopping-list write happens a
  second time: memwarden's write ids are deterministic, so the replay is a no-op, audited as a
  replay. The budget stays withheld from the assistant;
- Lena's homework helper acts as Lena: her private notes yes, the family finances no;
- the guest concierge acts as Gus: the wifi note and nothing else.

    python examples/household.py [--model openai:gpt-4o-mini] [--hashing]
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import Any

from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command, interrupt
from pydantic import BaseModel
from rich.console import Console
from rich.table import Table

from memwarden import Memory, Principal, Session
from memwarden.orchestrator import Scorecard, ScriptedChatModel, Team, Worker, calls, scorecard, tool_call
from memwarden.orchestrator.examples import (
    Catalog, example_embedding, example_parser, load_chat_model, recalled, tool_errors,
)

POLICY = Path(__file__).resolve().parent / "policies" / "household.csv"

MARIA = Principal("maria", roles=["parent"])
HOMEBOT = Principal("homebot", roles=["assistant"])
LENA = Principal("lena", roles=["kid"])
GUS = Principal("gus", roles=["guest"])

HISTORY = [
    ("home/shared/wifi", "Wifi: network 'Lindenhof', password 'blue-otter-42'."),
    ("home/shared/rules", "House rule: no peanuts in the house, Tom is allergic."),
    ("home/shared/calendar/friday", "Friday 18:00: dinner at grandma's."),
    ("home/finance/budget", "Grocery budget for June: 600 EUR, 410 EUR spent so far."),
    ("home/health/tom", "Tom: severe peanut allergy, EpiPen in the kitchen drawer."),
    ("home/kids/lena/school", "Lena's maths homework for Monday: fractions, worksheet 7."),
    ("home/guest/welcome", "Guest room: towels in the wardrobe, breakfast at 8."),
]

REQUEST = ("Saturday: put Lena's football match at 10:00 on the calendar and get snacks for it, "
           "help Lena with her maths homework, and give our guest Gus the wifi password.")

SNACKS = "Snacks for Saturday's football: pretzels, apples, water (no peanuts)."
MATCH = "Saturday 10:00: Lena's football match at the sports park."


class PlanResult(BaseModel):
    """The planner's report."""

    shopping: list[str]
    calendar: str
    budget_known: bool


class HomeworkHelp(BaseModel):
    """Lena's homework helper's answer."""

    topic: str
    next_step: str
    refused: list[str]


class GuestReply(BaseModel):
    """What the concierge tells the guest."""

    message: str


def planner(task: str, session: Session) -> PlanResult:
    """The assistant, as a plain function. Asks a parent before writing to the calendar."""
    rules = [h.record.content for h in session.search("food snacks rules allergy", namespace="home/shared", k=3)]
    budget = session.search("grocery budget money spent", namespace="home", k=3)
    budget_known = any("budget" in h.record.content.lower() for h in budget)
    # The shopping list needs no approval; written before the question, so it is replayed on resume.
    session.write(SNACKS, namespace="home/shared/shopping/saturday", kind="event")
    answer = interrupt({"question": f"May I add this to the family calendar? {MATCH!r}", "asked_by": "homebot",
                        "rules_seen": rules})
    if str(answer).strip().lower() not in ("yes", "y", "approved"):
        return PlanResult(shopping=[SNACKS], calendar=f"not added: a parent said {answer!r}", budget_known=budget_known)
    session.write(MATCH, namespace="home/shared/calendar/saturday", kind="event")
    return PlanResult(shopping=[SNACKS], calendar=MATCH, budget_known=budget_known)


def router(state: dict[str, Any]) -> list[tuple[str, str]]:
    """A plain function router: keywords to workers."""
    request = state["request"].lower()
    plan = []
    if "calendar" in request or "snack" in request:
        plan.append(("planner", "Put Lena's football match (Saturday 10:00) on the calendar and get snacks for it."))
    if "homework" in request:
        plan.append(("homework", "Help Lena with her maths homework for Monday."))
    if "wifi" in request or "guest" in request:
        plan.append(("concierge", "Tell our guest Gus the wifi password."))
    return plan


def scripted_models() -> dict[str, ScriptedChatModel]:
    """The two model-driven workers' scripts."""
    homework = ScriptedChatModel([
        calls(tool_call("recall", query="maths homework Monday", namespace="home/kids/lena")),
        # Lena's helper wonders whether there is pocket money left for a calculator: denied.
        calls(tool_call("recall", query="budget pocket money", namespace="home/finance")),
        lambda msgs: {"topic": (recalled(msgs) or ["maths"])[0], "next_step": "Start with worksheet 7, question 1.",
                      "refused": tool_errors(msgs)},
    ], label="homework")
    concierge = ScriptedChatModel([
        calls(tool_call("recall", query="wifi password network", namespace="home")),
        lambda msgs: {"message": "Welcome, Gus! " + " ".join(t for t in recalled(msgs) if "Wifi" in t)},
    ], label="concierge")
    return {"homework": homework, "concierge": concierge}


def build_team(mem: Memory, model: Any = None) -> tuple[Team, dict[str, ScriptedChatModel]]:
    """The household team: scripted models unless ``model`` (a real chat model) is given."""
    models: dict[str, Any] = scripted_models() if model is None else {}
    workers = [
        Worker("planner", HOMEBOT, planner, PlanResult, description="Keeps the calendar and the shopping list."),
        Worker.react("homework", LENA, models.get("homework", model), HomeworkHelp,
                     description="Helps Lena with homework, acting as Lena.", memory_tools=("recall",)),
        Worker.react("concierge", GUS, models.get("concierge", model), GuestReply,
                     description="Answers the guest, acting as the guest.", memory_tools=("recall",)),
    ]
    return Team(router, workers, mem), models


def run_household(data_dir: str | Path | None = None, console: Console | None = None, *,
                  model: Any = None, embedding: Any = None, approve: str = "yes") -> Scorecard:
    """Run the household scenario (a parent answers ``approve``); returns the scorecard."""
    console = console or Console()
    started = time.perf_counter()
    catalog = Catalog()
    with tempfile.TemporaryDirectory(prefix="memwarden-home-") as scratch:
        root = Path(data_dir) if data_dir else Path(scratch)
        with Memory.open(root, policy=POLICY, embedding=example_embedding(embedding), count_withheld=True) as mem:
            maria = mem.session(MARIA)
            for namespace, content in HISTORY:
                maria.write(content, namespace=namespace)
                catalog.add("maria", namespace, content)
            catalog.add("homebot", "home/shared/shopping/saturday", SNACKS)
            catalog.add("homebot", "home/shared/calendar/saturday", MATCH)

            team, _ = build_team(mem, model)
            app = team.compile(checkpointer=InMemorySaver())
            config = {"configurable": {"thread_id": "saturday"}}
            paused = app.invoke({"request": REQUEST}, config)
            for pending in paused.get("__interrupt__", []):
                console.print(f"[bold yellow]paused[/]: homebot asks a parent: {pending.value['question']}")
            console.print(f"[bold]maria answers[/]: {approve!r}; the run resumes from the checkpoint")
            state = app.invoke(Command(resume=approve), config)

            table = Table(title=f"Request: {REQUEST}", show_lines=True, title_justify="left")
            for col in ("worker (principal)", "validated result"):
                table.add_column(col)
            outputs = team.outputs(state)
            for result in state["results"]:
                table.add_row(f"{result['worker']} ({result['principal']})",
                              outputs[result["task_id"]].model_dump_json(indent=1))
            console.print(table)
            card = scorecard(mem, title="Household: what every member was shown, and what was withheld",
                             seconds=time.perf_counter() - started)
            card.notes.append(f"writes replayed on resume (no-ops, audited as replays): {card.replays}")
            card.print(console, describe=catalog.describe)
    return card


def main(argv: list[str] | None = None) -> int:
    """Command line entry point."""
    args = example_parser(__doc__.splitlines()[0]).parse_args(argv)
    card = run_household(args.data, model=load_chat_model(args.model),
                         embedding=example_embedding(hashing=args.hashing))
    return 0 if card.audit_ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
