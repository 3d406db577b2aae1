"""Reading policy data: the CSV format of the design, validated line by line.

Policy is data. This module turns a file (or text) into validated rules and role links and
hands them to pycasbin through its Adapter interface, so the enforcer never sees a line that
did not pass the checks below.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from casbin import persist

from memwarden.core.errors import InvalidRequest, PolicyError
from memwarden.policies.conditions import KINDS, Condition, parse_condition
from memwarden.core.namespace import canonical_label
from memwarden.policies.patterns import NamespacePattern, parse_pattern

ACTIONS = ("read", "write", "update", "forget", "erase", "approve", "admin", "history")
#: ``review`` allows the action but holds the result for quorum approval (writes are stored
#: quarantined); like deny over allow, review wins over a plain allow.
EFFECTS = ("allow", "deny", "review")
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
BUNDLED_POLICIES = ("hospital", "office", "household")


@dataclass(frozen=True, slots=True)
class Rule:
    """One ``p`` line: who, where, which action, whether it allows or denies, and on which
    records (``condition``; None: on every record)."""

    subject: str
    pattern: NamespacePattern
    action: str
    effect: str
    origin: str
    condition: Condition | None = None

    @property
    def text(self) -> str:
        """The rule as a policy line (normalised), for explanations and audit."""
        line = f"p, {self.subject}, {self.pattern.text}, {self.action}, {self.effect}"
        return f"{line}, {_csv_field(self.condition.text)}" if self.condition is not None else line


def _csv_field(text: str) -> str:
    """A field as CSV writes it: quoted only when it holds a comma or a quote."""
    return f'"{text.replace(chr(34), chr(34) * 2)}"' if "," in text or '"' in text else text


@dataclass(frozen=True, slots=True)
class RoleLink:
    """One ``g`` line: ``member`` holds ``role``."""

    member: str
    role: str
    origin: str


@dataclass(frozen=True, slots=True)
class LifecycleRule:
    """A ``ttl``, ``decay`` or ``cap`` line: forgetting defaults for matching namespaces.

    ``ttl, PATTERN, KIND|*, DURATION``: records expire DURATION after they are written.
    ``decay, PATTERN, HALF_LIFE``: records fade with a half-life that each read refreshes.
    ``cap, PATTERN, N``: each matching namespace holds at most N active records.
    """

    what: str
    pattern: NamespacePattern
    kind: str | None
    value: float
    origin: str


@dataclass(frozen=True, slots=True)
class PolicyData:
    """Everything a policy source contains, validated."""

    rules: tuple[Rule, ...]
    links: tuple[RoleLink, ...]
    lifecycle: tuple[LifecycleRule, ...] = ()


def parse_duration(text: str) -> float:
    """Seconds from ``90``, ``30s``, ``15m``, ``12h``, ``7d`` or ``2w``; raises ValueError."""
    text = text.strip()
    number, unit = (text[:-1], text[-1]) if text and text[-1] in _UNITS else (text, "s")
    value = float(number) * _UNITS[unit]
    if not value > 0 or value != value or value == float("inf"):
        raise ValueError(f"duration {text!r} must be positive and finite")
    return value


def _lifecycle(kind: str, args: list[str], where: str) -> LifecycleRule:
    shapes = {"ttl": "PATTERN, KIND|*, DURATION", "decay": "PATTERN, HALF_LIFE", "cap": "PATTERN, N"}
    if len(args) != shapes[kind].count(",") + 1:
        raise PolicyError(f"{where}: a {kind} line is '{kind}, {shapes[kind]}'")
    try:
        pattern = parse_pattern(args[0])
    except PolicyError as exc:
        raise PolicyError(f"{where}: {exc}") from None
    record_kind = None
    if kind == "ttl" and args[1] != "*":
        if args[1] not in KINDS:
            raise PolicyError(f"{where}: unknown kind {args[1]!r}; expected * or one of {', '.join(KINDS)}")
        record_kind = args[1]
    raw = args[-1]
    try:
        value = float(int(raw)) if kind == "cap" else parse_duration(raw)
    except ValueError:
        raise PolicyError(f"{where}: {raw!r} is not a valid {'count' if kind == 'cap' else 'duration'}") from None
    if kind == "cap" and value < 1:
        raise PolicyError(f"{where}: cap must be at least 1")
    return LifecycleRule(kind, pattern, record_kind, value, where)


def _rule(args: list[str], where: str) -> Rule:
    if len(args) not in (3, 4, 5):
        raise PolicyError(f"{where}: a p line has 3 to 5 fields after 'p' (role, pattern, action[, allow|deny|review"
                          f"[, condition]]), got {len(args)}")
    subject = _name(args[0], where, "rule subject")
    try:
        pattern = parse_pattern(args[1])
    except PolicyError as exc:
        raise PolicyError(f"{where}: {exc}") from None
    action = args[2]
    if action not in ACTIONS:
        raise PolicyError(f"{where}: unknown action {action!r}; expected one of {', '.join(ACTIONS)}")
    effect = args[3] if len(args) >= 4 else "allow"
    if effect not in EFFECTS:
        hint = f"; a condition goes after the effect: '..., allow, {effect}'" if "=" in effect else ""
        raise PolicyError(f"{where}: unknown effect {effect!r}; expected allow, deny or review{hint}")
    condition = None
    if len(args) == 5:
        try:
            condition = parse_condition(args[4])
        except PolicyError as exc:
            raise PolicyError(f"{where}: {exc}") from None
    return Rule(subject, pattern, action, effect, where, condition)


def _name(value: str, where: str, what: str) -> str:
    try:
        return canonical_label(value, what=what)
    except InvalidRequest as exc:
        raise PolicyError(f"{where}: {exc}") from None


def policy_lines(text: str, *, source: str = "<policy>") -> Iterator[tuple[int, list[str]]]:
    """(line number, fields) of every line that is not blank or a comment: the CSV split every
    policy source goes through, with the spaces around each field dropped."""
    for lineno, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        # Only whole-line comments: a trailing "#" could silently cut off a field (a typo like
        # "read#, deny" would turn a deny into an allow), so "#" inside a line is literal.
        if not line or line.startswith("#"):
            continue
        try:
            yield lineno, [f.strip() for f in next(csv.reader(io.StringIO(line), skipinitialspace=True))]
        except csv.Error as exc:
            raise PolicyError(f"{source}:{lineno}: not a CSV line: {exc}") from None


def parse_policy_text(text: str, *, source: str = "<policy>") -> PolicyData:
    """Parse policy CSV text; raise PolicyError naming the source line of the first problem."""
    rules: list[Rule] = []
    links: list[RoleLink] = []
    lifecycle: list[LifecycleRule] = []
    for lineno, fields in policy_lines(text, source=source):
        where = f"{source}:{lineno}"
        kind, args = fields[0], fields[1:]
        if kind == "p":
            rules.append(_rule(args, where))
        elif kind == "g":
            if len(args) != 2:
                raise PolicyError(f"{where}: a g line has 2 fields after 'g' (principal, role), got {len(args)}")
            links.append(RoleLink(_name(args[0], where, "principal"), _name(args[1], where, "role"), where))
        elif kind in ("ttl", "decay", "cap"):
            lifecycle.append(_lifecycle(kind, args, where))
        else:
            raise PolicyError(f"{where}: a line starts with p, g, ttl, decay or cap, not {kind!r}")
    return PolicyData(tuple(rules), tuple(links), tuple(lifecycle))


def bundled_policy_path(name: str) -> Path:
    """Path of a policy shipped with memwarden (``hospital``, ``office``, ``household``)."""
    if name not in BUNDLED_POLICIES:
        raise PolicyError(f"no bundled policy {name!r}; bundled ones are {', '.join(BUNDLED_POLICIES)}")
    return Path(str(resources.files("memwarden.policies") / "bundled" / f"{name}.csv"))


def bundled_model_path() -> str:
    """Path of the bundled Casbin model file."""
    return str(resources.files("memwarden.policies") / "bundled" / "model.conf")


def read_policy(source: str | Path | None) -> PolicyData:
    """Load policy data from a CSV path, a bundled policy name, or nothing (deny everything)."""
    if source is None:
        return PolicyData((), ())
    path = Path(source)
    if not path.exists() and isinstance(source, str) and source in BUNDLED_POLICIES:
        path = bundled_policy_path(source)
    if not path.is_file():
        raise PolicyError(f"policy file {str(source)!r} does not exist")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise PolicyError(f"policy file {str(path)!r} is not UTF-8: {exc}") from None
    return parse_policy_text(text, source=str(path))


def casbin_fields(rule: Rule) -> tuple[str, str, str, str, str]:
    """The rule as Casbin sees it: a review rule allows, and the engine adds the review; an
    unconditional rule has an empty condition field."""
    return (rule.subject, rule.pattern.text, rule.action, "deny" if rule.effect == "deny" else "allow",
            rule.condition.text if rule.condition is not None else "")


class PolicyDataAdapter(persist.Adapter):
    """A read-only pycasbin adapter over already validated PolicyData."""

    def __init__(self, data: PolicyData) -> None:
        self.data = data

    def load_policy(self, model) -> None:  # noqa: ANN001 - pycasbin's Model has no public type
        """Load every validated rule and role link into the Casbin model."""
        for rule in self.data.rules:
            model.add_policy("p", "p", list(casbin_fields(rule)))
        for link in self.data.links:
            model.add_policy("g", "g", [link.member, link.role])
