"""A small in-memory reference model of memwarden's documented semantics (issue 16, item 6).

It is the semantics of issue 16 ("one decision point": who may do what, and what a caller may
learn) written as code, and nothing more: a dict of records, a set of tombstones and a clock. Decisions are made by the tiny evaluator below over
the rules memwarden's own parser reads (so that the parser is shared but PolicyEngine, pycasbin,
the pushdown and the store are all under test): a rule applies when its subject is one of the
caller's subjects, its action is the one asked, its pattern matches the namespace label by label
and its condition holds on the record; any applying deny wins, else any allow or review allows
(review also quarantines), else deny by default.

Every operation returns what memwarden should return, or raises the memwarden exception (type and
message) it should raise. Where the spec names no message the model uses memwarden's text;
the spec questions and the model's assumptions are listed in the issue's notes.
"""

from __future__ import annotations

import sys
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta

from memwarden import AccessDenied, InvalidRequest, MemoryRecord, NotFound, WriteRejected
from memwarden.policies.loading import Rule, parse_policy_text
from tests.clock import Clock

# Ids are computed exactly as memwarden computes them (from the module holding its records).
keyed_id = sys.modules[MemoryRecord.__module__].keyed_id
record_id = sys.modules[MemoryRecord.__module__].record_id

ACTIVE, QUARANTINED, SUPERSEDED, FORGOTTEN = "active", "quarantined", "superseded", "forgotten"
NO_RULE = "no matching rule (deny by default)"
#: Sources, most trusted first: declaring one more trusted than the session's needs ``claim``.
TRUST_ORDER = ("user", "agent", "tool", "external")
#: The label a held record (an erasure that could not reach it) carries.
HELD_LABEL = "erasure_pending"


@dataclass(frozen=True)
class Rec:
    """One stored record: the fields a caller can observe."""

    id: str
    namespace: tuple[str, ...]
    content: str
    kind: str
    subjects: tuple[str, ...]
    writer: str
    writer_roles: tuple[str, ...]
    source: str
    parents: tuple[str, ...]
    created_at: datetime
    expires_at: datetime | None
    status: str
    version: int
    supersedes: str | None
    labels: Mapping[str, str]
    key: str | None
    approvals: tuple[str, ...] = ()
    rejections: tuple[str, ...] = ()
    trust: float = 1.0


@dataclass(frozen=True)
class Verdict:
    """A decision: allowed or not, whether it asks for review, and the line that decided."""

    allowed: bool
    review: bool
    rule: str


@dataclass(frozen=True)
class ReviewResult:
    """What approve/reject return: the votes, and the record only for a reviewer who may read it."""

    id: str
    status: str
    approvals: tuple[str, ...]
    rejections: tuple[str, ...]
    quorum: int
    record: Rec | None


@dataclass(frozen=True)
class Receipt:
    """The observable part of an erasure receipt."""

    subject: str | None
    requested_ids: tuple[str, ...]
    erased_ids: tuple[str, ...]
    count: int
    cascaded: int
    held: int
    actor: str


def _text(namespace: Sequence[str]) -> str:
    return "/".join(namespace)


def _matches(rule: Rule, namespace: tuple[str, ...]) -> bool:
    """Label by label: ``*`` is one label, a trailing ``**`` one or more further labels."""
    labels, deep = rule.pattern.labels, rule.pattern.deep
    if len(namespace) < len(labels) or (len(namespace) == len(labels) and deep) \
            or (len(namespace) > len(labels) and not deep):
        return False
    return all(p == "*" or p == n for p, n in zip(labels, namespace))


def _may_reach_below(rule: Rule, prefix: tuple[str, ...]) -> bool:
    """Whether some namespace at or below ``prefix`` can match the rule's pattern."""
    labels, deep = rule.pattern.labels, rule.pattern.deep
    if len(prefix) > len(labels) and not deep:
        return False
    return all(p == "*" or p == n for p, n in zip(labels, prefix))


