"""What the optional LLM judge adds, consulted only in the uncertain band (issue 18, item 6):
``python -m benchmarks.poisoning_corpus.judge_bench [--per-label N]``.

No model is downloaded or called. A *scripted* judge stands in for one: it reads the entry
between the judge's boundaries and answers from the corpus's own labels, right with a given
probability (deterministic per text), so each run measures what a judge of that accuracy
would add: how many writes it is asked about, and the attack success and benign figures with
it, against the same chain without it. A perfect judge is the ceiling of what any model can
add in this band; the 0.9 and 0.75 judges show what errors cost (a wrong "malicious" rejects
a benign write, a wrong "benign" lets an attack through). The judge never overrides a cheap
validator's quarantine or rejection, and outside the band it is never asked: poison that no
cheap signal touches is out of its reach by construction.

Every source is measured with the default parameters of the ``directives`` defences (no
tuning: nothing here is tuned); results go to ``benchmarks/results/poisoning_judge.json``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from langchain_core.messages import AIMessage

from memwarden.guards.judge import DEFAULT_BAND, LLMJudge
from memwarden.guards.validators import Outcome
from memwarden.memory.embeddings import HashingEmbedding

from benchmarks.poisoning_corpus.defences import DIRECTIVES, default_chain
from benchmarks.poisoning_corpus.loso import Defences, Figures, Run
from benchmarks.poisoning_corpus.records import load_corpus
from benchmarks.poisoning_corpus.report import RESULTS, markdown, sample
from benchmarks.poisoning_corpus.upstream import stable


class ScriptedJudgeModel:
    """A chat model (the part of LangChain's interface LLMJudge uses) that answers from labels.

    ``labels``: text -> "malicious" | "benign"; ``accuracy``: the share of texts it gets right
    (which ones is fixed by a hash of the text); an unknown text is judged benign. It has no
    structured output, so the judge asks it for JSON, as it does a plain chat model.
    """

    def __init__(self, labels: dict[str, str], accuracy: float) -> None:
        self.labels = labels
        self.accuracy = accuracy
        self.calls = 0

    def with_structured_output(self, schema: Any) -> Any:
        """Not implemented, as for a model without tool calling."""
        raise NotImplementedError

    def invoke(self, messages: Sequence[Any]) -> AIMessage:
        """The verdict on the entry between the boundaries of the last message."""
        self.calls += 1
        lines = messages[-1].content.splitlines()
        entry = "\n".join(lines[1:lines.index(lines[0], 1)])
        truth = self.labels.get(entry, "benign")
        right = stable("judge", entry) % 1000 < self.accuracy * 1000
        verdict = truth if right else ("benign" if truth == "malicious" else "malicious")
        return AIMessage(content=json.dumps({"verdict": verdict, "confidence": 0.9,
                                             "category": "other" if verdict == "malicious" else "none"}))


def judged(labels: dict[str, str], accuracy: float, models: list[ScriptedJudgeModel],
           on_malicious: Outcome) -> Defences:
    """The ``directives`` defences with a scripted judge of ``accuracy`` asked in the band."""

    def validators(params: Any) -> list[Any]:
        model = ScriptedJudgeModel(labels, accuracy)
        models.append(model)
        return [*default_chain(params), LLMJudge(model, band=DEFAULT_BAND, on_malicious=on_malicious)]

    return Defences(name=f"directives + judge (accuracy {accuracy})", validators=validators, grid=DIRECTIVES.grid[:1])


def main(argv: Sequence[str] | None = None) -> int:
    """Run the chain without the judge and with scripted judges; write the comparison."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--per-label", type=int, default=60, help="malicious and benign records per source")
    parser.add_argument("--accuracies", type=float, nargs="*", default=[1.0, 0.9, 0.75])
    parser.add_argument("--on-malicious", choices=("reject", "quarantine"), default="reject",
                        help="what the judge's 'malicious' does (LLMJudge's on_malicious; default reject)")
    parser.add_argument("--out", type=Path, default=RESULTS / "poisoning_judge.json")
    args = parser.parse_args(argv)
    corpus = sample(load_corpus(), args.per_label)
    labels = {r.text[:8000]: r.label for rs in corpus.values() for r in rs}
    started = time.perf_counter()
    runs: dict[str, Any] = {}
    plans: list[tuple[str, Defences, list[ScriptedJudgeModel]]] = [
        ("no judge", Defences(name="directives", validators=default_chain, grid=DIRECTIVES.grid[:1]), [])]
    for accuracy in args.accuracies:
        models: list[ScriptedJudgeModel] = []
        plans.append((f"judge {accuracy}", judged(labels, accuracy, models, Outcome(args.on_malicious)), models))
    for name, defences, models in plans:
        run = Run(defences, corpus, HashingEmbedding())
        rows = [run.held_out(source) for source in corpus]
        pooled = Figures.of(o for row in rows for o in run.cell(row.params, row.source).outcomes)
        writes = sum(len(rs) for rs in corpus.values())
        runs[name] = {"pooled": pooled.model_dump(), "markdown": markdown(rows, pooled),
                      "per_source": {r.source: r.figures.model_dump() for r in rows},
                      # (calls include the established records each cell writes first)
                      "judge_calls": sum(m.calls for m in models), "writes": writes,
                      "judge_calls_pct": round(100.0 * sum(m.calls for m in models) / writes, 2)}
        print(f"{name}: attack success {pooled.attack_success_pct}%, benign rejected {pooled.benign_rejected_pct}%, "
              f"benign quarantined {pooled.benign_quarantined_pct}%, judge asked about "
              f"{runs[name]['judge_calls_pct']}% of writes", flush=True)
    result = {"per_label": args.per_label, "band": list(DEFAULT_BAND), "on_malicious": args.on_malicious,
              "embedding": "HashingEmbedding",
              "runs": runs, "seconds": round(time.perf_counter() - started, 1)}
    args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
