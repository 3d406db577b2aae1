"""memwarden memory tools in a langgraph-swarm (``pip install langgraph-swarm``).

In a swarm, agents hand the conversation to each other (``transfer_to_<name>``) and share one
message history. Here a nurse and a billing clerk on ward 3 each get memory tools bound to
their own memwarden session (``memory_tools(session)``), so whatever the history holds, each
one recalls from the shared memory only what the hospital policy lets its role see.

A shared history would still hand the clerk everything the nurse's tools returned. So each
agent also gets a ``pre_model_hook`` that shows its model only the user's messages and its
own calls and tool results: the patient's chart, which the nurse recalled, never reaches the
clerk's model, and the clerk's own attempt to read it is denied by the policy.

    python examples/swarm_example.py [--model openai:gpt-4o-mini] [--hashing]
"""

from __future__ import annotations

import tempfile
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from rich.console import Console

from memwarden import Memory, Principal, Session
from memwarden.integrations.tools import memory_tools
from memwarden.orchestrator import Scorecard, ScriptedChatModel, calls, scorecard, tool_call
from memwarden.orchestrator.examples import (
    Catalog, example_embedding, example_parser, load_chat_model, recalled, tool_errors,
)

ALICE = Principal("alice", roles=["physician"])
BOB = Principal("bob", roles=["nurse"])
CAROL = Principal("carol", roles=["billing_clerk"])

HISTORY = [
    (ALICE, "ward3/patients/p12", "Patient 12 is allergic to penicillin."),
    (BOB, "ward3/patients/p12", "Patient 12: wound dressing to be changed every second day at home."),
    (CAROL, "ward3/billing/p12", "Invoice 5531 for patient 12: appendectomy, insurer AOK, unpaid."),
]

REQUEST = "Patient 12 goes home today. What must the discharge team know, and is the bill settled?"

PROMPTS = {
    "nurse": "You are the ward nurse (principal bob). Answer clinical questions from the shared memory "
             "(ward3/patients/...). Hand billing questions to the billing clerk with transfer_to_billing.",
    "billing": "You are the billing clerk (principal carol). Answer billing questions from the shared memory "
               "(ward3/billing/...). Hand clinical questions to the nurse with transfer_to_nurse.",
}


def own_context(name: str, prompt: str) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """A pre_model_hook showing the model only the user's messages and its own turns.

    Another agent's messages and tool results stay in the swarm's history (LangGraph needs
    them there) but never reach this agent's model.
    """

    def hook(state: dict[str, Any]) -> dict[str, Any]:
        mine: list[BaseMessage] = [SystemMessage(prompt)]
        own_calls: set[str] = set()
        for message in state["messages"]:
            if isinstance(message, HumanMessage):
                mine.append(message)
            elif isinstance(message, AIMessage) and message.name == name:
                mine.append(message)
                own_calls.update(call["id"] for call in message.tool_calls)
            elif isinstance(message, ToolMessage) and message.tool_call_id in own_calls:
                mine.append(message)
        return {"llm_input_messages": mine}

    return hook


def scripted_models() -> dict[str, ScriptedChatModel]:
    """The two agents' scripts."""
    nurse = ScriptedChatModel([
        calls(tool_call("recall", query="patient 12 allergies discharge care", namespace="ward3/patients/p12")),
        lambda msgs: calls(tool_call("transfer_to_billing"),
                           content="Clinical: " + " ".join(recalled(msgs)) + " Handing the bill question to billing."),
    ], label="nurse")
    billing = ScriptedChatModel([
        calls(tool_call("recall", query="patient 12 allergies", namespace="ward3/patients/p12")),
        calls(tool_call("recall", query="patient 12 invoice paid", namespace="ward3")),
        lambda msgs: "Billing: " + "; ".join(recalled(msgs)) + f" (refused: {len(tool_errors(msgs))} request)",
    ], label="billing")
    return {"nurse": nurse, "billing": billing}


def build_swarm(sessions: dict[str, Session], models: dict[str, Any]) -> Any:
    """The two-agent swarm, each agent with memory tools bound to its own session."""
    from langgraph.prebuilt import create_react_agent
    from langgraph_swarm import create_handoff_tool, create_swarm

    agents = []
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*create_react_agent has been moved.*")
        for name, other in (("nurse", "billing"), ("billing", "nurse")):
            tools = [*memory_tools(sessions[name], names=("remember", "recall")),
                     create_handoff_tool(agent_name=other, description=f"Hand the conversation to the {other}.")]
            agents.append(create_react_agent(models[name], tools, name=name,
                                             pre_model_hook=own_context(name, PROMPTS[name])))
    return create_swarm(agents, default_active_agent="nurse").compile(checkpointer=InMemorySaver())


def run_swarm(data_dir: str | Path | None = None, console: Console | None = None, *,
              model: Any = None, embedding: Any = None) -> Scorecard:
    """Run the swarm scenario and print it; returns the scorecard."""
    console = console or Console()
    started = time.perf_counter()
    catalog = Catalog()
    scripted = scripted_models() if model is None else {}
    models = scripted or {"nurse": model, "billing": model}
    with tempfile.TemporaryDirectory(prefix="memwarden-swarm-") as scratch:
        root = Path(data_dir) if data_dir else Path(scratch)
        with Memory.open(root, policy="hospital", embedding=example_embedding(embedding), count_withheld=True) as mem:
            for principal, namespace, content in HISTORY:
                mem.session(principal).write(content, namespace=namespace, subjects=["p12"])
                catalog.add(principal.id, namespace, content)
            app = build_swarm({"nurse": mem.session(BOB), "billing": mem.session(CAROL)}, models)
            state = app.invoke({"messages": [HumanMessage(REQUEST)]}, {"configurable": {"thread_id": "p12"}})
            for message in state["messages"]:
                if isinstance(message, AIMessage) and message.content:
                    console.print(f"[bold]{message.name}[/]: {message.content}")
            if scripted:
                chart = HISTORY[0][2]
                reached = [name for name, m in scripted.items()
                           if any(chart in str(msg.content) for call in m.received for msg in call)]
                console.print(f"the chart entry {chart!r} reached the models of: {', '.join(reached) or 'nobody'}")
            card = scorecard(mem, title="Swarm: what every role was shown, and what was withheld",
                             seconds=time.perf_counter() - started)
            card.print(console, describe=catalog.describe)
    return card


def main(argv: list[str] | None = None) -> int:
    """Command line entry point."""
    args = example_parser(__doc__.splitlines()[0]).parse_args(argv)
    card = run_swarm(args.data, model=load_chat_model(args.model), embedding=example_embedding(hashing=args.hashing))
    return 0 if card.audit_ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
