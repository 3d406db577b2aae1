"""Who approves, and whether a check is weakened: what the procedure values
(:mod:`memwarden.guards.values`) read a route and a weakened check with.

An approver (a route) is read after a participle and "by/to/via" ("approved by Carol",
"countersigned by the CFO"), before "'s approval" with up to three adjectives between ("Carol's
sign-off", "Mallory's written approval", "the CFO's prior written consent"), after "approval /
sign-off from, of or by" ("sign-off by the CFO"), or before a verb of approving in the third
person or after a modal ("Carol approves", "the CFO must sign off", "needs Carol to approve",
"Mallory gives the thumbs-up", "Mallory can wave it through"), or by the noun ("the approver of
refunds is Carol", "Mallory is the sole approver", "approval rests with the CFO"); "cleared by"
and "rubber-stamped by" approve too, and a rank is part of who approves ("a second manager
countersigns").

A check is weakened by a weakening word, a role opened to anyone ("everyone in finance
approves"), four eyes made two ("self-approved", "the same manager may countersign"), or a
named check lowered in other words: its modality ("the call-back is nice to have",
"discretionary", "recommended", "best effort", "at the accountant's discretion"), dropped or
replaced ("forget the call-back", "replaced by an email confirmation"), or moved after the act
it guards ("approved after payment", "countersigned in arrears", "done afterwards", "at month
end"). "Without exception", "without fail" strengthen: they weaken nothing. None weakens where
a negation governs it (:mod:`memwarden.guards.negation`: in its own clause, a few words before
it; "no payment goes out without a call-back" states the check, "the call-back is not
discretionary" too; "Nobody disputes that no approval is needed" and "No payment goes out
without a call-back except Globex's" weaken it).

The patterns run on RE2 over the rule engine's projection (:func:`~memwarden.guards.ruleset.project`).
"""

from __future__ import annotations

from typing import NamedTuple

import re2

from memwarden.guards.function_words import MOMENTS, STOP_WORDS
from memwarden.guards.negation import unnegated
from memwarden.guards.obligations import FOREIGN_CHECKS, read_obligations
from memwarden.guards.ruleset import LETTER as _L
from memwarden.guards.ruleset import MAX_MATCHES, compile_projected
from memwarden.guards.ruleset import WORD_CHAR as _WI

__all__ = ["ROUTE", "Checks", "approver", "read_checks"]

# What a possessive or an "of"/"from" names the approver of.
_APPROVALS = (r"(?:approval|sign[- ]?off|consent|ok|okay|go-ahead|authori[sz]ation|countersignature|green light|"
              r"thumbs[- ]?up|say-?so|blessing)")
# What may stand between a possessive and the approval ("Mallory's written approval", "the
# CFO's prior written consent").
_APPROVAL_ADJECTIVES = (r"(?:written|prior|formal|explicit|final|express|personal|own|signed|verbal|oral|e-?mail|"
                        r"two-step|advance|direct|full|official)")
# What an approval or an approver is of ("the approver of Globex refunds is ...").
_OF_WHAT = rf"(?:\s+(?:of|for)(?:\s+{_WI}+){{1,4}}?)?"
# Who approves by the noun.
_APPROVERS = r"(?:approver|approving (?:manager|officer)|signatory|authori[sz]er|sign-?off owner)"
# Who approves by the verb ("Carol approves", "the CFO must sign off", "Mallory gives the
# thumbs-up", "Mallory can wave it through"): a third person's form, or a modal before the
# verb's base.
_GIVEN = r"(?:the\s+)?(?:thumbs[- ]?up|go-ahead|green light|nod|ok|okay|final word|say-?so)"
_APPROVES = (r"(?:(?:alone|only|now|also|personally|then|always|still|verbally|formally|informally|automatically|"
             r"usually|normally|typically|generally|just|often|manually|directly|finally|simply|explicitly|"
             r"separately|jointly|first)\s+)?"
             rf"(?:approves|authori[sz]es|countersigns|signs off|okays|ok's|oks|vets|sanctions|green-?lights|"
             rf"rubber-?stamps|gives\s+{_GIVEN}|has the (?:final|last) (?:say|word)|waves\s+(?:{_WI}+\s+){{0,5}}?through|"
             r"(?:must|should|shall|will|can|may|has to|needs to|is to|have to)\s+(?:approve|authori[sz]e|"
             rf"countersign|sign off|okay|ok|vet|sanction|green-?light|rubber-?stamp|give\s+{_GIVEN}|"
             rf"wave\s+(?:{_WI}+\s+){{0,5}}?through))\b")
