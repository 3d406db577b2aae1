"""The governance scorecard of one trace: per principal, the records returned, withheld and
denied, counted from governed operations (docs/observability.md#a-governance-scorecard-per-trace).

One operation is a :class:`GovernedOp`, read either from a memory span's ``memwarden.*``
attributes (:func:`op_from_span`) or from its audit entry (:func:`op_from_entry`); both carry
the same facts because both are made from one ``OpFacts``. A :class:`Scorecard` folds them.
Nothing here sees content: principals, operation names, outcomes and counts only.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["READS", "GovernedOp", "PrincipalTally", "Scorecard", "op_from_entry", "op_from_span", "tally"]

#: The operations whose ``returned`` and ``withheld`` counts are records a principal read.
READS = frozenset({"search", "get", "list", "history"})


class GovernedOp(BaseModel):
    """The governed facts of one operation that a scorecard counts."""

    model_config = ConfigDict(frozen=True)

    principal: str
    op: str
    outcome: str
    returned: int = 0
    withheld: int = 0


class PrincipalTally(BaseModel):
    """One principal's figures in one trace."""

    principal: str
    operations: int = 0
    reads: int = 0
    returned: int = Field(0, description="records its reads returned")
    withheld: int = Field(0, description="records its reads' policy filter kept out (counted, never named)")
    denied: int = Field(0, description="its operations the policy refused outright")

    @property
    def label(self) -> str:
        """``3 returned, 2 withheld, 1 denied``."""
        return f"{self.returned} returned, {self.withheld} withheld, {self.denied} denied"


class Scorecard(BaseModel):
    """The per-principal tallies of one trace (or of any set of operations)."""

    principals: dict[str, PrincipalTally] = Field(default_factory=dict)

    def add(self, op: GovernedOp) -> None:
        """Count one operation."""
        row = self.principals.get(op.principal)
        if row is None:
            row = self.principals[op.principal] = PrincipalTally(principal=op.principal)
        row.operations += 1
        if op.outcome == "denied":
            row.denied += 1
        elif op.outcome == "ok" and op.op in READS:
            row.reads += 1
            row.returned += op.returned
            row.withheld += op.withheld

    def total(self) -> PrincipalTally:
        """All principals together (``principal`` is ``"*"``)."""
        out = PrincipalTally(principal="*")
        for row in self.principals.values():
            for name in ("operations", "reads", "returned", "withheld", "denied"):
                setattr(out, name, getattr(out, name) + getattr(row, name))
        return out

    def as_attributes(self) -> dict[str, Any]:
        """Span attributes for any OTLP backend: totals as numbers (queryable, e.g. TraceQL
        ``span.memwarden.scorecard.withheld > 0``) and the per-principal rows as one JSON string."""
        total = self.total()
        rows = {p: {"returned": r.returned, "withheld": r.withheld, "denied": r.denied}
                for p, r in sorted(self.principals.items())}
        return {"memwarden.scorecard.returned": total.returned, "memwarden.scorecard.withheld": total.withheld,
                "memwarden.scorecard.denied": total.denied,
                "memwarden.scorecard": json.dumps(rows, sort_keys=True, separators=(",", ":"))}


def _count(value: object) -> int:
    # bool is an int subclass; a count that is not a non-negative int counts as nothing.
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def op_from_span(attributes: Mapping[str, Any]) -> GovernedOp | None:
    """The governed operation a span's attributes describe, or None for a span that is not a
    memwarden memory span (no ``memwarden.operation`` / ``memwarden.principal``)."""
    op, principal = attributes.get("memwarden.operation"), attributes.get("memwarden.principal")
    if not isinstance(op, str) or not isinstance(principal, str):
        return None
    return GovernedOp(principal=principal, op=op, outcome=str(attributes.get("memwarden.outcome") or "error"),
                      returned=_count(attributes.get("memwarden.records.returned")),
                      withheld=_count(attributes.get("memwarden.records.withheld")))


def op_from_entry(entry: Mapping[str, Any]) -> GovernedOp:
    """The governed operation an audit entry records."""
    return GovernedOp(principal=str(entry.get("principal") or "?"), op=str(entry.get("op") or "?"),
                      outcome=str(entry.get("outcome") or "error"), returned=_count(entry.get("returned")),
                      withheld=_count(entry.get("withheld")))


def tally(ops: Iterable[GovernedOp]) -> Scorecard:
    """Fold operations into a scorecard, principals in the order they first acted."""
    card = Scorecard()
    for op in ops:
        card.add(op)
    return card
