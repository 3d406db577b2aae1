"""Memory flows from the audit log: who wrote which record, and who read it.

``memwarden audit flows --data DIR [--html OUT]`` reads the audit log only (never the store,
never content): write and update entries name the record written and its writer; search
and get entries name the records returned to the reader; forget and erase entries retire
records (erase entries carry sha256 hashes of ids, matched here against the ids seen).

Two renderings: a terminal table (rich) and a self-contained HTML page with a flow graph,
writers -> records -> readers, laid out here as inline SVG (no script, no CDN, no network).
"""

from __future__ import annotations

import hashlib
import html
import re
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

#: Record states, strongest last: a later state replaces an earlier one.
STATUSES = ("active", "quarantined", "superseded", "forgotten", "erasing", "erased", "swept")
_REMOVED = {"forgotten", "erased", "swept"}
_VOTES = re.compile(r"votes: (\d+) approve, (\d+) reject, quorum (\d+)")


@dataclass(frozen=True, slots=True)
class Access:
    """One audited access: who, with which roles, by which operation, at which entry."""

    principal: str
    roles: tuple[str, ...]
    op: str
    seq: int
    ts: str | None = None


@dataclass
class RecordFlow:
    """One record's history as the audit log tells it."""

    id: str
    namespace: str | None = None
    writers: list[Access] = field(default_factory=list)
    readers: list[Access] = field(default_factory=list)
    status: str = "active"
    supersedes: str | None = None
    superseded_by: str | None = None
    removed_by: Access | None = None

    @property
    def first_seq(self) -> int:
        seqs = [a.seq for a in self.writers + self.readers]
        return min(seqs) if seqs else 0

    @property
    def writer_ids(self) -> list[str]:
        return list(dict.fromkeys(a.principal for a in self.writers))

    @property
    def reader_counts(self) -> dict[str, int]:
        return dict(Counter(a.principal for a in self.readers))


@dataclass
class FlowReport:
    """Every record the log mentions, plus who was denied what."""

    records: list[RecordFlow]
    roles: dict[str, tuple[str, ...]]
    entries: int
    denied: list[Access] = field(default_factory=list)
    unmatched_erasures: int = 0
    verify: Any = None  # a VerifyReport, when the caller checked the log

    @property
    def writers(self) -> list[str]:
        return list(dict.fromkeys(p for r in self.records for p in r.writer_ids))

    @property
    def readers(self) -> list[str]:
        return list(dict.fromkeys(p for r in self.records for p in r.reader_counts))


def _sha(value: str) -> str:
    return hashlib.sha256(value.encode("utf-8")).hexdigest()


def _is_compensation(entry: Mapping[str, Any]) -> bool:
    return entry.get("outcome") == "error" and str(entry.get("error") or "").startswith("apply failed after audit")