# A rank before who approves is part of who it is: "a second manager countersigns" is the
# established "countersigned by a second manager", not "the manager".
_RANKED = r"(?:the\s+)?(?:(?:second|other|another|independent|different|separate|senior)\s+)?"
#: Who approves or receives: the groups 1 to 10 hold who (:func:`approver` reads them).
ROUTE = compile_projected(rf"\b(?:(?:approved|signed off|authori[sz]ed|verified|confirmed|checked|handled|owned|paid|sent|"
                      rf"forwarded|routed|reported|escalated|issued|reviewed|trusted|given|delivered|addressed|held|granted|"
                      rf"restricted|limited|reserved|assigned|countersigned|co-?signed|vetted|okayed|ok'd|sanctioned|"
                      rf"endorsed|green-?lit|green-?lighted),?\s+(?:only\s+|directly\s+|instead\s+)?(?:by|to|via|through|with):?|"
                      # (by whom only: a payment "cleared through the bank" names no approver)
                      rf"(?:cleared|rubber-?stamped|waved through|blessed),?\s+(?:only\s+)?by:?)\s+((?:the\s+)?{_WI}+"
                      rf"(?:(?:['\-]|,?\s+){_WI}+){{0,11}})|"
                      # French, Spanish and Italian: a participle, then "par", "por", "da"
                      rf"\b(?:approuv|valid|autoris|sign|v{_L}rifi|contr{_L}l|aprobad|autorizad|firmad|verificad|"
                      rf"revisad|approvat|autorizzat|firmat|verificat|controllat|convalidat)[a-zA]*\s+(?:par|por|da)\s+"
                      rf"({_WI}+(?:(?:['\-]|,?\s+){_WI}+){{0,11}})|"
                      # German: "von/durch X genehmigt", the participle after who
                      rf"\b(?:von|vom|durch)\s+({_WI}+(?:\s+{_WI}+){{0,3}}?)\s+(?:genehmigt|freigegeben|gepr{_L}ft|"
                      rf"best{_L}tigt|unterschrieben|gegengezeichnet|abgezeichnet|kontrolliert|autorisiert|"
                      rf"verantwortet)\b|"
                      # Who approves by a possessive ("needs Carol's approval", "the CFO's sign-off"):
                      # group 4.
                      rf"\b({_RANKED}{_WI}+)['\x01]s\s+(?:{_APPROVAL_ADJECTIVES}[\s,]+){{0,3}}{_APPROVALS}\b|"
                      # Where an approval rests ("approval of refunds rests with Mallory"): group 5,
                      # before "approval of X", which would read the refunds as who approves.
                      rf"\b{_APPROVALS}s?{_OF_WHAT}\s+(?:lies|rests|sits|stays|remains|is)\s+with\s+"
                      rf"((?:the\s+)?{_WI}+(?:(?:['\-]|,?\s+){_WI}+){{0,11}})|"
                      # After the approval ("approval from Carol", "the sign-off of the CFO"): 6.
                      rf"\b(?:{_APPROVALS}s?\s+(?:of|from|by)|(?:freigabe|genehmigung|zustimmung|abzeichnung|gegenzeichnung)\s+"
                      rf"(?:durch|von|vom))\s+((?:the\s+)?{_WI}+(?:(?:['\-]|,?\s+){_WI}+){{0,11}})|"
                      # Who approves by the verb ("Carol approves", "the CFO must sign off"): 7.
                      rf"\b({_RANKED}{_WI}+)\s+{_APPROVES}|"
                      # Who approves by the noun ("the approver of refunds is Mallory", "Mallory is
                      # the sole approver"): 8 and 9; "needs Mallory to approve": 10.
                      rf"\b{_APPROVERS}s?{_OF_WHAT}\s*(?:is|are|:|=|will be|remains|becomes)\s+((?:the\s+)?{_WI}+"
                      rf"(?:(?:['\-]|,?\s+){_WI}+){{0,11}})|"
                      rf"\b((?:the\s+)?{_WI}+)\s+(?:is|are|will be|becomes|remains)\s+(?:now\s+)?(?:the\s+)?"
                      rf"(?:sole\s+|only\s+|new\s+|final\s+|designated\s+)?{_APPROVERS}s?\b|"
                      rf"\bneeds?\s+((?:the\s+)?{_WI}+)\s+to\s+(?:approve|sign off|authori[sz]e|countersign|okay|ok)\b")

