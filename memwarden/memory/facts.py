"""``OpFacts``: what one operation did, gathered as it runs; it becomes the operation's audit
entry and its span attributes, so the two always say the same thing."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from memwarden.core.namespace import Namespace, namespace_text
from memwarden.core.records import Principal
from memwarden.core.schema import OP_KINDS
from memwarden.guards.validators import Verdict
from memwarden.memory.audit_checks import SUBJECTS_FIELD
from memwarden.policies.engine import Decision
from memwarden.policies.subjects import NO_SUBJECTS, Subjects


@dataclass
class OpFacts:
    """The facts of one operation (see the module docstring).

    ``outcome`` is "ok", "denied", "rejected", "invalid", "error", or "pending" for an
    erasure whose intent is recorded and whose deletion has not finished.
    """

    op: str
    principal: Principal
    subjects: Subjects = NO_SUBJECTS
    namespace: Namespace | None = None
    decision: str | None = None
    rules: list[str] = field(default_factory=list)
    verdicts: Sequence[Verdict] = ()
    record_ids: list[str] = field(default_factory=list)
    #: The records a write derives from (provenance), so the audit log can draw derived-from edges.
    parents: list[str] = field(default_factory=list)
    #: The subject ids the operation is about (a write's, an erasure's). In memory only: the
    #: audit log stores their keyed hashes (AuditLog.append), and spans never carry them.
    about: list[str] = field(default_factory=list)
    returned: int | None = None
    withheld: int | None = None
    held: int | None = None
    rechecked_out: int = 0
    replay: bool = False
    outcome: str = "error"
    error: str | None = None
    audited: bool = False
    audit_seq: int | None = None
    search_mode: str | None = None
    candidates: dict[str, int] = field(default_factory=dict)
    note: str | None = None
    #: The audit entry this one completes (an erasure's intent), if any.
    completes: int | None = None
    #: The journal token of an erasure's intent (its "pending" entry carries it).
    intent: str | None = None
    # Operations of the core that this one causes (lessons, evictions), run once it is audited.
    follow_ups: list[Callable[[], None]] = field(default_factory=list)

    def decided(self, decision: Decision) -> Decision:
        """Record a policy decision (the last one sets ``decision``; every rule is kept)."""
        self.decision = "allow" if decision.allowed else "deny"
        self.rules.append(decision.rule_text)
        return decision

    @property
    def action(self) -> str:
        """The policy action of this operation's kind."""
        return OP_KINDS[self.op].action

    def roles(self) -> list[str]:
        """The roles the principal acted with."""
        return sorted(self.subjects.roles)

    def audit_entry(self) -> dict[str, Any]:
        """The audit log entry (content-free: ids, counts, decisions and verdicts)."""
        entry = {
            "op": self.op,
            "principal": self.principal.id,
            "roles": self.roles(),
            "action": self.action,
            "namespace": namespace_text(self.namespace) if self.namespace is not None else None,
            "decision": self.decision,
            "rules": list(dict.fromkeys(self.rules)),
            "verdicts": [v.text for v in self.verdicts],
            "records": self.record_ids,
            "returned": self.returned,
            "withheld": self.withheld,
            "replay": self.replay,
            "outcome": self.outcome,
            "error": self.error,
        }
        # Only where they say something, so entries of other kinds keep their old shape.
        if self.held is not None:
            entry["held"] = self.held
        if self.parents:
            entry["parents"] = self.parents
        if self.about:
            entry[SUBJECTS_FIELD] = list(self.about)
        if self.completes is not None:
            entry["completes"] = self.completes
        if self.intent is not None:
            entry["intent"] = self.intent
        return entry

    def span_attributes(self) -> dict[str, Any]:
        """The ``memwarden.*`` span attributes (the ``gen_ai.*`` ones derive from them)."""
        return {
            "gen_ai.operation.name": OP_KINDS[self.op].span,
            "memwarden.operation": self.op,
            "memwarden.principal": self.principal.id,
            "memwarden.roles": self.roles(),
            "memwarden.action": self.action,
            "memwarden.namespace": namespace_text(self.namespace) if self.namespace is not None else None,
            "memwarden.decision": self.decision,
            "memwarden.rule": "; ".join(dict.fromkeys(self.rules)) or None,
            "memwarden.verdicts": [v.text for v in self.verdicts],
            "memwarden.record_ids": self.record_ids,
            "memwarden.records.returned": self.returned,
            "memwarden.records.withheld": self.withheld,
            "memwarden.records.held": self.held,
            "memwarden.records.rechecked_out": self.rechecked_out,
            "memwarden.replay": self.replay,
            "memwarden.outcome": self.outcome,
            "memwarden.audit.seq": self.audit_seq,
            "memwarden.audit.completes": self.completes,
            "memwarden.search.mode": self.search_mode,
            "memwarden.search.candidates.dense": self.candidates.get("dense"),
            "memwarden.search.candidates.lexical": self.candidates.get("lexical"),
            "memwarden.search.note": self.note,
        }


#: What stands for a subject id in an audit entry's error text.
SUBJECT_WITHHELD = "<subject>"


def named_subjects(op: object) -> list[str]:
    """The subject ids an operation names as its caller gave them (``subjects``, ``subject``),
    checked or not; only lists, tuples and strings are looked into (reading another iterable
    would consume it)."""
    named: list[str] = []
    for name in ("subjects", "subject"):
        value = getattr(op, name, None)
        items = [value] if isinstance(value, str) else value if isinstance(value, (list, tuple)) else ()
        named += [s for s in items if isinstance(s, str) and s]
    return named


def error_text(exc: BaseException, subjects: Sequence[str]) -> str:
    """An audit entry's ``error``: the exception's type and message, every spelling of the
    ``subjects`` in it replaced by <subject>.

    The message quotes what its raiser had at hand (the subject a tombstone refused, an
    invalid subject id), and the log never holds subject ids in clear (docs/erasure.md); the
    entry's ``subject_tags`` say which subject, for whoever holds the key."""
    spellings = {v for s in subjects for v in (s, unicodedata.normalize("NFKC", s), repr(s)[1:-1]) if v}
    message = str(exc)
    for spelling in sorted(spellings, key=len, reverse=True):
        # Not inside a longer word, so that a one-letter subject leaves the message readable.
        message = re.sub(rf"(?<![0-9A-Za-z]){re.escape(spelling)}(?![0-9A-Za-z])", SUBJECT_WITHHELD, message)
    return f"{type(exc).__name__}: {message[:200]}"
