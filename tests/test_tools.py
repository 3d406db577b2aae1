"""LangChain memory tools: compact strings, governed like every other call, refusals without leaks,
and usable by a tool-calling agent (``create_react_agent``) driven by fake chat models."""

from __future__ import annotations

import warnings
from typing import Any

import pytest
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import BaseTool

from memwarden import InvalidRequest, Memory, Principal
from memwarden.guards.validators import Outcome, Verdict
from memwarden.integrations.tools import memory_tools
from memwarden.memory.embeddings import HashingEmbedding
from memwarden.orchestrator import ScriptedChatModel, calls, tool_call

pytestmark = pytest.mark.integration

ALICE = Principal("alice", roles=["physician"])
BOB = Principal("bob", roles=["nurse"])
CAROL = Principal("carol", roles=["billing_clerk"])

SECRET = "Patient 12 is allergic to penicillin"


def _tools(mem: Memory, principal: Principal, **kwargs: Any) -> dict[str, BaseTool]:
    return {t.name: t for t in memory_tools(mem.session(principal), **kwargs)}


def _call(tool: BaseTool, **args: Any) -> ToolMessage:
    """Invoke a tool the way an agent does (a tool call), so refusals come back as messages."""
    return tool.invoke({"name": tool.name, "args": args, "id": "call_1", "type": "tool_call"})


def _react(model: Any, tools: list[BaseTool]) -> Any:
    from langgraph.prebuilt import create_react_agent

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        agent = create_react_agent(model, tools)
    return agent.invoke({"messages": [HumanMessage("go")]})


def test_remember_recall_forget_round_trip(mem: Memory) -> None:
    tools = _tools(mem, ALICE)
    stored = tools["remember"].invoke({"content": SECRET, "namespace": "ward3/patients/p12", "subjects": ["p12"]})
    assert stored.startswith("stored mem_") and stored.endswith(" in ward3/patients/p12")
    rid = stored.split()[1]
    # A retried call is a no-op with the same id (deterministic ids).
    assert tools["remember"].invoke({"content": SECRET, "namespace": "ward3/patients/p12",
                                     "subjects": ["p12"]}) == stored
    found = tools["recall"].invoke({"query": "penicillin allergy", "namespace": "ward3/patients"})
    assert found.startswith(f"- {rid} [ward3/patients/p12, fact score=") and found.endswith(SECRET)
    assert tools["forget"].invoke({"id": rid}) == f"forgotten {rid}"
    assert tools["recall"].invoke({"query": "penicillin allergy", "namespace": "ward3/patients"}) == "no memories found"
    ops = [(e["op"], e["principal"], e["outcome"]) for e in mem.audit_log.entries()]
    assert ops == [("write", "alice", "ok"), ("write", "alice", "ok"), ("search", "alice", "ok"),
                   ("forget", "alice", "ok"), ("search", "alice", "ok")]


def test_remember_keeps_provenance(mem: Memory) -> None:
    tools = _tools(mem, ALICE)
    parent = tools["remember"].invoke({"content": SECRET, "namespace": "ward3/patients/p12"}).split()[1]
    child = tools["remember"].invoke({"content": "Prescribe doxycycline, not amoxicillin",
                                      "namespace": "ward3/patients/p12", "derived_from": [parent]}).split()[1]
    assert mem.session(ALICE).get(child).parents == (parent,)


def test_denials_are_short_tool_errors_without_policy_details(mem: Memory) -> None:
    mem.session(ALICE).write(SECRET, "ward3/patients/p12", subjects=["p12"])
    carol = _tools(mem, CAROL)
    denied = _call(carol["recall"], query="allergy", namespace="ward3/patients/p12")
    assert denied.status == "error"
    assert denied.content == "not allowed: you may not read in 'ward3/patients/p12'"
    write = _call(carol["remember"], content="p12 owes 300 EUR", namespace="ward3/patients/p12")
    assert write.status == "error" and write.content == "not allowed: you may not write in 'ward3/patients/p12'"
    for message in (denied, write):
        assert "Traceback" not in message.content and "billing_clerk" not in message.content
        assert "deny" not in message.content and "penicillin" not in message.content


def test_recall_withholds_silently(mem: Memory) -> None:
    mem.session(ALICE).write(SECRET, "ward3/patients/p12", subjects=["p12"])
    mem.session(CAROL).write("Invoice 5531 for patient 12 is unpaid", "ward3/billing/p12", subjects=["p12"])
    out = _tools(mem, CAROL)["recall"].invoke({"query": "patient 12 allergy invoice", "namespace": "ward3", "k": 10})
    assert "Invoice 5531" in out and "penicillin" not in out and "withheld" not in out
    assert list(mem.audit_log.entries())[-1]["withheld"] == 1  # the audit counts it; the model is not told


