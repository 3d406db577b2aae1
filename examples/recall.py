"""Recall in a care team's shared memory: hybrid search, time, history and typed evidence.

A physician (alice), a nurse (bob) and a billing clerk (carol) share one governed memory under
``policies/clinic.csv``. Then alice and carol ask questions that show what each part of
memwarden's retrieval adds, all inside the governed path:

1. a lab sample's code ("LX-40917"): the lexical (BM25) leg finds exact codes and names;
2. a paraphrase with no word in common: the dense (vector) leg finds meaning;
3. "what happened in May 2023": a time range, pushed into both legs;
4. "what was the dose on 1 June 2023": ``as_of`` with earlier versions (history permission);
5. "how do we handle the medication": typed evidence, rules and preferences first, in 60 tokens;
6. the clerk asks for the same code: the patient record never reaches her, in either leg.

Runs offline: ``python examples/recall.py [--hashing] [--data DIR]``.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape

from memwarden import Memory, Principal
from memwarden.memory.embeddings import HashingEmbedding
from memwarden.core.records import SearchHit
from memwarden.memory.retrieval import timeframe

POLICY = Path(__file__).resolve().parent / "policies" / "clinic.csv"
P12 = ("clinic", "patients", "p12")
ALICE, BOB, CAROL = Principal("alice"), Principal("bob"), Principal("carol")


def day(text: str) -> datetime:
    """A date in UTC."""
    return datetime.fromisoformat(text).replace(tzinfo=timezone.utc)


def seed(mem: Memory) -> dict[str, str]:
    """The team's memories; returns their ids by a short name."""
    alice, bob, carol = mem.session(ALICE), mem.session(BOB), mem.session(CAROL)
    ids = {
        "dose": alice.write("Patient 12 takes lisinopril 10 mg every morning", P12, kind="fact",
                            subjects=["p12"], valid_from=day("2023-04-02")).id,
        "dizzy": bob.write("Patient 12 reported dizziness after the morning dose", P12, kind="event",
                           subjects=["p12"], valid_from=day("2023-05-09")).id,
        "garden": bob.write("Patient 12 walked to the garden without help", P12, kind="event",
                            subjects=["p12"], valid_from=day("2023-05-21")).id,
        "fever": bob.write("Patient 12 had a fever of 38.9 overnight", P12, kind="event",
                           subjects=["p12"], valid_from=day("2023-06-03")).id,
        "mornings": bob.write("Patient 12 prefers to take medication with breakfast", P12, kind="preference",
                              subjects=["p12"]).id,
        "sample": alice.write("Lab sample LX-40917 of patient 12 was lost in transit", P12, kind="fact",
                              subjects=["p12"]).id,
        "sample 2": alice.write("Lab sample LX-40971 of patient 12 arrived at the lab", P12, kind="fact",
                                subjects=["p12"]).id,
        "sample 3": alice.write("Lab sample LX-41907 of patient 12 showed normal potassium", P12, kind="fact",
                                subjects=["p12"]).id,
        "rule": alice.write("Rule: a second nurse double-checks every change of a blood pressure medication",
                            ("clinic", "rules"), kind="rule").id,
        "invoice": carol.write("Invoice for lab work LX-40917 is overdue", ("clinic", "billing", "p12"),
                               kind="fact").id,
    }
    # The dose is raised today: the 10 mg version is superseded and stops holding now.
    ids["new_dose"] = alice.update(ids["dose"], "Patient 12 takes lisinopril 20 mg every morning").id
    return ids


def show(console: Console, title: str, hits: Sequence[SearchHit]) -> None:
    """Print a numbered list of hits with the score each was ranked by."""
    console.print(f"\n[bold]{title}[/]")
    if not hits:
        console.print("  (nothing)")
    for i, h in enumerate(hits, start=1):
        valid = f" valid from {h.record.valid_from:%Y-%m-%d}" if h.record.valid_from else ""
        console.print(escape(f"  {i}. [{h.record.kind.value}] {h.record.content}  "
                             f"(score {h.score:.2f}, {h.record.status.value}{valid})"))


def run_recall(data_dir: str | Path | None = None, console: Console | None = None, *,
               embedding: Any = None) -> dict[str, list[str]]:
    """Seed the memory, ask the six questions, print the answers; returns the ids each got."""
    console = console or Console()
    with tempfile.TemporaryDirectory(prefix="memwarden-recall-") as scratch, \
            Memory.open(data_dir or scratch, policy=POLICY, embedding=embedding) as mem:
        ids = seed(mem)
        name = {v: k for k, v in ids.items()}
        alice, carol = mem.session(ALICE), mem.session(CAROL)
        asked: dict[str, list[SearchHit]] = {}

        asked["code, dense"] = alice.search("What happened to sample LX-40917?", P12, k=2, mode="dense")
        asked["code, hybrid"] = alice.search("What happened to sample LX-40917?", P12, k=2)
        show(console, "1. alice: 'What happened to sample LX-40917?' with the dense leg alone", asked["code, dense"])
        show(console, "   ... and with hybrid search (the default)", asked["code, hybrid"])

        asked["paraphrase"] = alice.search("who felt light-headed", ("clinic",), k=1)
        show(console, "2. alice: 'who felt light-headed' (no word in common with the note)", asked["paraphrase"])

        may = timeframe("in May 2023")
        asked["may"] = alice.search("what happened to patient 12", ("clinic",), k=5, kinds=["event"], time_range=may)
        show(console, f"3. alice: events in May 2023 (time_range {may[0]:%Y-%m-%d} .. {may[1]:%Y-%m-%d})",
             asked["may"])

        asked["as of"] = alice.search("lisinopril dose", P12, k=1, as_of=day("2023-06-01"), include_superseded=True)
        asked["now"] = alice.search("lisinopril dose", P12, k=1)
        show(console, "4. alice: the lisinopril dose as of 1 June 2023", asked["as of"])
        show(console, "   ... and today", asked["now"])

        asked["evidence"] = alice.search("how should we handle patient 12's medication", ("clinic",), k=5,
                                         kinds=["rule", "preference", "fact"], budget_tokens=60)
        show(console, "5. alice: typed evidence for a medication question (rules, preferences, facts; 60 tokens)",
             asked["evidence"])

        asked["clerk"] = carol.search("Lab sample LX-40917 of patient 12 was lost in transit", ("clinic",), k=5)
        show(console, "6. carol (billing) asks with the patient note's exact words", asked["clerk"])
        console.print(f"\naudit chain verified: {mem.audit_log.verify().ok}")
        return {question: [name[h.record.id] for h in hits] for question, hits in asked.items()}


def main(argv: Sequence[str] | None = None) -> int:
    """Command line: ``--hashing`` for the fast test embedding, ``--data`` to keep the memory."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hashing", action="store_true", help="hashing test embedding (words, not meaning)")
    parser.add_argument("--data", default=None, help="keep the memory in this directory")
    args = parser.parse_args(argv)
    hashing = args.hashing or os.environ.get("MEMWARDEN_EMBEDDING") == "hashing"
    run_recall(args.data, embedding=HashingEmbedding() if hashing else None)
    return 0


if __name__ == "__main__":
    sys.exit(main())
