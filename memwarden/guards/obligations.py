"""Obligations: a check the established record states as an obligation must be restated, or it
counts as weakened (what :func:`memwarden.guards.approvals.read_checks` reads for
:meth:`~memwarden.guards.value_set.Values.weakens`).

A check is a check word (:data:`CHECK_WORDS`, five languages) and its stem (:func:`stem`: the
first five letters, "call-back", "callbacks" and "called back" all "callb"). A sentence states
an obligation of the checks it names by a word of obligation ("mandatory", "required", "must",
"always", "every", "needs", "without exception", "compulsory", "Pflicht", "obligatoire") or a
weakening denied ("cannot be skipped", "not waived for anyone", "never optional", "with no
exceptions"). The obligation lapses where it is denied ("isn't required", "not mandatory",
"non-mandatory"), said in the past ("used to be mandatory", "was required", "war Pflicht") or
excepted after it in its sentence ("mandatory except for urgent ones", "required unless",
"other than", "apart from", "ausser", "sauf", "salvo").

So a change by an untrusted writer that names a check the established record obliges and does
not restate the obligation weakens it whatever its words ("may be omitted", "is done following
payment", "freiwillig", "facultatif", "is up to the clerk"): the reader cannot tell the check is
kept, and fails closed.

Linear time: RE2 over the rule engine's projection; each look is bounded.
"""

from __future__ import annotations

from bisect import bisect_right
from typing import NamedTuple

from memwarden.guards.negation import EXCEPTION, SENTENCE_END, unnegated
from memwarden.guards.ruleset import MAX_MATCHES, compile_projected

__all__ = ["CHECK_WORDS", "FOREIGN_CHECKS", "Obligations", "read_obligations", "stem"]

#: Check words of the other four languages ("Rückruf", "rappel", "Freigabe", "verifica"):
#: letters other than ASCII read as "A" (:func:`~memwarden.guards.ruleset.project`).
FOREIGN_CHECKS = (r"r(?:A|ue|u)ckruf\w*|r(?:A|ue|u)ckbest(?:A|ae|a)tigung\w*|gegenpr(?:A|ue|u)fung\w*|pr(?:A|ue|u)fung\w*|"
                  r"kontrolle\w*|vier-?augen\w*|"
                  r"rappels?|contre-appels?|v(?:A|e)rification\w*|contr(?:A|o)les?|validation\w*|"
                  r"llamadas? de (?:verificaci(?:A|o)n|confirmaci(?:A|o)n)|verificaci(?:A|o)n\w*|"
                  r"control(?:es)?|richiamat[ae]|verifica|verifiche|controll[oi]")
#: What names a check (the English words of :data:`memwarden.guards.approvals._CHECK` and
#: :data:`FOREIGN_CHECKS`). Not an approval: who approves is a route value, compared as such, and
#: "needs Carol's approval" is restated by "Carol approves".
CHECK_WORDS = compile_projected(
    r"\b(?:checks?|checked|checking|verif\w*|confirm\w*|review\w*|call-?backs?|call(?:ed|ing)? back|second (?:nurse|signature|person|check|pair)|"
    r"witness\w*|double-?check\w*|audit\w*|validat\w*|inspect\w*|four-eyes|two-person|2fa|mfa|two-factor|"
    rf"authenticat\w*|{FOREIGN_CHECKS})\b")
# A word of obligation.
_OBLIGED = compile_projected(
    r"\b(?:mandatory|compulsory|obligatory|required|requires?|requirement|necessary|essential|must|always|every|each|"
    r"needs?|needed|has to|have to|shall|non-negotiable|invariably|at all times|in all cases|in every case|imperative|"
    r"(?:is|are) (?:done|made|carried out|performed|completed) (?:before|prior to)|"
    r"without (?:any )?(?:exception|fail)|(?:with )?no exceptions?|no matter what|under all circumstances|"
    r"pflicht\w*|obligatorisch|verpflichtend|vorgeschrieben|erforderlich|zwingend\w*|muss|m(?:A|ue|u)ssen|immer|stets|"
    r"jede[rsnm]?|ohne ausnahme|obligatoires?|requise?s?|exig(?:A|e)e?s?|doit|doivent|toujours|chaque|"
    r"imp(?:A|e)ratifs?|sans exception|obligatori[oa]s?|requerid[oa]s?|deben?|siempre|cada|necesari[oa]s?|"
    r"sin excepci(?:A|o)n|obbligatori[oa]|richiest[oa]|deve|devono|sempre|ogni|necessari[oa]|senza eccezion[ei])\b")
# A weakening: denied, it restates the obligation ("cannot be skipped", "not waived for anyone",
# "never optional", "not up to the clerk").
_RELAXED = compile_projected(
    r"\b(?:optional|skip\w*|waiv\w*|formalit(?:y|ies)|courtesy|nice[- ]to[- ]have|recommended|advisory|omit\w*|dropp?\w*|bypass\w*|exempt\w*|discretionary|voluntary|negotiable|"
    r"dispens\w*|forgo\w*|avoid\w*|left out|up to|freiwillig|fakultativ|facultati[fv]e?s?|opcional|facoltativ[oa]|"
    r"without|ohne|sans|sin|senza)\b")
