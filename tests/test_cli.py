"""The ``memwarden`` command: policy check and lint, erase with a receipt, sweep."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from memwarden import Memory, Principal
from memwarden.cli import main

pytestmark = pytest.mark.integration


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "memwarden.cli", *args], capture_output=True, text=True,
                          timeout=300, env={"COLUMNS": "200", "PATH": "/usr/bin:/bin"})


@pytest.mark.system
@pytest.mark.slow
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


@pytest.mark.system
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


# -- proof for auditors: keys export-public, receipt verify, audit export, audit verify --log -------

@pytest.fixture
def erased(tmp_path: Path, policy_file: Path) -> Path:
    """A memory directory with one erasure, its receipt written with `erase -o`."""
    from memwarden.memory.embeddings import HashingEmbedding

    data = tmp_path / "d"
    with Memory.open(data, policy=policy_file, embedding=HashingEmbedding()) as mem:
        mem.session(Principal("alice")).write("Patient 77 is allergic to latex", "ward3/patients/p77", subjects=["p77"])
    assert main(["erase", "--data", str(data), "--policy", str(policy_file), "--principal", "dpo",
                 "--subject", "p77", "-o", str(tmp_path / "receipt.json")]) == 0
    return data


def _run(capsys, *argv: str) -> tuple[int, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out + captured.err


def test_keys_export_public(erased: Path, tmp_path: Path, capsys) -> None:
    code, out = _run(capsys, "keys", "export-public", "--data", str(erased))
    assert code == 0 and json.loads(out)["format"] == "memwarden-public-keys-v1"
    assert "private" not in out
    code, out = _run(capsys, "keys", "export-public", "--key", str(erased / "audit.key"), "-o", str(tmp_path / "k.pub"))
    assert code == 0 and "fingerprint" in out
    assert json.loads((tmp_path / "k.pub").read_text())["keys"][0]["key_id"] in out
    code, out = _run(capsys, "keys", "export-public", "--data", str(tmp_path / "nothing"))
    assert code == 2 and "no signing key" in out
    (erased / "audit.signing.key").write_text("garbage")
    code, out = _run(capsys, "keys", "export-public", "--data", str(erased))
    assert code == 2 and "not a memwarden signing key file" in out


def test_receipt_verify(erased: Path, tmp_path: Path, capsys, policy_file: Path) -> None:
    receipt, pub = tmp_path / "receipt.json", tmp_path / "key.pub"
    assert main(["keys", "export-public", "--data", str(erased), "-o", str(pub)]) == 0
    shutil.rmtree(erased)  # verifying never needs the data directory
    code, out = _run(capsys, "receipt", "verify", str(receipt), "--public-key", str(pub))
    assert code == 0 and "ok" in out and "subject 'p77', 1 record(s) erased" in out and "by dpo" in out
    # a wrong key: another store's
    from memwarden.memory.embeddings import HashingEmbedding

    with Memory.open(tmp_path / "other", policy=policy_file, embedding=HashingEmbedding()) as mem:
        mem.session(Principal("alice")).write("x", "ward3/patients/p5")
    assert main(["keys", "export-public", "--data", str(tmp_path / "other"), "-o", str(tmp_path / "other.pub")]) == 0
    code, out = _run(capsys, "receipt", "verify", str(receipt), "--public-key", str(tmp_path / "other.pub"))
    assert code == 1 and "INVALID" in out and "not among the keys" in out
    # tampered, missing, garbled
    tampered = tmp_path / "tampered.json"
    tampered.write_text(receipt.read_text().replace('"count": 1', '"count": 0'))
    code, out = _run(capsys, "receipt", "verify", str(tampered), "--public-key", str(pub))
    assert code == 1 and "INVALID" in out
    code, out = _run(capsys, "receipt", "verify", str(tmp_path / "missing.json"), "--public-key", str(pub))
    assert code == 2 and "cannot read the receipt" in out
    (tmp_path / "garbled.json").write_text('{"format": "memwarden-erasure')
    code, out = _run(capsys, "receipt", "verify", str(tmp_path / "garbled.json"), "--public-key", str(pub))
    assert code == 2 and "is not JSON" in out
    code, out = _run(capsys, "receipt", "verify", str(receipt), "--public-key", str(receipt))
    assert code == 2 and "not a memwarden public key file" in out


@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
def test_audit_export_and_verify_offline(erased: Path, tmp_path: Path, capsys, fmt: str) -> None:
    pub, log, head = tmp_path / "key.pub", tmp_path / f"log.{fmt}", tmp_path / "head.json"
    assert main(["keys", "export-public", "--data", str(erased), "-o", str(pub)]) == 0
    code, out = _run(capsys, "audit", "export", "--data", str(erased), "--format", fmt, "-o", str(log),
                     "--head", str(head))
    # A write, and an erasure's intent and final entries.
    assert code == 0 and log.exists() and json.loads(head.read_text())["count"] == 3
    text = log.read_text()
    assert "latex" not in text and "Patient 77" not in text
    if fmt == "csv":
        assert text.startswith("seq,prev,hash,body,ts,op,principal")
    else:
        assert json.loads(text.splitlines()[-1])["head"] == json.loads(head.read_text())
    shutil.rmtree(erased)
    code, out = _run(capsys, "audit", "verify", "--log", str(log), "--public-key", str(pub), "--head", str(head))
    assert code == 0 and "ok: 3 entries" in out
    lines = text.splitlines()
    dropped = tmp_path / f"dropped.{fmt}"
    dropped.write_text("\n".join(lines[:1] + lines[2:] if fmt == "csv" else lines[1:]) + "\n")
    code, out = _run(capsys, "audit", "verify", "--log", str(dropped), "--public-key", str(pub), "--head", str(head))
    assert code == 1 and "TAMPERED" in out and "entry 1 missing" in out


def test_audit_export_to_stdout_and_its_errors(erased: Path, tmp_path: Path, capsys) -> None:
    assert main(["audit", "export", "--data", str(erased)]) == 0
    lines = capsys.readouterr().out.splitlines()  # the export alone on stdout
    assert [json.loads(line)["seq"] for line in lines[:-1]] == [1, 2, 3] and set(json.loads(lines[-1])) == {"head"}
    code, out = _run(capsys, "audit", "export", "--data", str(erased), "--format", "csv")
    assert code == 2 and "needs --head" in out
    code, out = _run(capsys, "audit", "export", "--data", str(tmp_path / "nothing"))
    assert code == 2 and "no audit log" in out


def test_audit_verify_public_key_errors(erased: Path, tmp_path: Path, capsys) -> None:
    pub, log = tmp_path / "key.pub", tmp_path / "log.jsonl"
    assert main(["keys", "export-public", "--data", str(erased), "-o", str(pub)]) == 0
    assert main(["audit", "export", "--data", str(erased), "-o", str(log)]) == 0
    capsys.readouterr()
    code, out = _run(capsys, "audit", "verify", "--log", str(log))
    assert code == 2 and "--public-key" in out
    code, out = _run(capsys, "audit", "verify", "--log", str(tmp_path / "none.jsonl"), "--public-key", str(pub))
    assert code == 2 and "cannot read the exported log" in out
    (tmp_path / "garbled.jsonl").write_text("{oops\n")
    code, out = _run(capsys, "audit", "verify", "--log", str(tmp_path / "garbled.jsonl"), "--public-key", str(pub))
    assert code == 2 and "not a JSON line" in out
    (tmp_path / "k2.pub").write_text(pub.read_text().replace('"keys"', '"kees"'))
    code, out = _run(capsys, "audit", "verify", "--log", str(log), "--public-key", str(tmp_path / "k2.pub"))
    assert code == 2 and "'keys' must be a non-empty list" in out
    headless = tmp_path / "headless.jsonl"
    headless.write_text("\n".join(log.read_text().splitlines()[:-1]) + "\n")
    code, out = _run(capsys, "audit", "verify", "--log", str(headless), "--public-key", str(pub))
    assert code == 2 and "has no signed head" in out
    code, out = _run(capsys, "audit", "verify", "--data", str(erased), "--head", str(log))
    assert code == 2 and "--head goes with --log" in out


def test_keys_rotate(erased: Path, tmp_path: Path, capsys) -> None:
    receipt, pub = tmp_path / "receipt.json", tmp_path / "key.pub"
    code, out = _run(capsys, "keys", "rotate", "--data", str(erased), "--principal", "ops")
    assert code == 0 and "rotated" in out
    assert main(["keys", "export-public", "--data", str(erased), "-o", str(pub)]) == 0
    assert len(json.loads(pub.read_text())["keys"]) == 2
    assert main(["receipt", "verify", str(receipt), "--public-key", str(pub)]) == 0  # signed by the old key
    assert main(["audit", "verify", "--data", str(erased)]) == 0


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