def _holds(rule: Rule, rec: Rec) -> bool:
    """The rule's condition on the record: every term holds (a missing label has no value)."""
    if rule.condition is None:
        return True
    for term in rule.condition.terms:
        if term.attribute == "kind":
            hit = rec.kind in term.values
        elif term.attribute == "source":
            hit = rec.source in term.values
        elif term.attribute == "writer_role":
            hit = any(role in term.values for role in rec.writer_roles)
        else:
            hit = rec.labels.get(term.attribute[len("label."):]) in term.values
        if hit == term.negated:
            return False
    return True


def canonical(namespace: Sequence[str] | str) -> tuple[str, ...]:
    """A namespace as memwarden stores it: "a/b" or a tuple, each label NFKC-normalised (the
    test's spellings are all valid, so no other rule of canonical labels comes into play)."""
    labels = namespace.split("/") if isinstance(namespace, str) else namespace
    return tuple(unicodedata.normalize("NFKC", label) for label in labels)


def names(values: Iterable[str]) -> tuple[str, ...]:
    """Subjects as memwarden keeps them: NFKC-normalised, duplicates dropped, in order."""
    return tuple(dict.fromkeys(unicodedata.normalize("NFKC", v) for v in values))


def normal(content: str) -> str:
    """Content as tombstones compare it: NFKC, case-folded, whitespace collapsed."""
    return " ".join(unicodedata.normalize("NFKC", content).casefold().split())


