"""The flows report as an audit needs it: times and a time window, withheld counts, derived-from
and cascade edges, the acting principal of every removal, denials with namespace and rule,
lookup by record or principal, and a terminal listing that reads at 80 columns."""

from __future__ import annotations

import re
from datetime import datetime, timezone
from pathlib import Path

import pytest
from rich.console import Console

from memwarden import AccessDenied, Memory, Principal
from memwarden.cli import main
from memwarden.integrations.flows import build_flows, select
from memwarden.integrations.flows_html import render_html
from memwarden.integrations.flows_terminal import render_table

pytestmark = pytest.mark.integration

ALICE, BOB, CAROL, DPO = Principal("alice"), Principal("bob"), Principal("carol"), Principal("dpo")


@pytest.fixture
def ward(mem: Memory) -> dict[str, str]:
    alice, bob, carol = mem.session(ALICE), mem.session(BOB), mem.session(CAROL)
    chart = alice.write("Patient 12 is allergic to penicillin", "ward3/patients/p12", subjects=["p12"])
    note = bob.write("Bed 12: no penicillin on the trolley", "ward3/patients/p13", parents=[chart.id])
    other = alice.write("Patient 13 sleeps badly", "ward3/patients/p13", subjects=["p13"])
    invoice = carol.write("Invoice 5531 for patient 12", "ward3/billing/p12", subjects=["p12"])
    carol.search("patient", "ward3", k=5)  # the patients' records are withheld from the clerk
    with pytest.raises(AccessDenied):
        carol.write("Patient 12 owes money", "ward3/patients/p12")
    alice.forget(other.id)
    mem.session(DPO).erase(subject="p12")
    return {"chart": chart.id, "note": note.id, "other": other.id, "invoice": invoice.id}


def test_provenance_cascade_and_who_removed(mem: Memory, ward: dict[str, str]) -> None:
    report = build_flows(mem.audit_log.entries())
    flows = {f.id: f for f in report.records}
    assert flows[ward["note"]].parents == [ward["chart"]]
    # The note is about no one: the erasure of p12 reached it through its parent.
    assert flows[ward["note"]].status == "erased" and flows[ward["note"]].cascade_from == ward["chart"]
    assert flows[ward["chart"]].cascade_from is None and flows[ward["chart"]].removed_by.principal == "dpo"
    assert flows[ward["other"]].removed_by.principal == "alice"
    assert set(report.removers) == {"dpo", "alice"}
    assert all(a.time is not None and a.time.tzinfo is not None for f in report.records for a in f.accesses)


def test_withheld_counts_and_denials_with_namespace_and_rule(mem: Memory, ward: dict[str, str]) -> None:
    report = build_flows(mem.audit_log.entries())
    records, reads = report.withheld["carol"]
    assert records >= 2 and reads == 1  # the chart and the notes, counted, never named
    (denial,) = report.denied
    assert (denial.principal, denial.op, denial.namespace) == ("carol", "write", "ward3/patients/p12")
    assert denial.rule == "no matching rule (deny by default)"


def test_lookup_by_record_and_by_principal(mem: Memory, ward: dict[str, str]) -> None:
    report = build_flows(mem.audit_log.entries())
    around_note = select(report, record=ward["note"])
    assert {f.id for f in around_note.records} == {ward["note"], ward["chart"]}  # provenance, both ways
    assert {f.id for f in select(report, record=ward["chart"]).records} == {ward["note"], ward["chart"]}
    assert not around_note.denied and around_note.selection == f"record {ward['note']}"
    carol = select(report, principal="carol")
    assert {f.id for f in carol.records} == {ward["invoice"]} and [a.op for a in carol.denied] == ["write"]
    assert set(carol.withheld) == {"carol"}
    assert select(report, record="mem_" + "0" * 32).records == []


def test_time_window() -> None:
    def entry(seq: int, minute: int, **more: object) -> dict:
        return {"seq": seq, "ts": f"2026-12-01T10:{minute:02d}:00+00:00", "outcome": "ok", "principal": "a", **more}

    entries = [entry(1, 0, op="write", records=["m1"], namespace="n"),
               entry(2, 10, op="search", records=["m1"], withheld=2, namespace="n"),
               entry(3, 20, op="write", records=["m2"], namespace="n"),
               entry(4, 30, op="search", records=["m1", "m2"], principal="b", namespace="n"),
               entry(5, 40, op="write", records=["m3"], namespace="n", outcome="denied", rules=["r"])]
    report = build_flows(entries)
    at = lambda minute: datetime(2026, 12, 1, 10, minute, tzinfo=timezone.utc)  # noqa: E731
    window = select(report, since=at(5), until=at(25))
    flows = {f.id: f for f in window.records}
    assert set(flows) == {"m1", "m2"} and flows["m1"].writers == [] and [a.seq for a in flows["m1"].readers] == [2]
    assert window.withheld == {"a": (2, 1)} and window.denied == []
    assert [f.id for f in select(report, since=at(35)).records] == [] and len(select(report, since=at(35)).denied) == 1
    assert {f.id for f in select(report, until=at(0)).records} == {"m1"}


def test_terminal_listing_reads_at_80_columns(mem: Memory, ward: dict[str, str]) -> None:
    console = Console(record=True, width=80)
    render_table(build_flows(mem.audit_log.entries(), verify=mem.audit_log.verify()), console)
    text = console.export_text()
    assert all(len(line) <= 80 for line in text.splitlines())
    for rid in ward.values():  # every id whole on one line: nothing truncated or broken
        assert re.search(rf"^  {rid}  \w+", text, re.M), rid
    assert re.search(r"erased  \d{4}-\d\d-\d\d \d\d:\d\d:\d\d  dpo \(privacy_officer\)\n"
                     r"    by cascade from  " + ward["chart"], text)
    assert re.search(r"^withheld\n  carol \(billing_clerk\): \d+ record\(s\) in 1 read\(s\)$", text, re.M)
    assert "carol (billing_clerk) write ward3/patients/p12\n    rule  no matching rule (deny by default)" in text


def test_html_shows_removers_provenance_denials_and_withheld(mem: Memory, ward: dict[str, str]) -> None:
    page = render_html(build_flows(mem.audit_log.entries()))
    assert re.search(r'<g class="node principal reader remover" data-principal="dpo">|'
                     r'<g class="node principal remover" data-principal="dpo">', page)
    assert 'class="edge derived cascade"' in page and 'class="edge remove"' in page
    assert ward["note"] in page and f"erased by cascade from {ward['chart']}" in page
    assert '<table id="denied-table">' in page and "ward3/patients/p12" in page
    assert '<table id="withheld-table">' in page and "Patient 12" not in page  # still content-free


def test_cli_flows_filters(mem: Memory, ward: dict[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    data = str(Path(mem.audit_log.path).parent)
    assert main(["audit", "flows", "--data", data, "--record", ward["note"]]) == 0
    out = capsys.readouterr().out
    assert ward["note"] in out and ward["invoice"] not in out and "(record " in out
    assert main(["audit", "flows", "--data", data, "--principal", "carol", "--since", "2000-01-01"]) == 0
    out = capsys.readouterr().out
    assert ward["invoice"] in out and ward["chart"] not in out
    assert main(["audit", "flows", "--data", data, "--since", "yesterday"]) == 2
    assert "--since takes an ISO 8601 time" in capsys.readouterr().out
