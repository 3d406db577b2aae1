"""The import graph of memwarden: no cycle, and no import from a lower layer into a higher one.

Layers, lowest first: core (with databases), policies, guards, memory, integrations,
orchestrator, demo, cli. Every import counts, including those inside functions and under
``TYPE_CHECKING``: a lazy import is still a dependency. The package root (memwarden/__init__.py)
is the composition root above every layer, and may import any of them.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

PACKAGE = Path(__file__).resolve().parent.parent / "memwarden"

#: Each layer, lowest first, with the top-level modules and subpackages it holds.
LAYERS: list[tuple[str, set[str]]] = [
    ("core", {"core", "databases"}),
    ("policies", {"policies"}),
    ("guards", {"guards"}),
    ("memory", {"memory"}),
    ("integrations", {"integrations"}),
    ("orchestrator", {"orchestrator"}),
    ("demo", {"demo"}),
    ("cli", {"cli", "cli_common", "cli_policy", "cli_proof", "cli_records", "cli_scorecard"}),
]
RANK = {part: rank for rank, (_, parts) in enumerate(LAYERS) for part in parts}

#: A module longer than this says why in its docstring, in a paragraph "Why over 500 lines: ...".
MAX_LINES = 500


def _modules() -> dict[str, Path]:
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


def _imports(name: str, path: Path, known: set[str]) -> set[str]:
    """The modules of the package that ``name`` imports (the longest known prefix of each)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    base = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if node.level:
                parts = base.split(".")
                module = ".".join(parts[:len(parts) - (node.level - 1)] + ([module] if module else []))
            targets = [module] + [f"{module}.{alias.name}" for alias in node.names]
        else:
            continue
        for target in targets:
            while target and target not in known:
                target = target.rpartition(".")[0]
            if target and target != name:
                out.add(target)
    return out


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    known = set(modules)
    graph: dict[str, set[str]] = defaultdict(set)
    for name, path in modules.items():
        # An import of a module's own package (``from memwarden.memory import x`` runs
        # memwarden/memory/__init__.py first) is how Python works, not a dependency on it.
        graph[name] |= {t for t in _imports(name, path, known) if not name.startswith(t + ".")}
    return graph


def _layer(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else None  # None: the package root


def _cycles(graph: dict[str, set[str]]) -> list[set[str]]:
    """Strongly connected components of more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(component)
    return found


def test_every_module_belongs_to_a_layer() -> None:
    unplaced = sorted(m for m in _modules() if _layer(m) is not None and _layer(m) not in RANK)
    assert not unplaced, f"modules in no layer (add them to LAYERS in {Path(__file__).name}): {unplaced}"


def test_no_import_runs_upward() -> None:
    graph = _graph()
    upward = sorted((a, b) for a, targets in graph.items() for b in targets
                    if _layer(a) in RANK and _layer(b) in RANK and RANK[_layer(a)] < RANK[_layer(b)])
    assert not upward, "imports from a lower layer into a higher one:\n" + "\n".join(f"  {a} -> {b}" for a, b in upward)


def test_no_import_cycle() -> None:
    cycles = _cycles(_graph())
    assert not cycles, "import cycles:\n" + "\n".join("  " + " <-> ".join(sorted(c)) for c in cycles)


def test_a_module_over_500_lines_says_why() -> None:
    unexplained = []
    for name, path in _modules().items():
        text = path.read_text(encoding="utf-8")
        if text.count("\n") > MAX_LINES and "Why over 500 lines:" not in (ast.get_docstring(ast.parse(text)) or ""):
            unexplained.append(f"{name} ({text.count(chr(10))} lines)")
    assert not unexplained, "modules over 500 lines with no reason in their docstring: " + ", ".join(unexplained)


def test_the_check_finds_what_it_looks_for() -> None:
    # The rules above pass vacuously if the graph is empty or the cycle finder is blind.
    graph = _graph()
    assert "memwarden.core.ops" in graph["memwarden.memory.session"]
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [{"a", "b", "c"}]
    assert _cycles({"a": {"b"}, "b": set()}) == []
