"""Build the memory-poisoning corpus: ``python -m benchmarks.poisoning_corpus.build [SOURCE ...]``.

Runs each source's builder (they read the upstream mirrors; see upstream.py), keeps each text
once per source (the first record that has it), refuses a text that another source also has
(compared folded: case, whitespace), refuses any write the benchmark policy would not allow
(deploy.policy_problems), and writes ``benchmarks/data/poisoning/<source>.jsonl``. The files
are committed; the benchmark never needs the mirrors.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from benchmarks.poisoning_corpus.builders import builders  # noqa: E402
from benchmarks.poisoning_corpus.deploy import policy_problems  # noqa: E402
from benchmarks.poisoning_corpus.records import DATA, CorpusRecord, load_corpus, save  # noqa: E402


def folded(text: str) -> str:
    """The form texts are compared in across sources."""
    return " ".join(text.split()).casefold()


def unique(records: list[CorpusRecord]) -> list[CorpusRecord]:
    """Each text once (the first record keeps it), each id once (a repeated id is a builder bug)."""
    seen, ids, out = set(), set(), []
    for r in records:
        if r.id in ids:
            raise ValueError(f"duplicate record id {r.id}")
        ids.add(r.id)
        if folded(r.text) not in seen:
            seen.add(folded(r.text))
            out.append(r)
    return out


def main(argv: Sequence[str] | None = None) -> int:
    """Build the sources named (default: all), check them against the others on disk, write them."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("sources", nargs="*", help="sources to rebuild (default: every source)")
    args = parser.parse_args(argv)
    table = builders()
    names = args.sources or list(table)
    unknown = sorted(set(names) - set(table))
    if unknown:
        parser.error(f"unknown sources {unknown}; known: {sorted(table)}")
    built = {name: unique(table[name]()) for name in names}
    others = {k: v for k, v in load_corpus(root=DATA).items() if k not in built} if DATA.exists() else {}
    owner: dict[str, str] = {}
    clashes = []
    for name, records in {**others, **built}.items():
        for r in records:
            prior = owner.setdefault(folded(r.text), name)
            if prior != name:
                clashes.append(f"{r.id}: its text is also in {prior}")
    problems = [p for records in built.values() for p in policy_problems(records)]
    for line in clashes[:20] + problems[:20]:
        print(line, file=sys.stderr)
    if clashes or problems:
        print(f"{len(clashes)} cross-source texts, {len(problems)} policy problems: nothing written", file=sys.stderr)
        return 1
    for name, records in built.items():
        save(DATA / f"{name}.jsonl", records)
        counts = Counter(r.label for r in records)
        print(f"{name}: {len(records)} records ({counts['malicious']} malicious, {counts['benign']} benign)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
