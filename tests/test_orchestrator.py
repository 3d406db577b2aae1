"""The orchestrator: routing, isolated workers, validated results, deterministic merge,
refusal and retry, interrupts, and crash/resume without duplicate memory writes."""

from __future__ import annotations

import json
import threading
import time
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.types import Command, interrupt
from pydantic import BaseModel

from memwarden import InvalidRequest, Memory, Principal, Session
from memwarden.integrations.binding import current_principal
from memwarden.orchestrator import (
    ResultRefused, RoutingError, ScriptedChatModel, Team, Worker, calls, current_session, merge_results, scorecard,
    tool_call, validate_result,
)

pytestmark = pytest.mark.integration

ALICE = Principal("alice", roles=["physician"])
BOB = Principal("bob", roles=["nurse"])
CAROL = Principal("carol", roles=["billing_clerk"])


class Answer(BaseModel):
    text: str
    n: int = 0


def _config(thread: str = "t") -> dict[str, Any]:
    return {"configurable": {"thread_id": thread}}


def _fixed(*plan: tuple[str, str]):
    return lambda state: list(plan)


def _dump(value: Any) -> str:
    return json.dumps(value, default=lambda o: repr(o))


# -- isolation ------------------------------------------------------------------------------


def test_workers_run_isolated_and_only_validated_results_reach_the_parent(mem: Memory) -> None:
    mem.session(ALICE).write("Patient 12 is allergic to penicillin", "ward3/patients/p12", subjects=["p12"])
    physician = ScriptedChatModel([
        calls(tool_call("recall", query="penicillin allergy", namespace="ward3/patients")),
        calls(tool_call("remember", content="PHYSICIAN-NOTE discharge on doxycycline",
                        namespace="ward3/patients/p12", subjects=["p12"])),
        lambda msgs: {"text": "reviewed", "n": sum(isinstance(m, ToolMessage) for m in msgs)},
    ], label="physician")
    billing = ScriptedChatModel([
        calls(tool_call("recall", query="penicillin allergy", namespace="ward3/patients")),  # denied
        calls(tool_call("recall", query="anything", namespace="ward3")),  # billing only
        lambda msgs: {"text": "invoiced", "n": len(msgs)},
    ], label="billing")
    seen: dict[str, Any] = {}

    def nurse(task: str, session: Session) -> Answer:
        seen["args"] = (task, session.principal)
        seen["current"] = current_session().principal
        seen["bound"] = current_principal.get()
        return Answer(text="NURSE-RESULT")

    team = Team(_fixed(("physician", "review p12"), ("billing", "invoice p12"), ("nurse", "vitals p12")), [
        Worker.react("physician", ALICE, physician, Answer),
        Worker.react("billing", CAROL, billing, Answer),
        Worker("nurse", BOB, nurse, Answer),
    ], mem)
    saver = InMemorySaver()
    app = team.compile(checkpointer=saver)
    state = app.invoke({"request": "discharge p12", "messages": [HumanMessage("PARENT-SECRET discharge p12")]},
                       _config())

    # Each graph agent started from [its system prompt, its task] and nothing else.
    for model, task, name in ((physician, "review p12", "physician"), (billing, "invoice p12", "billing")):
        first = model.received[0]
        assert [type(m) for m in first] == [SystemMessage, HumanMessage] and first[1].content == task
        assert f"You are {name}" in first[0].content
        everything = _dump([[m.content for m in call] for call in model.received])
        assert "PARENT-SECRET" not in everything and "discharge p12" not in everything
        assert "NURSE-RESULT" not in everything
    # ...and never another worker's messages or tool output.
    assert "PHYSICIAN-NOTE" not in _dump([[m.content for m in call] for call in billing.received])
    assert "penicillin" not in _dump([[m.content for m in call] for call in billing.received])
    # The function agent got its task and a session bound to its own principal (also bound for the store).
    assert seen == {"args": ("vitals p12", BOB), "current": BOB, "bound": BOB}

    # The parent state holds the request, its own messages, the plan and validated results: no
    # worker messages, no tool output.
    assert set(state) == {"request", "messages", "assignments", "results", "failures"}
    assert [m.content for m in state["messages"]] == ["PARENT-SECRET discharge p12"]
    assert [(r["worker"], r["principal"], r["output"]) for r in state["results"]] == [
        ("billing", "carol", {"text": "invoiced", "n": 6}),
        ("nurse", "bob", {"text": "NURSE-RESULT", "n": 0}),
        ("physician", "alice", {"text": "reviewed", "n": 2}),
    ]
    history = _dump([snapshot.values for snapshot in app.get_state_history(_config())])
    for leaked in ("PHYSICIAN-NOTE", "penicillin", "not allowed", "mem_", "ToolMessage"):
        assert leaked not in history
    # Nor are the workers' transcripts kept anywhere in the checkpointer (erasure could not reach them).
    assert "penicillin" not in _saved(saver) and "PHYSICIAN-NOTE" not in _saved(saver)
    assert isinstance(team.output(state, "physician"), Answer)
    assert list(team.outputs(state)) == ["billing-1", "nurse-1", "physician-1"]

    # Every memory operation ran as the worker's own principal.
    ops = [(e["principal"], e["op"], e["outcome"]) for e in mem.audit_log.entries()][1:]
    assert sorted(ops) == sorted([("alice", "search", "ok"), ("alice", "write", "ok"),
                                  ("carol", "search", "denied"), ("carol", "search", "ok")])


