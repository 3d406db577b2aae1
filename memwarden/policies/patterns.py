"""Namespace patterns of the policy language, matched label by label.

``*`` stands for exactly one label; a trailing ``**`` stands for one or more further labels
(everything below, never the namespace itself). Both are whole labels: ``ali*`` is a literal
label, not a prefix, so ``alice_evil`` can never match a rule written for ``alice``.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from memwarden.core.errors import InvalidRequest, PolicyError
from memwarden.core.namespace import MAX_DEPTH, Namespace, canonical_label

ONE = "*"
DEEP = "**"


@dataclass(frozen=True, slots=True)
class NamespacePattern:
    """A parsed pattern: fixed labels or ``*`` wildcards, optionally followed by ``**``."""

    labels: tuple[str, ...]
    deep: bool

    def matches(self, namespace: Namespace) -> bool:
        """True when ``namespace`` (canonical) falls under this pattern."""
        n = len(self.labels)
        if self.deep:
            if len(namespace) <= n:
                return False
        elif len(namespace) != n:
            return False
        return all(p == ONE or p == label for p, label in zip(self.labels, namespace))

    def may_overlap_prefix(self, prefix: Namespace) -> bool:
        """True when some namespace at or below ``prefix`` can match this pattern."""
        for i, label in enumerate(prefix):
            if i < len(self.labels):
                if self.labels[i] not in (ONE, label):
                    return False
            elif not self.deep:
                return False
        return True

    @property
    def text(self) -> str:
        """The pattern as written in a policy file."""
        return "/".join(self.labels + ((DEEP,) if self.deep else ()))


@lru_cache(maxsize=4096)
def parse_pattern(text: str) -> NamespacePattern:
    """Parse a policy pattern; raise PolicyError naming what is malformed."""
    if not isinstance(text, str) or not text:
        raise PolicyError("namespace pattern is empty")
    parts = text.split("/")
    deep = parts[-1] == DEEP
    if deep:
        parts = parts[:-1]
    if DEEP in parts:
        raise PolicyError(f"pattern {text!r}: '**' is only allowed as the last label")
    if not parts:
        raise PolicyError(f"pattern {text!r}: '**' needs at least one label before it")
    if len(parts) > MAX_DEPTH:
        raise PolicyError(f"pattern {text!r} has {len(parts)} labels; the limit is {MAX_DEPTH}")
    labels = []
    for part in parts:
        if part == ONE:
            labels.append(ONE)
            continue
        try:
            label = canonical_label(part, what="pattern label")
        except InvalidRequest as exc:
            raise PolicyError(f"pattern {text!r}: {exc}") from None
        if label != part:
            raise PolicyError(f"pattern {text!r}: label {part!r} is not canonical (NFKC gives {label!r})")
        labels.append(label)
    return NamespacePattern(tuple(labels), deep)