def build_flows(entries: Iterable[Mapping[str, Any]], *, verify: Any = None) -> FlowReport:
    """Fold audit entries, in order, into per-record flows."""
    entries = list(entries)
    # A mutation that failed after being audited gets a second entry; its first one did not happen.
    void: set[int] = set()
    for i, entry in enumerate(entries):
        if _is_compensation(entry):
            for j in range(i - 1, -1, -1):
                prior = entries[j]
                if (prior.get("outcome") == "ok" and prior.get("op") == entry.get("op")
                        and prior.get("principal") == entry.get("principal")
                        and prior.get("records") == entry.get("records")):
                    void.add(j)
                    break

    records: dict[str, RecordFlow] = {}
    roles: dict[str, tuple[str, ...]] = {}
    denied: list[Access] = []
    unmatched = 0

    def record(rid: str, namespace: str | None = None) -> RecordFlow:
        flow = records.get(rid)
        if flow is None:
            flow = records[rid] = RecordFlow(rid)
        if namespace and flow.namespace is None:
            flow.namespace = namespace
        return flow

    def set_status(flow: RecordFlow, status: str) -> None:
        if flow.status in _REMOVED:
            return  # a removed record stays removed, whatever the log says after
        flow.status = status

    for index, entry in enumerate(entries):
        op, outcome = entry.get("op"), entry.get("outcome")
        principal = str(entry.get("principal") or "?")
        who = Access(principal, tuple(entry.get("roles") or ()), str(op), int(entry.get("seq") or index + 1),
                     entry.get("ts"))
        roles.setdefault(principal, who.roles)
        if outcome == "denied":
            denied.append(who)
            continue
        if op == "erase" and outcome == "pending":
            # An erasure's intent: under way until its final entry (or a recovery) says it is done.
            by_hash = {_sha(rid): flow for rid, flow in records.items()}
            for digest in entry.get("records") or ():
                if (flow := by_hash.get(str(digest))) is not None and flow.status not in _REMOVED:
                    flow.status, flow.removed_by = "erasing", who
            continue
        if outcome != "ok" or index in void:
            continue
        ids = [str(r) for r in entry.get("records") or ()]
        namespace = entry.get("namespace")
        quarantined = any("=quarantine" in str(v) for v in entry.get("verdicts") or ())
        if op == "write" and ids:
            flow = record(ids[0], namespace)
            replay = bool(entry.get("replay")) or any(str(r).startswith("replay:") for r in entry.get("rules") or ())
            if not (replay and principal in flow.writer_ids):
                flow.writers.append(who)
            if not replay:
                # Ids are deterministic: writing a forgotten or erased record's text again
                # stores it afresh under the same id.
                flow.status, flow.removed_by = ("quarantined" if quarantined else "active"), None
        elif op == "update" and ids:
            new = record(ids[0], namespace)
            new.writers.append(who)
            set_status(new, "quarantined" if quarantined else "active")
            if len(ids) > 1:
                old = record(ids[1], namespace)
                new.supersedes, old.superseded_by = old.id, new.id
                set_status(old, "superseded")
        elif op in ("search", "history"):
            for rid in ids:
                record(rid, namespace if op == "history" else None).readers.append(who)
        elif op == "get" and ids and (entry.get("returned") or 0) > 0:
            record(ids[0], namespace).readers.append(who)
        elif op == "forget":
            for rid in ids:
                flow = record(rid, namespace)
                set_status(flow, "forgotten")
                flow.removed_by = flow.removed_by or who
        elif op == "review" and ids:
            flow = record(ids[0], namespace)
            votes = next((m for r in entry.get("rules") or () if (m := _VOTES.search(str(r)))), None)
            if votes is not None:
                approve, reject, quorum = (int(g) for g in votes.groups())
                if approve >= quorum:
                    set_status(flow, "active")
                elif reject >= quorum:
                    set_status(flow, "forgotten")
                    flow.removed_by = flow.removed_by or who
        elif op == "retract" and ids:
            target = record(ids[0], namespace)
            set_status(target, "forgotten")
            target.removed_by = target.removed_by or who
            for rid in ids[1:]:
                set_status(record(rid), "quarantined")
        elif op == "sweep":
            for rid in ids:
                flow = record(rid)
                flow.status, flow.removed_by = "swept", who
        elif op == "evict":
            for rid in ids:
                flow = record(rid, namespace)
                set_status(flow, "forgotten")
                flow.removed_by = flow.removed_by or who
        elif op in ("erase", "recover"):
            by_hash = {_sha(rid): flow for rid, flow in records.items()}
            for digest in ids:
                flow = by_hash.get(digest)
                if flow is None:
                    unmatched += 1
                    continue
                flow.status = "erased"
                flow.removed_by = who
    ordered = sorted(records.values(), key=lambda f: (f.namespace or "~", f.first_seq, f.id))
    return FlowReport(ordered, roles, len(entries), denied, unmatched, verify)


# -- terminal --------------------------------------------------------------------------------

_STATUS_STYLE = {"active": "green", "quarantined": "yellow", "superseded": "dim", "forgotten": "magenta",
                 "erasing": "magenta", "erased": "red", "swept": "red"}


def short_id(rid: str) -> str:
    """A record id short enough for a table cell or a graph node."""
    return rid if len(rid) <= 16 else rid[:13] + "…"


def _who(principal: str, roles: Mapping[str, tuple[str, ...]]) -> str:
    r = roles.get(principal) or ()
    return f"{principal} ({', '.join(r)})" if r else principal


