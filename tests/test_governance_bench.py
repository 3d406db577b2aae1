"""The governance benchmark: scenario generator, metric functions and a --quick end-to-end run."""

from __future__ import annotations

import json
import subprocess
import sys
import unicodedata
from pathlib import Path

import pytest

from benchmarks import governance
from benchmarks import governance_scenarios as gs
from memwarden import InvalidRequest
from memwarden.policies.engine import PolicyEngine
from memwarden.policies.loading import parse_policy_text
from memwarden.core.namespace import canonical_namespace

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.unit


# -- generator ---------------------------------------------------------------------------

def test_same_seed_gives_the_same_scenario() -> None:
    for domain in gs.DOMAINS:
        a = gs.generate(domain, seed=3, index=1, probes=40, size="quick")
        b = gs.generate(domain, seed=3, index=1, probes=40, size="quick")
        assert a == b
        assert a.fingerprint() == b.fingerprint()
        assert a.policy_csv() == b.policy_csv()
    assert gs.generate("medical", seed=4, index=1, probes=40, size="quick").fingerprint() != \
        gs.generate("medical", seed=3, index=1, probes=40, size="quick").fingerprint()
    assert gs.generate("medical", seed=3, index=2, probes=40, size="quick").fingerprint() != \
        gs.generate("medical", seed=3, index=1, probes=40, size="quick").fingerprint()


def test_probes_are_split_exactly_and_every_event_kind_occurs() -> None:
    scenarios = gs.generate_all(7, 1001, scenarios_per_domain=1, size="quick")
    assert sum(len(s.probes) for s in scenarios) == 1001
    kinds = {type(e).__name__ for s in scenarios for e in s.events}
    assert kinds == {"Write", "Update", "Forget", "Erase", "Checkpoint"}
    categories = {p.category for s in scenarios for p in s.probes}
    assert categories == set(gs.CATEGORIES)
    for s in scenarios:
        assert len({p.id for p in s.probes}) == len(s.probes)
        # memwarden ids are (writer, namespace, content): the generator never repeats a text in a namespace
        assert len({(i.namespace, i.text) for i in s.items.values()}) == len(s.items)


@pytest.mark.parametrize("domain", gs.DOMAINS)
def test_ground_truth_agrees_with_memwardens_reading_of_the_policy(domain: str) -> None:
    scenario = gs.generate(domain, seed=1, probes=30, size="quick")
    engine = PolicyEngine(data=parse_policy_text(scenario.policy_csv(), source=scenario.name))
    acl = gs.Acl(scenario.principals, scenario.rules)
    spaces = {i.namespace for i in scenario.items.values()}
    for p in scenario.principals:
        subjects = engine.subjects(p.id, ())
        for ns in spaces:
            for action in ("read", "write", "update"):
                assert acl.allowed(p.id, action, ns) == engine.decide(subjects, action, ns).allowed, (p.id, action, ns)
        assert scenario.leak_targets[p.id] == frozenset(
            f for f, home in scenario.fact_homes.items() if not engine.decide(subjects, "read", home).allowed)


@pytest.mark.parametrize("domain", gs.DOMAINS)
def test_derived_memories_never_widen_who_may_read_a_fact(domain: str) -> None:
    scenario = gs.generate(domain, seed=2, probes=30, size="full")
    acl = gs.Acl(scenario.principals, scenario.rules)
    derived = [i for i in scenario.items.values() if i.parents]
    assert derived
    for item in derived:
        for parent in item.parents:
            assert acl.readers(item.namespace) <= acl.readers(scenario.items[parent].namespace)
        assert item.carries == frozenset().union(*(scenario.items[p].carries for p in item.parents))


def test_namespace_spellings() -> None:
    import random

    rng = random.Random(0)
    home = ("hospital", "ward3", "patients", "p12")
    for _ in range(50):
        spelled, style = gs.confusable(home, rng)
        assert spelled != home and style in ("fullwidth", "math_bold")
        assert canonical_namespace(spelled) == home
        assert tuple(unicodedata.normalize("NFKC", label) for label in spelled) == home
    readable = [("hospital", "ward5", "notes"), ("hospital", "staff", "dr_x", "notes")]
    seen = set()
    for _ in range(200):
        spelled, variant = gs.trick(home, readable, rng)
        seen.add(variant)
        if variant == "homoglyph":
            assert canonical_namespace(spelled) != home  # a valid label, but another place
        else:
            with pytest.raises(InvalidRequest):
                canonical_namespace(spelled)
    assert {"zero_width", "dotdot", "percent_dotdot", "slash_in_label", "homoglyph"} <= seen


# -- metrics -----------------------------------------------------------------------------

def _item(iid: str, fact: str | None, carries: set[str], text: str = "some words here", *, version: int = 1) -> gs.Item:
    return gs.Item(iid, fact or iid, fact, version, ("a", "b"), text, "w", "fact", (), (), frozenset(carries), False, "c")


