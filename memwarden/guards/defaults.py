"""The default write-validator chain.

Order matters for cost and for what the audit shows: the chain stops at the first reject, so
the one validator that rejects (the injection detector, pure computation) runs first; the
typed-content guard (the write path classified the content already), the relayed-directive
check (one linear scan, of directives only) and the provenance rule (a few comparisons) next; then the lesson check (hashing, plus one read of
the lesson records) and last the contradiction check, the only one that queries the store
for related records.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from memwarden.guards.contradiction import ContradictionCheck
from memwarden.guards.directives import TypedContentGuard
from memwarden.guards.injection import InjectionDetector
from memwarden.guards.lessons import LessonValidator
from memwarden.guards.provenance import DEFAULT_SHARED_LABELS, ProvenanceRule
from memwarden.guards.relayed import RelayedDirectiveCheck
from memwarden.core.namespace import Namespace

__all__ = ["default_validators"]


def default_validators(*, shared_labels: Iterable[str] = DEFAULT_SHARED_LABELS, shared_patterns: Iterable[str] = (),
                       is_shared: Callable[[Namespace], bool] | None = None, min_trust: float = 0.5,
                       lesson_key: bytes | None = None, judge: Any | None = None,
                       judge_band: tuple[float, float] | None = None) -> list[Any]:
    """Injection, typed content, relayed directives, provenance, lessons and contradiction
    validators, in that order.

    ``lesson_key``: the secret the lesson sketches are keyed with; None (the default) lets the
    store use its own (``lessons.key`` in its state directory).

    ``judge``: a LangChain chat model; when given, an :class:`~memwarden.guards.judge.LLMJudge`
    around it is appended (off by default: it costs a model call per write it is asked about).
    ``judge_band``: ask the judge only in this uncertain band
    (:data:`~memwarden.guards.judge.DEFAULT_BAND` is a good start); None asks about every write.
    """
    chain: list[Any] = [
        InjectionDetector(),
        TypedContentGuard(),
        RelayedDirectiveCheck(),
        ProvenanceRule(min_trust=min_trust, shared_labels=shared_labels, shared_patterns=shared_patterns,
                       is_shared=is_shared),
        LessonValidator(key=lesson_key),
        ContradictionCheck(),
    ]
    if judge is not None:
        from memwarden.guards.judge import LLMJudge

        chain.append(LLMJudge(judge, band=judge_band))
    return chain
