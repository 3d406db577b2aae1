"""The scope of a negation, for the procedure values (memwarden/guards/values.py): whether a
weakening ("without a call-back", "skip the check", "no approval needed") is stated or denied.

A negation governs a weakening a few words after it in its own clause ("no payment goes out
without a call-back" states the check); a weakening said of a check after it is looked for
before its predicate ("the call-back is not discretionary"). A comma, a colon, a dash, "and", "but", a bracket or a
subordinator ("that", "except", "unless", "which", and theirs in the other four languages)
starts another clause, which the negation does not govern ("Nobody disputes that no approval
is needed", "Nothing changes (no approval needed)"); a relative pronoun right after a negated
noun starts none ("No payment that is over 500 EUR goes out without a call-back"). A condition
("when", "if") is governed by a negated main clause that acts ("No payment goes out when the
call-back is skipped"), not by one that comments ("It is no surprise when ...", "Nobody minds
if ..."). A negated weakening followed in its sentence by an exception ("... without a
call-back except Globex payments") weakens the check for what it excepts.

Linear time: RE2 over the rule engine's projection, each look bounded (200 characters).
"""

from __future__ import annotations

from collections.abc import Iterator

import re2

from memwarden.guards.ruleset import compile_projected

from memwarden.guards.function_words import NEGATIONS

__all__ = ["EXCEPTION", "SENTENCE_END", "unnegated"]

SENTENCE_END = re2.compile(rb"[.;!?\n]")
_SUBORDINATORS = (r"that|when|whenever|if|unless|except|once|while|whereas|although|though|which|who|where|"
                  r"dass|daA|wenn|falls|sobald|au(?:ss|A)er|que|qui|quand|lorsque|si|sauf|cuando|salvo|excepto|"
                  r"che|quando|se|tranne|eccetto")
_NEGATED = compile_projected(r"\b(?:" + "|".join(sorted(NEGATIONS, key=len, reverse=True)) + r")\b|n't\b")
# What ends a negation's clause: a list ("no receipt and no approval": the first "no" is the
# list's other weakening), a colon, a semicolon or a dash (the projection's "\x01" for an em or
# en dash), or a conjunction that starts another clause ("Nothing changes: ... without a
# call-back", "Don't worry, ... without the call-back": the weakening is stated, not denied).
_CLAUSE_BREAK = compile_projected(r"[,:;\x01]|\s-\s|\b(?:and|or|but|so|because|und|oder|aber|weil|denn|et|ou|mais|"
                         r"y|o|pero|porque|e|ma|perch[eaA])\b|"
                         # A bracket opens or closes a clause of its own ("Nothing changes (no
                         # approval needed)"), and so does a subordinator: a negation before
                         # "that", "when", "if", "except" governs its own clause, not what they
                         # open ("Nobody disputes that no approval is needed", "Don't be
                         # surprised when payments skip the call-back").
                         r"[()\[\]{}]|\b(" + _SUBORDINATORS + r")\b")
# Words that open a relative clause: after a negated noun ("no payment that is over 500 EUR goes
# out without a call-back") the negation still governs the clause it stands in.
_RELATIVE = frozenset(b"that which who whom whose que qui che der die das".split())
# Negations that are a noun's determiner ("no payment", "keine Zahlung", "aucun paiement").
_DETERMINERS = frozenset(b"no kein keine keinen keinem keiner keines aucun aucune ningun ninguna ninguno nessun "
                         b"nessuno nessuna".split())
# What excepts from a negated weakening: "No payment goes out without a call-back except Globex
# payments" weakens the check for what it excepts.
EXCEPTION = compile_projected(r"\b(?:except|excepting|excluding|unless|other than|apart from|save for|but not|au(?:ss|A)er|"
                      r"ausgenommen|es sei denn|sauf|except[eA]|A part|A moins|salvo|excepto|menos|a menos|tranne|"
                      r"eccetto|a meno)\b")
#: Words a negation may stand before the weakening it governs ("no payment goes out without").
_NEGATION_REACH = 8