def test_subgraph_agent_gets_fresh_messages_and_its_principal(mem: Memory) -> None:
    received: list[list[str]] = []

    def node(state: MessagesState) -> dict[str, Any]:
        received.append([str(m.content) for m in state["messages"]])
        principal = current_principal.get()
        current_session().write(f"written by {principal.id}", "ward3/patients/p1")
        return {"messages": [AIMessage(content=json.dumps({"text": principal.id}))]}

    graph = StateGraph(MessagesState)
    graph.add_node("n", node)
    graph.add_edge(START, "n")
    graph.add_edge("n", END)
    team = Team(_fixed(("a", "first"), ("b", "second")),
                [Worker("a", ALICE, graph, Answer), Worker("b", BOB, graph.compile(), Answer)], mem)
    state = team.compile().invoke({"messages": [HumanMessage("PARENT")]})
    assert [r["output"]["text"] for r in state["results"]] == ["alice", "bob"]
    assert sorted(r[1:] for r in received) == [["first"], ["second"]]  # after the system prompt
    assert sorted(e["principal"] for e in mem.audit_log.entries() if e["op"] == "write") == ["alice", "bob"]


def test_as_agent_isolates_a_worker_inside_another_graph(mem: Memory) -> None:
    model = ScriptedChatModel([lambda msgs: {"text": msgs[-1].content, "n": len(msgs)}])
    agent = Worker.react("helper", BOB, model, Answer).as_agent(mem)
    out = agent.invoke({"messages": [HumanMessage("OLD"), AIMessage("OTHER-AGENT", name="x"), HumanMessage("task")]})
    assert out["messages"][-1].name == "helper"
    assert json.loads(out["messages"][-1].content) == {"text": "task", "n": 2}
    assert "OTHER-AGENT" not in _dump([m.content for m in model.received[0]])


def _saved(saver: InMemorySaver) -> str:
    return repr(saver.storage) + repr(saver.writes) + repr(dict(saver.blobs))


def test_persisted_transcripts_are_opt_in(mem: Memory) -> None:
    mem.session(ALICE).write("Patient 12 is allergic to penicillin", "ward3/patients/p12", subjects=["p12"])
    model = ScriptedChatModel([calls(tool_call("recall", query="allergy", namespace="ward3/patients")),
                               {"text": "ok"}])
    saver = InMemorySaver()
    team = Team(_fixed(("w", "t")), [Worker.react("w", BOB, model, Answer, persist_transcript=True)], mem)
    team.compile(checkpointer=saver).invoke({"request": "go"}, _config())
    assert "penicillin" in _saved(saver)  # LangGraph's default for subgraphs: the transcript is stored


