"""What an operation handler needs before it runs, declared as a value.

A handler never decides or looks anything up itself: it says what it needs, and the pipeline
resolves that first (see :mod:`memwarden.memory.pipeline`):

- :class:`InNamespace`: an action in a namespace, on a record with these attributes (a write);
- :class:`OnRecord`: an action on the record with this id (get, update, forget, ...), located
  only where the caller could know it exists;
- :class:`InScope`: an action on whatever the caller's scope holds at or below a prefix
  (search, list, sweep, erase).

So the decision always comes before the look-up, and a caller without rights gets the same
answer for a hidden record as for a missing one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Union

from memwarden.core.namespace import Namespace
from memwarden.core.records import MemoryRecord, Status
from memwarden.policies.conditions import RecordAttributes
from memwarden.policies.engine import Decision


@dataclass(frozen=True, slots=True)
class InNamespace:
    """``action`` in ``namespace`` on a record with ``attributes``: decided, or AccessDenied."""

    action: str
    namespace: Namespace
    attributes: RecordAttributes


@dataclass(frozen=True, slots=True)
class OnRecord:
    """``action`` on the record ``id``.

    The caller knows a record when it may read it and it is visible, or when it may do
    ``action`` on it and the record is in one of ``states`` (a reviewer may approve what it
    cannot read). With ``versions``, a superseded version counts when the memory it belongs
    to is known: its current version is visible and the caller may read it or do ``action``
    on it. A record the caller does not know gets the answer for a missing id:
    None when ``missing_is_none``, else NotFound; one it knows but may not act on,
    AccessDenied.
    """

    id: str
    action: str
    states: frozenset[Status] = frozenset()
    versions: bool = False
    missing_is_none: bool = False
    #: False when only ``states`` make a record known (a vote: what a reader sees is not
    #: awaiting review, so reading it tells nothing about this operation).
    readers_know: bool = True


@dataclass(frozen=True, slots=True)
class InScope:
    """``action`` on what the caller's scope holds at or below ``prefix``; AccessDenied when
    that scope is empty (decided from the policy alone)."""

    action: str
    prefix: Namespace


Need = Union[InNamespace, OnRecord, InScope]


@dataclass(frozen=True, slots=True)
class Found:
    """What an :class:`OnRecord` need resolves to: the record and the decision on its action."""

    record: MemoryRecord
    decision: Decision