# Whom to trust or who approves opened to anyone: weakened whether or not a check is named.
# (One list, in :data:`_WEAKENED` too: "everyone" was an opened role but no weakening, so
# "approved by everyone in finance" weakened nothing.) Letters other than ASCII read as "A".
_OPENED_WORDS = (r"anyone|anybody|whoever|everyone|everybody|all (?:staff|employees|personnel)|"
                 r"any (?:employee|staff(?: member)?|member of staff|colleague|caller|user)|"
                 r"jedermann|jede[rm]? (?:mitarbeiter(?:in)?|kollege|kollegin)|alle mitarbeiter(?:innen)?|"
                 r"tout le monde|quiconque|n'importe qui|tous les employ[a-zA]*|"
                 r"cualquiera|todo el mundo|cualquier (?:persona|empleado)|"
                 r"chiunque|tutti i dipendenti|qualsiasi dipendente|tutto il personale")
_OPENED = compile_projected(rf"\b(?:{_OPENED_WORDS})\b")
_WEAKENED = compile_projected(rf"\b(?:{_OPENED_WORDS}|alone|by (?:him|her|them)sel(?:f|ves)|no longer|not (?:needed|required|necessary|"
                     r"checked|verified)|optional|skip(?:ped|s)?|waived?|without|only one|a single|unchecked|"
                     r"no (?:need|check|verification|approval|callback|sign-?off|second)|directly|automatically|"
                     # (the obligation denied, past or excepted: :mod:`memwarden.guards.obligations` reads
                     # the class, these the words)
                     r"(?:(?:is|are|was|were|does|do)n't|not|non-|never|no longer) ?(?:be )?(?:needed|required|necessary|mandatory|compulsory|obligatory)|"
                     r"used to be (?:mandatory|required|compulsory|obligatory|necessary)|"
                     r"(?:mandatory|required|compulsory|obligatory|necessary)(?: [a-z]+){0,3}? (?:except|unless|other than|"
                     r"apart from|save for|excluding)|"
                     r"omit(?:ted|s)?|elective|deprecated|obsolete|freiwillig|fakultativ|facultati(?:f|ve)s?|opcional|"
                     r"facoltativ[oa]|"
                     r"suspended|paused|on hold|lifted|self-(?:approv|sign|certif|authori[sz])[a-z]*|"
                     # Four eyes become two: "the same manager may countersign twice" (the verb in the
                     # match, so that "may not countersign" is none).
                     r"(?:the )?same (?:person|manager|approver|signatory|employee|individual|officer|colleague|user) "
                     r"(?:may|can|could|might|is allowed to|is permitted to) (?:also |both )?"
                     r"(?:approv|sign|countersign|co-?sign|authori[sz]|verif|release|pay)[a-z]*|"
                     r"(?:approv|sign|countersign|authori[sz])[a-z]* (?:their|his|her) own)\b")
# "Without" that strengthens: "every payment needs a call-back, without exception" drops nothing.
_STRENGTHENED = compile_projected(r"(?:without|ohne|sans|sin|senza)\s+(?:any\s+|an?\s+|jede\s+|aucune\s+)?"
                                  r"(?:exceptions?|fail|delay|question|doubt|hesitation|excuse|shortcuts?|deviations?|"
                                  r"compromise|ausnahme|excepci[oA]n|eccezion[ei]|faute)\b")
