"""The opt-in review-heavy snippet of docs/policies.md (issue 18, the review-heavy arm): appended
to the bundled policies it holds every agent-, tool- or externally-sourced write into the
shared knowledge namespaces it names, leaves a user's own writes alone, and never admits a
write the bundled policies refuse (a review line also grants the write it holds)."""

from __future__ import annotations

import itertools
import re
from importlib import resources
from pathlib import Path

import pytest

from memwarden.core.namespace import canonical_namespace
from memwarden.policies.conditions import RecordAttributes
from memwarden.policies.engine import PolicyEngine
from memwarden.policies.loading import parse_policy_text

pytestmark = pytest.mark.unit

DOC = Path(__file__).resolve().parents[1] / "docs" / "policies.md"
BUNDLED = "\n".join(resources.files("memwarden.policies").joinpath(f"bundled/{n}.csv").read_text(encoding="utf-8")
                    for n in ("hospital", "household", "office"))


def _snippet() -> str:
    text = DOC.read_text(encoding="utf-8")
    section = text.split("### Opt-in: review every agent-written statement in shared knowledge", 1)[1]
    block = re.search(r"```text\n(.*?)```", section, re.S)
    assert block, "the section holds its policy lines in a fenced block"
    return block.group(1)


SNIPPET = _snippet()
LINES = [line.split(", ") for line in SNIPPET.splitlines() if line.startswith("p, ")]
# Writers by role (their g lines come from the bundled policies) and namespaces to try: each
# line's pattern made concrete, and the spaces next to them.
def _concrete(pattern: str) -> tuple[str, ...]:
    return tuple(pattern.replace("/**", "/x/y").replace("*", "z").split("/"))


# Each line's own role and pattern made concrete (what it must hold), and every role against
# those and neighbouring spaces (where nothing may be admitted that was refused before).
COVERED = sorted({(role, _concrete(pattern)) for _, role, pattern, *_ in LINES})
ROLES = sorted({role for _, role, *_ in LINES} | {"parent", "kid", "guest", "billing_clerk"})
NAMESPACES = sorted({ns for _, ns in COVERED} | {("home", "shared", "x"), ("home", "finance", "x"), ("office", "hr", "x"),
                                                 ("ward3", "billing", "x"), ("home", "kids", "lena", "reminders")})
DEFAULT = PolicyEngine(data=parse_policy_text(BUNDLED))
HEAVY = PolicyEngine(data=parse_policy_text(BUNDLED + "\n" + SNIPPET))


def _decide(engine: PolicyEngine, role: str, namespace: tuple[str, ...], source: str, content: str):
    subjects = engine.subjects(f"someone-{role}", (role,))
    return engine.decide(subjects, "write", canonical_namespace(namespace),
                         RecordAttributes("fact", source, subjects.roles, {}, content))


def test_every_line_is_an_agent_sourced_review_of_a_write() -> None:
    assert LINES and all(line[3:5] == ["write", "review"] and "source=agent" in line[5] for line in LINES)


@pytest.mark.parametrize(("role", "namespace"), COVERED)
def test_an_agent_statement_where_a_line_applies_is_held(role: str, namespace: tuple[str, ...]) -> None:
    # The bundled policy lets an agent's statement in as written; the snippet holds it. A
    # tool's is held or refused either way (the bundled source=external|tool lines).
    before, after = (_decide(e, role, namespace, "agent", "statement") for e in (DEFAULT, HEAVY))
    assert (before.allowed, before.review) == (True, False)
    assert (after.allowed, after.review) == (True, True)
    tool = _decide(HEAVY, role, namespace, "tool", "statement")
    assert tool.review or not tool.allowed


def test_the_snippet_never_widens_a_write_nor_touches_a_users_own() -> None:
    for role, namespace, source, content in itertools.product(ROLES, NAMESPACES, ("user", "agent", "tool"),
                                                              ("statement", "directive")):
        before, after = (_decide(e, role, namespace, source, content) for e in (DEFAULT, HEAVY))
        assert after.allowed <= before.allowed, f"{role} may now write {namespace} ({source}, {content})"
        if source == "user":
            assert (after.allowed, after.review) == (before.allowed, before.review)
