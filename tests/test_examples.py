"""Every example runs offline (scripted models) and tells the story its docstring promises.

The examples are scripts, not a package, so they are loaded by path. They run in-process with
the hashing test embedding for speed (two also through their command line, ``main``); the
hospital one also runs with the default MiniLM embedding, as ``memwarden demo`` will.
"""

from __future__ import annotations

import importlib.util
import io
import re
import sys
from pathlib import Path
from types import ModuleType

import pytest
from rich.console import Console

from memwarden.memory.embeddings import HashingEmbedding
from memwarden.orchestrator import Scorecard

pytestmark = pytest.mark.integration

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def _load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"memwarden_example_{name}", EXAMPLES / f"{name}.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # pydantic resolves the models' postponed annotations through it
    spec.loader.exec_module(module)
    return module


def _run(name: str, function: str, tmp_path: Path, *, width: int = 160, **kwargs) -> tuple[Scorecard, str]:
    out = io.StringIO()
    card = getattr(_load(name), function)(tmp_path / "data", Console(file=out, width=width), **kwargs)
    assert isinstance(card, Scorecard) and card.audit_ok
    return card, out.getvalue()


def test_hospital_ward(tmp_path: Path) -> None:
    card, out = _run("hospital_ward", "run_hospital", tmp_path, width=80, embedding=HashingEmbedding())
    # 80 columns, but for the commands to copy, which are printed whole.
    assert all(len(line) <= 80 for line in out.splitlines() if not line.startswith("  memwarden "))
    carol, dpo = card.row("carol"), card.row("dpo")
    assert carol.denied == 1 and carol.withheld > 0 and carol.returned > 0
    assert card.row("alice").withheld == card.row("bob").withheld == 0
    assert dpo.erased == 4 and "erasure of p14: 4 records erased (1 by cascade)" in out
    flat = " ".join(re.sub(r"[│┃]", " ", out).split())  # table cells wrap at 80 columns
    assert "not allowed: you may not read in 'ward3/patients/p12'" in flat  # the clerk's refusal
    assert "What each principal was shown" in out and "hash chain verified" in out
    assert "warfarin" not in out.split("Request 3")[1].split("Ward 3:")[0]  # nothing left about p14
    data = tmp_path / "data"
    command = f"memwarden receipt verify {data / 'erasure-receipt.json'} --public-key {data / 'key.pub'}"
    assert command in out
    from memwarden.cli import main

    assert main(command.split()[1:]) == 0  # the printed command, run as printed
    # What was shown and erased since is marked gone; the two words are explained.
    shown = out.split("What each principal was shown")[1]
    assert "[erased since: gone" in shown and "withheld: records a read's policy filter" in out
    assert "denied: requests the policy refused" in out
    # The follow-up commands, printed for the kept data, run as printed.
    follow = out.split("look further:")[1].splitlines()[1:]
    assert f"memwarden audit verify --data {data}" in follow[0]
    for line in follow[:3]:
        assert main(line.split()[1:]) == 0, line


@pytest.mark.parametrize("length", [1, 40, 75, 120])
def test_the_follow_up_commands_follow_their_heading_whatever_the_path(length: int) -> None:
    """Printed at 80 columns after a path of any length: the heading stays whole on its own
    line (after a long pytest path it wrapped as "look" / "further:", and the commands after
    it could not be found)."""
    from memwarden.demo import _show_next

    out = io.StringIO()
    kept = Path("/tmp") / ("d" * length)
    _show_next(Console(file=out, width=80), kept)
    lines = out.getvalue().splitlines()
    heading = lines.index("look further:")
    assert all(line.startswith("  memwarden ") for line in lines[heading + 1:]) and len(lines) > heading + 1


def test_hospital_ward_with_the_default_embedding_is_fast(tmp_path: Path) -> None:
    card, _ = _run("hospital_ward", "run_hospital", tmp_path)
    assert card.seconds is not None and card.seconds < 30
    assert card.row("dpo").erased == 4 and card.row("carol").denied == 1


def test_research_team(tmp_path: Path) -> None:
    card, out = _run("research_team", "run_research", tmp_path, embedding=HashingEmbedding())
    assert "analyst: an answer was refused and sent back" in out and "effect_pp: Input should be a valid number" in out
    assert card.row("ivy").denied == 1 and card.row("vik").withheld > 0
    assert "Cohort A (embargoed" not in out.split("What each principal was shown")[1].split("vik (reviewer)")[1]


def test_household(tmp_path: Path) -> None:
    card, out = _run("household", "run_household", tmp_path, embedding=HashingEmbedding())
    assert "paused" in out and "homebot asks a parent" in out
    assert card.row("homebot").replays == 1 and card.row("homebot").writes == 2
    assert card.row("lena").denied == 1 and card.row("gus").withheld > 0
    assert '"budget_known": false' in out


def test_household_parent_says_no(tmp_path: Path) -> None:
    card, out = _run("household", "run_household", tmp_path, embedding=HashingEmbedding(), approve="no")
    assert "not added: a parent said 'no'" in out and card.row("homebot").writes == 1