ITEMS = {
    "m1": _item("m1", "f1", {"f1"}, "secret salary of bob"),             # f1: a leak target for the asker
    "m2": _item("m2", "f2", {"f2"}, "the meeting is on monday"),          # f2 v1 (superseded)
    "m3": _item("m3", "f2", {"f2"}, "the meeting is on tuesday", version=2),
    "m4": _item("m4", None, {"f1", "f3"}, "digest: salary and plans"),    # derived from f1 and f3
    "m5": _item("m5", "f3", {"f3"}, "plans for the trip"),
}


def _probe(relevant: tuple[str, ...] = ()) -> gs.Probe:
    return gs.Probe("p", "alice", "q", ("a",), "legit", "", ("f2",), relevant)


def test_an_unauthorised_memory_is_counted_with_what_carries_it() -> None:
    score = governance.score_probe(_probe(("m3",)), ["m3", "m1", "m4"], ["a", "b", "c"], ITEMS,
                                   leak_targets=frozenset({"f1"}), deleted={}, superseded=frozenset())
    assert score.unauthorised == 2 and score.leaked == ("m1", "m4")
    assert score.deleted == 0 and score.stale == 0 and score.recall == 1.0
    clean = governance.score_probe(_probe(("m3",)), ["m3", "m5"], ["a", "b"], ITEMS,
                                   leak_targets=frozenset({"f1"}), deleted={}, superseded=frozenset())
    assert clean.unauthorised == 0 and clean.leaked == ()


def test_a_deleted_fact_returned_is_counted_directly_through_versions_and_derivations() -> None:
    deleted = {"f3": "forget", "f2": "erase"}
    superseded = frozenset({"m2"})
    score = governance.score_probe(_probe(), ["m5", "m4", "m2", "m3", "m1"], ["x"] * 5, ITEMS,
                                   leak_targets=frozenset(), deleted=deleted, superseded=superseded)
    assert score.deleted == 4
    assert sorted(score.causes) == ["erase:direct", "erase:version", "forget:derived", "forget:direct"]
    assert score.stale == 0  # a superseded version of a deleted fact is a deleted leak, not a stale one
    assert score.recall is None


def test_stale_versions_recall_tokens_and_unknown_results() -> None:
    superseded = frozenset({"m2"})
    score = governance.score_probe(_probe(("m3",)), ["m2", None, "m3"], ["one two", "three", "four five six"], ITEMS,
                                   leak_targets=frozenset(), deleted={}, superseded=superseded)
    assert score.stale == 1 and score.unknown == 1 and score.recall == 1.0 and score.tokens == 6
    missed = governance.score_probe(_probe(("m3",)), ["m2", "m5", "m1", "m4", "m5", "m3"], ["w"] * 6, ITEMS,
                                    leak_targets=frozenset(), deleted={}, superseded=superseded)
    assert missed.recall == 0.0 and missed.returned == gs.K  # only the top k count
    tally = governance.Tally()
    outcome = governance.Outcome("ok", [], [])
    tally.add(_probe(("m3",)), outcome, score)
    tally.add(_probe(("m3",)), outcome, missed)
    m = tally.metrics()
    assert m["utility_recall_at_5"] == 0.5 and m["stale_rate"] == 1.0 and m["stale_memories"] == 2


# -- end to end --------------------------------------------------------------------------

@pytest.fixture(scope="module")
def quick_result(tmp_path_factory: pytest.TempPathFactory) -> dict:
    out = tmp_path_factory.mktemp("govbench")
    assert governance.main(["--quick", "--out", str(out), "--tmp", str(out)]) == 0
    return json.loads((out / "governance.json").read_text(encoding="utf-8"))


@pytest.mark.system
@pytest.mark.slow
def test_quick_run_memwarden_leaks_nothing_unauthorised(quick_result: dict) -> None:
    overall = quick_result["overall"]
    mw, chroma = overall["memwarden"], overall["chroma"]
    assert mw["probes"] == governance.QUICK_PROBES
    assert quick_result["failures"]["memwarden"]["count"] == 0
    assert mw["unknown_results"] == 0
    assert mw["unauthorised_leaked_memories"] == 0
    for domain in quick_result["domains"].values():
        assert domain["memwarden"]["unauthorised_leaked_memories"] == 0
    assert mw["stale_memories"] == 0
    assert mw["utility_vs_chroma"] >= 0.95
    assert mw["canonical_spelling_recall_at_5"] > chroma["canonical_spelling_recall_at_5"]
    # The probes do find what they look for: the ungoverned baseline leaks and goes stale.
    assert chroma["unauthorised_leaked_memories"] > 0 and chroma["stale_memories"] > 0
    assert overall["langgraph"]["unauthorised_leaked_memories"] > 0
    assert not mw["deleted_leak_causes"]


@pytest.mark.integration
@pytest.mark.slow
def test_quick_run_memwarden_leaks_nothing_deleted(quick_result: dict) -> None:
    assert quick_result["overall"]["memwarden"]["deleted_leaked_memories"] == 0


@pytest.mark.system
def test_runs_as_a_script() -> None:
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "governance.py"), "--help"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and "--probes" in done.stdout