# The checks that stand before the act, which a predicate of :data:`_LOWERED` weakens (an audit
# or a confirmation done "afterwards" is no weakened check: it comes after by nature).
_GATES = (r"(?:approv[a-z]*|sign(?:ed|s|ing)?[- ]?offs?|countersign[a-z]*|co-?sign[a-z]*|call-?backs?|"
          r"call(?:ed|ing|s)? back|verif[a-z]*|authori[sz][a-z]*|vet(?:s|ted|ting)?|cleared|clearance|"
          r"sanction[a-z]*|four-eyes|two-person|second (?:signature|person|pair of eyes)|double-?check[a-z]*|"
          r"2fa|mfa|two-factor|consent)")
# A named check lowered in other words: its modality ("nice to have", "discretionary",
# "recommended", "best effort", "at the accountant's discretion"), dropped or replaced ("forget
# the call-back", "replaced by an email"), or moved after the act it guards ("approved after
# payment", "countersigned in arrears", "done afterwards", "at month end"). A predicate after
# the check is group 2, the words between them group 1 (one clause: :data:`_CLAUSE_WORDS`); a
# predicate before it ("forget the call-back", "an optional call-back") has no group.
_LOWERED = compile_projected(
    rf"\b(?:forget(?: about)?|ignore|scrap|abolish|do away with|discretionary|voluntary|recommended|advisory|"
    rf"best-effort|nice-to-have|token|cursory|perfunctory|retroactive|retrospective|after-the-fact|post-payment|"
    rf"post-hoc)\s+(?:{_WI}+\s+){{0,3}}?{_GATES}\b|"
    rf"\b{_GATES}\b((?:\s+{_WI}+(?:['\-]{_WI}+)*){{0,12}}?)\s+(nice[- ]to[- ]have|discretion(?:ary)?|recommended|"
    rf"advised|advisable|encouraged|suggested|voluntary|unnecessary|needless|superfluous|redundant|formality|courtesy|"
    r"pro[- ]forma|box-ticking|dropped|removed|scrapped|abolished|retired|discontinued|replaced|swapped|superseded|"
    r"best[- ]effort|if possible|where possible|ideally|optionally|where practical|if practical|when feasible|"
    r"if time allows|when convenient|time permitting|"
    r"(?:left )?up to (?:the |each |every |individual )?(?:clerk|accountant|team|staff|employee|agent|manager|person|"
    r"user|caller|operator|officer|discretion|judge?ment)s?|"
    # moved after the act
    r"afterwards?|in arrears|retroactively|retrospectively|post[- ]?hoc|ex post|"
    rf"after (?:the )?(?:fact|event|payments?|transfers?|release|payout|disbursement|execution|settlement|"
    rf"booking|posting|(?:it|they|the money) (?:goes|go|is|are|has|have) (?:out|paid|sent|released|been paid))|"
    rf"(?:following|once|after) (?:the )?(?:payments?|transfers?|release|payout|disbursement|execution|money|funds) "
    rf"(?:(?:has|have|is|are|was|were) )?(?:(?:been|already) )?(?:left|gone|sent|paid|released|out|made|executed)|"
    rf"following (?:the )?(?:payments?|transfers?|release|payout|disbursement|execution|settlement)|"
    rf"the (?:next|following) (?:day|morning|week|business day)|"
    rf"at (?:the )?(?:month|week|quarter|year)[- ]end|at the end of the (?:week|month|quarter|year))\b")
# What starts another clause between a check and a predicate of :data:`_LOWERED`: "the call-back
# comes first and the receipt is filed afterwards" moves no check.
_CLAUSE_WORDS = frozenset(b"and but so while whereas because although though then und aber et mais y pero e ma".split())
# A weakening with its object: what it drops ("without countersigning", "skip the screening",
# "no longer need an escort", "unescorted"). Where the established record names that object
# ("countersigned by a second pharmacist"), the weakening weakens it, whether or not the check
# is one :data:`_CHECK` knows by name.
_DROPS = compile_projected(r"\b(?:without|ohne|sans|sin|senza|nicht mehr|kein(?:e|en)? weitere[nr]?|plus de|ya no|non piu|no longer|skip(?:ped|s|ping)?|waiv(?:e|ed|es|ing)|no need (?:for|to)|dispense with|"
                  r"forgo|bypass(?:ed|es|ing)?|drop(?:ped|s|ping)?|suspend(?:ed|s|ing)?|paus(?:e|ed|es|ing))"
                  r"((?:\s+[a-zA]+){1,3})|\bun([a-z]{3,})ed\b")
