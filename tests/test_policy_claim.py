"""The ``claim`` action: what a role may declare about a record (its source, a higher trust),
decided on the record as claimed. The policy layer parses, explains and lints it; the write
path asks ``decide(subjects, "claim", namespace, attributes of the record as claimed)``."""

from __future__ import annotations

import pytest

from memwarden.cli import main
from memwarden.core.errors import PolicyError
from memwarden.policies.engine import PolicyEngine
from memwarden.policies.loading import parse_policy_text
from memwarden.policies.tools import explain, lint

pytestmark = pytest.mark.unit

POLICY = """
p, ingest, docs/**, write
p, ingest, docs/**, claim, allow, source=tool|external
p, ingest, docs/private/**, claim, deny, source=external
p, ingest, docs/review/**, claim, review, source=tool
p, editor, docs/**, write
g, crawler, ingest
g, ed, editor
"""


@pytest.fixture(scope="module")
def engine() -> PolicyEngine:
    return PolicyEngine(data=parse_policy_text(POLICY))


@pytest.mark.parametrize(("principal", "namespace", "source", "verdict", "rule"), [
    ("crawler", "docs/a", "tool", "allow", "p, ingest, docs/**, claim, allow, source=external|tool"),
    ("crawler", "docs/a", "external", "allow", "p, ingest, docs/**, claim, allow, source=external|tool"),
    ("crawler", "docs/a", "user", "deny", "no matching rule (deny by default)"),  # may not pass itself off as a user
    ("crawler", "docs/private/x", "external", "deny", "p, ingest, docs/private/**, claim, deny, source=external"),
    ("crawler", "docs/private/x", "tool", "allow", "p, ingest, docs/**, claim, allow, source=external|tool"),
    ("crawler", "docs/review/x", "tool", "review", "p, ingest, docs/review/**, claim, review, source=tool"),
    ("ed", "docs/a", "tool", "deny", "no matching rule (deny by default)"),      # writing is not claiming
])
def test_claim_is_decided_on_the_record_as_claimed(engine: PolicyEngine, principal: str, namespace: str,
                                                    source: str, verdict: str, rule: str) -> None:
    d = explain(engine, principal, [], "claim", namespace, kind="fact", source=source, labels={}, writer_roles=[])
    assert ("review" if d.review else "allow" if d.allowed else "deny") == verdict
    assert d.rule_text == rule
    assert d.explain().startswith(f"{verdict} claim on {namespace!r} for a record with kind=fact, source={source}")


def test_claim_with_the_source_unknown_fails_closed_and_names_the_rule(engine: PolicyEngine) -> None:
    d = explain(engine, "crawler", [], "claim", "docs/a")
    assert not d.allowed and d.depends is not None and d.depends.action == "claim"


def test_claim_lints_like_any_action() -> None:
    findings = lint(POLICY + "p, ingest, docs/x/**, claim, allow, source=tool\np, ingest, docs/**, claim, deny, kind=rule&kind=fact\n")
    assert {(f.lineno, f.code) for f in findings} == {(9, "redundant-allow"), (10, "unsatisfiable-condition")}
    with pytest.raises(PolicyError, match="unknown action 'claims'; expected one of .*history, claim"):
        parse_policy_text("p, ingest, docs/**, claims, allow, source=tool")


def test_policy_check_explains_a_claim(tmp_path, capsys: pytest.CaptureFixture) -> None:
    path = tmp_path / "claims.csv"
    path.write_text(POLICY, encoding="utf-8")
    args = ["policy", "check", "--policy", str(path), "--principal", "crawler", "--action", "claim",
            "--namespace", "docs/a", "--kind", "fact", "--no-labels", "--source"]
    assert main(args + ["tool"]) == 0
    assert main(args + ["user"]) == 1
    out = capsys.readouterr().out
    assert "allow claim on 'docs/a' for a record with kind=fact, source=tool" in out
    assert "deny claim on 'docs/a' for a record with kind=fact, source=user" in out
