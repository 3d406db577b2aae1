"""The README's picture of the governed path is what scripts/governed_path_svg.py draws."""

from __future__ import annotations

import runpy
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = runpy.run_path(str(ROOT / "scripts" / "governed_path_svg.py"))


def test_the_checked_in_picture_is_current() -> None:
    assert SCRIPT["OUT"].read_text(encoding="utf-8") == SCRIPT["render"](), \
        "docs/governed-path.svg is stale: run python scripts/governed_path_svg.py"


def test_the_picture_is_well_formed_and_self_contained() -> None:
    text = SCRIPT["render"]()
    ET.fromstring(text)  # well-formed XML
    assert "href" not in text and "<script" not in text  # nothing fetched, nothing run
    assert "docs/governed-path.svg" in (ROOT / "README.md").read_text(encoding="utf-8")