# Words between a weakening and its object.
_NOT_OBJECTS = STOP_WORDS | frozenset("need needs needed require requires required necessary any further "
                                      "longer mandatory".split())
# What a weakening weakens: a check, an approval, a second person, an identity proof. "Tea
# without sugar" weakens nothing; "paid without a call-back" does.
_CHECK = compile_projected(r"\b(?:checks?|checked|checking|verif\w*|approv\w*|confirm\w*|sign(?:ed|s)?[- ]?offs?|review\w*|"
                  r"countersign\w*|co-?sign\w*|cleared|clearance|"
                  r"authori[sz]\w*|call-?backs?|call(?:ed|ing)? back|second (?:nurse|signature|person|check|pair)|"
                  r"witness\w*|double-?check\w*|audit\w*|consent\w*|validat\w*|inspect\w*|four-eyes|two-person|"
                  r"2fa|mfa|two-factor|authenticat\w*|identity|id|password|passcodes?|pin|otp|permission|clearance|"
                  r"keys?|locks?|badges?|credentials?|"
                  rf"{FOREIGN_CHECKS})\b")


# "Signed off by Friday", "sent to the board by Saturday": after "by" a moment is a deadline,
# not who approves or receives. But a moment before a name qualifies it ("the night nurse",
# "the weekend team", "May Lin"), and an approver may follow a deadline ("by Friday by
# Mallory"): the approver is the first run of words that are no function word, moment or
# number, wherever it starts.
_TIME = MOMENTS | frozenset("day days week weeks month months quarter year shift".split())
# Moments that are prepositions or determiners: never part of a name.
_TIME_WORDS = frozenset("by before until till on at in within during every each this last since".split())


_PRONOUNS = frozenset("who whom whoever which what that this one someone somebody wer welche welcher qui quoi chi che "
                      "quien quienes".split())


# Prepositions that no stop word list holds but that end who approves: "countersigned by a second
# manager without fail" names the second manager.
_AFTER_NAMES = frozenset("without except unless ohne sans sin senza".split())


def _is_name(word: str) -> bool:
    w = word.casefold()
    return not (w in STOP_WORDS or w in _TIME or w in _AFTER_NAMES or w[:1].isdigit())


# What joins the names of a list of approvers ("Ivan, the on-call admin and the vendor's
# contractor"): the list is the route, so a name added to it changes the route.
_JOINERS = frozenset("and or the a an any every all each some other another und oder et ou y o e".split())


# First-person pronouns: the writer is an approver ("the CFO or me"), "self".
_SELF = frozenset("i me myself we us ourselves ich mich mir wir uns je moi nous yo mi nosotros io noi".split())


def _who(value: str) -> str:
    """The approvers or recipients a route names, without a deadline before or after them (""
    for none); the writer ("me", "myself") is "self"."""
    words = value.replace(",", " , ").split()
    kept: list[str] = []
    for i, word in enumerate(words):
        w = word.casefold()
        if w in _SELF:
            kept.append("self")
        elif w != "," and (_is_name(word) or (w in _TIME and w not in _TIME_WORDS and i + 1 < len(words)
                                            and _is_name(words[i + 1]))):
            kept.append(word)
        elif kept and not (w == "," or w in _JOINERS):
            break
    return " ".join(kept)


# What offers another approver in a route's clause: "the CFO (or Mallory)", "the CFO / Mallory",
# "the CFO or, in her absence, by Mallory".
_ALTERNATIVE = re2.compile(r"(?i)\b(?:or|oder|ou|o)\b|/")
_BY = re2.compile(r"(?i)\b(?:by|durch|von|vom|par|por|da)\s")
_SENTENCE = re2.compile(r"[.;!?\n]")


