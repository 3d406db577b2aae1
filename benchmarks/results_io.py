"""Writing a benchmark's results: one JSON file, written whole or not at all (a run killed
while writing leaves the previous results, never half a file)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def write_result(result: dict[str, Any], out: Path) -> None:
    """``result`` as indented JSON at ``out`` (its folder created), through a temporary file."""
    out.parent.mkdir(parents=True, exist_ok=True)
    partial = out.with_suffix(out.suffix + ".tmp")
    partial.write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    partial.replace(out)