def test_supervisor_example(tmp_path: Path) -> None:
    pytest.importorskip("langgraph_supervisor")
    card, out = _run("supervisor_example", "run_supervisor", tmp_path, embedding=HashingEmbedding())
    assert "from the supervisor or the scout: 0" in out
    assert "learned the scout's finding from the governed memory: True" in out
    assert card.row("vik").withheld == 1  # the embargoed cohort


def test_swarm_example(tmp_path: Path) -> None:
    pytest.importorskip("langgraph_swarm")
    card, out = _run("swarm_example", "run_swarm", tmp_path, embedding=HashingEmbedding())
    assert "reached the models of: nurse\n" in out
    assert card.row("carol").denied == 1 and card.row("carol").withheld > 0


@pytest.mark.parametrize("name", ["hospital_ward", "supervisor_example"])
def test_command_line(name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    if name.endswith("_example"):
        pytest.importorskip(f"langgraph_{name.removesuffix('_example')}")
    assert _load(name).main(["--hashing", "--data", str(tmp_path / "d")]) == 0
    assert "hash chain verified" in capsys.readouterr().out
    assert (tmp_path / "d" / "audit.sqlite3").is_file()


def test_langmem_two_users(tmp_path: Path) -> None:
    pytest.importorskip("langmem")
    told = {(who, step): said for who, step, said in _load("langmem_two_users").run(tmp_path)}
    # Unwrapped, LangMem believes the put it made; the governed tool tells the model the truth.
    assert told["ann", "a standing rule for the team (unwrapped)"].startswith("[success] created memory ")
    assert told["ann", "a standing rule for the team"].startswith("[success] held for review: memory ")
    assert told["ann", "her own preference"].startswith("[success] created memory ")
    assert told["ben", "his own fact"].startswith("[success] created memory ")
    assert told["ben", "a look into Ann's space"] == "[error] not allowed: the memory policy does not let you do that here"
    assert told["ann", "the team rules"] == "[success] []"  # held: nobody finds it yet
    assert told["ben", "a delete in Ann's space"].startswith("[error] nothing deleted: no item ")
    assert told["ann", "her preference afterwards"] == "still there"


def test_attribute_conditions(tmp_path: Path) -> None:
    out = io.StringIO()
    cards = _load("attribute_conditions").run_conditions(tmp_path / "data", Console(file=out, width=200),
                                                         embedding=HashingEmbedding())
    text = out.getvalue()
    assert sorted(cards) == ["hospital", "household", "office"] and all(c.audit_ok for c in cards.values())
    hospital, household = cards["hospital"], cards["household"]
    # the nurse and the kid were each shown records, and the restricted / adults-only ones withheld
    assert hospital.row("bob").returned == 2 and hospital.row("bob").withheld >= 1
    assert hospital.row("bob").denied == 1 and hospital.row("alice").denied == 0
    assert household.row("lena").withheld == 1 and household.row("maria").withheld == 0
    assert "Psychiatric" not in text.split("bob")[1].split("\n")[0]
    assert "denied (p, nurse, ward3/patients/*, write, deny, kind=rule)" in text
    assert "denied (p, hr, office/handbook/**, write, deny, source=external|tool)" in text
    assert text.count("stored, quarantined") == 3
    assert "deny read on 'ward3/patients/p12' for a record with label.sensitivity=restricted" in text


def test_recall(tmp_path: Path) -> None:
    out = io.StringIO()
    got = _load("recall").run_recall(tmp_path / "data", Console(file=out, width=160))  # the bundled MiniLM
    assert got["code, hybrid"][0] == "sample"
    assert got["paraphrase"] == ["dizzy"]                       # no shared word: the dense leg's find
    assert sorted(got["may"]) == ["dizzy", "garden"]            # not the June fever
    assert got["as of"] == ["dose"] and got["now"] == ["new_dose"]
    assert {"rule", "mornings"} <= set(got["evidence"]) and len(got["evidence"]) < 6
    assert "invoice" in got["clerk"] and not {"sample", "sample 2", "sample 3", "dose", "new_dose"} & set(got["clerk"])
    assert "audit chain verified: True" in out.getvalue()


@pytest.mark.slow
def test_scale(tmp_path: Path) -> None:
    out = io.StringIO()
    got = _load("scale").run_scale(tmp_path / "data", Console(file=out, width=160), embedding=HashingEmbedding(),
                                   count=600)
    assert got["in_scope"] == {"alice": True, "bob": True} and got["audit_ok"]
    narrow, wide = (got["recall"][b] for b in (10, 400))
    assert wide >= 0.9 and wide >= narrow - 0.05, got["recall"]
    assert got["recall"]["index"] >= 0.95, got["recall"]  # an exact scan of 8-bit codes
    assert "recall of the exact top 10" in out.getvalue() and "audit chains verified: True" in out.getvalue()
