"""A LangGraph graph whose nodes share one governed memory through ``mem.as_store()``.

Three nodes act as three principals of the bundled hospital policy. The nurse and the billing
clerk are fixed with ``as_principal``; the physician node is a ``governed_node`` and acts as
whoever the run config names. Each node uses the ordinary LangGraph store API, and each sees
only what its role may read. Runs offline: ``python examples/langgraph_store.py``.
"""

from __future__ import annotations

import operator
import tempfile
from typing import Annotated, TypedDict

from langgraph.config import get_store
from langgraph.graph import END, START, StateGraph
from langgraph.store.base import BaseStore

from memwarden import Memory, Principal
from memwarden.integrations.binding import CONFIG_KEY, as_principal, governed_node, require_principal

PATIENT = ("ward3", "patients", "p12")
BILLING = ("ward3", "billing", "p12")


class Ward(TypedDict, total=False):
    log: Annotated[list[str], operator.add]


def saw(who: str, items: list) -> str:
    return f"{who} sees: " + (", ".join(f"{'/'.join(i.namespace)}:{i.key}" for i in items) or "nothing")


@as_principal(Principal("bob"))  # a nurse, by the policy's `g, bob, nurse`
def nurse(state: Ward, store: BaseStore) -> Ward:
    store.put(PATIENT, "vitals", {"text": "Blood pressure 120/80, pain score 2 of 10", "by": "bob"})
    return {"log": [saw("nurse bob", store.search(("ward3",), query="patient 12"))]}


@as_principal(Principal("carol"))  # a billing clerk, denied every patient record
def clerk(state: Ward) -> Ward:
    store = get_store()
    store.put(BILLING, "invoice", {"text": "Invoice 5531: appendectomy, unpaid", "amount": 1840})
    vitals = store.get(PATIENT, "vitals")
    return {"log": [saw("clerk carol", store.search(("ward3",), query="patient 12")),
                    f"clerk carol gets the vitals: {vitals is not None}"]}


@governed_node
def physician(state: Ward, store: BaseStore) -> Ward:
    me = require_principal().id
    return {"log": [saw(f"physician {me}", store.search(("ward3", "patients"), query="blood pressure"))]}


def main() -> None:
    with tempfile.TemporaryDirectory() as root, Memory.open(root, policy="hospital") as mem:
        graph = StateGraph(Ward)
        for name, node in (("nurse", nurse), ("clerk", clerk), ("physician", physician)):
            graph.add_node(name, node)
        graph.add_edge(START, "nurse")
        graph.add_edge("nurse", "clerk")
        graph.add_edge("clerk", "physician")
        graph.add_edge("physician", END)
        app = graph.compile(store=mem.as_store())

        result = app.invoke({"log": []}, {"configurable": {CONFIG_KEY: {"id": "alice"}}})
        print("\n".join(result["log"]))
        print("\naudit log:")
        for entry in mem.audit_log.entries():
            print(f"  #{entry['seq']} {entry['principal']:<6} {entry['op']:<6} {entry['decision'] or '-':<5} "
                  f"{entry['namespace'] or '(root)':<22} returned={entry['returned']}")
        print(f"chain intact: {mem.audit_log.verify().ok}")


if __name__ == "__main__":
    main()
