"""benchmarks/retrieval.py on a small synthetic LoCoMo-format fixture (no LoCoMo data in the repo).

tests/data/locomo_tiny.json has the shape of LoCoMo's ``locomo10.json``: two invented
conversations with dated sessions and questions whose evidence is a set of turns.
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

import pytest


from benchmarks import retrieval
from memwarden.policies.engine import PolicyEngine
from memwarden.policies.loading import parse_policy_text

pytestmark = pytest.mark.unit

FIXTURE = Path(__file__).parent / "data" / "locomo_tiny.json"


def test_loads_both_release_formats(tmp_path: Path) -> None:
    convs = retrieval.load_locomo(FIXTURE)
    assert [c.sample_id for c in convs] == ["conv-tiny-1", "conv-tiny-2"]
    first = convs[0]
    assert first.speakers == ("Ada", "Bo") and len(first.turns) == 12
    assert first.turns[6].when == datetime(2023, 6, 27, 10, 37, tzinfo=timezone.utc)
    assert first.turns[0].memory == "Ada: Hi Bo! I finally adopted a grey kitten called Pixel."
    # Category 5 and evidence that names no turn are left out; "D2:3; D9:9" keeps D2:3.
    assert [q.evidence for q in first.questions] == [("D1:1",), ("D2:2",), ("D1:2", "D2:3"), ("D1:5",), ("D2:3",)]
    # The per-conversation files of the zip release: the conversation's keys and "qa" together.
    folder = tmp_path / "v2"
    folder.mkdir()
    for number, sample in ((26, json.loads(FIXTURE.read_text())[0]), (3, json.loads(FIXTURE.read_text())[1])):
        (folder / f"{number}.json").write_text(json.dumps({**sample["conversation"], "qa": sample["qa"]}))
    again = retrieval.load_locomo(folder)
    assert [c.sample_id for c in again] == ["conv-3", "conv-26"]
    assert again[1].turns == first.turns and again[1].questions == first.questions


def test_parse_when() -> None:
    assert retrieval.parse_when("1:56 pm on 8 May, 2023") == datetime(2023, 5, 8, 13, 56, tzinfo=timezone.utc)
    assert retrieval.parse_when("12:09 am on 1 January, 2024") == datetime(2024, 1, 1, 0, 9, tzinfo=timezone.utc)
    with pytest.raises(ValueError):
        retrieval.parse_when("yesterday")


def test_score_counts_evidence_recall_and_mrr() -> None:
    questions = [retrieval.Question("q1", ("a", "b"), 1), retrieval.Question("q2", ("z",), 4)]
    ranked = [["x", "a", "y", "y", "y", "b"], ["z"]]
    got = retrieval.score(ranked, questions)
    assert got["recall@5"] == pytest.approx((0.5 + 1.0) / 2)
    assert got["recall@10"] == pytest.approx(1.0)
    assert got["mrr@10"] == pytest.approx((1 / 2 + 1) / 2)
    assert got["categories"]["single-hop"]["questions"] == 1 and got["categories"]["temporal"]["recall@10"] is None


def test_the_governed_policy_gives_each_asker_its_conversation_only() -> None:
    convs = retrieval.load_locomo(FIXTURE)
    engine = PolicyEngine(data=parse_policy_text(retrieval.governed_policy(convs)))
    asker = engine.subjects(retrieval.asker_id(convs[0]), ())
    ada = engine.subjects(retrieval.principal_id(convs[0], "Ada"), ())
    own = retrieval.turn_namespace(convs[0], convs[0].turns[0])
    other = retrieval.turn_namespace(convs[1], convs[1].turns[0])
    assert engine.decide(asker, "read", own).allowed and not engine.decide(asker, "read", other).allowed
    assert engine.decide(ada, "write", own).allowed
    assert not engine.decide(ada, "write", retrieval.turn_namespace(convs[0], convs[0].turns[1])).allowed  # Bo's


@pytest.mark.integration
@pytest.mark.slow
def test_a_run_scores_every_system_and_writes_json_and_chart(tmp_path: Path) -> None:
    code = retrieval.main([str(FIXTURE), "--conversations", "2", "--embedding", "hashing", "--out", str(tmp_path),
                           "--tmp", str(tmp_path)])
    assert code == 0
    result = json.loads((tmp_path / "retrieval.json").read_text())
    assert (tmp_path / "retrieval.png").stat().st_size > 10_000
    assert result["dataset"]["conversations"] == ["conv-tiny-1", "conv-tiny-2"]
    assert result["dataset"]["questions"] == 8 and result["dataset"]["turns"] == 20
    systems = result["systems"]
    assert list(systems) == list(retrieval.SYSTEMS)
    for name, m in systems.items():
        assert 0.0 <= m["recall@5"] <= m["recall@10"] <= 1.0, name
    assert systems["memwarden hybrid"]["foreign_results"] == 0
    assert systems["memwarden hybrid"]["recall@10"] == systems["memwarden hybrid, allow-all"]["recall@10"]
    assert systems["memwarden dense"]["latency"]["n"] == 8
    # Rare names are words BM25 finds: the lexical leg lifts the hashing embedding's recall.
    assert systems["memwarden hybrid"]["recall@5"] >= systems["memwarden dense"]["recall@5"]
    assert result["criteria"]["within_1pct_of_ungoverned"] and result["criteria"]["no_foreign_results"]
    assert set(result["hybrid_latency_cost"]) >= {"dense_p50_ms", "hybrid_p50_ms", "p50_ratio"}