def render_table(report: FlowReport, console: Console | None = None) -> Table:
    """Print (and return) the writer -> record -> readers table."""
    console = console or Console()
    status = ""
    if report.verify is not None:
        status = " - audit log [green]verified[/]" if report.verify.ok else " - audit log [red]TAMPERED[/]"
    table = Table(title=f"Memory flows: {len(report.records)} records from {report.entries} audit entries{status}",
                  show_lines=False)
    for col in ("written by", "record", "namespace", "read by", "status"):
        table.add_column(col, overflow="fold")
    for flow in report.records:
        readers = ", ".join(f"{p} ×{n}" if n > 1 else p for p, n in flow.reader_counts.items()) or "-"
        writers = ", ".join(_who(p, report.roles) for p in flow.writer_ids) or "-"
        state = flow.status
        if flow.removed_by is not None:
            state += f" by {flow.removed_by.principal}"
        if flow.superseded_by:
            state += f" → {short_id(flow.superseded_by)}"
        table.add_row(escape(writers), short_id(flow.id), escape(flow.namespace or "?"), escape(readers),
                      f"[{_STATUS_STYLE.get(flow.status, 'white')}]{escape(state)}[/]")
    console.print(table)
    if report.denied:
        counts = Counter((a.principal, a.op) for a in report.denied)
        console.print("denied: " + ", ".join(f"{p} {op} ×{n}" for (p, op), n in counts.items()), markup=False)
    if report.unmatched_erasures:
        console.print(f"{report.unmatched_erasures} erased record(s) were never written or read in this log")
    return table


# -- HTML ------------------------------------------------------------------------------------

_FILL = {"active": "#e8f5e9", "quarantined": "#fff8e1", "superseded": "#eeeeee", "forgotten": "#f3e5f5",
         "erasing": "#fce4ec", "erased": "#ffebee", "swept": "#fbe9e7"}
_STROKE = {"active": "#2e7d32", "quarantined": "#f9a825", "superseded": "#9e9e9e", "forgotten": "#8e24aa",
           "erasing": "#ad1457", "erased": "#c62828", "swept": "#bf360c"}


_PALETTE = ("#4e79a7", "#f28e2b", "#e15759", "#59a14f", "#b07aa1", "#9c755f", "#76b7b2", "#edc948",
            "#ff9da7", "#7f7f7f")


def _colours(names: Iterable[str]) -> dict[str, str]:
    """One colour per principal, stable for a given set of principals."""
    return {name: _PALETTE[i % len(_PALETTE)] for i, name in enumerate(sorted(set(names)))}


def _esc(value: object) -> str:
    return html.escape(str(value), quote=True)


def _order(names: list[str], links: Mapping[str, list[float]]) -> list[str]:
    """Barycentre order: each principal sits near the mean height of the records it touches."""
    return sorted(names, key=lambda n: (sum(links[n]) / len(links[n]) if links.get(n) else 0.0, n))


