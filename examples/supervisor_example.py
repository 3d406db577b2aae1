"""memwarden workers under a langgraph-supervisor supervisor (``pip install langgraph-supervisor``).

The supervisor is a tool-calling model that hands the conversation to one agent at a time
(``transfer_to_<name>``). Here each agent is a memwarden worker wrapped with
``Worker.as_agent(memory)``: a graph that gives the worker nothing but the user's request
(never the supervisor's messages nor the other agent's), runs it as its own principal, and
hands back one AI message holding its schema-validated result.

The scout records a finding; the reviewer, run next, learns of it only through the governed
memory, where the embargoed cohort data stays withheld from her.

    python examples/supervisor_example.py [--model openai:gpt-4o-mini] [--hashing]
"""

from __future__ import annotations

import json
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any, Literal

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from pydantic import BaseModel
from rich.console import Console

from memwarden import Memory, Principal
from memwarden.orchestrator import Scorecard, ScriptedChatModel, Worker, calls, scorecard, tool_call
from memwarden.orchestrator.examples import Catalog, example_embedding, example_parser, load_chat_model, recalled

POLICY = Path(__file__).resolve().parent / "policies" / "research.csv"

LEE = Principal("lee", roles=["lead"])
RUI = Principal("rui", roles=["researcher"])
VIK = Principal("vik", roles=["reviewer"])

HISTORY = [
    ("lab/literature/drug-x", "Smith 2021, RCT with 1,200 heart-failure patients: drug X cut 30-day readmissions "
                              "from 21% to 17%."),
    ("lab/literature/drug-x", "Okafor 2023 meta-analysis: drug X's effect on readmissions is not significant in "
                              "patients over 80."),
    ("lab/data/cohort-a", "Cohort A (embargoed, 412 patients): 30-day readmission 11.2% on drug X vs 15.9% without."),
]

REQUEST = "Find the evidence that drug X reduces readmissions, record it for project xr, and have it reviewed."
FINDING = "Drug X: 4 pp fewer 30-day readmissions in one RCT (Smith 2021); not significant over 80 (Okafor 2023)."


class Finding(BaseModel):
    """The scout's finding."""

    claim: str
    sources: int


class Review(BaseModel):
    """The reviewer's verdict."""

    verdict: Literal["accept", "revise", "reject"]
    evidence_seen: list[str]


def _agent_results(messages: list[BaseMessage]) -> dict[str, Any]:
    return {m.name: json.loads(str(m.content)) for m in messages
            if isinstance(m, AIMessage) and m.name in ("scout", "reviewer") and not m.tool_calls}


def scripted_models() -> dict[str, ScriptedChatModel]:
    """The supervisor's and the two agents' scripts."""
    supervisor = ScriptedChatModel([
        calls(tool_call("transfer_to_scout")),
        calls(tool_call("transfer_to_reviewer")),
        lambda msgs: f"Done. Scout and reviewer reported: {json.dumps(_agent_results(msgs))}",
    ], label="supervisor")
    scout = ScriptedChatModel([
        calls(tool_call("recall", query="drug X readmissions", namespace="lab/literature")),
        calls(tool_call("remember", content=FINDING, namespace="lab/projects/xr/findings", subjects=["drug-x"])),
        lambda msgs: {"claim": FINDING, "sources": len(recalled(msgs))},
    ], label="scout")
    reviewer = ScriptedChatModel([
        calls(tool_call("recall", query="drug X readmissions finding cohort", namespace="lab", k=10)),
        lambda msgs: {"verdict": "accept", "evidence_seen": recalled(msgs)},
    ], label="reviewer")
    return {"supervisor": supervisor, "scout": scout, "reviewer": reviewer}


def run_supervisor(data_dir: str | Path | None = None, console: Console | None = None, *,
                   model: Any = None, embedding: Any = None) -> Scorecard:
    """Run the supervisor scenario and print it; returns the scorecard."""
    from langgraph_supervisor import create_supervisor

    console = console or Console()
    started = time.perf_counter()
    catalog = Catalog()
    models: dict[str, Any] = scripted_models() if model is None else {}
    with tempfile.TemporaryDirectory(prefix="memwarden-supervisor-") as scratch:
        root = Path(data_dir) if data_dir else Path(scratch)
        with Memory.open(root, policy=POLICY, embedding=example_embedding(embedding), count_withheld=True) as mem:
            lee = mem.session(LEE)
            for namespace, content in HISTORY:
                lee.write(content, namespace=namespace, subjects=["drug-x"])
                catalog.add("lee", namespace, content)
            catalog.add("rui", "lab/projects/xr/findings", FINDING)

            scout = Worker.react("scout", RUI, models.get("scout", model), Finding,
                                 description="Searches the literature and records findings.")
            reviewer = Worker.react("reviewer", VIK, models.get("reviewer", model), Review,
                                    description="Reviews the recorded evidence.", memory_tools=("recall",))
            with warnings.catch_warnings():
                # langgraph-supervisor builds its own agent with the deprecated create_react_agent.
                warnings.filterwarnings("ignore", message=".*create_react_agent has been moved.*")
                workflow = create_supervisor(
                    [scout.as_agent(mem), reviewer.as_agent(mem)], model=models.get("supervisor", model),
                    prompt="You manage a scout (finds and records evidence) and a reviewer (reviews recorded "
                           "evidence). Hand over to the scout first, then to the reviewer, then answer briefly.",
                )
            app = workflow.compile(checkpointer=InMemorySaver())
            state = app.invoke({"messages": [{"role": "user", "content": REQUEST}]},
                               {"configurable": {"thread_id": "xr"}})
            console.print(f"[bold]supervisor[/]: {state['messages'][-1].content}")
            if models:
                received = [m for call in models["reviewer"].received for m in call]
                foreign = [m for m in received if (isinstance(m, AIMessage) and m.name != "reviewer")
                           or (isinstance(m, ToolMessage) and str(m.name).startswith("transfer_to"))]
                console.print(f"the reviewer's model saw {len(received)} messages over "
                              f"{len(models['reviewer'].received)} calls; from the supervisor or the scout: "
                              f"{len(foreign)}; it learned the scout's finding from the governed memory: "
                              f"{any(FINDING in str(m.content) for m in received if isinstance(m, ToolMessage))}")
            card = scorecard(mem, title="Supervisor: what every role was shown, and what was withheld",
                             seconds=time.perf_counter() - started)
            card.print(console, describe=catalog.describe)
    return card


def main(argv: list[str] | None = None) -> int:
    """Command line entry point."""
    args = example_parser(__doc__.splitlines()[0]).parse_args(argv)
    card = run_supervisor(args.data, model=load_chat_model(args.model),
                          embedding=example_embedding(hashing=args.hashing))
    return 0 if card.audit_ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
