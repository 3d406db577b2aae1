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
