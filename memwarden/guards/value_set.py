"""``Values``: the procedure values one text holds, by category, and how a change's values
compare with an established record's (:func:`~memwarden.guards.values.procedure_values`
reads them out of a text)."""

from __future__ import annotations

from dataclasses import dataclass, field

from memwarden.guards.money import is_money

__all__ = ["Values"]

#: The category of an amount of money in no named currency ("5 grand"): it compares with money
#: of every currency, and every text that holds money holds it (:meth:`Values.held`), so that the
#: records a change of it may change are found among those holding any money.
ANY_MONEY = "amount:money"
#: The category of a value-like token no reader read (memwarden/guards/unread.py): held by
#: every established text that holds a procedure value.
UNREAD = "unread"
# A dose's two dimensions (memwarden.guards.values._measure): one said in the other is a change.
_DIMENSIONS = {"amount:mass:mg": "amount:volume:ml", "amount:volume:ml": "amount:mass:mg"}


def _unsaid_period(value: str, theirs: frozenset[str]) -> bool:
    """Whether ``value`` is one of ``theirs`` but for a period one of the two leaves unsaid: an
    amount's key carries its period after a slash ("400/1mo", memwarden/guards/money.py), and
    "400 EUR" restates "400 EUR a month" where "400 EUR a week" changes it."""
    amount, _, period = value.partition("/")
    return any(t.partition("/")[0] == amount and not (period and t.partition("/")[2]) for t in theirs)