def render_html(report: FlowReport, *, title: str = "memwarden audit flows") -> str:
    """A self-contained HTML page: the flow graph (inline SVG) and the same data as a table."""
    row, top, node_h = 44, 70, 30
    x_writer, x_record, x_reader = 30, 430, 880
    w_principal, w_record = 230, 300
    width = x_reader + w_principal + 30

    # Records: one row each, with a gap and a header between namespaces.
    y_of: dict[str, float] = {}
    headers: list[tuple[float, str]] = []
    y, last_ns = float(top), None
    for flow in report.records:
        if flow.namespace != last_ns:
            headers.append((y, flow.namespace or "(unknown namespace)"))
            y += 22
            last_ns = flow.namespace
        y_of[flow.id] = y
        y += row
    writer_links: dict[str, list[float]] = {}
    reader_links: dict[str, list[float]] = {}
    for flow in report.records:
        for p in flow.writer_ids:
            writer_links.setdefault(p, []).append(y_of[flow.id])
        for p in flow.reader_counts:
            reader_links.setdefault(p, []).append(y_of[flow.id])
    writers = _order(report.writers, writer_links)
    readers = _order(report.readers, reader_links)

    def column(names: list[str], links: Mapping[str, list[float]]) -> dict[str, float]:
        """Place principals at their barycentres, pushed apart to keep one row between them."""
        placed: dict[str, float] = {}
        floor = float(top)
        for name in names:
            want = sum(links[name]) / len(links[name]) if links.get(name) else floor
            placed[name] = max(want, floor)
            floor = placed[name] + row
        return placed

    wy, ry = column(writers, writer_links), column(readers, reader_links)
    colour = _colours([*writers, *readers])
    height = int(max([y, *(v + row for v in wy.values()), *(v + row for v in ry.values()), top + row]) + 30)

    svg: list[str] = [
        f'<svg id="flow-graph" xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" aria-label="memory flow graph" font-family="sans-serif">',
        f'<rect x="0" y="0" width="{width}" height="{height}" fill="#ffffff"/>',
        f'<text x="{x_writer}" y="40" class="colhead">Writers</text>',
        f'<text x="{x_record}" y="40" class="colhead">Records</text>',
        f'<text x="{x_reader}" y="40" class="colhead">Readers</text>',
    ]
    mid = node_h / 2
    # Edges first, so nodes draw over them.
    for flow in report.records:
        ry0 = y_of[flow.id] + mid
        for p in flow.writer_ids:
            x1, y1, x2 = x_writer + w_principal, wy[p] + mid, x_record
            c = (x1 + x2) / 2
            svg.append(f'<path class="edge write" d="M{x1},{y1} C{c},{y1} {c},{ry0} {x2},{ry0}" '
                       f'stroke="{colour[p]}" fill="none" stroke-width="2" marker-end="url(#arrow)">'
                       f'<title>{_esc(p)} wrote {_esc(flow.id)}</title></path>')
        for p, n in flow.reader_counts.items():
            x1, x2, y2 = x_record + w_record, x_reader, ry[p] + mid
            c = (x1 + x2) / 2
            sw = 1.5 + min(n, 8) * 0.75
            svg.append(f'<path class="edge read" d="M{x1},{ry0} C{c},{ry0} {c},{y2} {x2},{y2}" '
                       f'stroke="{colour[p]}" stroke-opacity="0.75" fill="none" stroke-width="{sw:.2f}" '
                       f'marker-end="url(#arrow)"><title>{_esc(p)} read {_esc(flow.id)} {n}×</title></path>')
        if flow.supersedes and flow.supersedes in y_of:
            y_old = y_of[flow.supersedes] + mid
            xr = x_record + w_record
            svg.append(f'<path class="edge supersede" d="M{xr},{y_old} C{xr + 40},{y_old} {xr + 40},{ry0} '
                       f'{xr},{ry0}" stroke="#9e9e9e" stroke-dasharray="4 3" fill="none" stroke-width="1.5">'
                       f'<title>{_esc(flow.id)} supersedes {_esc(flow.supersedes)}</title></path>')
    for y_head, ns in headers:
        svg.append(f'<text x="{x_record}" y="{y_head + 14}" class="nshead">{_esc(ns)}</text>')
    for flow in report.records:
        y0 = y_of[flow.id]
        dash = ' stroke-dasharray="5 3"' if flow.status in _REMOVED else ""
        tag = flow.status + (f" by {flow.removed_by.principal[:16]}" if flow.removed_by else "")
        tip = (f"{flow.id}\nnamespace: {flow.namespace}\nstatus: {flow.status}\n"
               f"written by: {', '.join(flow.writer_ids) or '-'}\n"
               f"read by: {', '.join(f'{p} ({n}×)' for p, n in flow.reader_counts.items()) or '-'}")
        svg.append(f'<g class="node record status-{_esc(flow.status)}" data-id="{_esc(flow.id)}">'
                   f'<title>{_esc(tip)}</title>'
                   f'<rect x="{x_record}" y="{y0}" width="{w_record}" height="{node_h}" rx="5" '
                   f'fill="{_FILL.get(flow.status, "#fff")}" stroke="{_STROKE.get(flow.status, "#555")}" '
                   f'stroke-width="1.5"{dash}/>'
                   f'<text x="{x_record + 8}" y="{y0 + 19}" class="label">{_esc(short_id(flow.id))}</text>'
                   f'<text x="{x_record + w_record - 8}" y="{y0 + 19}" class="tag" text-anchor="end">'
                   f'{_esc(tag)}</text></g>')
    for names, placed, x, side in ((writers, wy, x_writer, "writer"), (readers, ry, x_reader, "reader")):
        for p in names:
            y0 = placed[p]
            label = _who(p, report.roles)
            svg.append(f'<g class="node principal {side}" data-principal="{_esc(p)}">'
                       f'<title>{_esc(label)}</title>'
                       f'<rect x="{x}" y="{y0}" width="{w_principal}" height="{node_h}" rx="15" fill="#ffffff" '
                       f'stroke="{colour[p]}" stroke-width="2.5"/>'
                       f'<text x="{x + 14}" y="{y0 + 19}" class="label">{_esc(label[:30])}</text></g>')
    svg.insert(1, '<defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" '
                  'markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="#555"/>'
                  '</marker></defs>')
    svg.append("</svg>")

    verified = ""
    if report.verify is not None:
        verified = ('<span class="ok">audit log verified</span>' if report.verify.ok else
                    f'<span class="bad">audit log TAMPERED: {len(report.verify.problems)} problem(s)</span>')
    rows = []
    for flow in report.records:
        readers_text = ", ".join(f"{p} ×{n}" if n > 1 else p for p, n in flow.reader_counts.items()) or "-"
        removed = f" by {flow.removed_by.principal}" if flow.removed_by else ""
        rows.append(f"<tr><td>{_esc(', '.join(_who(p, report.roles) for p in flow.writer_ids) or '-')}</td>"
                    f"<td><code>{_esc(flow.id)}</code></td><td>{_esc(flow.namespace or '?')}</td>"
                    f"<td>{_esc(readers_text)}</td><td class=\"status-{_esc(flow.status)}\">"
                    f"{_esc(flow.status + removed)}</td></tr>")
    denied = ""
    if report.denied:
        counts = Counter((a.principal, a.op) for a in report.denied)
        denied = "<p>Denied: " + _esc(", ".join(f"{p} {op} ×{n}" for (p, op), n in counts.items())) + "</p>"
    legend = " ".join(f'<span class="chip" style="background:{_FILL[s]};border-color:{_STROKE[s]}">{s}</span>'
                      for s in STATUSES)
    generated = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; img-src data:">