# -- deterministic merge -------------------------------------------------------------------


def test_results_merge_deterministically_whatever_the_finishing_order(mem: Memory) -> None:
    def make(delays: dict[str, float]):
        def agent(task: str, session: Session) -> Answer:
            time.sleep(delays[task])
            return Answer(text=task)
        return agent

    plans = (("zeta", "z1"), ("alpha", "a1"), ("zeta", "z2"), ("alpha", "a2"), ("mid", "m1"))
    outcomes = []
    for delays in ({"z1": 0.0, "a1": 0.15, "z2": 0.05, "a2": 0.0, "m1": 0.1},
                   {"z1": 0.15, "a1": 0.0, "z2": 0.0, "a2": 0.1, "m1": 0.0}):
        agent = make(delays)
        team = Team(_fixed(*plans), [Worker(n, p, agent, Answer) for n, p in
                                     (("zeta", ALICE), ("alpha", BOB), ("mid", CAROL))], mem)
        outcomes.append(team.compile().invoke({"request": "go"})["results"])
    assert outcomes[0] == outcomes[1]
    assert [(r["task_id"], r["output"]["text"]) for r in outcomes[0]] == [
        ("alpha-1", "a1"), ("alpha-2", "a2"), ("mid-1", "m1"), ("zeta-1", "z1"), ("zeta-2", "z2")]


def test_merge_reducer_is_order_independent_and_replaces_by_task_id() -> None:
    def entry(worker: str, seq: int, text: str) -> dict[str, Any]:
        return {"task_id": f"{worker}-{seq}", "worker": worker, "seq": seq, "output": {"text": text}}

    a, b, c = entry("b", 1, "x"), entry("a", 2, "y"), entry("a", 1, "z")
    assert merge_results([a], [b, c]) == merge_results([c, b], [a]) == [c, b, a]
    assert merge_results([a], [entry("b", 1, "new")])[0]["output"] == {"text": "new"}
    assert merge_results(None, None) == []


def test_a_new_run_on_the_same_thread_replaces_the_previous_results(mem: Memory) -> None:
    plans = iter([[("a", "one"), ("b", "two")], [("b", "three")]])
    team = Team(lambda state: next(plans), [Worker("a", ALICE, lambda t, s: {"text": t}, Answer),
                                            Worker("b", BOB, lambda t, s: {"text": t}, Answer)], mem)
    app = team.compile(checkpointer=InMemorySaver())
    app.invoke({"request": "first"}, _config())
    state = app.invoke({"request": "second"}, _config())
    assert [r["output"]["text"] for r in state["results"]] == ["three"]


# -- refusal and retry ---------------------------------------------------------------------


def test_invalid_output_is_refused_with_the_reason_and_retried(mem: Memory) -> None:
    attempts: list[str | None] = []

    def flaky(task: str, session: Session, *, feedback: str | None = None) -> Any:
        attempts.append(feedback)
        return '{"text": ["SECRET-VALUE"]}' if len(attempts) == 1 else '```json\n{"text": "fine", "n": 1}\n```'

    team = Team(_fixed(("w", "task")), [Worker("w", ALICE, flaky, Answer)], mem)
    state = team.compile().invoke({"request": "go"})
    assert state["results"][0]["output"] == {"text": "fine", "n": 1} and state["results"][0]["attempts"] == 2
    assert attempts[0] is None
    assert attempts[1] == "Answer validation failed: text: Input should be a valid string"


def test_output_refused_every_time_fails_the_branch_with_a_clear_error(mem: Memory) -> None:
    calls_made = []

    def bad(task: str, session: Session) -> Any:
        calls_made.append(task)
        return {"n": "SECRET-VALUE"}

    team = Team(_fixed(("w", "task")), [Worker("w", ALICE, bad, Answer, max_attempts=2)], mem)
    with pytest.raises(ResultRefused) as caught:
        team.compile().invoke({"request": "go"})
    message = str(caught.value)
    assert "worker 'w' (task w-1): its result was refused 2 time(s)" in message
    assert "text: Field required" in message and "n: Input should be a valid integer" in message
    assert "SECRET-VALUE" not in message
    assert caught.value.attempts == 2 and len(calls_made) == 2