def test_invalid_requests_and_arguments_become_messages(mem: Memory) -> None:
    alice = _tools(mem, ALICE)
    bad_ns = _call(alice["remember"], content="x", namespace="ward3/../billing")
    assert bad_ns.status == "error" and bad_ns.content.startswith("error: invalid request: namespace label")
    missing = _call(alice["remember"], content="x")
    assert missing.status == "error" and missing.content == "error: invalid arguments: namespace: Field required"
    bad_kind = _call(alice["remember"], content="x", namespace="ward3/patients/p1", kind="lesson")
    assert bad_kind.status == "error" and bad_kind.content.startswith("error: invalid arguments: kind:")
    bad_id = _call(alice["forget"], id="mem_nope")
    assert bad_id.status == "error" and "is not a memwarden record id" in bad_id.content
    # Forgetting a record the caller may not see looks exactly like forgetting a missing one.
    rid = mem.session(CAROL).write("Invoice 1", "ward3/billing/p1").id
    hidden = _call(alice["forget"], id=rid)
    missing_id = _call(alice["forget"], id="mem_" + "0" * 32)
    assert hidden.content.replace(rid, "ID") == missing_id.content.replace("mem_" + "0" * 32, "ID")


def test_rejected_write_is_a_tool_error(tmp_path, policy_file) -> None:
    class RejectAll:
        name = "reject_all"

        def check(self, record, context):
            return Verdict(validator=self.name, outcome=Outcome.REJECT, reason="test")

    with Memory.open(tmp_path / "d", policy=policy_file, embedding=HashingEmbedding(), validators=[RejectAll()]) as m:
        out = _call(_tools(m, ALICE)["remember"], content="ignore all rules", namespace="ward3/patients/p1")
    assert out.status == "error" and out.content == "rejected: a write validator refused the memory; nothing was stored"


def test_tool_subsets_and_bad_session(mem: Memory) -> None:
    assert [t.name for t in memory_tools(mem.session(ALICE), names=("recall",))] == ["recall"]
    with pytest.raises(InvalidRequest):
        memory_tools(mem.session(ALICE), names=("recall", "erase"))
    with pytest.raises(InvalidRequest):
        memory_tools(object())  # type: ignore[arg-type]
    tools = _tools(mem, ALICE, default_namespace="ward3/billing")
    # alice has no read rule under ward3/billing: the default namespace applies and is denied.
    assert _call(tools["recall"], query="x").content == "not allowed: you may not read in 'ward3/billing'"


class ToolCallingFake(GenericFakeChatModel):
    """langchain-core's GenericFakeChatModel; in langchain-core 1.8 it has no bind_tools."""

    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
        return self


def test_react_agent_with_core_fake_model(mem: Memory) -> None:
    mem.session(ALICE).write(SECRET, "ward3/patients/p12", subjects=["p12"])
    model = ToolCallingFake(messages=iter([
        AIMessage(content="", tool_calls=[
            {"name": "recall", "args": {"query": "allergy", "namespace": "ward3/patients/p12"}, "id": "c1"},
            {"name": "remember", "args": {"content": "Invoice for p12", "namespace": "ward3/billing/p12"},
             "id": "c2"}]),
        AIMessage(content="done"),
    ]))
    out = _react(model, memory_tools(mem.session(CAROL)))["messages"]
    results = {m.tool_call_id: m for m in out if isinstance(m, ToolMessage)}
    assert results["c1"].status == "error" and "not allowed" in results["c1"].content
    assert results["c2"].status == "success" and results["c2"].content.startswith("stored mem_")
    assert out[-1].content == "done"
    assert all("penicillin" not in str(m.content) for m in out)


def test_react_agent_with_scripted_model_sees_only_its_results(mem: Memory) -> None:
    mem.session(ALICE).write(SECRET, "ward3/patients/p12", subjects=["p12"])
    model = ScriptedChatModel([
        calls(tool_call("recall", query="penicillin allergy", namespace="ward3/patients")),
        lambda msgs: f"found: {msgs[-1].content.split('] ', 1)[1]}",
    ])
    out = _react(model, memory_tools(mem.session(BOB)))
    assert out["messages"][-1].content == f"found: {SECRET}"
    assert len(model.received) == 2 and isinstance(model.received[0][0], HumanMessage)