@dataclass(frozen=True)
class Values:
    """Values by category (comparison keys, see :mod:`memwarden.guards.values`), and whether a
    check is weakened."""

    by_category: dict[str, frozenset[str]]
    weakened: bool
    raw: dict[str, str]
    #: More matches of one pattern than :data:`~memwarden.guards.ruleset.MAX_MATCHES`: the rest were not read, so the
    #: values cannot be compared (the contradiction check holds such a text for review).
    overflow: bool = False
    #: The text names a check, an approval or a proof of identity (what a weakening weakens).
    names_check: bool = False
    #: Someone's role or right given to anyone ("whoever calls", "anyone on the list").
    opened: bool = False
    #: The stems of what a weakening drops ("countersign" of "without countersigning").
    dropped: frozenset[str] = frozenset()
    #: The words of the text (four letters or more), for a weakening's object to be found in.
    words: frozenset[str] = frozenset()
    #: The whole words of what a weakening drops ("countersigning"), of which :attr:`dropped`
    #: keeps the stems: the words the records it may weaken are searched by
    #: (memwarden/memory/nearby.py).
    objects: frozenset[str] = frozenset()
    #: The stems of the checks the text states as obligations, and of those it names without
    #: restating one (memwarden/guards/obligations.py): a change that names an obliged check
    #: and does not restate the obligation weakens it.
    obliged: frozenset[str] = frozenset()
    unkept: frozenset[str] = frozenset()
    #: The value-like tokens of the text (memwarden/guards/unread.py), each with the families of
    #: the values that read it (none: unread). One read by no family the established text holds,
    #: and that the established text does not hold, is a change (:meth:`changes`).
    tokens: dict[str, frozenset[str]] = field(default_factory=dict)

    @property
    def unread(self) -> frozenset[str]:
        """The value-like tokens no reader read."""
        return frozenset(t for t, families in self.tokens.items() if not families)

    def any(self) -> bool:
        """Whether the text holds anything a procedure change is made of (a value, a weakening,
        a role opened to anyone, a check named without an obligation, a value-like token, or
        more values than were read)."""
        return (bool(self.by_category) or self.weakened or self.opened or self.overflow or bool(self.unkept)
                or bool(self.tokens))

    def held(self) -> frozenset[str]:
        """What a change of this text would change, as an established record: its value
        categories, and "check" when it names a check. The lexical index keeps them per record,
        so that the records a procedure change is compared with are chosen among those that
        hold what it changes (memwarden/memory/nearby.py)."""
        return (self._categories() | (frozenset({"check"}) if self.names_check else frozenset())
                | (frozenset({UNREAD}) if self.by_category else frozenset()))

    def _categories(self) -> frozenset[str]:
        money = any(is_money(c) for c in self.by_category)
        return frozenset(self.by_category) | (frozenset({ANY_MONEY}) if money else frozenset())

    def _compared(self, category: str) -> frozenset[str]:
        """The keys of this text that a value of ``category`` compares with: its own, and for
        money the keys of money in no named currency, or of every currency for that."""
        theirs = self.by_category.get(category, frozenset())
        if category == ANY_MONEY:
            return frozenset().union(*(v for c, v in self.by_category.items() if is_money(c)))
        if is_money(category):
            return theirs | self.by_category.get(ANY_MONEY, frozenset())
        return theirs

    def changing(self) -> frozenset[str]:
        """What this text may change of an established record (see :meth:`held`): its value
        categories, and "check" when it weakens one or opens a role to anyone."""
        return (self._categories() | (frozenset({"check"}) if self.weakened or self.opened or self.unkept else frozenset())
                | (frozenset({UNREAD}) if self.tokens else frozenset()))

    def weakens_any(self) -> bool:
        """Whether this text may weaken a check of an established text that holds no value of
        its own (:meth:`weakens` needs a weakening or something dropped): when it cannot,
        only established texts holding one of :meth:`changing` can be changed by it."""
        return self.weakened or self.opened or bool(self.dropped)

    def may_weaken(self, established: Values) -> bool:
        """Whether :meth:`weakens` may hold for ``established`` by what this text drops alone: a
        word of it starts with a dropped stem. Such a record need name no check word that
        :mod:`memwarden.guards.values` knows ("countersigns"), so :meth:`held` does not say
        "check" for it."""
        return any(word.startswith(stem) for stem in self.dropped for word in established.words)

    def weakens(self, established: Values) -> bool:
        """True when this text weakens a check the established one does not: a weakening
        ("alone", "without", "directly") where one of the two texts names a check, a role
        opened to anyone ("whoever calls"), or a weakening of something the established text
        names ("without countersigning" where it is "countersigned by a second pharmacist")."""
        if established.weakened:
            return False
        if self.weakened and (self.opened or self.names_check or established.names_check):
            return True
        if self.unkept & established.obliged:  # an obligation not restated
            return True
        # A role opened to anyone weakens on its own where a check or an approver is named.
        if self.opened and (self.names_check or established.names_check or "route" in established.by_category):
            return True
        # (What both texts drop, "sin zapatos" in both, is no new weakening.)
        return any(word.startswith(stem) for stem in self.dropped - established.dropped for word in established.words)

    def changes(self, established: Values) -> list[tuple[str, str, str]]:
        """(category, new key, established key it replaces) for each category both texts
        hold, where this text has a value the established one does not (money in no named
        currency, "5 grand", compares with money of any currency; a period said on one side
        only is no change, :func:`_unsaid_period`)."""
        out = []
        for category, mine in self.by_category.items():
            theirs = established._compared(category)
            if not theirs and (other := _DIMENSIONS.get(category)) in established.by_category:
                # A dose moved to another dimension ("5 mg" made "5 ml") is a changed dose.
                out.append((category, min(mine), min(established.by_category[other])))
                continue
            if not theirs:
                continue
            for value in sorted(v for v in mine - theirs if not _unsaid_period(v, theirs)):
                if not any(_restates(value, t) for t in theirs):
                    out.append((category, value, min(theirs)))
                    break
        # A value no reader read, where the established text holds procedure values, fails closed.
        if established.by_category:
            families = {c.partition(":")[0] for c in established.by_category}
            # (A number a reader read as an amount in either text is read: "between 400 and 500 EUR".)
            numbers = {k.partition("/")[0] for v in (self, established) for c, keys in v.by_category.items()
                       if c.startswith("amount:") for k in keys}
            new = sorted(t for t, read in self.tokens.items()
                         if t not in established.tokens and not read & families and t.replace(",", "") not in numbers)
            if new:
                out.append((UNREAD, new[0], ""))
        return out


def _restates(new: str, established: str) -> bool:
    """Whether the key ``new`` restates ``established``: an account named by its last digits
    ("*4471", memwarden/guards/values.py) restates one that ends in them. (Not the other
    way: a whole number where only its last digits were known is new.)"""
    return new[:1] == "*" and established.endswith(new[1:])