def test_recorded_failure_lets_the_other_branches_stand(mem: Memory) -> None:
    team = Team(_fixed(("bad", "x"), ("good", "y")),
                [Worker("bad", ALICE, lambda t, s: "not json at all", Answer, max_attempts=2),
                 Worker("good", BOB, lambda t, s: Answer(text="fine"), Answer)], mem, on_failure="record")
    state = team.compile().invoke({"request": "go"})
    assert [r["worker"] for r in state["results"]] == ["good"]
    [failure] = state["failures"]
    assert failure["worker"] == "bad" and failure["attempts"] == 2
    assert failure["error"].startswith("ResultRefused: worker 'bad' (task bad-1)")
    assert "the answer is not a JSON object for Answer" in failure["error"]


def test_react_worker_retry_starts_fresh_with_the_refusal(mem: Memory) -> None:
    model = ScriptedChatModel(["I think the answer is yes.", {"text": "yes"}])
    team = Team(_fixed(("w", "decide")), [Worker.react("w", ALICE, model, Answer)], mem)
    state = team.compile().invoke({"request": "go"})
    assert state["results"][0]["attempts"] == 2
    retry = model.received[1]
    assert [type(m) for m in retry] == [SystemMessage, HumanMessage, HumanMessage]
    assert retry[2].content.startswith("Your previous answer was refused: the answer is not a JSON object")
    assert "I think" not in _dump([m.content for m in retry])


def test_validate_result_revalidates_and_tolerates_fences() -> None:
    unchecked = Answer.model_construct(text=5)
    with pytest.raises(Exception, match="text: Input should be a valid string"):
        validate_result(Answer, unchecked)
    assert validate_result(Answer, 'Sure! {"text": "a"} Hope that helps.') == Answer(text="a")
    assert validate_result(Answer, AIMessage('{"text": "b"}').content) == Answer(text="b")


# -- routing -------------------------------------------------------------------------------


def test_llm_router_plan_is_validated_and_retried(mem: Memory) -> None:
    router = ScriptedChatModel([
        {"assignments": [{"worker": "ghost", "task": "haunt"}]},
        {"assignments": [{"worker": "w", "task": "work"}, {"worker": "w", "task": "more"}]},
    ])
    team = Team(router, [Worker("w", ALICE, lambda t, s: {"text": t}, Answer, description="does work")], mem)
    state = team.compile().invoke({"messages": [HumanMessage("please work")]})
    assert [(a["task_id"], a["task"]) for a in state["assignments"]] == [("w-1", "work"), ("w-2", "more")]
    assert [r["output"]["text"] for r in state["results"]] == ["work", "more"]
    first, second = router.received
    assert "- w: does work (acts as alice, roles physician)" in first[0].content
    assert first[1].content == "please work"
    assert second[-1].content.startswith("Your plan was refused: assignments.0.worker: Input should be 'w'")


def test_llm_router_gives_up_with_a_routing_error(mem: Memory) -> None:
    router = ScriptedChatModel([{"assignments": [{"worker": "ghost", "task": "x"}]}] * 2)
    team = Team(router, [Worker("w", ALICE, lambda t, s: {"text": t}, Answer)], mem, router_attempts=2)
    with pytest.raises(RoutingError, match="refused 2 times"):
        team.compile().invoke({"request": "go"})


def test_function_router_errors_and_empty_plans(mem: Memory) -> None:
    worker = Worker("w", ALICE, lambda t, s: {"text": t}, Answer)
    with pytest.raises(RoutingError, match="not in the team"):
        Team(_fixed(("nobody", "x")), [worker], mem).compile().invoke({"request": "go"})
    with pytest.raises(RoutingError, match="empty or non-text task"):
        Team(_fixed(("w", " ")), [worker], mem).compile().invoke({"request": "go"})
    state = Team(lambda s: [], [worker], mem, finish=lambda s: {"request": "nothing to do"}).compile().invoke(
        {"request": "go"})
    assert state["results"] == [] and state["request"] == "nothing to do"