# Subordinators of a condition: a negated main clause governs them ("No payment goes out when the
# call-back is skipped", "Never pay if the approval is missing" state the check), unless the
# negation comments on the condition rather than acting ("It is no surprise when ...", "Nobody
# minds if ...", "Don't worry when ...").
_CONDITIONALS = frozenset(b"when whenever if once wenn falls sobald quand lorsque si cuando quando se".split())
_COPULA = compile_projected(r"\b(?:is|are|was|were|be|been|it's|that's|there's|ist|sind|war|est|c'est|es|son|A|sono)\s*$")
_COMMENTS = compile_projected(r"^\s*(?:(?:one|body|thing|be|been|is|was|a|an|the|real|big|to|de|di|del|un|una|ein|eine|"
                     r"le|la|il|lo|hay|ha|gibt|es)\s+){0,2}(?:minds?|cares?|worry|worries|surprised?|surprising|"
                     r"problems?|issues?|matters?|concerns?|concerned|fuss|harm|wonder|objects?|objections?|complains?|"
                     r"notices?|unusual|odd|strange|alarmed|worried|big deal|panic|souci|soucis|probl[eA]mes?|"
                     r"problema|problemi|preocupa[a-zA]*|preoccupa[a-zA]*|importa|grave|sorgen?|schlimm|egal)\b")


# Negations that are a clause's subject: before a verb and then another verb or a copula they
# stand in a relative clause without "that" ("the call-back nobody likes is now optional").
_SUBJECTS = frozenset(b"nobody nothing none niemand nichts personne rien nadie nada nessuno niente".split())
_RELATIVE_VERB = compile_projected(r"^\s*(?:one\s+)?(?:really\s+|ever\s+|much\s+)?[a-zA]+(?:s|ed)\s+(?:(?:now|still|also|then|"
                                   r"already|often)\s+)?(?:is|are|was|were|becomes?|became|gets?|got|goes|went|may|"
                                   r"can|could|might|will|shall|should|has|have|had)\b")
# A negation that is part of a compound word before another ("no-risk payments", "no-fee
# accounts") qualifies that word, not the weakening ("non-mandatory" is the weakening's own).
_COMPOUND = compile_projected(r"^-(?:one\b)?")


def _governs(negation: re2._Match, before: bytes) -> bool:
    """Whether ``negation`` (a match in ``before``, the sentence up to a weakening) governs the
    weakening: no clause starts in between, but a relative pronoun after a negated noun starts
    none, and a condition ("when", "if") is governed by a negation that acts rather than
    comments (see :data:`_CONDITIONALS`). A negation that comments ("no wonder", "nobody
    minds"), stands in a relative clause without "that" ("the call-back nobody likes is
    optional") or in a compound ("no-risk payments") governs nothing after it."""
    between = before[negation.end():]
    if len(between.split()) > _NEGATION_REACH:
        return False
    if _COMMENTS.search(between) is not None or (between[:1] == b"-" and len(between) > 1
                                                 and _COMPOUND.match(between).end() == 1):
        return False
    if negation.group(0) in _SUBJECTS or between.startswith(b" one "):
        if _RELATIVE_VERB.search(between) is not None and _COPULA.search(before[:negation.start()]) is None:
            return False
    for n, brk in enumerate(_CLAUSE_BREAK.finditer(between)):
        if n == 16:
            return False
        word = brk.group(1)
        if word is None:
            return False
        if word in _CONDITIONALS:
            if _COPULA.search(before[max(0, negation.start() - 40):negation.start()]) is not None \
                    or _COMMENTS.search(between[:brk.start()]) is not None:
                return False
            continue
        if word not in _RELATIVE or negation.group(0) not in _DETERMINERS or len(between[:brk.start()].split()) > 2:
            return False
    return True


def unnegated(pattern: re2._Regexp, data: bytes, max_matches: int = 512, at: int = 0,
              overflow: list[bool] | None = None) -> Iterator[re2._Match]:
    """The matches of ``pattern`` in ``data`` with no negation before them in their clause: "no
    payment goes out without a call-back" states a check, it weakens none; "nothing changes:
    payments go out without a call-back" weakens it, and so does an exception after a negated
    weakening ("no payment goes out without a call-back except Globex's"). (The look back and
    the look ahead are bounded: at most 200 characters for each of at most ``max_matches``
    matches.) ``at``: the group whose start the negation is looked for before, when it took part
    ("the call-back is not optional": the predicate's, after its check). ``overflow``: its first
    item is set True when more than ``max_matches`` matched (the rest were not read)."""
    for n, match in enumerate(pattern.finditer(data)):
        if n == max_matches:
            if overflow is not None:
                overflow[0] = True
            return
        start = match.start(at) if at and match.group(at) is not None else match.start()
        before = data[max(0, start - 200):start]
        ends = list(SENTENCE_END.finditer(before))
        if ends:
            before = before[ends[-1].end():]
        negations = list(_NEGATED.finditer(before))
        # A negation governs the weakening only in its own clause, a few words before it.
        if not negations or not _governs(negations[-1], before):
            yield match
            continue
        after = data[match.end():match.end() + 200]
        end = SENTENCE_END.search(after)
        if EXCEPTION.search(after[:end.start()] if end else after) is not None:
            yield match
