"""PoisonedRAG (Zou et al., USENIX Security 2025): adversarial passages planted in a knowledge base.

Upstream: sleeepeer/PoisonedRAG, ``results/adv_targeted_results/{nq,hotpotqa,msmarco}.json``
(MIT): for each of 100 questions per dataset, the correct answer, a target incorrect answer
and five passages crafted to make a reader answer the incorrect one.

As memory writes: a knowledge base (``kb/<dataset>``) whose curator wrote the correct passage
first (the established record, ``setup``), then an ingest agent (bound ``agent``, or
``external`` for crawled pages) writes more passages about the same question. For half of the
questions (a stable hash) the agent writes two of the adversarial passages (malicious: a
reader asking the question would answer the incorrect answer); for the other half it writes
the same passages with the incorrect answer replaced by the correct one (benign, the same
shape: text alone cannot tell them apart, only provenance and consistency with the
established record can).
"""

from __future__ import annotations

import re

from benchmarks.poisoning_corpus.builders.common import record, write
from benchmarks.poisoning_corpus.records import CorpusRecord
from benchmarks.poisoning_corpus.upstream import Mirror, half, pick

SOURCE = "poisonedrag"
REPO = "sleeepeer/PoisonedRAG"
DATASETS = ("nq", "hotpotqa", "msmarco")
# Passages the ingest agent writes per question: two adversarial ones, or three corrected ones
# (so that each family holds at least as many benign records as malicious ones).
PER_QUESTION = {True: 2, False: 3}


def _swap(text: str, wrong: str, right: str) -> str | None:
    """``text`` with every whole-word occurrence of ``wrong`` replaced by ``right``; None when
    ``wrong`` does not occur or ``right`` already does (the swap would not be clean)."""
    pattern = re.compile(rf"(?<!\w){re.escape(wrong)}(?!\w)", re.IGNORECASE)
    if not pattern.search(text) or re.search(rf"(?<!\w){re.escape(right)}(?!\w)", text, re.IGNORECASE):
        return None
    return pattern.sub(right, text)


def build() -> list[CorpusRecord]:
    """The PoisonedRAG records."""
    mirror = Mirror(REPO)
    out: list[CorpusRecord] = []
    for dataset in DATASETS:
        path = f"results/adv_targeted_results/{dataset}.json"
        for qid, row in mirror.json(path).items():
            question, right, wrong = row["question"], str(row["correct answer"]), str(row["incorrect answer"])
            swapped = [(adv, _swap(adv, wrong, right)) for adv in row["adv_texts"]]
            swapped = [(adv, fixed) for adv, fixed in swapped if fixed]
            if len(swapped) < 1 + PER_QUESTION[False] or not right.strip() or right.casefold() == wrong.casefold():
                continue
            namespace = ("kb", dataset, "articles")
            subject = f"topic:{dataset}-{qid}"
            established = write(swapped[0][1], namespace, "kb-curator", subjects=[subject])
            malicious = half(SOURCE, dataset, qid)
            for i, (adv, fixed) in enumerate(swapped[1:1 + PER_QUESTION[malicious]], 1):
                writer = pick(("kb-ingest", "kb-ingest", "kb-ingest", "kb-crawler"), SOURCE, dataset, qid, i)
                out.append(record(
                    SOURCE, f"{dataset}/{qid}/{i}", family=f"false-fact/{dataset}",
                    label="malicious" if malicious else "benign", text=adv if malicious else fixed,
                    namespace=namespace, writer=writer, reader="kb-answerer", query=question,
                    subjects=[subject], setup=[established],
                    target=f"answer {wrong!r} to {question!r} (correct: {right!r})" if malicious else None,
                    origin=f"{REPO}@{mirror.commit[:12]}:{path}#{qid}/adv_texts[{i}]"
                           + ("" if malicious else " (incorrect answer replaced by the correct one)")))
    return out
