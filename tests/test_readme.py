"""The README's tour runs as written (with the real offline MiniLM embedding)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

README = Path(__file__).resolve().parent.parent / "README.md"


@pytest.mark.integration
def test_readme_tour_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture) -> None:
    block = re.search(r"## Five-minute tour\s+```python\n(.*?)```", README.read_text(encoding="utf-8"), re.S)
    assert block, "the README lost its tour"
    monkeypatch.chdir(tmp_path)
    exec(compile(block.group(1), "README.md", "exec"), {})  # our own documentation
    out = capsys.readouterr().out
    assert "Patient 12 is allergic to penicillin" in out
    assert "may not read anything" in out
    assert "ok=True" in out


def _block(heading: str, lang: str) -> str:
    # The first block of that kind under the heading, before the next heading.
    block = re.search(rf"## {heading}\n(?:(?!\n## ).)*?```{lang}\n(.*?)```", README.read_text(encoding="utf-8"), re.S)
    assert block, f"the README lost its {heading!r} block"
    return block.group(1)


@pytest.mark.integration
def test_readme_langgraph_quickstart_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                          capsys: pytest.CaptureFixture) -> None:
    code = _block("LangGraph quickstart", "python")
    assert len(code.strip().splitlines()) <= 10
    monkeypatch.chdir(tmp_path)
    exec(compile(code, "README.md", "exec"), {})  # our own documentation
    assert capsys.readouterr().out.strip() == "{'seen': ['vitals']}"


@pytest.mark.integration
def test_readme_audit_commands_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                   capsys: pytest.CaptureFixture) -> None:
    from memwarden.cli import main

    monkeypatch.chdir(tmp_path)
    for line in _block("Audit it", "sh").splitlines():
        command = line.split("#")[0].split()
        assert command[0] == "memwarden"
        assert main(command[1:]) == 0, line
    out = capsys.readouterr().out
    assert "hash chain, MACs and anchored head intact" in out and "who may read ward3/patients/p12:" in out
    assert (tmp_path / "flows.html").is_file() and (tmp_path / "audit.jsonl").is_file()
