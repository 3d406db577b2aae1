"""The memory flows report as a self-contained HTML page: a flow graph laid out here as
inline SVG (no script, no CDN, no network, a Content-Security-Policy that forbids fetching
anything), and the same data as tables: records with times, denials with namespace and rule,
withheld counts.

The graph: writers on the left, records in the middle (grouped by namespace, full ids),
readers and the principals who removed records on the right. Edges: writer -> record, record
-> reader (thicker for more reads), record -> remover (red, dashed), derived-from between
records (orange; red where an erasure cascaded along it), supersedes (grey, dashed).
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Mapping
from datetime import datetime, timezone

from memwarden.integrations.flows import STATUSES, FlowReport, REMOVED
from memwarden.integrations.flows_terminal import DENIED, WITHHELD, readers_text, when, who

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
    """A self-contained HTML page: the flow graph (inline SVG) and the same data as tables."""
    row, top, node_h = 44, 70, 30
    x_writer, x_record, x_reader = 30, 430, 990
    w_principal, w_record = 230, 420
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
    right_links: dict[str, list[float]] = {}
    for flow in report.records:
        for p in dict.fromkeys(a.principal for a in flow.writers):
            writer_links.setdefault(p, []).append(y_of[flow.id])
        for p in dict.fromkeys(a.principal for a in flow.readers):
            right_links.setdefault(p, []).append(y_of[flow.id])
        if flow.removed_by is not None:
            right_links.setdefault(flow.removed_by.principal, []).append(y_of[flow.id])
    writers = _order(list(writer_links), writer_links)
    right = _order(list(right_links), right_links)

    def column(names: list[str], links: Mapping[str, list[float]]) -> dict[str, float]:
        """Place principals at their barycentres, pushed apart to keep one row between them."""
        placed: dict[str, float] = {}
        floor = float(top)
        for name in names:
            want = sum(links[name]) / len(links[name]) if links.get(name) else floor
            placed[name] = max(want, floor)
            floor = placed[name] + row
        return placed

    wy, ry = column(writers, writer_links), column(right, right_links)
    colour = _colours([*writers, *right])
    height = int(max([y, *(v + row for v in wy.values()), *(v + row for v in ry.values()), top + row]) + 30)

    svg: list[str] = [
        f'<svg id="flow-graph" xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" aria-label="memory flow graph" font-family="sans-serif">',
        '<defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" '
        'orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="#555"/></marker></defs>',
        f'<rect x="0" y="0" width="{width}" height="{height}" fill="#ffffff"/>',
        f'<text x="{x_writer}" y="40" class="colhead">Writers</text>',
        f'<text x="{x_record}" y="40" class="colhead">Records</text>',
        f'<text x="{x_reader}" y="40" class="colhead">Readers and removers</text>',
    ]
    mid = node_h / 2

    def curve(cls: str, x1: float, y1: float, x2: float, y2: float, stroke: str, tip: str, extra: str = "") -> str:
        c = (x1 + x2) / 2
        return (f'<path class="edge {cls}" d="M{x1},{y1} C{c},{y1} {c},{y2} {x2},{y2}" stroke="{stroke}" '
                f'fill="none" marker-end="url(#arrow)"{extra}><title>{_esc(tip)}</title></path>')

    def loop(cls: str, x: float, y1: float, y2: float, out: float, stroke: str, tip: str, extra: str) -> str:
        """An edge between two records, bulging out of the record column by ``out``."""
        return (f'<path class="edge {cls}" d="M{x},{y1} C{x + out},{y1} {x + out},{y2} {x},{y2}" stroke="{stroke}" '
                f'fill="none"{extra}><title>{_esc(tip)}</title></path>')

    # Edges first, so nodes draw over them.
    for flow in report.records:
        ry0 = y_of[flow.id] + mid
        for p in dict.fromkeys(a.principal for a in flow.writers):
            svg.append(curve("write", x_writer + w_principal, wy[p] + mid, x_record, ry0, colour[p],
                             f"{p} wrote {flow.id}", ' stroke-width="2"'))
        for p in dict.fromkeys(a.principal for a in flow.readers):
            n = sum(1 for a in flow.readers if a.principal == p)
            svg.append(curve("read", x_record + w_record, ry0, x_reader, ry[p] + mid, colour[p],
                             f"{p} read {flow.id} {n}×",
                             f' stroke-opacity="0.75" stroke-width="{1.5 + min(n, 8) * 0.75:.2f}"'))
        if flow.removed_by is not None:
            p = flow.removed_by.principal
            svg.append(curve("remove", x_record + w_record, ry0, x_reader, ry[p] + mid, "#c62828",
                             f"{p} {flow.status} {flow.id} at {when(flow.removed_by)}",
                             ' stroke-dasharray="6 3" stroke-width="2"'))
        for parent in flow.parents:
            if parent in y_of:
                cascade = flow.cascade_from == parent
                svg.append(loop("derived" + (" cascade" if cascade else ""), x_record, y_of[parent] + mid, ry0, -60,
                                "#c62828" if cascade else "#ef6c00",
                                f"{flow.id} derives from {parent}" + (" (erased with it)" if cascade else ""),
                                ' stroke-width="2" stroke-dasharray="2 3"'))
        if flow.supersedes and flow.supersedes in y_of:
            svg.append(loop("supersede", x_record + w_record, y_of[flow.supersedes] + mid, ry0, 40, "#9e9e9e",
                            f"{flow.id} supersedes {flow.supersedes}", ' stroke-dasharray="4 3" stroke-width="1.5"'))
    for y_head, ns in headers:
        svg.append(f'<text x="{x_record}" y="{y_head + 14}" class="nshead">{_esc(ns)}</text>')
    for flow in report.records:
        y0 = y_of[flow.id]
        dash = ' stroke-dasharray="5 3"' if flow.status in REMOVED else ""
        tag = flow.status + (f" by {flow.removed_by.principal[:16]}" if flow.removed_by else "")
        tip = (f"{flow.id}\nnamespace: {flow.namespace}\nstatus: {flow.status}\n"
               f"written by: {', '.join(f'{a.principal} at {when(a)}' for a in flow.writers) or '-'}\n"
               f"read by: {readers_text(flow.readers) or '-'}"
               + (f"\nderived from: {', '.join(flow.parents)}" if flow.parents else ""))
        svg.append(f'<g class="node record status-{_esc(flow.status)}" data-id="{_esc(flow.id)}">'
                   f'<title>{_esc(tip)}</title>'
                   f'<rect x="{x_record}" y="{y0}" width="{w_record}" height="{node_h}" rx="5" '
                   f'fill="{_FILL.get(flow.status, "#fff")}" stroke="{_STROKE.get(flow.status, "#555")}" '
                   f'stroke-width="1.5"{dash}/>'
                   f'<text x="{x_record + 8}" y="{y0 + 19}" class="label id">{_esc(flow.id)}</text>'
                   f'<text x="{x_record + w_record - 8}" y="{y0 + 19}" class="tag" text-anchor="end">'
                   f'{_esc(tag)}</text></g>')
    removers, readers = set(report.removers), set(report.readers)
    for names, placed, x in ((writers, wy, x_writer), (right, ry, x_reader)):
        for p in names:
            y0 = placed[p]
            label = who(p, report.roles)
            kind = "writer" if x == x_writer else " ".join(
                k for k, holds in (("reader", p in readers), ("remover", p in removers)) if holds)
            svg.append(f'<g class="node principal {kind}" data-principal="{_esc(p)}">'
                       f'<title>{_esc(label)}</title>'
                       f'<rect x="{x}" y="{y0}" width="{w_principal}" height="{node_h}" rx="15" fill="#ffffff" '
                       f'stroke="{colour[p]}" stroke-width="2.5"/>'
                       f'<text x="{x + 14}" y="{y0 + 19}" class="label">{_esc(label[:30])}</text></g>')
    svg.append("</svg>")
    return _page(report, title, "".join(svg))


def _page(report: FlowReport, title: str, graph: str) -> str:
    verified = ""
    if report.verify is not None:
        verified = ('<span class="ok">audit log verified</span>' if report.verify.ok else
                    f'<span class="bad">audit log TAMPERED: {len(report.verify.problems)} problem(s)</span>')
    rows = []
    for flow in report.records:
        written = "<br>".join(_esc(f"{when(a)} {who(a.principal, report.roles)}") for a in flow.writers) or "-"
        removed = (f"<br>{_esc(when(flow.removed_by))} by {_esc(who(flow.removed_by.principal, report.roles))}"
                   if flow.removed_by else "")
        provenance = [f"derived from {p}" for p in flow.parents]
        provenance += [f"supersedes {flow.supersedes}"] if flow.supersedes else []
        provenance += [f"erased by cascade from {flow.cascade_from}"] if flow.cascade_from else []
        provenance += [f"held: {flow.retracted_from} retracted"] if flow.retracted_from else []
        rows.append(f"<tr><td>{written}</td><td><code>{_esc(flow.id)}</code></td><td>{_esc(flow.namespace or '?')}</td>"
                    f"<td>{_esc(readers_text(flow.readers) or '-')}</td><td class=\"status-{_esc(flow.status)}\">"
                    f"{_esc(flow.status)}{removed}</td><td>{'<br>'.join(_esc(p) for p in provenance) or '-'}</td></tr>")
    denied = ""
    if report.denied:
        denied = ("<h2>Denied</h2><table id=\"denied-table\"><thead><tr><th>time</th><th>who</th><th>operation</th>"
                  "<th>namespace</th><th>deciding rule</th></tr></thead><tbody>" + "".join(
                      f"<tr><td>{_esc(when(a))}</td><td>{_esc(who(a.principal, report.roles))}</td><td>{_esc(a.op)}</td>"
                      f"<td>{_esc(a.namespace or '-')}</td><td><code>{_esc(a.rule or '-')}</code></td></tr>"
                      for a in report.denied) + "</tbody></table>")
    withheld = ""
    if report.withheld:
        withheld = ("<h2>Withheld</h2><table id=\"withheld-table\"><thead><tr><th>who</th><th>records withheld</th>"
                    "<th>reads</th></tr></thead><tbody>" + "".join(
                        f"<tr><td>{_esc(who(p, report.roles))}</td><td>{n}</td><td>{k}</td></tr>"
                        for p, (n, k) in report.withheld.items()) + "</tbody></table>")
    legend = " ".join(f'<span class="chip" style="background:{_FILL[s]};border-color:{_STROKE[s]}">{s}</span>'
                      for s in STATUSES)
    first, last = report.span
    window = f" Events from {_esc(when_text(first))} to {_esc(when_text(last))}." if first else ""
    selection = f" Selection: {_esc(report.selection)}." if report.selection != "all" else ""
    generated = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; img-src data:">
<title>{_esc(title)}</title>
<style>
body {{ font-family: sans-serif; margin: 20px; color: #212121; background: #fafafa; }}
h1 {{ font-size: 20px; margin: 0 0 6px; }} h2 {{ font-size: 16px; margin: 18px 0 6px; }}
.meta {{ color: #555; margin-bottom: 10px; }}
.ok {{ color: #2e7d32; font-weight: bold; }} .bad {{ color: #c62828; font-weight: bold; }}
.chip {{ display: inline-block; border: 1.5px solid; border-radius: 4px; padding: 1px 6px; margin-right: 4px; font-size: 12px; }}
.graph {{ background: #fff; border: 1px solid #ddd; overflow: auto; margin: 10px 0 20px; }}
svg .colhead {{ font-size: 16px; font-weight: bold; fill: #333; }}
svg .nshead {{ font-size: 12px; fill: #666; }}
svg .label {{ font-size: 13px; fill: #212121; }}
svg .id {{ font-family: monospace; font-size: 11px; }}
svg .tag {{ font-size: 11px; fill: #555; }}
svg .edge:hover {{ stroke-width: 4; }}
table {{ border-collapse: collapse; background: #fff; }}
td, th {{ border: 1px solid #ddd; padding: 4px 8px; font-size: 13px; text-align: left; vertical-align: top; }}
th {{ background: #f0f0f0; }}
</style></head>
<body>
<h1>{_esc(title)}</h1>
<div class="meta">{len(report.records)} records, {len(report.writers)} writers, {len(report.readers)} readers,
{len(report.removers)} removers, {report.entries} audit entries; generated {generated}.{window}{selection} {verified}</div>
<div class="meta">Record status: {legend} Edges: writer → record (one per writer), record → reader
(thicker for more reads), record → remover (red, dashed), derived-from between records (orange; red where
an erasure cascaded along it), supersedes (grey, dashed). No content is shown: the audit log holds none.</div>
<div class="meta">{_esc(WITHHELD)}. {_esc(DENIED)}.</div>
<div class="graph">{graph}</div>
<h2>Records</h2>
<table id="flow-table"><thead><tr><th>written</th><th>record</th><th>namespace</th><th>read by</th><th>status</th>
<th>provenance</th></tr></thead>
<tbody>
{chr(10).join(rows)}
</tbody></table>
{denied}
{withheld}
</body></html>
"""


def when_text(t: datetime | None) -> str:
    """A time as ``YYYY-MM-DD HH:MM:SS``."""
    return t.strftime("%Y-%m-%d %H:%M:%S") if t is not None else "?"