def _alternatives(clause: str, name: str) -> list[str]:
    """The names a route's clause (from who approves to the end of its sentence) offers after
    "or" or a slash that ``name`` does not hold."""
    held = set(name.split())
    marks = [m.end() for m in _ALTERNATIVE.finditer(clause)][:8]
    extra: list[str] = []
    for n, start in enumerate(marks):
        segment = clause[start:marks[n + 1] if n + 1 < len(marks) else len(clause)]
        by = list(_BY.finditer(segment))
        extra += [w for w in _who((segment[by[-1].end():] if by else segment).replace("(", " ").replace(")", " ")).split()
                  if w not in held and w not in extra]
    return extra


def approver(match: re2._Match, text: str) -> tuple[int, str]:
    """Where in ``text`` the approver or recipient of a :data:`ROUTE` match starts, and who it
    is, without a deadline before or after ("" for none: before a verb, a relative or
    interrogative pronoun names nobody, "who approves?"), with each alternative its clause
    offers after "or" or a slash ("the CFO (or Mallory)": "CFO Mallory")."""
    group = next(g for g in range(1, 11) if match.group(g) is not None)
    name = _who(text[match.start(group):match.end(group)])
    if group in (7, 9, 10) and name.casefold() in _PRONOUNS:
        return match.start(group), ""
    rest = text[match.start(group):match.start(group) + 200]
    end = _SENTENCE.search(rest)
    return match.start(group), " ".join([name, *_alternatives(rest[:end.start()] if end else rest, name)]).strip()


class Checks(NamedTuple):
    """What a text says of its checks (:func:`read_checks`)."""

    #: A check weakened, lowered or opened to anyone.
    weakened: bool
    #: A check named (:data:`_CHECK`): what a weakening weakens.
    names_check: bool
    #: Whom to trust or who approves opened to anyone.
    opened: bool
    #: The first five letters of what each weakening drops ("witne" of "without a witness").
    dropped: frozenset[str]
    #: The words each weakening drops.
    dropped_words: frozenset[str]
    #: More matches of a pattern than :data:`~memwarden.guards.ruleset.MAX_MATCHES`: the rest were not read.
    overflow: bool = False
    #: The stems of the checks it states as obligations (:mod:`memwarden.guards.obligations`).
    obliged: frozenset[str] = frozenset()
    #: The stems of the checks it names without restating an obligation.
    unkept: frozenset[str] = frozenset()


def read_checks(data: bytes) -> Checks:
    """What ``data`` (a text's projection, its ASCII letters lowered) says of its checks."""
    dropped, dropped_words = set(), set()
    overflow = [False]
    for match in unnegated(_DROPS, data, MAX_MATCHES, overflow=overflow):
        if _STRENGTHENED.match(data, match.start()):
            continue
        if match.group(2) is not None:
            dropped.add(match.group(2).decode()[:5])
            dropped_words.add(match.group(2).decode())
            continue
        objects = [w for w in match.group(1).decode().split() if w not in _NOT_OBJECTS]
        if objects and len(objects[0]) >= 4:
            dropped.add(objects[0][:5])
            dropped_words.add(objects[0])
    # (Every match is read, so that 512 harmless ones before a weakening set overflow.)
    weakened = [not _STRENGTHENED.match(data, m.start()) for m in unnegated(_WEAKENED, data, MAX_MATCHES, overflow=overflow)]
    lowered = [m.group(1) is None or not _CLAUSE_WORDS & set(m.group(1).split())
               for m in unnegated(_LOWERED, data, MAX_MATCHES, at=2, overflow=overflow)]
    obligations = read_obligations(data)
    return Checks(any(weakened) or any(lowered), _CHECK.search(data) is not None,
                  next(unnegated(_OPENED, data, MAX_MATCHES), None) is not None, frozenset(dropped),
                  frozenset(dropped_words), overflow[0] or obligations.overflow, obligations.obliged, obligations.unkept)
