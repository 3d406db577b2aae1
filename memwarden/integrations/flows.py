"""Memory flows from the audit log: who wrote which record, who read it, who removed it.

``memwarden audit flows --data DIR [--html OUT]`` reads the audit log only (never the store,
never content): write and update entries name the record written, its writer and the records
it derives from; search and get entries name the records returned to the reader and count
those withheld; forget, retract, erase and sweep entries retire records and name who did it
(erase entries carry sha256 hashes of ids, matched here against the ids seen). Denials keep
their namespace and deciding rule.

:func:`build_flows` folds the whole log (state needs all of it: an erasure is matched to
records written long before); :func:`select` then narrows the report to a time window, one
record and its provenance, or one principal. Two renderings: a terminal listing
(flows_terminal.py) and a self-contained HTML page with a flow graph (flows_html.py).
"""

from __future__ import annotations

import dataclasses
import hashlib
import re
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

#: Record states, strongest last: a later state replaces an earlier one.
STATUSES = ("active", "quarantined", "superseded", "forgotten", "erasing", "erased", "swept")
REMOVED = {"forgotten", "erased", "swept"}
_VOTES = re.compile(r"votes: (\d+) approve, (\d+) reject, quorum (\d+)")


@dataclass(frozen=True, slots=True)
class Access:
    """One audited access: who, with which roles, by which operation, at which entry and when;
    where (``namespace``), and for a read how many records the policy withheld; for a denial,
    the rule that decided."""

    principal: str
    roles: tuple[str, ...]
    op: str
    seq: int
    ts: str | None = None
    namespace: str | None = None
    withheld: int | None = None
    rule: str | None = None

    @property
    def time(self) -> datetime | None:
        """``ts`` as a datetime (None when the entry has none or it does not parse)."""
        return parse_time(self.ts)


def parse_time(text: object) -> datetime | None:
    """An audit timestamp (ISO 8601) as a datetime, or None."""
    if not isinstance(text, str):
        return None
    try:
        return datetime.fromisoformat(text)
    except ValueError:
        return None


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
    #: Provenance: the records this one was derived from (its write named them).
    parents: list[str] = field(default_factory=list)
    #: Erased because a record it derives from was erased (the erasure cascaded), not directly.
    cascade_from: str | None = None
    #: Held for review because the record it derives from was retracted, and by whom.
    held_by: Access | None = None
    retracted_from: str | None = None
    #: Keyed hashes of the subjects its writes named (the audit log never holds subject ids).
    subject_tags: list[str] = field(default_factory=list)

    @property
    def first_seq(self) -> int:
        seqs = [a.seq for a in self.writers + self.readers]
        return min(seqs) if seqs else 0

    @property
    def accesses(self) -> list[Access]:
        """Every audited event of this record: writes, reads, its removal or hold."""
        return self.writers + self.readers + [a for a in (self.removed_by, self.held_by) if a is not None]

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
    #: Every read (search, list, history), including those that returned nothing: withheld counts.
    reads: list[Access] = field(default_factory=list)
    #: What :func:`select` kept, for a heading ("all" when nothing was selected).
    selection: str = "all"

    @property
    def withheld(self) -> dict[str, tuple[int, int]]:
        """Per principal: (records withheld by the policy, reads that withheld some)."""
        out: dict[str, tuple[int, int]] = {}
        for read in self.reads:
            if read.withheld:
                total, reads = out.get(read.principal, (0, 0))
                out[read.principal] = (total + read.withheld, reads + 1)
        return out

    @property
    def removers(self) -> list[str]:
        """The principals who forgot, erased, retracted or swept a record of the report."""
        return list(dict.fromkeys(r.removed_by.principal for r in self.records if r.removed_by is not None))

    @property
    def span(self) -> tuple[datetime | None, datetime | None]:
        """The first and last time of the events in the report."""
        times = [t for r in self.records for a in r.accesses if (t := a.time) is not None]
        times += [t for a in self.denied + self.reads if (t := a.time) is not None]
        return (min(times), max(times)) if times else (None, None)

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
    reads: list[Access] = []
    unmatched = 0

    def record(rid: str, namespace: str | None = None) -> RecordFlow:
        flow = records.get(rid)
        if flow is None:
            flow = records[rid] = RecordFlow(rid)
        if namespace and flow.namespace is None:
            flow.namespace = namespace
        return flow

    def set_status(flow: RecordFlow, status: str) -> None:
        if flow.status in REMOVED:
            return  # a removed record stays removed, whatever the log says after
        flow.status = status

    for index, entry in enumerate(entries):
        op, outcome = entry.get("op"), entry.get("outcome")
        principal = str(entry.get("principal") or "?")
        rules = [str(r) for r in entry.get("rules") or ()]
        who = Access(principal, tuple(entry.get("roles") or ()), str(op), int(entry.get("seq") or index + 1),
                     entry.get("ts"), entry.get("namespace") or None,
                     entry.get("withheld") if isinstance(entry.get("withheld"), int) else None)
        roles.setdefault(principal, who.roles)
        if outcome == "denied":
            denied.append(dataclasses.replace(who, rule="; ".join(rules) or None))
            continue
        if op == "erase" and outcome == "pending":
            # An erasure's intent: under way until its final entry (or a recovery) says it is done.
            by_hash = {_sha(rid): flow for rid, flow in records.items()}
            for digest in entry.get("records") or ():
                if (flow := by_hash.get(str(digest))) is not None and flow.status not in REMOVED:
                    flow.status, flow.removed_by = "erasing", who
            continue
        if outcome != "ok" or index in void:
            continue
        ids = [str(r) for r in entry.get("records") or ()]
        namespace = entry.get("namespace")
        quarantined = any("=quarantine" in str(v) for v in entry.get("verdicts") or ())
        if op in ("search", "list", "history"):
            reads.append(who)
        tags = [str(t) for t in entry.get("subject_tags") or ()]
        if op == "write" and ids:
            flow = record(ids[0], namespace)
            flow.parents = list(dict.fromkeys([*flow.parents, *(str(p) for p in entry.get("parents") or ())]))
            flow.subject_tags = list(dict.fromkeys([*flow.subject_tags, *tags]))
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
            new.subject_tags = list(dict.fromkeys([*new.subject_tags, *tags]))
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
                held = record(rid)
                set_status(held, "quarantined")
                held.held_by, held.retracted_from = who, target.id
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
            gone: list[RecordFlow] = []
            for digest in ids:
                flow = by_hash.get(digest)
                if flow is None:
                    unmatched += 1
                    continue
                flow.status = "erased"
                # A recovery finishes the erasure its intent started: the officer of the intent acted.
                if not (op == "recover" and flow.removed_by is not None):
                    flow.removed_by = who
                gone.append(flow)
            erased = {f.id for f in gone}
            for flow in gone:
                flow.cascade_from = next((p for p in flow.parents if p in erased), None)
    ordered = sorted(records.values(), key=lambda f: (f.namespace or "~", f.first_seq, f.id))
    return FlowReport(ordered, roles, len(entries), denied, unmatched, verify, reads)


