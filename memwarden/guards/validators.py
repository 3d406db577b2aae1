"""The ordered chain of write validators every write passes through.

A validator looks at a candidate record and answers accept, quarantine or reject. The chain
stops at the first reject. A validator that raises does not get the benefit of the doubt:
its failure is a reject (fail closed).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Protocol

from pydantic import BaseModel, ConfigDict

from memwarden.core.records import SOURCE_ORDER, MemoryRecord, Principal
from memwarden.policies.subjects import Subjects
from memwarden.core.errors import InvalidRequest


class Outcome(str, Enum):
    """What a validator wants done with a write."""

    ACCEPT = "accept"
    QUARANTINE = "quarantine"
    REJECT = "reject"


class Verdict(BaseModel):
    """One validator's answer about one write, with a reason safe to log (no content)."""

    model_config = ConfigDict(frozen=True)

    validator: str
    outcome: Outcome
    reason: str = ""

    @property
    def text(self) -> str:
        """``name=outcome`` plus the reason, for spans and audit."""
        return f"{self.validator}={self.outcome.value}" + (f" ({self.reason})" if self.reason else "")


def shown_text(content: str, key: str | None) -> str:
    """The text a reader of a record is shown, which the validators judge: its content, after
    the key of a keyed item on a line of its own (LangGraph's search results and LangMem's
    tools show the key to the model, and a key is up to 1,024 characters of free text)."""
    return content if key is None else f"{key}\n{content}"


def by_another(record: MemoryRecord, other: MemoryRecord) -> bool:
    """Whether ``other`` was written by someone other than ``record``'s writer, as provenance
    counts it: another principal, or the same principal from a more trusted source (a user's
    own record, where ``record`` comes from that user's agent or a tool: the agent acting for
    her is not the owner of what she established)."""
    return other.writer != record.writer or SOURCE_ORDER.index(other.source) < SOURCE_ORDER.index(record.source)


def _none(*_: object) -> list[MemoryRecord]:
    return []


def _never() -> bool:
    return False


@dataclass(frozen=True, slots=True)
class ValidationContext:
    """What a validator may know about the write besides the record itself.

    ``related(record, k)`` returns up to k active records that share a subject with the
    candidate and that the writer may read, nearest first (never records the writer could
    not see, so a verdict cannot leak them). ``lessons()`` returns the active lesson records
    left by earlier rejections and retractions. ``replaced`` is the version the write replaces
    (an update's predecessor, the current version of a keyed item), when the writer may read it:
    whatever its subjects and however far from the new text, it is the record the write changes.
    ``nearby(record, k)`` returns active records under the candidate's top-level namespace
    that the writer may read (a search of a common prefix returns them beside the
    candidate), written by another, that share the most words with it, whatever their
    subjects: up to k among those holding what the candidate may change, then up to k more,
    one principal's best before another's second (memwarden/memory/nearby.py). A writer
    declares its own subjects, so subjects alone never decide which established records a
    procedure change is compared with. ``established`` is the newest
    version, ``replaced`` or one it supersedes, written by another than the writer
    (:func:`by_another`), when the writer may read the memory: what a chain of the writer's
    own updates of another's record changes. ``blind()``: whether the writer may not read the
    record it writes (asked of the policy only when a check needs it), so ``related``, ``nearby`` and ``replaced`` hold none of the records it may
    contradict (they must not: a verdict would leak them); a check that compares then cannot
    decide. It follows from the writer's own permissions and record, never from other records.
    """

    principal: Principal
    subjects: Subjects
    related: Callable[[MemoryRecord, int], list[MemoryRecord]] = _none
    lessons: Callable[[], list[MemoryRecord]] = _none
    others: Callable[[MemoryRecord, int], list[MemoryRecord]] | None = None
    replaced: MemoryRecord | None = None
    nearby: Callable[[MemoryRecord, int], list[MemoryRecord]] = _none
    established: MemoryRecord | None = None
    blind: Callable[[], bool] = _never

    def related_by_others(self, record: MemoryRecord, k: int) -> list[MemoryRecord]:
        """Up to k records as ``related`` returns them, written by another (:func:`by_another`):
        the records whose procedure ``record`` may change. ``others`` serves them
        when given, ranked among those records alone, so that the writer cannot push them out
        of the k nearest with records of its own; without it they are taken from ``related``."""
        if self.others is not None:
            return self.others(record, k)
        return [r for r in self.related(record, k) if by_another(record, r)]


class WriteValidator(Protocol):
    """A pluggable check on writes.

    A validator may declare ``most = Outcome.QUARANTINE`` when it never rejects: the chain
    then skips it once the write is quarantined anyway (it could not change the outcome).
    """

    name: str

    def check(self, record: MemoryRecord, context: ValidationContext) -> Verdict:
        """Judge one candidate record."""


_RANK = {Outcome.ACCEPT: 0, Outcome.QUARANTINE: 1, Outcome.REJECT: 2}


class ValidatorChain:
    """Runs validators in order; the strongest outcome wins, the first reject stops the chain,
    and a validator whose strongest outcome (``most``) is already reached is skipped."""

    def __init__(self, validators: Iterable[WriteValidator] = ()) -> None:
        # Checked here: a validator without check() would reject every write (fail closed),
        # which would look like a policy problem rather than the typo it is.
        if isinstance(validators, (str, bytes)) or not isinstance(validators, Iterable):
            raise InvalidRequest(f"validators must be a list of write validators, got {type(validators).__name__}")
        self.validators: tuple[WriteValidator, ...] = tuple(validators)
        for i, validator in enumerate(self.validators):
            if not callable(getattr(validator, "check", None)):
                raise InvalidRequest(f"validators[{i}] is not a write validator (it has no check(record, context)): "
                                     f"{type(validator).__name__}")

    def run(self, record: MemoryRecord, context: ValidationContext) -> Sequence[Verdict]:
        """All verdicts reached, in chain order."""
        verdicts: list[Verdict] = []
        for validator in self.validators:
            most = getattr(validator, "most", Outcome.REJECT)
            if verdicts and _RANK[strongest(verdicts)] >= _RANK[Outcome(most)]:
                continue
            name = getattr(validator, "name", type(validator).__name__)
            try:
                verdict = validator.check(record, context)
                if not isinstance(verdict, Verdict):
                    raise TypeError(f"returned {type(verdict).__name__}, not a Verdict")
            except Exception as exc:  # noqa: BLE001 - any failure must fail closed
                verdict = Verdict(validator=name, outcome=Outcome.REJECT,
                                  reason=f"validator failed: {type(exc).__name__}")
            verdicts.append(verdict)
            if verdict.outcome is Outcome.REJECT:
                break
        return verdicts


def strongest(verdicts: Sequence[Verdict]) -> Outcome:
    """The outcome the chain as a whole decides."""
    outcomes = {v.outcome for v in verdicts}
    for outcome in (Outcome.REJECT, Outcome.QUARANTINE):
        if outcome in outcomes:
            return outcome
    return Outcome.ACCEPT
