"""``memwarden audit flows``: writer -> record -> readers from the audit log, as a terminal
table and as a self-contained HTML page rendered in headless Chromium."""

from __future__ import annotations

import hashlib
import re
import shutil
import struct
import subprocess
import zlib
from pathlib import Path

import numpy as np
import pytest
from rich.console import Console

from memwarden import AccessDenied, Memory, Principal
from memwarden.cli import main
from memwarden.integrations.flows import build_flows
from memwarden.integrations.flows_html import render_html
from memwarden.integrations.flows_terminal import render_table

pytestmark = pytest.mark.unit

ALICE = Principal("alice", roles=["physician"])
BOB = Principal("bob")
CAROL = Principal("carol")
DPO = Principal("dpo")
CHROMIUM = "/usr/bin/chromium"


@pytest.fixture
def ward(mem: Memory) -> dict[str, str]:
    """A small history: writes by two roles, reads, a denial, an update, a forget, an erasure."""
    alice, bob = mem.session(ALICE), mem.session(BOB)
    r1 = alice.write("Patient 12 is allergic to penicillin", "ward3/patients/p12", subjects=["p12"])
    r2 = alice.write("Patient 13 sleeps badly", "ward3/patients/p13", subjects=["p13"])
    r3 = bob.write("Night shift: patient 12 slept well", "ward3/patients/p12", subjects=["p12"])
    r4 = mem.session(CAROL).write("Invoice 5531 for patient 14", "ward3/billing/p14", subjects=["p14"])
    bob.search("patient 12", "ward3/patients", k=5)
    bob.search("patient 12 allergy", "ward3/patients", k=5)
    alice.get(r3.id)
    with pytest.raises(AccessDenied):
        mem.session(CAROL).search("patient 12", "ward3/patients")
    r1b = alice.update(r1.id, "Patient 12 is allergic to penicillin and latex")
    alice.forget(r2.id)
    mem.session(DPO).erase(subject="p12")
    return {"r1": r1.id, "r2": r2.id, "r3": r3.id, "r4": r4.id, "r1b": r1b.id}


@pytest.mark.integration
def test_flows_follow_writers_readers_and_removals(mem: Memory, ward: dict[str, str]) -> None:
    report = build_flows(mem.audit_log.entries(), verify=mem.audit_log.verify())
    flows = {f.id: f for f in report.records}
    assert set(flows) == set(ward.values())
    assert flows[ward["r1"]].writer_ids == ["alice"] and flows[ward["r3"]].writer_ids == ["bob"]
    assert flows[ward["r3"]].reader_counts == {"bob": 2, "alice": 1}
    assert flows[ward["r1"]].reader_counts == {"bob": 2}
    assert flows[ward["r4"]].reader_counts == {} and flows[ward["r4"]].status == "active"
    assert flows[ward["r1"]].superseded_by == ward["r1b"] and flows[ward["r1b"]].supersedes == ward["r1"]
    assert flows[ward["r2"]].status == "forgotten" and flows[ward["r2"]].removed_by.principal == "alice"
    for key in ("r1", "r1b", "r3"):  # erase entries hold hashes; matched back to the ids seen
        assert flows[ward[key]].status == "erased" and flows[ward[key]].removed_by.principal == "dpo"
    assert [(a.principal, a.op) for a in report.denied] == [("carol", "search")]
    assert report.roles["alice"] == ("physician",) and report.unmatched_erasures == 0
    assert set(report.writers) == {"alice", "bob", "carol"} and set(report.readers) == {"alice", "bob"}


