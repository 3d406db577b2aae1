"""``ProvenanceRule``: untrusted content needs review before it can steer others.

Content that came from a tool or an external source, or that its writer marked with low
trust, may be stored, but it may not *become a rule* (a procedure other agents follow) or
*enter a shared namespace* (where other principals' agents read it) without review: such a
write is quarantined, invisible to every search until an authorised principal approves it.
This is the control the research points to as the real one (MINJA / AgentPoison: planted
records succeed because nothing separates what a tool returned from what a person decided).

A namespace is *shared* when one of its labels is in ``shared_labels`` (default ``shared``,
``public``, ``common``) or when it matches one of ``shared_patterns``, written in the policy
pattern language (``*`` one label, trailing ``**`` everything below), e.g.
``("office/handbook/**", "home/shared/**")``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from memwarden.guards.validators import Outcome, ValidationContext, Verdict
from memwarden.core.records import Kind, MemoryRecord, Source
from memwarden.core.namespace import Namespace
from memwarden.policies.patterns import parse_pattern

__all__ = ["ProvenanceRule", "DEFAULT_SHARED_LABELS"]

DEFAULT_SHARED_LABELS = ("shared", "public", "common")


class ProvenanceRule:
    """Quarantine untrusted content that would become a rule or enter a shared namespace.

    ``min_trust``: records with ``trust`` below it count as untrusted (default 0.5).
    ``untrusted_sources``: sources whose content is untrusted whatever its trust value.
    ``shared_labels`` / ``shared_patterns`` / ``is_shared``: what counts as shared (the
    predicate, when given, replaces the other two).
    ``lesson_writers``: the only writers whose ``lesson`` records are accepted as written; a
    lesson from anyone else is quarantined, because lessons steer the validators themselves.
    """

    name = "provenance"
    most = Outcome.QUARANTINE

    def __init__(self, *, min_trust: float = 0.5,
                 untrusted_sources: Iterable[str | Source] = (Source.TOOL, Source.EXTERNAL),
                 shared_labels: Iterable[str] = DEFAULT_SHARED_LABELS,
                 shared_patterns: Iterable[str] = (),
                 is_shared: Callable[[Namespace], bool] | None = None,
                 lesson_writers: Iterable[str] = ("memwarden",)) -> None:
        if not 0.0 <= min_trust <= 1.0:
            raise ValueError("min_trust must be between 0 and 1")
        self.min_trust = min_trust
        self.untrusted_sources = frozenset(Source(s) for s in untrusted_sources)
        self.shared_labels = frozenset(shared_labels)
        self.shared_patterns = tuple(parse_pattern(p) for p in shared_patterns)
        self._is_shared = is_shared
        self.lesson_writers = frozenset(lesson_writers)

    def shared(self, namespace: Namespace) -> bool:
        """True when ``namespace`` is read by other principals' agents."""
        if self._is_shared is not None:
            return bool(self._is_shared(namespace))
        return (any(label in self.shared_labels for label in namespace)
                or any(p.matches(namespace) for p in self.shared_patterns))

    def check(self, record: MemoryRecord, context: ValidationContext) -> Verdict:
        """Quarantine when untrusted content would steer other principals."""
        if record.kind is Kind.LESSON and record.writer not in self.lesson_writers:
            return Verdict(validator=self.name, outcome=Outcome.QUARANTINE,
                           reason="lesson written by a principal that is not a lesson writer")
        why = []
        if record.source in self.untrusted_sources:
            why.append(f"source={record.source.value}")
        if record.trust < self.min_trust:
            why.append(f"trust<{self.min_trust:g}")
        if not why:
            return Verdict(validator=self.name, outcome=Outcome.ACCEPT)
        where = []
        if record.kind is Kind.RULE:
            where.append("would become a rule")
        if self.shared(record.namespace):
            where.append("would enter a shared namespace")
        if not where:
            return Verdict(validator=self.name, outcome=Outcome.ACCEPT, reason=f"untrusted ({', '.join(why)}), private")
        return Verdict(validator=self.name, outcome=Outcome.QUARANTINE,
                       reason=f"untrusted ({', '.join(why)}) {' and '.join(where)}: needs review")