<title>{_esc(title)}</title>
<style>
body {{ font-family: sans-serif; margin: 20px; color: #212121; background: #fafafa; }}
h1 {{ font-size: 20px; margin: 0 0 6px; }}
.meta {{ color: #555; margin-bottom: 10px; }}
.ok {{ color: #2e7d32; font-weight: bold; }} .bad {{ color: #c62828; font-weight: bold; }}
.chip {{ display: inline-block; border: 1.5px solid; border-radius: 4px; padding: 1px 6px; margin-right: 4px; font-size: 12px; }}
.graph {{ background: #fff; border: 1px solid #ddd; overflow: auto; margin: 10px 0 20px; }}
svg .colhead {{ font-size: 16px; font-weight: bold; fill: #333; }}
svg .nshead {{ font-size: 12px; fill: #666; }}
svg .label {{ font-size: 13px; fill: #212121; }}
svg .tag {{ font-size: 11px; fill: #555; }}
svg .edge:hover {{ stroke-width: 4; }}
table {{ border-collapse: collapse; background: #fff; }}
td, th {{ border: 1px solid #ddd; padding: 4px 8px; font-size: 13px; text-align: left; vertical-align: top; }}
th {{ background: #f0f0f0; }}
</style></head>
<body>
<h1>{_esc(title)}</h1>
<div class="meta">{len(report.records)} records, {len(report.writers)} writers, {len(report.readers)} readers,
{report.entries} audit entries; generated {generated}. {verified}</div>
<div class="meta">Record status: {legend} Edges: writer → record (solid, one per writer), record → reader
(thicker for more reads), dashed grey: a newer version supersedes an older one. No content is shown:
the audit log holds none.</div>
<div class="graph">{''.join(svg)}</div>
{denied}
<table id="flow-table"><thead><tr><th>written by</th><th>record</th><th>namespace</th><th>read by</th><th>status</th></tr></thead>
<tbody>
{chr(10).join(rows)}
</tbody></table>
</body></html>
"""