def test_construction_is_validated(mem: Memory) -> None:
    ok = lambda t, s: {"text": t}  # noqa: E731
    for bad in ("router", "finish", "9lives", "has space", ""):
        with pytest.raises(InvalidRequest):
            Worker(bad, ALICE, ok, Answer)
    with pytest.raises(InvalidRequest):
        Worker("w", ALICE, ok, dict)  # type: ignore[arg-type]
    with pytest.raises(InvalidRequest):
        Worker("w", "alice", ok, Answer)  # type: ignore[arg-type]
    with pytest.raises(InvalidRequest, match="unique"):
        Team(ok, [Worker("w", ALICE, ok, Answer), Worker("w", BOB, ok, Answer)], mem)
    with pytest.raises(InvalidRequest, match="router must be a function"):
        Team(42, [Worker("w", ALICE, ok, Answer)], mem)
    with pytest.raises(InvalidRequest):  # a principal the policy does not know
        Team(ok, [Worker("w", Principal("mallory"), ok, Answer)], mem)


# -- interrupts, crashes and resume ---------------------------------------------------------


def test_crashed_branch_resumes_without_duplicate_writes(mem: Memory) -> None:
    runs = {"writer": 0, "other": 0}
    lock = threading.Lock()

    def writer(task: str, session: Session) -> Answer:
        with lock:
            runs["writer"] += 1
            first = runs["writer"] == 1
        session.write("Patient 7 moved to bed 4", "ward3/patients/p7", subjects=["p7"])
        if first:
            raise RuntimeError("worker crashed after writing")
        return Answer(text="written")

    def other(task: str, session: Session) -> Answer:
        with lock:
            runs["other"] += 1
        session.write("Invoice for patient 7", "ward3/billing/p7", subjects=["p7"])
        return Answer(text="other")

    team = Team(_fixed(("writer", "move p7"), ("other", "bill p7")),
                [Worker("writer", BOB, writer, Answer), Worker("other", CAROL, other, Answer)], mem)
    app = team.compile(checkpointer=InMemorySaver())
    with pytest.raises(RuntimeError, match="worker crashed after writing") as caught:
        app.invoke({"request": "go"}, _config())
    assert any("memwarden worker 'writer' (task writer-1" in note for note in caught.value.__notes__)
    assert app.get_state(_config()).next == ("writer",)

    state = app.invoke(None, _config())  # resume from the checkpoint
    assert [r["output"]["text"] for r in state["results"]] == ["other", "written"]
    assert runs == {"writer": 2, "other": 1}  # only the failed branch ran again

    hits = mem.session(BOB).search(None, "ward3/patients/p7", k=100)
    assert len(hits) == 1
    writes = [e for e in mem.audit_log.entries() if e["op"] == "write" and e["principal"] == "bob"]
    assert len(writes) == 2 and writes[0]["records"] == writes[1]["records"] == [hits[0].record.id]
    assert not writes[0]["replay"]
    assert writes[1]["replay"]
    card = scorecard(mem)
    assert card.row("bob").writes == 1 and card.row("bob").replays == 1 and card.row("carol").writes == 1


def test_langgraph_retry_policy_replays_the_write(mem: Memory) -> None:
    from langgraph.types import RetryPolicy

    runs = []

    def flaky(task: str, session: Session) -> Answer:
        runs.append(task)
        session.write("Patient 8 fasting from midnight", "ward3/patients/p8")
        if len(runs) == 1:
            raise ConnectionError("transient")
        return Answer(text="ok")

    team = Team(_fixed(("w", "t")), [Worker("w", BOB, flaky, Answer)], mem,
                retry_policy=RetryPolicy(max_attempts=2, initial_interval=0.01, jitter=False))
    assert team.compile().invoke({"request": "go"})["results"][0]["output"]["text"] == "ok"
    assert len(mem.session(BOB).search(None, "ward3/patients/p8")) == 1 and scorecard(mem).replays == 1