@dataclass
class Model:
    """The reference model: policy, records, tombstones and a clock."""

    policy_text: str
    clock: Clock
    quorum: int = 2
    review_timeout: float = 86400.0
    records: dict[str, Rec] = field(default_factory=dict)
    #: (namespace, subject, normalised content) -> the erased record (its attributes decide who
    #: could have read it, and so who the tombstone may answer).
    tombstones: dict[tuple[tuple[str, ...], str, str], Rec] = field(default_factory=dict)

    def __post_init__(self) -> None:
        data = parse_policy_text(self.policy_text)
        self.rules, self.links, self.lifecycle = data.rules, data.links, data.lifecycle

    # -- decisions ---------------------------------------------------------------------

    def declared(self) -> frozenset[str]:
        """Names that are principals: on the left of a g line and on the right of none."""
        return frozenset({link.member for link in self.links} - {link.role for link in self.links})

    def roles(self, principal: str) -> tuple[str, ...]:
        """Every role the principal holds through ``g`` lines, transitively (a principal id
        never holds the role of the same name)."""
        found: set[str] = set()
        frontier = [("principal", principal)]
        while frontier:
            kind, name = frontier.pop()
            for link in self.links:
                member_kind = "principal" if link.member in self.declared() else "role"
                if (member_kind, link.member) == (kind, name) and link.role not in found:
                    found.add(link.role)
                    frontier.append(("role", link.role))
        return tuple(sorted(found))

    def applies(self, rule: object, principal: str) -> bool:
        """A rule of a declared principal is that principal's; any other rule is a role's."""
        if rule.subject in self.declared():
            return rule.subject == principal
        return rule.subject in self.roles(principal)

    def decide(self, principal: str, action: str, rec: Rec) -> Verdict:
        """Deny overrides allow; review allows and asks for review; no rule denies."""
        applying = [r for r in self.rules if self.applies(r, principal) and r.action == action
                    and _matches(r, rec.namespace) and _holds(r, rec)]
        for effect in ("deny", "review", "allow"):
            hit = next((r for r in applying if r.effect == effect), None)
            if hit is not None:
                return Verdict(effect != "deny", effect == "review", hit.text)
        return Verdict(False, False, NO_RULE)

    def allowed(self, principal: str, action: str, rec: Rec | None) -> bool:
        return rec is not None and self.decide(principal, action, rec).allowed

    @staticmethod
    def missing(principal: str, rid: str) -> NotFound:
        """The one answer for an id the caller may not know about, whatever exists."""
        return NotFound(f"no record {rid!r} is visible to {principal!r}")

    def require(self, principal: str, action: str, rec: Rec) -> Verdict:
        verdict = self.decide(principal, action, rec)
        if not verdict.allowed:
            raise AccessDenied(f"{principal!r} may not {action} in {_text(rec.namespace)!r}: {verdict.rule}")
        return verdict

    def scope_empty(self, principal: str, action: str, prefix: tuple[str, ...]) -> bool:
        """No allow (or review) rule of ``action`` can reach anything at or below ``prefix``."""
        return not any(self.applies(r, principal) and r.action == action and r.effect != "deny"
                       and _may_reach_below(r, prefix) for r in self.rules)

    # -- lifecycle ---------------------------------------------------------------------

    def visible(self, rec: Rec | None) -> bool:
        return rec is not None and rec.status == ACTIVE and (rec.expires_at is None or rec.expires_at > self.clock.now)

    def seen(self, principal: str, rec: Rec | None) -> bool:
        return self.visible(rec) and self.allowed(principal, "read", rec)

    def versions(self, rec: Rec) -> list[Rec]:
        """Every version of the memory ``rec`` belongs to (linked by supersedes), oldest first."""
        found = {rec.id: rec}
        changed = True
        while changed:
            changed = False
            for r in list(self.records.values()):
                linked = r.supersedes in found or (r.id in {f.supersedes for f in found.values()})
                if linked and r.id not in found:
                    found[r.id] = r
                    changed = True
        return sorted(found.values(), key=lambda r: (r.version, r.created_at, r.id))

    def alive(self, rec: Rec) -> bool:
        return rec.expires_at is None or rec.expires_at > self.clock.now

    def tombstoned(self, principal: str, namespace: tuple[str, ...], subjects: Iterable[str],
                   content: str) -> str | None:
        """The first subject whose erased content this is, in ``namespace``, where the caller
        could have read the erased record."""
        return next((s for s in subjects if (gone := self.tombstones.get((namespace, s, normal(content))))
                     is not None and self.allowed(principal, "read", gone)), None)

    def knows_version(self, principal: str, rec: Rec | None, action: str) -> bool:
        """forget and history name a memory by the id of any of its versions: the caller knows
        that id when the version is active or superseded, not expired, and the caller may read
        it or do ``action`` on it (and the memory itself is known: see ``current``)."""
        return (rec is not None and rec.status in (ACTIVE, SUPERSEDED) and self.alive(rec)
                and (self.allowed(principal, "read", rec) or self.allowed(principal, action, rec)))

    def current(self, principal: str, rec: Rec | None, action: str) -> list[Rec] | None:
        """forget and history: the versions of ``rec``'s memory when the caller knows it (its
        current version, the newest not under review, is active, alive, and readable or open
        to ``action`` for the caller), else None."""
        if rec is None:
            return None
        versions = self.versions(rec)
        settled = [v for v in versions if v.status != QUARANTINED]
        head = settled[-1] if settled else None
        if head is None or not self.visible(head) or not (
                self.allowed(principal, "read", head) or self.allowed(principal, action, head)):
            return None
        return versions

    def descendants(self, ids: Iterable[str]) -> list[Rec]:
        """Records derived (through parents) from ``ids``, transitively."""
        roots = set(ids)
        found: dict[str, Rec] = {}
        frontier = set(roots)
        while frontier:
            fresh = [r for r in self.records.values()
                     if r.id not in found and r.id not in roots and frontier & set(r.parents)]
            found.update((r.id, r) for r in fresh)
            frontier = {r.id for r in fresh}
        return sorted(found.values(), key=lambda r: r.id)

    def requarantine(self, recs: Iterable[Rec], label: str, value: str) -> list[str]:
        """Active records among ``recs`` go back to review, votes cleared; their ids."""
        held = []
        for r in recs:
            if r.status == ACTIVE:
                self.records[r.id] = replace(r, status=QUARANTINED, approvals=(), rejections=(),
                                             labels={**r.labels, label: value})
                held.append(r.id)
        return held

    def _lifecycle(self, what: str, namespace: tuple[str, ...], kind: str) -> float | None:
        values = [lr.value for lr in self.lifecycle if lr.what == what and lr.kind in (None, kind)
                  and _matches(lr, namespace)]
        return min(values) if values else None

    def _evict(self, new: Rec) -> None:
        """Capacity: the visible records of the namespace beyond its cap are forgotten, soonest
        forgotten first (never counts as latest), then oldest, then by id."""
        cap = self._lifecycle("cap", new.namespace, new.kind)
        if cap is None or new.status != ACTIVE:
            return
        others = [r for r in self.records.values()
                  if r.namespace == new.namespace and r.id != new.id and self.visible(r)]
        far = datetime.max.replace(tzinfo=self.clock.now.tzinfo)
        others.sort(key=lambda r: (r.expires_at or far, r.created_at, r.id))
        for r in others[: max(0, len(others) + 1 - int(cap))]:
            self.records[r.id] = replace(r, status=FORGOTTEN, labels={**r.labels, "forgotten": "evicted"})

    # -- operations --------------------------------------------------------------------

    def get(self, principal: str, rid: str) -> Rec | None:
        rec = self.records.get(rid)
        return rec if self.seen(principal, rec) else None

    def search(self, principal: str, prefix: tuple[str, ...] | str) -> list[Rec]:
        """A search returning every result (ranking aside): the seen records at or below prefix."""
        prefix = canonical(prefix)
        if self.scope_empty(principal, "read", prefix):
            raise AccessDenied(f"{principal!r} may not read anything at or below {_text(prefix) or '(root)'!r}")
        return [r for r in self.records.values() if r.namespace[: len(prefix)] == prefix and self.seen(principal, r)]

    def list_namespaces(self, principal: str, prefix: tuple[str, ...] | str) -> list[tuple[str, ...]]:
        return sorted({r.namespace for r in self.search(principal, prefix)})

    def write(self, principal: str, source: str, namespace: tuple[str, ...] | str, content: str, *, kind: str = "fact",
              subjects: tuple[str, ...] = (), parents: tuple[str, ...] = (), labels: Mapping[str, str] | None = None,
              ttl: float | None = None, key: str | None = None, allow_reingest: bool = False,
              source_declared: str | None = None) -> Rec:
        namespace, subjects, now = canonical(namespace), names(subjects), self.clock.now
        lifetime = ttl if ttl is not None else self._lifecycle("ttl", namespace, kind)
        rid = keyed_id(namespace, key) if key is not None else record_id(principal, namespace, content)
        new = Rec(rid, namespace, content, kind, subjects, principal, self.roles(principal), source_declared or source,
                  parents, now,
                  now + timedelta(seconds=lifetime) if lifetime else None, ACTIVE, 1, None, dict(labels or {}), key)
        verdict = self.require(principal, "write", new)
        if TRUST_ORDER.index(new.source) < TRUST_ORDER.index(source):
            self.require(principal, "claim", new)  # a more trusted source than the session's
        for parent in parents:
            if not self.seen(principal, self.records.get(parent)):
                raise InvalidRequest(f"parent {parent!r} is not a record visible to {principal!r}")
        erased = self.tombstoned(principal, namespace, subjects, content)
        if erased is not None:
            if not allow_reingest:
                raise WriteRejected(f"this content about subject {erased!r} was erased; re-ingesting it "
                                    "needs allow_reingest=True and erase permission")
            self.require(principal, "erase", new)
        review = verdict.review
        old = self.records.get(rid)
        if key is None:
            if old is not None and (old.status != FORGOTTEN or HELD_LABEL in old.labels):
                # A replay stores nothing; it never says that an erasure holds the record (a
                # held one, even forgotten, reads as held for review).
                return replace(old, labels={k: v for k, v in old.labels.items() if k != HELD_LABEL},
                               status=QUARANTINED if HELD_LABEL in old.labels else old.status)
        elif old is not None and (HELD_LABEL in old.labels or (old.status != FORGOTTEN and self.alive(old) and (
                self.visible(old) or old.status == QUARANTINED))):
            own_pending = (old.status == QUARANTINED and old.writer == principal and HELD_LABEL not in old.labels
                           and self.allowed(principal, "read", old))
            if not (self.seen(principal, old) or own_pending):
                # Nothing about the stored item shows, only that the key is taken (a documented limit).
                raise AccessDenied(f"{principal!r} may not write key {key!r} in {_text(namespace)!r}: "
                                   "the key holds an item it may not replace")
            review = self.require(principal, "update", old).review or review
            review = self.require(principal, "update", new).review or review
            new = replace(new, version=old.version + 1)
        new = replace(new, status=QUARANTINED if review else ACTIVE)
        if key is not None and old is not None and new.version > 1 and review and old.status == ACTIVE:
            # A held overwrite waits under an id of its own; the item stays in force.
            pending = replace(new, id=record_id(principal, namespace, content, supersedes=rid), supersedes=rid)
            before = self.records.get(pending.id)
            if before is not None and HELD_LABEL in before.labels:
                return pending
            self.records[pending.id] = pending
            return pending
        self._evict(new)
        self.records[rid] = new
        return new

    def update(self, principal: str, source: str, rid: str, content: str, *, kind: str | None = None,
               subjects: tuple[str, ...] | None = None, labels: Mapping[str, str] | None = None) -> Rec:
        old = self.records.get(rid)
        if not self.seen(principal, old):
            raise self.missing(principal, rid)
        before = self.require(principal, "update", old)
        if old.key is not None:
            raise InvalidRequest(f"{old.id!r} is the item of key {old.key!r}; change it by writing that key again "
                                 "(Session.write(..., key=...) or the LangGraph store's put), not with update")
        now = self.clock.now
        new = replace(old, id=record_id(principal, old.namespace, content, supersedes=old.id), content=content,
                      kind=kind or old.kind, subjects=names(subjects) if subjects is not None else old.subjects,
                      labels=dict(labels) if labels is not None else dict(old.labels), writer=principal,
                      writer_roles=self.roles(principal), source=source, created_at=now, version=old.version + 1,
                      supersedes=old.id, approvals=(), rejections=())
        after = self.require(principal, "update", new)
        erased = self.tombstoned(principal, new.namespace, new.subjects, content)
        if erased is not None:
            raise WriteRejected(f"this content about subject {erased!r} was erased; an update cannot re-ingest it")
        new = replace(new, status=QUARANTINED if before.review or after.review else ACTIVE)
        self.records[new.id] = new
        if new.status == ACTIVE:
            # A quarantined new version leaves the old one in force until it is approved.
            self.records[old.id] = replace(old, status=SUPERSEDED)
        return new

    def forget(self, principal: str, rid: str) -> None:
        target = self.records.get(rid)
        # A version under review or already forgotten names nothing the caller may know of.
        known = self.knows_version(principal, target, "forget")
        versions = self.current(principal, target, "forget") if known else None
        if versions is None:
            raise self.missing(principal, rid)
        live = [v for v in versions if v.status != FORGOTTEN]
        for v in [target] + [v for v in live if v.id != target.id]:
            self.require(principal, "forget", v)
        for v in live:
            self.records[v.id] = replace(v, status=FORGOTTEN, approvals=(), rejections=())
        self.requarantine(self.descendants(v.id for v in versions), "derived_from_forgotten", target.id)

    def retract(self, principal: str, rid: str) -> list[str]:
        rec = self.records.get(rid)
        knows = self.seen(principal, rec) or (
            self.allowed(principal, "approve", rec) and rec.status in (ACTIVE, QUARANTINED) and self.alive(rec))
        if not knows or HELD_LABEL in rec.labels:
            raise self.missing(principal, rid)
        self.require(principal, "approve", rec)
        self.records[rid] = replace(rec, status=FORGOTTEN, approvals=(), rejections=(),
                                    labels={**rec.labels, "forgotten": "retracted"})
        # Only the held records the caller may review are named.
        return sorted(i for i in self.requarantine(self.descendants([rid]), "tainted_by", rid)
                      if self.allowed(principal, "approve", self.records[i]))

    def review(self, principal: str, rid: str, approve: bool) -> ReviewResult:
        rec = self.records.get(rid)
        # A record past its expiry can never be released: it is gone, like a missing one.
        awaiting = rec is not None and rec.status == QUARANTINED and self.alive(rec) and HELD_LABEL not in rec.labels
        if not (awaiting and self.allowed(principal, "approve", rec)):
            raise self.missing(principal, rid)
        if principal == rec.writer:
            raise AccessDenied(f"{principal!r} wrote {rid!r} and may not review it")
        if (self.clock.now - rec.created_at).total_seconds() >= self.review_timeout:
            raise InvalidRequest(f"the review window of {rid!r} has closed; it counts as rejected")
        older = self.records.get(rec.supersedes) if rec.supersedes else None
        if approve and older is not None and older.status != ACTIVE:
            raise InvalidRequest(f"{rid!r} updates a version that is no longer current; it can only be rejected")
        takes_key = older is not None and rec.key is not None and older.id == keyed_id(rec.namespace, rec.key)
        if approve and takes_key and older.version + 1 != rec.version:
            raise InvalidRequest(f"{rid!r} overwrites a version of key {rec.key!r} that is no longer current; "
                                 "it can only be rejected")
        approvals, rejections = set(rec.approvals), set(rec.rejections)
        (approvals if approve else rejections).add(principal)
        (rejections if approve else approvals).discard(principal)
        status, labels = QUARANTINED, dict(rec.labels)
        if len(approvals) >= self.quorum:
            status = ACTIVE
        elif len(rejections) >= self.quorum:
            status, labels["forgotten"] = FORGOTTEN, "rejected"
        decided = replace(rec, status=status, labels=labels, approvals=tuple(sorted(approvals)),
                          rejections=tuple(sorted(rejections)))
        self.records[rid] = decided
        if status == ACTIVE and takes_key:
            # The approved overwrite takes over the item's id; its waiting row goes.
            del self.records[rid]
            decided = self.records[older.id] = replace(decided, id=older.id, supersedes=None)
        elif status == ACTIVE and older is not None and older.status == ACTIVE:
            self.records[older.id] = replace(older, status=SUPERSEDED)
        shown = decided if self.allowed(principal, "read", decided) else None
        return ReviewResult(rid, status, decided.approvals, decided.rejections, self.quorum, shown)

    def history(self, principal: str, rid: str) -> list[Rec]:
        target = self.records.get(rid)
        knows = self.knows_version(principal, target, "history")
        versions = self.current(principal, target, "history") if knows else None
        if versions is None:
            raise self.missing(principal, rid)
        self.require(principal, "history", target)
        return [v for v in versions if v.status in (ACTIVE, SUPERSEDED) and self.alive(v)
                and self.allowed(principal, "history", v)]

    def erase(self, principal: str, subject: str | None = None, ids: tuple[str, ...] = ()) -> Receipt:
        if self.scope_empty(principal, "erase", ()):
            raise AccessDenied(f"{principal!r} may not erase anything at or below '(root)'")
        subject = names([subject])[0] if subject is not None else None
        mine = lambda r: self.allowed(principal, "erase", r)  # noqa: E731 - read as a predicate
        direct = {i for i in ids if mine(self.records.get(i))}
        about = {r.id for r in self.records.values() if subject is not None
                 and (subject in r.subjects or r.labels.get(HELD_LABEL) == subject)}
        reached = direct | about
        frontier = set(reached)
        while frontier:
            linked = {r.id for r in self.records.values() if r.id not in reached and (
                frontier & set(r.parents) or r.supersedes in frontier)}
            linked |= {self.records[i].supersedes for i in frontier
                       if self.records[i].supersedes in self.records} - reached
            reached |= linked
            frontier = linked
        erased = sorted(i for i in reached if mine(self.records[i]))
        held = [self.records[i] for i in sorted(reached) if i not in erased]
        for i in erased:
            rec = self.records.pop(i)
            for s in rec.subjects:
                self.tombstones.setdefault((rec.namespace, s, normal(rec.content)), rec)
        for rec in held:
            # Held until an erase that may reach it does; a forgotten record stays forgotten.
            self.records[rec.id] = replace(rec, status=FORGOTTEN if rec.status == FORGOTTEN else QUARANTINED,
                                           approvals=(), rejections=(),
                                           labels={**rec.labels, HELD_LABEL: subject if subject is not None else "ids"})
        first = len(direct | {i for i in about if i in erased})
        return Receipt(subject, tuple(ids), tuple(erased), len(erased), len(erased) - first, len(held), principal)