def _linked(report: FlowReport, seeds: Iterable[str]) -> set[str]:
    """``seeds`` with their versions, what they derive from and what derives from them, transitively."""
    flows = {f.id: f for f in report.records}
    children: dict[str, list[str]] = {}
    for f in report.records:
        for p in f.parents:
            children.setdefault(p, []).append(f.id)
    linked, todo = set(), list(seeds)
    while todo:
        rid = todo.pop()
        if rid in linked or rid not in flows:
            continue
        linked.add(rid)
        f = flows[rid]
        todo += [*f.parents, *children.get(rid, ()), *(x for x in (f.supersedes, f.superseded_by) if x)]
    return linked


def select(report: FlowReport, *, since: datetime | None = None, until: datetime | None = None,
           record: str | None = None, principal: str | None = None, subject_tag: str | None = None) -> FlowReport:
    """The part of ``report`` an audit asks about (each filter narrows; None: no filter).

    ``since``/``until``: the events in that window (a record stays when any of its events
    does, with only those events; an event without a time is outside any window).
    ``record``: that record with its versions, what it derives from and what derives from it,
    transitively. ``subject_tag``: the records about a subject (their writes named it; the tag
    is :meth:`AuditLog.subject_tag` of its id), linked the same way. ``principal``: the records it wrote, read or removed, its denials and reads.
    The records' states are those of the whole log: a record erased after the window shows as
    erased.
    """
    def in_window(access: Access | None) -> bool:
        if access is None:
            return False
        if since is None and until is None:
            return True
        t = access.time
        return t is not None and (since is None or t >= since) and (until is None or t <= until)

    flows = {f.id: f for f in report.records}
    keep = set(flows)
    said = []
    if record is not None:
        said.append(f"record {record}")
        keep &= _linked(report, [record])
    if subject_tag is not None:
        # The report names the subject by a prefix of its keyed hash: a page or a terminal log
        # of it must not carry the id the audit log itself keeps out.
        said.append(f"subject with keyed hash {subject_tag[:12]}...")
        keep &= _linked(report, [f.id for f in report.records if subject_tag in f.subject_tags])
    denied, reads = list(report.denied), list(report.reads)
    if record is not None or subject_tag is not None:
        denied, reads = [], []  # neither names a record nor a subject
    if principal is not None:
        said.append(f"principal {principal}")
        keep &= {f.id for f in report.records if any(a.principal == principal for a in f.accesses)}
        denied = [a for a in denied if a.principal == principal]
        reads = [a for a in reads if a.principal == principal]
    out: list[RecordFlow] = []
    for rid in (f.id for f in report.records if f.id in keep):
        f = flows[rid]
        if since is not None or until is not None:
            if not any(in_window(a) for a in f.accesses):
                continue
            f = dataclasses.replace(f, writers=[a for a in f.writers if in_window(a)],
                                    readers=[a for a in f.readers if in_window(a)])
        out.append(f)
    if since is not None or until is not None:
        said.append(f"{since.isoformat() if since else '...'} to {until.isoformat() if until else '...'}")
        denied, reads = [a for a in denied if in_window(a)], [a for a in reads if in_window(a)]
    return dataclasses.replace(report, records=out, denied=denied, reads=reads,
                               selection=", ".join(said) or "all")