def test_failed_applies_and_rejections_are_not_flows() -> None:
    entries = [
        {"seq": 1, "op": "write", "principal": "a", "records": ["m1"], "namespace": "n", "outcome": "ok"},
        {"seq": 2, "op": "write", "principal": "a", "records": ["m1"], "namespace": "n", "outcome": "error",
         "error": "apply failed after audit: ConnectionError"},
        {"seq": 3, "op": "write", "principal": "b", "records": ["m2"], "namespace": "n", "outcome": "rejected"},
        {"seq": 4, "op": "write", "principal": "c", "records": ["m3"], "namespace": "n", "outcome": "ok",
         "verdicts": ["injection=quarantine (instruction-like text)"]},
        {"seq": 5, "op": "get", "principal": "d", "records": ["m3"], "returned": 0, "outcome": "ok"},
        {"seq": 6, "op": "erase", "principal": "dpo", "records": [hashlib.sha256(b"gone").hexdigest()],
         "outcome": "ok"},
        {"seq": 7, "op": "review", "principal": "e", "records": ["m3"], "namespace": "n", "outcome": "ok",
         "rules": ["votes: 2 approve, 0 reject, quorum 2"]},
        {"seq": 8, "op": "history", "principal": "f", "records": ["m3"], "namespace": "n", "outcome": "ok"},
        {"seq": 9, "op": "retract", "principal": "e", "records": ["m3", "m4"], "namespace": "n", "outcome": "ok"},
        {"seq": 10, "op": "sweep", "principal": "admin", "records": ["m4"], "outcome": "ok"},
    ]
    report = build_flows(entries)
    flows = {f.id: f for f in report.records}
    assert "m1" not in flows  # audited, then the apply failed: it never happened
    assert "m2" not in flows
    assert flows["m3"].writer_ids == ["c"] and flows["m3"].reader_counts == {"f": 1}  # get returned nothing
    assert flows["m3"].status == "forgotten" and flows["m3"].removed_by.principal == "e"
    assert flows["m4"].status == "swept"
    assert report.unmatched_erasures == 1
    assert build_flows(entries[3:4]).records[0].status == "quarantined"
    assert build_flows(entries[3:7]).records[0].status == "active"  # quorum reached


def test_a_replayed_write_is_not_a_second_write() -> None:
    first = {"seq": 1, "op": "write", "principal": "c", "records": ["m5"], "namespace": "n", "outcome": "ok"}
    again = dict(first, seq=2, replay=True)
    (flow,) = build_flows([first, again]).records
    assert [a.seq for a in flow.writers] == [1]


@pytest.mark.integration
def test_terminal_table(mem: Memory, ward: dict[str, str]) -> None:
    console = Console(record=True, width=200)
    render_table(build_flows(mem.audit_log.entries(), verify=mem.audit_log.verify()), console)
    text = console.export_text()
    assert "alice (physician)" in text and "bob ×2" in text and ward["r3"] in text
    assert "erased  " in text and "dpo" in text and "forgotten  " in text and "verified" in text
    assert "carol (billing_clerk) search ward3/patients\n    rule  no matching rule (deny by default)" in text


def test_html_is_self_contained_and_escaped() -> None:
    evil = '<img src=x onerror="alert(1)">'
    entries = [{"seq": 1, "op": "write", "principal": evil, "roles": ["r&d"], "records": ["mem_<b>"],
                "namespace": "a/<script>", "outcome": "ok"},
               {"seq": 2, "op": "search", "principal": "reader", "records": ["mem_<b>"], "outcome": "ok"}]
    page = render_html(build_flows(entries), title="flows <test>")
    assert "<script" not in page and "<img" not in page and "<b>" not in page
    assert "&lt;img src=x onerror=&quot;alert(1)&quot;&gt;" in page
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", page)  # nothing to fetch
    assert set(re.findall(r"https?://[^\s\"'<>]+", page)) <= {"http://www.w3.org/2000/svg"}
    assert "Content-Security-Policy" in page


# -- rendered for real ----------------------------------------------------------------------------

