"""The operations of the differential runs: the test policy, the vocabulary of principals,
namespaces, contents and ids, and ``generate``, which draws one step through a ``Chooser``
(random.Random in the benchmark, hypothesis' data.draw in the stateful test), so that both
exercise exactly the same operations.

A step is plain data with concrete ids. Ids are deterministic in memwarden, so replaying the
same steps on a fresh memory reproduces the same state; that is what makes a disagreement
shrinkable to a minimal reproducer by dropping steps.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Protocol

from tests.reference_model import canonical, keyed_id, record_id

# A small hospital. Each principal has partial rights on purpose: a nurse who may not read
# restricted or tool-written notes, a contractor who sees only external notes, a reviewer who may
# approve but not read, a senior reviewer who reads only what physicians wrote, an officer who
# may erase only part of the tree, an eraser who may erase everything and read nothing, and zed,
# whose rights are its own (a principal's rules: zed's only role, guest, has none).
POLICY = """
g, alice, physician
g, bob, nurse
g, carl, contractor
g, rita, reviewer
g, rex, senior_reviewer
g, dana, officer
g, dpo, eraser
g, feed, ingest
g, mal, visitor
g, omni, auditor
g, zed, guest

p, physician, ward/**, read
p, physician, ward/pat/*, write
p, physician, ward/pat/*, update
p, physician, ward/pat/*, forget
p, physician, ward/pat/*, history
p, physician, ward/notes, write
p, physician, ward/notes, update
p, physician, ward/notes, forget
p, physician, ward/notes, history
p, physician, ward/notes, approve
p, physician, ward/board, write
p, physician, ward/board, update

p, nurse, ward/pat/*, read
p, nurse, ward/pat/*, read, deny, label.sens=restricted
p, nurse, ward/**, read, deny, source=tool
p, nurse, ward/pat/*, write
p, nurse, ward/pat/*, update
p, nurse, ward/pat/*, history
p, nurse, ward/notes, read
p, nurse, ward/notes, write, review, kind=rule
p, nurse, ward/notes, write
p, nurse, ward/notes, update, review
p, nurse, ward/board, read
p, nurse, ward/board, write

p, contractor, ward/notes, read, allow, label.audience=external
p, contractor, ward/notes, write, allow, label.audience=external
p, contractor, ward/notes, update, allow, label.audience=external

p, reviewer, ward/**, approve

p, senior_reviewer, ward/**, approve
p, senior_reviewer, ward/**, read, allow, writer_role=physician
p, senior_reviewer, ward/notes, read

p, officer, ward/pat/p1, erase
p, officer, ward/notes, erase
p, officer, ward/**, read

p, eraser, ward/**, erase

p, ingest, ward/pat/*, write
p, ingest, ward/pat/*, write, review, kind=rule
p, ingest, ward/feed, write
p, ingest, ward/feed, read

p, visitor, lobby, read
p, visitor, lobby, write
p, visitor, lobby, update
p, visitor, lobby, forget

p, auditor, ward/**, read
p, auditor, ward/**, history
p, auditor, lobby, read

# a declared principal's own rules
p, zed, ward/board, read
p, zed, ward/board, write
p, zed, ward/board, update

ttl, ward/feed, *, 1h
ttl, ward/notes, event, 10m
cap, ward/board, 3
"""

#: Who acts, and the source its session is bound to.
PRINCIPALS = {"alice": "user", "bob": "user", "carl": "user", "rita": "user", "rex": "user", "dana": "user",
              "dpo": "user", "feed": "tool", "mal": "user", "omni": "user", "zed": "user"}
NAMESPACES = [("ward", "pat", "p1"), ("ward", "pat", "p2"), ("ward", "notes"), ("ward", "feed"),
              ("ward", "board"), ("lobby",), ("ward", "admin"),
              # the same namespaces spelled otherwise: full-width letters (NFKC), the string form
              ("ward", "pat", "\uff50\uff11"), "ward/notes"]
PREFIXES = [(), ("ward",), ("ward", "pat"), ("ward", "pat", "p1"), ("ward", "notes"), ("ward", "feed"),
            ("ward", "board"), ("lobby",), ("ward", "admin"), ("\uff57\uff41\uff52\uff44",), "ward/pat"]
CONTENTS = ["p1 is allergic to penicillin", "p1 takes drug A daily", "p2 has diabetes", "p2 is HIV positive",
            "shift change at seven", "always double check doses", "meeting at noon", "lobby open late",
            # the same texts as tombstones see them (case and spacing do not count)
            "P1 is  allergic to PENICILLIN", "p2 IS hiv positive"]
KINDS = ["fact", "event", "rule"]
SUBJECTS = [(), ("p1",), ("p2",), ("p1", "p2"), ("\uff50\uff11",)]
LABELS = [{}, {"sens": "restricted"}, {"audience": "external"}, {"sens": "restricted", "audience": "external"}]
KEYS = ["k1", "k2", "k3"]
TTLS = [None, None, 60, 3600]
TICKS = [1, 30, 600, 3601, 86401]
#: Search queries: None lists; with k above the store's size a query search returns every seen
#: record too (ranking is not part of the model, so only the sets are compared).
QUERIES = [None, None, None, "penicillin allergy", "HIV"]
START = datetime(2031, 1, 1, tzinfo=timezone.utc)
#: Votes that release (or reject) a record, and seconds a record waits for them.
QUORUM, REVIEW_TIMEOUT = 2, 86400.0


class Chooser(Protocol):
    """Where a generator's choices come from (random.Random, or hypothesis' data.draw)."""

    def choice(self, options: Sequence[Any]) -> Any: ...

    def chance(self, p: float) -> bool: ...


@dataclass(frozen=True)
class Step:
    """One operation by one principal, with concrete arguments."""

    op: str
    principal: str
    args: dict[str, Any] = field(default_factory=dict)

    def text(self) -> str:
        """The step as a line of a reproducer."""
        args = ", ".join(f"{k}={v!r}" for k, v in self.args.items())
        return f"{self.principal}.{self.op}({args})"


# -- generating steps ----------------------------------------------------------------------

@dataclass(frozen=True)
class Pool:
    """The ids a run can aim at: every id it has seen (hidden, erased or visible alike), and
    those awaiting review in the model now (so that votes, re-votes and overwrites of records
    under review are frequent, not lucky)."""

    known: Sequence[str] = ()
    pending: Sequence[str] = ()


def _ids(c: Chooser, pool: Pool) -> str:
    """An id to aim at: a known or pending one, or a guess computed the way memwarden computes
    ids (so it may name a record that exists but is hidden)."""
    known = pool.known
    how = c.choice(["known"] * 5 + ["pending", "pending", "guess", "guess", "keyed", "version", "random"])
    if how == "pending" and pool.pending:
        return c.choice(pool.pending)
    if how in ("known", "pending") and known:
        return c.choice(known)
    if how == "keyed":
        return keyed_id(canonical(c.choice(NAMESPACES)), c.choice(KEYS))
    if how == "version" and known:
        return record_id(c.choice(list(PRINCIPALS)), canonical(c.choice(NAMESPACES)), c.choice(CONTENTS),
                         supersedes=c.choice(known))
    if how == "random":
        return "mem_" + hashlib.sha256(c.choice(CONTENTS).encode() + b"x").hexdigest()[:32]
    return record_id(c.choice(list(PRINCIPALS)), canonical(c.choice(NAMESPACES)), c.choice(CONTENTS))


def _write_args(c: Chooser, pool: Pool, keyed: bool) -> dict[str, Any]:
    args: dict[str, Any] = {"content": c.choice(CONTENTS), "namespace": c.choice(NAMESPACES),
                            "kind": c.choice(KINDS), "subjects": c.choice(SUBJECTS), "labels": c.choice(LABELS),
                            "ttl": c.choice(TTLS)}
    if keyed:
        args["key"] = c.choice(KEYS)
    if c.chance(0.15):
        args["parents"] = (_ids(c, pool),)
    if c.chance(0.1):
        args["allow_reingest"] = True
    if c.chance(0.1):
        args["source"] = c.choice(["user", "agent", "tool", "external"])  # declared, not bound
    return args


def generate(op: str, c: Chooser, pool: Pool) -> Step:
    """A step of kind ``op`` by a chosen principal, aiming at ids from ``pool``."""
    who = c.choice(list(PRINCIPALS))
    if op in ("write", "put"):
        return Step(op, who, _write_args(c, pool, op == "put"))
    if op == "update":
        args = {"id": _ids(c, pool), "content": c.choice(CONTENTS)}
        if c.chance(0.4):
            args["labels"] = c.choice(LABELS)
        if c.chance(0.2):
            args["kind"] = c.choice(KINDS)
        return Step(op, who, args)
    if op in ("get", "forget", "retract", "approve", "reject", "history"):
        return Step(op, who, {"id": _ids(c, pool)})
    if op == "search":
        return Step(op, who, {"prefix": c.choice(PREFIXES), "query": c.choice(QUERIES)})
    if op == "list":
        return Step(op, who, {"prefix": c.choice(PREFIXES)})
    if op == "batch":
        parts = []
        for _ in range(c.choice([2, 3])):
            kind = c.choice(["write", "write", "put", "update"])
            parts.append((kind, generate(kind, c, pool).args))
        return Step(op, who, {"ops": tuple(parts)})
    if op == "erase_subject":
        return Step(op, who, {"subject": c.choice(["p1", "p2", "\uff50\uff12"])})
    if op == "erase_ids":
        return Step(op, who, {"ids": tuple(dict.fromkeys(_ids(c, pool) for _ in range(c.choice([1, 1, 2, 3]))))})
    if op == "tick":
        return Step(op, "clock", {"seconds": c.choice(TICKS)})
    raise ValueError(f"unknown op {op!r}")


#: Operation kinds with their weight in a random run.
OPS = {"write": 6, "put": 5, "update": 3, "get": 4, "search": 3, "list": 1, "forget": 2, "retract": 1,
       "approve": 3, "reject": 1, "history": 2, "erase_subject": 1, "erase_ids": 1, "batch": 1,
       "tick": 1}
