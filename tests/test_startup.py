"""``import memwarden`` and ``memwarden --help`` load no storage, policy, guard or LangGraph
module: those load when first used (the issue: every ``--help`` took seconds because the
package root built the injection detector). What is loaded is checked, not how long it takes;
benchmarks/cli_startup.py measures the time."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

pytestmark = pytest.mark.system

#: Modules whose import costs most of a second together; none is needed to parse arguments.
HEAVY = ["memwarden.memory.memory", "memwarden.memory.pipeline", "memwarden.guards.injection",
         "memwarden.policies.engine", "memwarden.core.records", "casbin", "chromadb", "numpy", "pydantic",
         "langgraph", "opentelemetry"]


def _loaded_after(code: str) -> set[str]:
    probe = f"import sys, json\n{code}\nprint(json.dumps(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=120)
    modules = set(json.loads(out.stdout.splitlines()[-1]))
    return {name for name in HEAVY if name in modules}


@pytest.mark.parametrize("code", [
    "import memwarden",
    "from memwarden import AccessDenied, InvalidRequest, __version__",
    "from memwarden.cli import build_parser; build_parser().format_help()",
    "from memwarden.cli import main\ntry:\n    main(['audit', 'export', '--help'])\nexcept SystemExit:\n    pass",
])
def test_import_and_help_load_no_heavy_module(code: str) -> None:
    assert _loaded_after(code) == set()


def test_a_public_name_loads_on_first_use_and_wires_the_store() -> None:
    import memwarden
    from memwarden.core import adapters

    assert {"Memory", "Principal", "SearchOp", "Session", "Settings"} <= set(dir(memwarden))
    assert memwarden.Memory.__module__ == "memwarden.memory.memory"
    assert memwarden.Principal("alice").id == "alice"
    # The store is wired however Memory was imported: the package root always runs first.
    assert adapters.store_adapter is not None
    with pytest.raises(AttributeError, match="no attribute 'Nothing'"):
        memwarden.Nothing


def test_version(capsys) -> None:
    from memwarden import __version__
    from memwarden.cli import main

    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    assert exit_.value.code == 0 and capsys.readouterr().out.strip() == f"memwarden {__version__}"