def decode_png(data: bytes) -> np.ndarray:
    """A PNG (8-bit RGB or RGBA, not interlaced: what Chromium writes) as an array h x w x c."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, ihdr = 8, [], None
    while pos < len(data):
        (n,) = struct.unpack(">I", data[pos:pos + 4])
        kind, chunk = data[pos + 4:pos + 8], data[pos + 8:pos + 8 + n]
        pos += 12 + n
        if kind == b"IHDR":
            ihdr = struct.unpack(">IIBBBBB", chunk)
        elif kind == b"IDAT":
            idat.append(chunk)
    assert ihdr is not None
    w, h, depth, ctype, _, _, interlace = ihdr
    assert depth == 8 and interlace == 0 and ctype in (2, 6), f"unsupported PNG {ihdr}"
    bpp = 3 if ctype == 2 else 4
    stride = w * bpp
    raw = zlib.decompress(b"".join(idat))
    out = bytearray(h * stride)
    prev = bytearray(stride)
    for y in range(h):
        start = y * (stride + 1)
        f, cur = raw[start], bytearray(raw[start + 1:start + 1 + stride])
        if f == 1:  # Sub
            for x in range(bpp, stride):
                cur[x] = (cur[x] + cur[x - bpp]) & 0xFF
        elif f == 2:  # Up
            cur = bytearray(((np.frombuffer(bytes(cur), np.uint8).astype(np.uint16)
                              + np.frombuffer(bytes(prev), np.uint8)) & 0xFF).astype(np.uint8).tobytes())
        elif f == 3:  # Average
            for x in range(stride):
                a = cur[x - bpp] if x >= bpp else 0
                cur[x] = (cur[x] + ((a + prev[x]) >> 1)) & 0xFF
        elif f == 4:  # Paeth
            for x in range(stride):
                a, c = (cur[x - bpp], prev[x - bpp]) if x >= bpp else (0, 0)
                b = prev[x]
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                cur[x] = (cur[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 0xFF
        out[y * stride:(y + 1) * stride] = cur
        prev = cur
    return np.frombuffer(bytes(out), np.uint8).reshape(h, w, bpp)


def _chromium(*args: str, profile: Path, timeout: float = 120) -> subprocess.CompletedProcess[bytes]:
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             f"--user-data-dir={profile}"]
    return subprocess.run([CHROMIUM, *flags, *args], capture_output=True, timeout=timeout, check=False)


@pytest.mark.skipif(not Path(CHROMIUM).exists() or shutil.which(CHROMIUM) is None,
                    reason=f"{CHROMIUM} is not installed (apt-get install -y chromium) so the HTML page "
                           "cannot be rendered")
@pytest.mark.system
@pytest.mark.slow
def test_flow_page_renders_in_headless_chromium(mem: Memory, ward: dict[str, str], tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    page = tmp_path / "flows.html"
    data = Path(mem.audit_log.path).parent
    assert main(["audit", "flows", "--data", str(data), "--html", str(page)]) == 0
    assert "flow graph written to" in capsys.readouterr().out

    shot = tmp_path / "flows.png"
    run = _chromium(f"--screenshot={shot}", "--window-size=1200,800", page.as_uri(), profile=tmp_path / "p1")
    assert shot.is_file(), run.stderr.decode(errors="replace")[-2000:]
    pixels = decode_png(shot.read_bytes())[..., :3].astype(np.float64)
    assert pixels.shape[:2] == (800, 1200)
    # Not blank: a white page has no variance; the graph's nodes, edges and text do.
    assert pixels.std() > 10, f"screenshot looks blank (std {pixels.std():.2f})"
    distinct = len(np.unique(pixels.reshape(-1, 3), axis=0))
    assert distinct > 50, f"only {distinct} distinct colours"

    dom = _chromium("--dump-dom", page.as_uri(), profile=tmp_path / "p2").stdout.decode()
    assert '<svg id="flow-graph"' in dom
    labels = ["alice (physician)", "bob", "carol", "dpo", *ward.values()]
    for label in labels:
        assert label in dom, f"node label {label!r} missing from the rendered DOM"
    nodes = re.findall(r'<g class="node (record|principal)', dom)
    assert nodes.count("record") == len(ward) and nodes.count("principal") >= 3


def test_cli_flows_without_a_log(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["audit", "flows", "--data", str(tmp_path)]) == 2
    assert "no audit log" in capsys.readouterr().out
