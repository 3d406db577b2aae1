"""The ``memwarden`` command: policy check and lint, erase with a receipt, sweep."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from memwarden import Memory, Principal
from memwarden.cli import main


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "memwarden.cli", *args], capture_output=True, text=True,
                          timeout=300, env={"COLUMNS": "200", "PATH": "/usr/bin:/bin"})


def test_policy_check_prints_decision_and_rule() -> None:
    denied = _cli("policy", "check", "--policy", "hospital", "--principal", "carol", "--action", "read",
                  "--namespace", "ward3/patients/p12")
    assert denied.returncode == 1
    assert "deny read on 'ward3/patients/p12': p, billing_clerk, ward3/patients/*, read, deny" in denied.stdout
    allowed = _cli("policy", "check", "--policy", "hospital", "--principal", "alice", "--action", "read",
                   "--namespace", "ward3/patients/p12")
    assert allowed.returncode == 0 and "allow read" in allowed.stdout
    bad = _cli("policy", "check", "--policy", "hospital", "--principal", "alice", "--action", "read",
               "--namespace", "ward3/../billing")
    assert bad.returncode == 2 and "reserved" in bad.stdout


def test_policy_lint_reports_problems(tmp_path: Path) -> None:
    policy = tmp_path / "p.csv"
    policy.write_text("p, nurse, ward/**, read\np, nurse, ward/**, read\np, nurse, ward/**/x, read\n", encoding="utf-8")
    result = _cli("policy", "lint", "--policy", str(policy))
    assert result.returncode == 1
    assert "parse-error" in result.stdout and "duplicate-rule" in result.stdout
    assert _cli("policy", "lint", "--policy", "office").returncode == 0


def test_erase_prints_a_content_free_receipt(tmp_path: Path, policy_file: Path, capsys) -> None:
    from memwarden.memory.embeddings import HashingEmbedding

    with Memory.open(tmp_path / "d", policy=policy_file, embedding=HashingEmbedding()) as mem:
        mem.session(Principal("alice")).write("Patient 77 is allergic to latex", "ward3/patients/p77", subjects=["p77"])
    code = main(["erase", "--data", str(tmp_path / "d"), "--policy", str(policy_file), "--principal", "dpo",
                 "--subject", "p77"])
    out = capsys.readouterr().out
    receipt = json.loads(out)
    assert code == 0 and receipt["count"] == 1 and receipt["actor"] == "dpo"
    assert "latex" not in out and len(receipt["erased_ids_sha256"][0]) == 64
