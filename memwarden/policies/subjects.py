"""Who a request acts as: a principal and its roles, in two name spaces that never meet.

A policy names principals and roles with the same kind of word (``g, PRINCIPAL, ROLE``;
``p, ROLE, ...``; the member of a ``g`` line may be a role too, ``g, manager, employee``). If
names were compared as plain strings, a user who signs up as ``privacy_officer`` would hold the
rules of the role ``privacy_officer``. So every name of a policy is read as one or the other:

- a name on the right of a ``g`` line is a **role**;
- a name on the left of a ``g`` line and on the right of none is a **principal**, declared by
  that line (``g, lena, kid``);
- the subject of a ``p`` line, and the member of a ``g`` line, is that principal when the name is
  a declared principal, and a role otherwise (``p, lena, home/kids/lena/**, read`` is lena's own
  rule; ``p, privacy_officer, ward3/**, erase`` is the role's).

A request's subjects are its principal id, matched only against principal names, and its roles
(given ones and what the ``g`` lines add, transitively), matched only against role names. A
principal id never holds a role of the same name, and a role given at run time never acts as a
principal: giving a principal a "role" that the policy declares as a principal is refused.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from memwarden.policies.loading import PolicyData, RoleLink, Rule

#: Prefixes of the tagged names the enforcer compares: a principal and a role can never be equal.
PRINCIPAL, ROLE = "principal:", "role:"


@dataclass(frozen=True, slots=True)
class Subjects:
    """A principal id and every role it holds for one request.

    ``tags`` is what the enforcer compares with the (tagged) subjects of the policy's rules.
    """

    principal: str
    roles: frozenset[str]
    tags: frozenset[str] = field(init=False, repr=False, compare=False, hash=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "tags", frozenset({PRINCIPAL + self.principal, *(ROLE + r for r in self.roles)}))


#: The subjects of an operation before its principal is checked: an empty id, which no valid
#: principal has, and no roles.
NO_SUBJECTS = Subjects("", frozenset())


@dataclass(frozen=True, slots=True)
class Names:
    """Which names of a policy are principals and which are roles (see the module docstring)."""

    principals: frozenset[str]
    roles: frozenset[str]
    declared_by: dict[str, RoleLink] = field(compare=False, hash=False)

    @classmethod
    def of(cls, data: PolicyData) -> Names:
        """The principals and roles of a policy."""
        given = {link.role for link in data.links}
        declared = {link.member: link for link in reversed(data.links) if link.member not in given}
        roles = given | {r.subject for r in data.rules if r.subject not in declared}
        return cls(frozenset(declared), frozenset(roles), declared)

    def tag(self, name: str) -> str:
        """The tagged form of a rule's subject or a link's member."""
        return (PRINCIPAL if name in self.principals else ROLE) + name

    def subject(self, rule: Rule) -> str:
        """The tagged subject of a rule."""
        return self.tag(rule.subject)

    def link(self, link: RoleLink) -> tuple[str, str]:
        """A ``g`` line as tagged (member, role)."""
        return self.tag(link.member), ROLE + link.role

    def closure(self, links: Iterable[RoleLink]) -> dict[str, frozenset[str]]:
        """For each tagged name of ``links``, every tagged name it holds through them,
        transitively (itself included)."""
        parents: dict[str, set[str]] = {}
        for link in links:
            member, role = self.link(link)
            parents.setdefault(member, set()).add(role)
        out: dict[str, frozenset[str]] = {}
        for start in {*parents, *(r for rs in parents.values() for r in rs)}:
            seen, todo = {start}, [start]
            while todo:
                for role in parents.get(todo.pop(), ()):
                    if role not in seen:
                        seen.add(role)
                        todo.append(role)
            out[start] = frozenset(seen)
        return out