def test_interrupt_inside_a_worker_pauses_and_resumes(mem: Memory) -> None:
    def asks(task: str, session: Session) -> Answer:
        session.write("Patient 9 wants to go home early", "ward3/patients/p9")
        answer = interrupt({"question": "discharge patient 9?"})
        return Answer(text=str(answer))

    team = Team(_fixed(("asker", "p9"), ("quiet", "q")),
                [Worker("asker", ALICE, asks, Answer), Worker("quiet", BOB, lambda t, s: {"text": "q"}, Answer)],
                mem)
    app = team.compile(checkpointer=InMemorySaver())
    paused = app.invoke({"request": "go"}, _config())
    assert [i.value for i in paused["__interrupt__"]] == [{"question": "discharge patient 9?"}]
    assert [r["worker"] for r in paused["results"]] == ["quiet"]
    state = app.invoke(Command(resume="yes"), _config())
    assert [r["output"]["text"] for r in state["results"]] == ["yes", "q"]
    assert len(mem.session(ALICE).search(None, "ward3/patients/p9")) == 1 and scorecard(mem).replays == 1


def test_interrupt_after_routing_allows_inspecting_and_editing_the_plan(mem: Memory) -> None:
    team = Team(_fixed(("w", "original")), [Worker("w", ALICE, lambda t, s: {"text": t}, Answer)], mem)
    app = team.compile(checkpointer=InMemorySaver(), interrupt_after=["router"])
    app.invoke({"request": "go"}, _config())
    snapshot = app.get_state(_config())
    assert snapshot.next == ("w",) and snapshot.values["assignments"][0]["task"] == "original"
    state = app.invoke(None, _config())
    assert state["results"][0]["output"]["text"] == "original"


def test_interrupt_in_a_react_workers_tool_reruns_the_agent_from_its_task(mem: Memory) -> None:
    from langchain_core.tools import tool

    @tool
    def ask_physician(question: str) -> str:
        """Ask the physician on duty."""
        return str(interrupt(question))

    model = ScriptedChatModel([
        calls(tool_call("remember", content="Patient 3 asks for a sleeping pill", namespace="ward3/patients/p3")),
        calls(tool_call("ask_physician", question="May patient 3 have zolpidem?")),
        # The run resumes from the task (the transcript was not checkpointed): the agent runs again.
        calls(tool_call("remember", content="Patient 3 asks for a sleeping pill", namespace="ward3/patients/p3")),
        calls(tool_call("ask_physician", question="May patient 3 have zolpidem?")),
        lambda msgs: {"text": msgs[-1].content},
    ])
    team = Team(_fixed(("nurse", "p3 cannot sleep")), [Worker.react("nurse", BOB, model, Answer, tools=[ask_physician])],
                mem)
    app = team.compile(checkpointer=InMemorySaver())
    paused = app.invoke({"request": "go"}, _config())
    assert paused["__interrupt__"][0].value == "May patient 3 have zolpidem?"
    state = app.invoke(Command(resume="yes, 5 mg"), _config())
    assert state["results"][0]["output"]["text"] == "yes, 5 mg" and model.remaining == 0
    assert len(mem.session(BOB).search(None, "ward3/patients/p3")) == 1 and scorecard(mem).replays == 1


def test_the_documented_quick_start_runs(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    import re
    from pathlib import Path

    doc = (Path(__file__).resolve().parent.parent / "docs" / "orchestrator.md").read_text(encoding="utf-8")
    block = re.search(r"```python\n(.*?)```", doc, re.S).group(1)
    block = block.replace("model = ...", "model = injected")
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, Any] = {"injected": ScriptedChatModel([{"patient": "p12", "findings": ["none"]}])}
    exec(compile(block, "docs/orchestrator.md", "exec"), namespace)  # our own documentation
    try:
        outputs = namespace["team"].outputs(namespace["state"])
        assert list(outputs) == ["billing-1", "physician-1"]
        assert outputs["physician-1"].findings == ["none"]
    finally:
        namespace["mem"].close()
