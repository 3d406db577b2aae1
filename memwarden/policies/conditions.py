"""Attribute conditions: the optional last field of a policy rule, over the record's attributes.

A condition restricts a rule to records with certain attributes. It is a conjunction (``&``)
of terms; each term names one attribute, ``=`` or ``!=``, and one or more values (``|``):

    kind=fact|event                   the record's kind is fact or event
    source!=external|tool             the record's source is neither external nor tool
    content=directive                 the record's text is a directive addressed to agents
                                      (classified at write time, whatever kind was declared)
    writer_role=physician             the writer held the role physician when writing
    label.sensitivity=restricted      the record has label sensitivity with value restricted
    label.sensitivity!=restricted     the record has no label sensitivity, or another value

Values match exactly, after the same canonicalisation as namespace labels (NFKC, no invisible
characters, no mixing of look-alike scripts such as Latin and Cyrillic). There is no regex, no
prefix matching, no wildcard and no case folding. A record without label ``x`` never satisfies
``label.x=...`` and always satisfies ``label.x!=...``; a writer without roles likewise never
satisfies ``writer_role=...``. So an allow rule written with ``=`` and a deny rule written with
``!=`` fail closed for records that lack the label.

Attributes may also be partly unknown (``RecordAttributes`` with None fields), which only the
policy tools use: a condition then evaluates to None when the known attributes do not settle it.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from memwarden.core.errors import InvalidRequest, PolicyError
from memwarden.core.namespace import canonical_value, exact_name, is_label_name

KINDS = ("fact", "event", "rule", "preference", "lesson")
SOURCES = ("user", "agent", "tool", "external")
CONTENT_CLASSES = ("statement", "directive")
KIND, SOURCE, CONTENT, WRITER_ROLE, LABEL = "kind", "source", "content", "writer_role", "label."
#: Attributes whose value is always present and drawn from a fixed set.
_DOMAINS = {KIND: frozenset(KINDS), SOURCE: frozenset(SOURCES), CONTENT: frozenset(CONTENT_CLASSES)}
_EXPECTED = {KIND: KINDS, SOURCE: SOURCES, CONTENT: CONTENT_CLASSES}
#: Characters the syntax itself uses; a value cannot contain them.
_RESERVED = "=!&|"
@dataclass(frozen=True, slots=True)
class RecordAttributes:
    """What a condition can look at: a record's kind, source, writer roles, labels and
    content class (``statement`` or ``directive``, classified from its text at write time).

    A field that is None is unknown (only the policy tools ask about partly known records);
    every record in the store has all five known. ``labels`` known and without a name means
    the record has no such label.
    """

    kind: str | None = None
    source: str | None = None
    writer_roles: frozenset[str] | None = None
    labels: Mapping[str, str] | None = field(default=None, hash=False)
    content: str | None = None

    @classmethod
    def of(cls, record: Any) -> RecordAttributes:
        """The attributes of a record (anything with kind, source, writer_roles, labels and
        content_class)."""
        return cls(_plain(record.kind), _plain(record.source), frozenset(record.writer_roles), record.labels,
                   _plain(record.content_class))

    @property
    def complete(self) -> bool:
        """True when every attribute is known."""
        return None not in (self.kind, self.source, self.writer_roles, self.labels, self.content)

    @property
    def text(self) -> str:
        """The known attributes, in the condition syntax (for explanations)."""
        parts = [f"{KIND}={self.kind}"] if self.kind is not None else []
        if self.source is not None:
            parts.append(f"{SOURCE}={self.source}")
        if self.content is not None:
            parts.append(f"{CONTENT}={self.content}")
        if self.writer_roles is not None:
            parts.append(f"{WRITER_ROLE}={'|'.join(sorted(self.writer_roles)) or '(none)'}")
        if self.labels is not None:
            parts += [f"{LABEL}{k}={v}" for k, v in sorted(self.labels.items())] or ["no labels"]
        return ", ".join(parts)


def _plain(value: Any) -> str:
    return value.value if hasattr(value, "value") else value


#: Nothing known about the record.
UNKNOWN = RecordAttributes()


@dataclass(frozen=True, slots=True)
class Term:
    """One ``attribute=values`` or ``attribute!=values`` test."""

    attribute: str
    negated: bool
    values: tuple[str, ...]
    members: frozenset[str] = field(init=False, repr=False, compare=False, hash=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "members", frozenset(self.values))

    @property
    def text(self) -> str:
        """The term as written in a policy (values in canonical order)."""
        return f"{self.attribute}{'!=' if self.negated else '='}{'|'.join(self.values)}"

    @property
    def label(self) -> str | None:
        """The label name for a ``label.x`` term, else None."""
        return self.attribute[len(LABEL):] if self.attribute.startswith(LABEL) else None

    def negation(self) -> Term:
        """The complementary term: it holds exactly when this one does not."""
        return Term(self.attribute, not self.negated, self.values)

    def holds(self, attrs: RecordAttributes) -> bool | None:
        """Whether the record satisfies the term; None when the attribute is unknown."""
        attribute = self.attribute
        if attribute in _DOMAINS:
            value = attrs.kind if attribute == KIND else attrs.source if attribute == SOURCE else attrs.content
            return None if value is None else (value in self.members) != self.negated
        if attribute == WRITER_ROLE:
            roles = attrs.writer_roles
            return None if roles is None else (not roles.isdisjoint(self.members)) != self.negated
        labels = attrs.labels
        if labels is None:
            return None
        value = labels.get(attribute[len(LABEL):])
        # A missing label equals no value: '=' fails and '!=' holds.
        return self.negated if value is None else (value in self.members) != self.negated


@dataclass(frozen=True, slots=True)
class Condition:
    """A conjunction of terms, in canonical order (so equal conditions compare equal)."""

    terms: tuple[Term, ...]

    @property
    def text(self) -> str:
        """The condition as written in a policy, normalised."""
        return "&".join(t.text for t in self.terms)

    def holds(self, attrs: RecordAttributes) -> bool | None:
        """True or False when the known attributes settle it, None when they do not."""
        open_terms = []
        for term in self.terms:
            verdict = term.holds(attrs)
            if verdict is False:
                return False
            if verdict is None:
                open_terms.append(term)
        if not open_terms:
            return True
        # Terms on unknown attributes: exact three-valued answer over every completion.
        rest = Condition(tuple(open_terms))
        if not rest.satisfiable:
            return False
        return True if TRUE.implies(rest) else None

    @property
    def satisfiable(self) -> bool:
        """False when no record can satisfy the condition (e.g. ``kind=fact&kind=event``)."""
        return _satisfiable(_constraints(self.terms))

    def implies(self, other: Condition | None) -> bool:
        """True when every record that satisfies this condition satisfies ``other`` too."""
        if other is None:
            return True
        constraints = _constraints(self.terms)
        if not _satisfiable(constraints):
            return True
        return all(_implies_term(constraints, t) for t in other.terms)

    def overlaps(self, other: Condition | None) -> bool:
        """True when some record satisfies both conditions."""
        return self.satisfiable if other is None else Condition(self.terms + other.terms).satisfiable


#: The empty conjunction: every record satisfies it.
TRUE = Condition(())


# -- the algebra behind satisfiable/implies: per attribute, the set of values a term allows -----
# kind and source: a subset of their fixed domain. A label: ("in", S) = one of S (present), or
# ("out", E) = absent or none of E. writer_role (a set of roles): the positive terms' value sets,
# each of which the roles must meet, and the union of the negated terms' sets, which they avoid.

def _constraints(terms: Iterable[Term]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for t in terms:
        a = t.attribute
        if a in _DOMAINS:
            allowed = _DOMAINS[a] - t.members if t.negated else t.members
            out[a] = out.get(a, _DOMAINS[a]) & allowed
        elif a == WRITER_ROLE:
            positives, excluded = out.get(a, ((), frozenset()))
            out[a] = (positives, excluded | t.members) if t.negated else (positives + (t.members,), excluded)
        else:
            mode, values = out.get(a, ("out", frozenset()))
            if t.negated:
                out[a] = (mode, values - t.members) if mode == "in" else ("out", values | t.members)
            else:
                out[a] = ("in", (values & t.members) if mode == "in" else t.members - values)
    return out


def _satisfiable(constraints: dict[str, Any]) -> bool:
    for a, c in constraints.items():
        if a in _DOMAINS:
            if not c:
                return False
        elif a == WRITER_ROLE:
            positives, excluded = c
            if any(not (p - excluded) for p in positives):
                return False
        elif c[0] == "in" and not c[1]:
            return False
    return True


def _implies_term(constraints: dict[str, Any], t: Term) -> bool:
    a = t.attribute
    if a in _DOMAINS:
        target = _DOMAINS[a] - t.members if t.negated else t.members
        return constraints.get(a, _DOMAINS[a]) <= target
    if a == WRITER_ROLE:
        positives, excluded = constraints.get(a, ((), frozenset()))
        # Roles may include anything not excluded, so avoiding T needs T excluded; meeting T
        # needs one required set whose every admissible role lies in T.
        return t.members <= excluded if t.negated else any(p - excluded <= t.members for p in positives)
    mode, values = constraints.get(a, ("out", frozenset()))
    if t.negated:
        return values.isdisjoint(t.members) if mode == "in" else t.members <= values
    return mode == "in" and values <= t.members


# -- parsing ---------------------------------------------------------------------------------

def _parse_term(part: str) -> Term:
    eq = part.find("=")
    if eq < 0:
        raise PolicyError(f"condition term {part!r} has no '=' or '!='; write ATTRIBUTE=VALUE or ATTRIBUTE!=VALUE")
    negated = eq > 0 and part[eq - 1] == "!"
    name = part[: eq - 1 if negated else eq].strip(" ")
    if not name:
        raise PolicyError(f"condition term {part!r} names no attribute")
    if name.startswith(LABEL):
        if not is_label_name(name[len(LABEL):]):
            raise PolicyError(f"label name {name[len(LABEL):]!r} in {part!r} must be ASCII letters, digits or '_'")
    elif name not in (KIND, SOURCE, CONTENT, WRITER_ROLE):
        raise PolicyError(f"unknown attribute {name!r} in {part!r}; expected kind, source, content, writer_role or "
                          "label.NAME")
    values: list[str] = []
    for raw in part[eq + 1:].split("|"):
        value = raw.strip(" ")
        if not value:
            raise PolicyError(f"condition term {part!r} has an empty value (a stray '|'?)")
        reserved = next((c for c in value if c in _RESERVED), None)
        if reserved is not None:
            raise PolicyError(f"value {value!r} in {part!r} contains {reserved!r}, which the condition syntax "
                              "reserves (= != & |)")
        if name in _DOMAINS:
            if value not in _DOMAINS[name]:
                raise PolicyError(f"unknown {name} {value!r} in {part!r}; expected one of {', '.join(_EXPECTED[name])}")
        else:
            try:
                canonical = canonical_value(value, what=f"value in {part!r}")
            except InvalidRequest as exc:
                raise PolicyError(str(exc)) from None
            if canonical != value:
                raise PolicyError(f"value {value!r} in {part!r} is not canonical (NFKC gives {canonical!r})")
        if value in values:
            raise PolicyError(f"value {value!r} appears twice in {part!r}")
        values.append(value)
    return Term(name, negated, tuple(sorted(values)))


@lru_cache(maxsize=4096)
def parse_condition(text: str) -> Condition:
    """Parse a condition field; raise PolicyError saying exactly what is wrong."""
    if not isinstance(text, str) or not text.strip(" "):
        raise PolicyError("condition is empty")
    terms: list[Term] = []
    for i, raw in enumerate(text.split("&"), start=1):
        part = raw.strip(" ")
        if not part:
            raise PolicyError(f"condition {text!r}: term {i} is empty (a stray '&'?)")
        term = _parse_term(part)
        if term in terms:
            raise PolicyError(f"condition {text!r}: term {term.text!r} appears twice")
        terms.append(term)
    return Condition(tuple(sorted(terms, key=lambda t: (t.attribute, t.negated, t.values))))


def record_attributes(*, kind: str | None = None, source: str | None = None,
                      writer_roles: Iterable[str] | None = None,
                      labels: Mapping[str, str] | None = None, content: str | None = None) -> RecordAttributes:
    """Attributes from user input (the policy tools), checked like a write; None = unknown."""
    for name, value in ((KIND, kind), (SOURCE, source), (CONTENT, content)):
        if value is not None and value not in _DOMAINS[name]:
            raise InvalidRequest(f"unknown {name} {value!r}; expected one of {', '.join(_EXPECTED[name])}")
    if isinstance(writer_roles, str):
        raise InvalidRequest("writer_roles must be a list of role names, not one string")
    roles = None if writer_roles is None else frozenset(exact_name(r, what="writer role") for r in writer_roles)
    checked = None
    if labels is not None:
        checked = {}
        for key, value in labels.items():
            if not is_label_name(key):
                raise InvalidRequest(f"label key {key!r} must be ASCII letters, digits or '_'")
            checked[key] = canonical_value(value, what=f"label {key!r}")
    return RecordAttributes(kind, source, roles, checked, content)


class Projection:
    """The part of a record's attributes that the policy's conditions can tell apart.

    Two records with the same projection get the same decision, so the decision cache keys on
    it: a policy without conditions projects everything to ``()`` (one entry per namespace, as
    before conditions existed); otherwise only the attributes the conditions name count, and a
    label value counts only as "one of the values some condition names" or "anything else".
    """

    __slots__ = ("_kind", "_source", "_content", "_labels", "_roles", "empty")

    def __init__(self, conditions: Iterable[Condition]) -> None:
        terms = [t for c in conditions for t in c.terms]
        self._kind = any(t.attribute == KIND for t in terms)
        self._source = any(t.attribute == SOURCE for t in terms)
        self._content = any(t.attribute == CONTENT for t in terms)
        labels: dict[str, set[str]] = {}
        for t in terms:
            if t.label is not None:
                labels.setdefault(t.label, set()).update(t.values)
        self._labels = tuple((name, frozenset(values)) for name, values in sorted(labels.items()))
        self._roles = frozenset(v for t in terms if t.attribute == WRITER_ROLE for v in t.values)
        self.empty = not terms

    def reduce(self, attrs: RecordAttributes) -> RecordAttributes:
        """Only what the conditions can tell apart of ``attrs``: the attributes no condition
        names become unknown, a label value no condition names becomes a placeholder no
        condition names either. Decided fail-closed, the result gets the decision ``attrs``
        gets under this policy, and one where a later policy looks at more, never a laxer one."""
        other = "\x1f"  # a control character: no canonical value can be it
        labels = None if attrs.labels is None else {
            name: (value if value in values else other)
            for name, values in self._labels if (value := attrs.labels.get(name)) is not None}
        return RecordAttributes(attrs.kind if self._kind else None, attrs.source if self._source else None,
                                None if attrs.writer_roles is None else attrs.writer_roles & self._roles,
                                None if self.empty else labels, attrs.content if self._content else None)

    def __call__(self, attrs: RecordAttributes) -> Hashable:
        """The cache key part for ``attrs``."""
        if self.empty:
            return ()
        labels = attrs.labels
        return (
            attrs.kind if self._kind else "",
            attrs.source if self._source else "",
            attrs.content if self._content else "",
            None if labels is None else tuple(
                value if (value := labels.get(name)) in values else "" for name, values in self._labels),
            None if attrs.writer_roles is None else attrs.writer_roles & self._roles,
        )
