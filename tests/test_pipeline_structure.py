"""One way through: only the pipeline decides, touches the store, audits and traces.

The operation handlers (memwarden/memory/handlers) declare needs and return effects; they may
not import the policy engine's decisions, a backend, the audit log, tracing or the store view's
internals, and they reach everything through their OpContext's public methods.
"""

from __future__ import annotations

import pytest

import ast
from pathlib import Path

import memwarden.memory.handlers as handlers_package

pytestmark = pytest.mark.unit

HANDLERS = sorted(Path(handlers_package.__file__).parent.glob("*.py"))
# What a handler must never import: it would be a second way to decide, store, audit or trace.
FORBIDDEN = ("memwarden.memory.backends", "memwarden.memory.partitioned", "memwarden.memory.coalesce",
             "memwarden.memory.lexical", "memwarden.memory.audit", "memwarden.memory.tracing",
             "memwarden.memory.metrics", "memwarden.memory.pipeline", "memwarden.memory.compaction",
             "memwarden.memory.journal", "memwarden.memory.tombstones", "casbin", "chromadb")
FORBIDDEN_NAMES = ("PolicyEngine",)
# Values and pure functions of those modules a handler may use: they decide and store nothing.
ALLOWED = {("memwarden.memory.backends", "StoredRow"), ("memwarden.memory.tombstones", "tombstone_mark")}


def _imports(path: Path) -> list[tuple[str, list[str]]]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(alias.name, []) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.append((node.module, [alias.name for alias in node.names]))
    return found


def test_there_are_handlers_to_check() -> None:
    assert {p.name for p in HANDLERS} >= {"reads.py", "writes.py", "search.py", "lifecycle.py", "erasure.py"}


def test_handlers_import_no_backend_policy_engine_audit_or_tracing() -> None:
    bad = [(p.name, module, names) for p in HANDLERS for module, names in _imports(p)
           if (module.startswith(FORBIDDEN) and not all((module, n) in ALLOWED for n in names))
           or set(names) & set(FORBIDDEN_NAMES)]
    assert bad == []


def test_handlers_use_only_the_public_surface_of_their_context() -> None:
    bad = []
    for path in HANDLERS:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__") \
                    and isinstance(node.value, ast.Name) and node.value.id == "ctx":
                bad.append((path.name, node.attr, node.lineno))
    assert bad == []


def test_the_store_is_held_by_the_pipeline_alone() -> None:
    root = Path(handlers_package.__file__).parents[3]
    holders = []
    for path in sorted((root / "memwarden").rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        if "CoalescingBackend(" in text and "class CoalescingBackend" not in text:
            holders.append(path.relative_to(root).as_posix())
    assert holders == ["memwarden/memory/pipeline.py"]
