"""The memory-poisoning corpus (benchmarks/data/poisoning) and its leave-one-source-out benchmark.

Shape and separation of the corpus: every source of the catalog has its file, every record
is valid, each source has both labels and about as many benign records as malicious ones, no
text is in two sources, every write is one the benchmark policy allows. The LOSO discipline:
tuning never sees the held-out source or its group. And the quick mode of
``benchmarks/poisoning.py --corpus`` runs end to end through real Memory stores.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest


from benchmarks.poisoning_corpus import report
from benchmarks.poisoning_corpus.build import folded
from benchmarks.poisoning_corpus.catalog import SOURCES, group_of
from benchmarks.poisoning_corpus.defences import TODAY, apply, default_chain
from benchmarks.poisoning_corpus.deploy import policy_problems
from benchmarks.poisoning_corpus.loso import Defences, Run, TuningView
from benchmarks.poisoning_corpus.records import DATA, CorpusRecord, load, load_corpus
from memwarden.memory.embeddings import HashingEmbedding

pytestmark = pytest.mark.unit


@pytest.fixture(scope="module")
def corpus() -> dict[str, list[CorpusRecord]]:
    return load_corpus()


def test_every_catalogued_source_has_its_file_and_nothing_else_is_there(corpus) -> None:
    assert sorted(corpus) == sorted(s.name for s in SOURCES)
    assert len({s.group for s in SOURCES}) >= 8, "leave-one-source-out needs many independent groups"


def test_each_source_has_both_labels_and_about_as_many_benign_as_malicious(corpus) -> None:
    for source, records in corpus.items():
        labels = Counter(r.label for r in records)
        assert labels["malicious"] >= 30 and labels["benign"] >= 30, (source, labels)
        assert labels["benign"] >= 0.95 * labels["malicious"], (source, labels)
        assert all(r.source == source and r.id.startswith(f"{source}/") for r in records)
        assert all(r.target for r in records if r.label == "malicious")
        assert not any(r.target for r in records if r.label == "benign")


def test_no_text_is_in_two_sources_and_no_id_repeats(corpus) -> None:
    owner: dict[str, str] = {}
    ids = set()
    for source, records in corpus.items():
        for r in records:
            assert r.id not in ids
            ids.add(r.id)
            assert owner.setdefault(folded(r.text), source) == source, f"{r.id} shares its text with {owner[folded(r.text)]}"


def test_user_owned_preferences_are_in_their_users_own_space(corpus) -> None:
    prefs = [r for rs in corpus.values() for r in rs if r.user_owned_preference]
    assert len(prefs) >= 50
    for r in prefs:
        owner = r.namespace[-2]  # assist/<user>/preferences, home/kids/<user>/prefs
        assert r.writer.principal in (owner, f"{owner}-assistant"), r.id
        assert r.label == "benign" and r.kind == "preference"
    # Both paths are there: the user writing, and the user's assistant writing for them.
    assert {r.writer.binding for r in prefs} == {"user", "agent"}


def test_writers_are_not_what_separates_the_labels(corpus) -> None:
    """Within a source, agents write benign records too: provenance alone must not sort them."""
    for source, records in corpus.items():
        benign_agent = sum(r.writer.binding != "user" for r in records if r.label == "benign")
        assert benign_agent >= 0.25 * sum(r.label == "benign" for r in records), source


def test_every_write_is_allowed_by_the_benchmark_policy(corpus) -> None:
    assert policy_problems(r for rs in corpus.values() for r in rs) == []


def test_a_bad_record_is_refused_with_its_file_and_line(tmp_path: Path) -> None:
    good = next(iter((DATA / "amemguard.jsonl").read_text(encoding="utf-8").splitlines()))
    row = json.loads(good)
    row.pop("target", None)
    row["label"] = "malicious"
    path = tmp_path / "amemguard.jsonl"
    path.write_text(good + "\n" + json.dumps(row) + "\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"(?s)amemguard.jsonl:2: .*names its target"):
        load(path)


def test_parameters_reach_the_validators_and_a_typo_fails() -> None:
    chain = default_chain({"injection.quarantine_at": 0.3, "contradiction.max_diff": 2})
    by_name = {v.name: v for v in chain}
    assert by_name["injection"].quarantine_at == 0.3 and by_name["contradiction"].max_diff == 2
    with pytest.raises(ValueError, match="no validator 'injecton'"):
        default_chain({"injecton.quarantine_at": 0.3})
    with pytest.raises(ValueError, match="attribute 'quarantine'"):
        apply(default_chain({}), {"injection.quarantine": 0.3})


def _tiny(corpus: dict[str, list[CorpusRecord]]) -> dict[str, list[CorpusRecord]]:
    return report.sample({s: corpus[s] for s in ("amemguard", "gen-facts", "gen-directives", "minja")}, 2)


@pytest.mark.slow
@pytest.mark.integration
def test_tuning_never_sees_the_held_out_source_or_its_group(corpus) -> None:
    seen: list[tuple[str, ...]] = []

    def spy(view: TuningView) -> dict:
        seen.append(view.sources)
        assert set(view.records) == set(view.sources)
        view.measure(view.grid[0])
        return view.grid[-1]

    defences = Defences("spy", validators=TODAY.validators, grid=TODAY.grid[:2], tune=spy)
    tiny = _tiny(corpus)
    run = Run(defences, tiny, HashingEmbedding())
    rows = {s: run.held_out(s) for s in tiny}
    assert len(seen) == len(tiny)
    for source, row in rows.items():
        assert source not in row.tuned_on
        assert not any(group_of(s) == group_of(source) for s in row.tuned_on)
        assert set(row.tuned_on) == {s for s in tiny if group_of(s) != group_of(source)}
        assert row.params == dict(TODAY.grid[1])
    # The generator's two sources are one group: each is tuned on neither of them.
    assert rows["gen-facts"].tuned_on == rows["gen-directives"].tuned_on == ["amemguard", "minja"]
    assert tuple(rows["gen-facts"].tuned_on) in seen


@pytest.mark.integration
@pytest.mark.slow
def test_quick_mode_runs_end_to_end(tmp_path: Path) -> None:
    out = tmp_path / "corpus.json"
    assert report.main(["--quick", "--no-jailbreak", "--no-download", "--out", str(out)]) == 0
    result = json.loads(out.read_text(encoding="utf-8"))
    rows = result["held_out"]
    assert [r["source"] for r in rows] == [s.name for s in SOURCES]
    grid = [json.dumps(g, sort_keys=True) for g in result["grid"]]
    for r in rows:
        assert r["source"] not in r["tuned_on"] and r["tuned_on"]
        assert json.dumps(r["params"], sort_keys=True) in grid
        f = r["figures"]
        assert f["malicious"] == report.QUICK_PER_LABEL and f["benign"] == report.QUICK_PER_LABEL
        assert f["attack_success_pct"] is not None and 0 <= f["attack_success_pct"] <= f["stored_active_pct"] + 1e-9
        assert f["denied_pct"] == 0.0, r["source"]  # every corpus write is one its writer may make
        ids = result["outcomes"][r["source"]]
        assert len(ids["success"]) == round(f["attack_success_pct"] * f["malicious"] / 100)
    assert result["chain_ms_per_write"]["n"] == 2 * report.QUICK_PER_LABEL * len(SOURCES)
