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


MARKUP = ["[/x]", "[bold]alice", "[link=https://evil.example]click[/link]", "[red", "x[/]"]


def _run(capsys, *args: str) -> tuple[int, str]:
    code = main(list(args))
    out = capsys.readouterr()
    return code, out.out + out.err


def test_user_strings_are_never_read_as_markup(tmp_path: Path, capsys) -> None:
    # Before: rich raised MarkupError on "[/x]", and "[bold]..." or "[link=...]" were rendered.
    for text in MARKUP:
        code, out = _run(capsys, "policy", "check", "--policy", "hospital", "--principal", text, "--action", "read",
                         "--namespace", "ward3/patients/p1")
        assert code == 2 and repr(text) in out, out
        label = text.replace("/", "")  # a label holds no "/"
        code, out = _run(capsys, "policy", "check", "--policy", "hospital", "--principal", "alice", "--action",
                         "read", "--namespace", f"ward3/patients/{label}")
        assert code == 0 and f"allow read on 'ward3/patients/{label}'" in out, out
        code, out = _run(capsys, "audit", "verify", "--audit", str(tmp_path / text.replace("/", "_")))
        assert code == 2 and f"no audit log at {tmp_path / text.replace('/', '_')}" in out, out
    policy = tmp_path / "[bold]p.csv"
    policy.write_text("p, nurse, ward/**, [/x]\ng, bob, nurse\n", encoding="utf-8")
    code, out = _run(capsys, "policy", "lint", "--policy", str(policy))
    assert code == 1 and "unknown action '[/x]'" in out and "[bold]p.csv" in out, out


def test_audit_flows_prints_principals_and_namespaces_literally(tmp_path: Path, policy_file: Path, capsys,
                                                                monkeypatch) -> None:
    from memwarden.memory.embeddings import HashingEmbedding

    monkeypatch.setenv("COLUMNS", "200")  # a table folds its cells to the terminal's width

    with Memory.open(tmp_path / "data", policy=policy_file, embedding=HashingEmbedding()) as mem:
        writer = mem.session(Principal("[bold]eve", roles=["physician"]))
        rec = writer.write("Patient 1 is allergic to penicillin", "ward3/patients/[red]p1")
        writer.get(rec.id)
    code, out = _run(capsys, "audit", "flows", "--data", str(tmp_path / "data"))
    assert code == 0 and "[bold]eve" in out and "[red]p1" in out, out


def test_an_unknown_principal_is_told_it_has_no_roles(capsys) -> None:
    # Before: a plain "deny ... no matching rule", with no hint.
    code, out = _run(capsys, "policy", "check", "--policy", "hospital", "--principal", "zoe", "--action", "read",
                     "--namespace", "ward3/patients/p1")
    assert code == 2
    assert "unknown principal 'zoe': it has no roles" in out and "--role ROLE" in out and "'g, zoe, ROLE'" in out
    code, out = _run(capsys, "policy", "check", "--policy", "hospital", "--principal", "zoe", "--role", "nurse",
                     "--action", "read", "--namespace", "ward3/patients/p1")
    assert code == 1 and "depends on the record" in out


def test_the_scorecard_prints_user_text_literally() -> None:
    import io

    from rich.console import Console

    from memwarden.orchestrator.scorecard import RoleRow, Scorecard

    row = RoleRow("[bold]eve", ("[red]r",), reads=1, seen=["m1"])
    card = Scorecard({"[bold]eve": row}, entries=3, audit_ok=False, audit_problems=["entry 2: [/x]"],
                     title="[/title]", notes=["[link=https://evil.example]note[/link]"])
    out = io.StringIO()
    # Before: MarkupError on "[/title]"; "[bold]" and "[link=...]" were rendered, not shown.
    card.print(Console(file=out, width=200), describe=lambda _: "[/memory text]")
    text = out.getvalue()
    for literal in ("[/title]", "[bold]eve ([red]r)", "- [/memory text]", "[link=https://evil.example]note[/link]",
                    "BROKEN: entry 2: [/x]"):
        assert literal in text, text
