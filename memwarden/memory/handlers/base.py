"""What an operation handler is: a need and a run (see the package docstring)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from memwarden.memory.context import OpContext
from memwarden.memory.effects import Effect
from memwarden.memory.needs import Need

Result = tuple[Any, list[Effect]]


@dataclass(frozen=True, slots=True)
class Handler:
    """One operation kind's handler (see the package docstring). ``need`` returns None only
    for the core's own maintenance operations, which no session can run."""

    need: Callable[[Any, OpContext], Need | None]
    run: Callable[[Any, Any, OpContext], Result]