# Weakenings that lapse nothing when stated: "up to 500 EUR" is a limit, "without a call-back" is
# what :data:`memwarden.guards.approvals._DROPS` reads.
_READ_ELSEWHERE = frozenset(b"up to without ohne sans sin senza".split())
# The past before a word of obligation ("used to be mandatory", "was always required", "war Pflicht").
_PAST = compile_projected(
    r"\b(?:used to|was|were|had|formerly|previously|once|originally|war|waren|wurde|fr(?:A|ue|u)her|(?:A|e)tait|"
    r"(?:A|e)taient|autrefois|era|eran|fue|fueron|erano|prima)\s+(?:(?:be|been|always|also|strictly|then|still|"
    r"absolutely|considered|deemed|previously|formerly|once|originally|ist|immer|toujours|siempre|sempre)\s+){0,3}$")
# The past or an end after a word of obligation ("mandatory until recently", "required in the past").
_ENDED = compile_projected(r"\b(?:until (?:recently|now|last|this)|in the past|formerly|previously|any ?more|"
                           r"no longer|bis vor kurzem|fr(?:A|ue|u)her|autrefois|jusqu'(?:A|a) (?:r(?:A|e)cemment|"
                           r"pr(?:A|e)sent|maintenant))\b")
# A comparison before such a word says the obligation stands as it stood: "mandatory, as it was
# previously" restates it.
_AS_BEFORE = compile_projected(r"\bas(?:\s+(?:it|they|this|that|we|before|ever))?(?:\s+(?:was|were|is|are|has been|"
                               r"have been|had been|did|always))?\s*$")


def _ended(after: bytes) -> bool:
    """Whether the sentence ``after`` an obligation word ends the obligation (:data:`_ENDED`),
    not only compares it with the past (:data:`_AS_BEFORE`)."""
    return any(not _AS_BEFORE.search(after[:m.start()]) for m in _ENDED.finditer(after))


class Obligations(NamedTuple):
    """What a text obliges of its checks (:func:`read_obligations`)."""

    #: The stems of the checks it states as obligations.
    obliged: frozenset[str]
    #: The stems of the checks it names without restating an obligation, or with one lapsed.
    unkept: frozenset[str]
    #: More matches of a pattern than :data:`~memwarden.guards.ruleset.MAX_MATCHES`.
    overflow: bool


def stem(word: bytes) -> str:
    """A check word's stem: its first five letters ("callb" of "call-back", "called back")."""
    letters = bytes(c for c in word if 97 <= c <= 122 or c in b"A0123456789").decode()
    return "callb" if letters.startswith("call") and "back" in letters else letters[:5]


def _sentence_after(data: bytes, end: int) -> bytes:
    after = data[end:end + 200]
    stop = SENTENCE_END.search(after)
    return after[:stop.start()] if stop else after


def read_obligations(data: bytes) -> Obligations:
    """What ``data`` (a text's projection, its ASCII letters lowered) obliges of its checks."""
    ends = [m.end() for m in SENTENCE_END.finditer(data)]
    overflow = [False]
    kept: set[int] = set()
    lapsed: set[int] = set()
    stated = {m.start() for m in unnegated(_OBLIGED, data, MAX_MATCHES, overflow=overflow)}
    starts = set()
    for n, match in enumerate(_OBLIGED.finditer(data)):
        if n == MAX_MATCHES:
            overflow[0] = True
            break
        starts.add(match.start())
        sentence = bisect_right(ends, match.start())
        before = data[max(0, match.start() - 60):match.start()]
        after = _sentence_after(data, match.end())
        if match.start() not in stated or _PAST.search(before) or EXCEPTION.search(after) or _ended(after):
            lapsed.add(sentence)
        else:
            kept.add(sentence)
    relaxed = {m.start() for m in unnegated(_RELAXED, data, MAX_MATCHES, overflow=overflow)}
    for n, match in enumerate(_RELAXED.finditer(data)):
        if n == MAX_MATCHES:
            overflow[0] = True
            break
        if match.start() in starts:  # "without exception" obliges
            continue
        if match.start() not in relaxed:  # denied, with no exception after it
            kept.add(bisect_right(ends, match.start()))
        elif match.group(0) not in _READ_ELSEWHERE:  # stated: the obligation of its sentence lapses
            lapsed.add(bisect_right(ends, match.start()))
    obliged, named, lost = set(), set(), set()
    for n, match in enumerate(CHECK_WORDS.finditer(data)):
        if n == MAX_MATCHES:
            overflow[0] = True
            break
        sentence, word = bisect_right(ends, match.start()), stem(match.group(0))
        if sentence in lapsed:
            lost.add(word)
        elif sentence in kept:
            obliged.add(word)
        else:
            named.add(word)
    return Obligations(frozenset(obliged - lost), frozenset(lost | (named - obliged)), overflow[0])
