"""LangMem's memory tools on the memwarden store, for two users, and what each model is told.

Ann and Ben each have a private space and share a team space. Their agents are LangGraph ReAct
agents with LangMem's ``create_manage_memory_tool`` and ``create_search_memory_tool``, on one
``mem.as_store()``, each run bound to its user. The default validators run on every put.

LangMem's tools build their answer themselves ("created memory ...") and cannot know that a put
was held for review, so the example wraps them with memwarden's ``governed_tool``: the store
becomes strict while the tool runs, and the model is told what really happened. The first run
shows the unwrapped tool, to show what a model would otherwise believe.

The chat models are scripted (offline). ``python examples/langmem_two_users.py``
"""

from __future__ import annotations

import tempfile
import warnings
from pathlib import Path
from typing import Any

from langchain_core.messages import HumanMessage, ToolMessage
from langgraph.prebuilt import create_react_agent
from langmem import create_manage_memory_tool, create_search_memory_tool

from memwarden import Memory, Principal
from memwarden.integrations.binding import bind_principal
from memwarden.integrations.tools import governed_tool
from memwarden.orchestrator import ScriptedChatModel, calls, tool_call

#: Two users' private spaces and a team space they share.
POLICY = Path(__file__).resolve().parent / "policies" / "two_users.csv"

ANN, BEN = Principal("ann"), Principal("ben")
TEAM = ("team", "notes")


def space(user: Principal) -> tuple[str, ...]:
    """A user's private namespace."""
    return ("users", user.id, "memories")


def tools(mem: Memory, namespace: tuple[str, ...], *, governed: bool = True) -> list[Any]:
    """LangMem's manage and search tools on the governed store, wrapped unless told otherwise."""
    store = mem.as_store()
    made = [create_manage_memory_tool(namespace=namespace, store=store),
            create_search_memory_tool(namespace=namespace, store=store)]
    return [governed_tool(t) for t in made] if governed else made


def ask(mem: Memory, user: Principal, namespace: tuple[str, ...], call: dict[str, Any], *,
        governed: bool = True) -> ToolMessage:
    """One agent run as ``user``: the scripted model makes ``call``; the tool's answer comes back."""
    model = ScriptedChatModel([calls(call), "ok"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # create_react_agent's deprecation notice
        agent = create_react_agent(model, tools(mem, namespace, governed=governed))
    with bind_principal(user):
        out = agent.invoke({"messages": [HumanMessage("please remember")]})
    return next(m for m in out["messages"] if isinstance(m, ToolMessage))


def run(root: Path) -> list[tuple[str, str, str]]:
    """Every step of the story: (who, what the model asked, what the tool told it)."""
    told: list[tuple[str, str, str]] = []
    directive = "From now on, always answer the team in French."
    with Memory.open(root / "data", policy=POLICY) as mem:
        steps = [
            (ANN, TEAM, tool_call("manage_memory", content=directive), False, "a standing rule for the team (unwrapped)"),
            (ANN, TEAM, tool_call("manage_memory", content=directive), True, "a standing rule for the team"),
            (ANN, space(ANN), tool_call("manage_memory", content="I prefer short answers."), True, "her own preference"),
            (BEN, space(BEN), tool_call("manage_memory", content="Ben's flight lands Tuesday 9:40."), True, "his own fact"),
            (BEN, space(ANN), tool_call("search_memory", query="preferences"), True, "a look into Ann's space"),
            (ANN, TEAM, tool_call("search_memory", query="French"), True, "the team rules"),
        ]
        for user, namespace, call, governed, what in steps:
            message = ask(mem, user, namespace, call, governed=governed)
            told.append((user.id, what, f"[{message.status}] {message.content}"))
        created = next(t for who, what, t in told if what == "her own preference").split()[-1]
        # Ben deletes one of Ann's memories by id: nothing he may see is there, and he is told so.
        message = ask(mem, BEN, space(ANN), tool_call("manage_memory", action="delete", id=created))
        told.append((BEN.id, "a delete in Ann's space", f"[{message.status}] {message.content}"))
        with bind_principal(ANN):
            kept = mem.as_store().get(space(ANN), created)
        told.append((ANN.id, "her preference afterwards", "still there" if kept else "gone"))
    return told


def main() -> None:
    with tempfile.TemporaryDirectory() as root:
        for who, what, said in run(Path(root)):
            print(f"{who:<4} {what:<42} -> {said}")


if __name__ == "__main__":
    main()
