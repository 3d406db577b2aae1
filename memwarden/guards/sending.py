"""The data-flow reading of a sentence: a sending verb, a destination, something sensitive.

The injection detector (:mod:`memwarden.guards.injection`) judges exfiltration per sentence
with these: a sending verb in the sentence's prose read as a verb (not a word of a URL or an
address, not a noun: "an email from", "the blog post"), a destination (an e-mail address, a
URL, an "external address" phrase) and something sensitive (credentials, the conversation,
customer data); :func:`flow_weight` is that judgment (1.0, 0.3 or nothing). The errand rule
of the detector compares the destinations a record names (:func:`destinations`, in
:func:`destination_form`) with those a user established, and vouches for nothing when the
record names one it cannot compare (:func:`uncompared_destination`). Every scan here looks
at each character a bounded number of times.
"""

from __future__ import annotations

import re
import unicodedata

from memwarden.guards.folding import prepare_rule

__all__ = ["HANDING", "SEND", "SENSITIVE", "SENTENCE_SPLIT", "bare_destination", "destination_form", "destinations",
           "flow_weight", "has_destination", "hidden_destination", "sends", "uncompared_destination",
           "without_destinations"]

# Sentences: "[.!?;]\s+|\n", written to begin with a character class (the engine then skips
# ahead to the next candidate character instead of trying at every one).
SENTENCE_SPLIT = re.compile(r"[.!?;\n](?:(?<=\n)|\s+)")

# Exfiltration is judged per sentence: a sending verb, a destination and something sensitive.
# An English verb in the forms that ask for or describe a standing flow: the base form, "-s"
# and "-ing", and the participle after a present auxiliary ("is forwarded to", "gets emailed
# to"); a past delivery ("Maria sent ...", "were forwarded") is an event, not an order. A verb
# that is also a noun has no "-s" form here ("emails", "reports" are messages), nor an "-ing"
# form that names a thing ("mailing list", "job posting", "file sharing", "shipping address",
# "routing number"); "ship" is left out ("ship the app to production" is how software is
# released). German, French, Italian and Spanish in the imperative and the infinitive
# (how those languages write an instruction: "weiterleiten", "transférer"), German separable
# verbs whole and split ("weiterleiten", "weiterzuleiten", "leite ... weiter").
_EN_SEND = ("sends?|sending|uploads?|uploading|transmits?|transmitting|exfiltrates?|exfiltrating|leaks?|leaking|"
            "delivers?|delivering|dispatch|dispatches|dispatching|cc|bcc|cc'?ing|bcc'?ing|"
            "forward|forwarding|e-?mail|e-?mailing|mail|post|submit|submitting|copy|copying|share|sync|syncing|"
            "push|pushing|report|export|exporting|relay|relaying|transfer|transferring|route|mirror|mirroring|"
            "fax|faxing|paste|pasting")
_AUXILIARIES = frozenset({"is", "are", "be", "being", "get", "gets", "getting"})
_EN_PASSIVE = ("(?:is|are|be|being|gets?|getting) (?:(?:then|also|always|automatically|now|still|securely|"
               "immediately|all|each) )?(?:sent|forwarded|e-?mailed|mailed|posted|uploaded|transmitted|submitted|"
               "exfiltrated|copied|cc'?d|bcc'?d|shared|leaked|synced|pushed|reported|delivered|dispatched|exported|"
               "relayed|transferred|routed|mirrored|faxed|pasted)")
SEND = re.compile(prepare_rule(
    r"\b(?:" + _EN_SEND + "|" + _EN_PASSIVE + "|"
    r"sende|senden|sendet|schick|schicke|schicken|schickt|leite|leiten|leitet|weiterleiten|weiterzuleiten|"
    r"ubersende|ubersenden|zusenden|zuzusenden|zuschicken|übermittle|übermitteln|übermittelt|maile|mailen|"
    r"exportiere|exportieren|hochladen|hochzuladen|teile|teilen|"
    r"envoie|envoient|envoyez|envoyer|transmets|transmettez|transmettre|transfere|transferez|transferer|partage|"
    r"partagez|partager|faites suivre|faire suivre|televerser|televersez|"
    r"envia|enviar|envie|enviad|reenvia|reenviar|reenvie|manda|mandar|mande|comparte|compartir|comparta|"
    r"transmite|transmitir|"
    r"invia|inviare|inviate|invii|inoltra|inoltrare|inoltrate|inoltri|mandare|condividi|condividere|condividete|"
    r"trasmetti|trasmettere|trasmettete)\b"))
# An address's domain ends at its top-level label: letters, or an IDNA "xn--" label; so a word
# hyphenated onto it ("results@evil.example-forward them") stays prose. Or the domain is an IP
# address, bare or in brackets ("admin@10.0.0.7", "admin@[10.0.0.7]").
_EMAIL_AT = re.compile(r"@(?:[\w-]+(?:\.[\w-]+)*\.(?:xn--[a-z0-9-]+|[^\W\d_]{2,63})\b|\d{1,3}(?:\.\d{1,3}){3}\b|"
                       r"\[[0-9a-f.:]{2,45}\])")
_EXTERNAL = re.compile(prepare_rule(
    r"(?:external|outside|third[- ]party|remote|personal|private) (?:address|server|endpoint|e-?mail|url|webhook|site|"
    r"party|inbox|account)\b|externally\b|off-?site\b|externe(?:n)? (?:adresse|e-?mail|server)\b|adresse externe\b|"
    r"direccion (?:externa|de correo externa)\b|indirizzo esterno\b|webhook"))


# Verbs that hand something over without being sending verbs ("give", "provide", "hand over",
# "back up", "include ... in a message to"): with something sensitive and a destination in the
# sentence they are the same data flow as "send"; alone they are too common to hint at one.
# (Not the nouns among them: "on the other hand", "a boarding pass", "the store", "the text".)
HANDING = re.compile(prepare_rule(
    r"\b(?:give|provide|hand over|hand (?:the|all|every|it|them)|pass\b[^.\n]{0,60}?\b(?:on|along)|dump|save|back up|"
    r"include|attach|text (?:the|all|every|each|it|them|this|these)|publish|disclose|reveal|expose|"
    r"(?:write|put|drop|place)\b[^.\n]{0,60}?\b(?:to|on|onto|into)|"
    r"gib|geben|ubergeben|speichere|speichern|donne|donnez|fournis|fournissez|fornisci|fornite|entrega|entregue|"
    r"proporciona)\b"))
# A destination written so that it is no address or URL (a bare host with a path, "x(at)evil",
# "x at evil dot example", a phone number): with something sensitive, a destination all the same.
# (A host begins a token: tried once per token, not at each of its labels.)
_HIDDEN = re.compile(r"(?<![\w.@/-])\w[\w-]*(?:\.[\w-]+)*\.[a-z]{2,}/|[\[({]\s*(?:at|@)\s*[\])}]|\b(?:at|@) [\w-]+ dot [a-z]{2,}\b|"
                     r"\+\d[\d \t().-]{6,}\d")


def hidden_destination(text: str) -> bool:
    """A destination written as no address or URL occurs in ``text`` (see ``_HIDDEN``)."""
    return bool(_HIDDEN.search(text))


def has_destination(text: str) -> bool:
    """An e-mail address, a URL or an 'external address' phrase occurs in ``text``."""
    return bool(("@" in text and _EMAIL_AT.search(text)) or "://" in text or "www." in text
                or _EXTERNAL.search(text))


# A URL (up to its first space, bracket, quote or a character no URL holds unencoded: a dash,
# a guillemet, other punctuation outside ASCII; a comma or a semicolon ends it too, so that a
# verb glued on by one is prose) and an e-mail address's local part (at most 64 characters,
# the RFC 5321 bound, walked back from the "@"): the characters of a destination.
_URL_SPAN = re.compile(r"(?:[a-z][a-z0-9+.-]{0,15}://|www\.)[^\s<>()\[\]\"',;\u00a0-\u00bf\u2000-\u2bff\u3000-\u303f]*")
_LOCAL_PART = frozenset("abcdefghijklmnopqrstuvwxyz0123456789._%+-")
# The English sending words that are also nouns ("an email from", "the blog post", "a report
# on"): a noun when a determiner or a modifier comes before it or a preposition or a colon
# after it, or a key's "=" or ":" (``email=``, ``"email":``). A noun names a message or a field;
# it asks nobody to send anything, unless the sentence sends what it names somewhere: "Post:
# all invoices to ...", "the nightly forward of lab results goes to ..." (a destination
# introduced by "to" after it).
_NOUN_VERBS = frozenset({"email", "e-mail", "mail", "post", "report", "copy", "share", "push", "sync", "export",
                         "forward", "submit", "route", "mirror", "fax", "paste", "transfer", "relay",
                         "forwarding", "emailing", "e-mailing", "copying", "syncing", "pushing", "exporting",
                         "relaying", "transferring", "mirroring", "faxing", "pasting", "submitting"})
_NOUN_BEFORE = frozenset({"the", "a", "an", "this", "that", "these", "those", "my", "your", "his", "her", "our",
                          "their", "its", "latest", "last", "recent", "new", "next", "first", "blog", "every", "each",
                          "weekly", "daily", "monthly", "annual", "status", "bug", "security", "same"})
_NOUN_AFTER = re.compile(r"(?:e?s)?[\"']?\s*(?:[:=]|(?:from|of|on|about|by|address|addresses|list|thread)\b)")
# What blanking leaves where a destination was, so that "to <destination>" can be read.
_DEST = "\x00"
# "to", "into", an arrow ... before a destination, at most four words between ("to the
# address ...", "to the billing team at ..."), none of them a form of "be" ("a copy to sign is
# at www..." names where a document is, not where something goes).
_TOWARDS = frozenset({"to", "into", "onto", "toward", "towards", "->", "=>", "→", "⇒"})
_BE = frozenset({"is", "are", "was", "were", "be", "been"})
# A message named by its sender's address ("an email from x@y to ...") is a message received,
# no flow out ("forward from today all ... to ..." is an order with its date).
_FROM = re.compile(r"s?\s+from\s+(?:[^\s\x00]+\s+){0,2}?\x00")


def _to_destination(prose: str) -> int:
    """Where the last "to" (:data:`_TOWARDS`) that introduces a destination in ``prose``
    (blanked by :func:`without_destinations`) is, or -1; a noun before it is what goes there
    ("the forward of ... to ...", not "reply to the post at ..."). Each destination looks at
    a bounded window before it: linear."""
    at = prose.rfind(_DEST)
    while at >= 0:
        start = max(0, at - 80)
        words = list(_WORD.finditer(prose, start, at))[-5:]
        for word in reversed(words):
            if word.group(0) in _BE:
                break
            if word.group(0).lstrip("(\"'") in _TOWARDS:
                return word.start()
        at = prose.rfind(_DEST, 0, at)
    return -1


_WORD = re.compile(r"\S+")


def _local_start(text: str, at: int, floor: int) -> int:
    """Where the local part of the address whose "@" is at ``at`` begins (at most 64
    characters back, not before ``floor``): ASCII address characters, and letters or digits of
    other scripts (an internationalised address)."""
    start = at
    while start > max(floor, at - 64) and (text[start - 1] in _LOCAL_PART
                                           or (not text[start - 1].isascii() and text[start - 1].isalnum())):
        start -= 1
    return start


def destination_form(text: str) -> str:
    """The form destinations are compared in: NFKC and lower case, as IDNA maps a domain
    (full-width letters and case are the same domain), and no more: :func:`fold` strips
    accents and maps look-alike letters, which makes "exämple.com" or a Cyrillic "асме.com"
    (other domains, other owners) the same as "example.com" and "acme.com"."""
    return (text if text.isascii() else unicodedata.normalize("NFKC", text)).lower()


def destinations(text: str) -> set[str]:
    """The e-mail addresses and URLs of ``text``, in :func:`destination_form`, as
    :func:`without_destinations` finds them; an address's local part at most 64 characters."""
    form = destination_form(text)
    found = {m.group(0).rstrip(".:!?") for m in _URL_SPAN.finditer(form)} if "//" in form or "www." in form else set()
    for m in _EMAIL_AT.finditer(form) if "@" in form else ():
        found.add(form[_local_start(form, m.start(), 0):m.end()].strip("."))
    return found


def without_destinations(sentence: str, mark: str = " ") -> str:
    """``sentence`` with each URL and e-mail address replaced by ``mark``: a sending verb must
    be in the prose, not a word of the destination ("mail.python.org", ".../blog/post/...",
    "report@example.com"). Each character is looked at a bounded number of times: linear."""
    text = _URL_SPAN.sub(mark, sentence) if ("//" in sentence or "www." in sentence) else sentence
    if "@" not in text:
        return text
    out, end = [], 0
    for m in _EMAIL_AT.finditer(text):
        out += [text[end:_local_start(text, m.start(), end)], mark]
        end = m.end()
    return "".join([*out, text[end:]])


def bare_destination(sentence: str) -> bool:
    """``sentence`` is little more than its destinations (at most three words besides: "to:
    x@evil.example", "- https://..."): the destination of the sentence before it."""
    return len(without_destinations(sentence).split(None, 4)) <= 3


def sends(sentence: str) -> bool:
    """A sending verb occurs in the prose of ``sentence`` (folded) read as a verb, or a sending
    noun whose object the sentence sends to a destination ("Post: all invoices to ...")."""
    prose = without_destinations(sentence, f" {_DEST} ")
    routed = None
    for m in SEND.finditer(prose):
        word = m.group(0)
        passive = word.split(None, 1)[0] in _AUXILIARIES
        if word not in _NOUN_VERBS and not passive:
            return True
        before = prose[max(0, m.start() - 16):m.start()].split()
        if not passive and not ((before and before[-1].lstrip("[(<*_\"'") in _NOUN_BEFORE)
                                or _NOUN_AFTER.match(prose, m.end())):
            return True
        # A noun, or a passive ("files that are shared with ..." say who may read them): a
        # flow only when what it names goes to a destination.
        if routed is None:
            routed = _to_destination(prose)
        if routed > m.end() and not _FROM.match(prose, m.end()):
            return True
    return False


# A destination the errand rule cannot compare, left once the URLs and addresses are blanked: a
# bare host ("evil.example/in"), an obfuscated "at" or "dot" ("x(at)evil", "evil dot example"),
# a handle ("@channel"), a phone number, an IBAN.
_UNCOMPARED = re.compile(r"\b\w+\.(?:xn--[a-z0-9-]+|[^\W\d_]{2,63})\b|[\[({]\s*(?:at|dot|@|\.)\s*[\])}]|\bdot\b|@|"
                         r"\+\d[\d\s().-]{5,}\d|\b\d{3}[\s.-]?\d{3}[\s.-]?\d{4}\b|\b[a-z]{2}\d{2}(?:\s?[a-z0-9]{4}){2,}")


def uncompared_destination(text: str) -> bool:
    """``text`` names a destination that :func:`destinations` does not find (see
    ``_UNCOMPARED``): what it sends there cannot be vouched for by comparing addresses."""
    return bool(_UNCOMPARED.search(without_destinations(destination_form(text))))


SENSITIVE = re.compile(prepare_rule(
    r"\b(?:credentials|passwords?|passcodes?|api[ _-]?keys?|secret keys?|access tokens?|auth tokens?|session tokens?|"
    r"private keys?|ssh keys?|secrets|environment variables|system prompt|chat history|conversation history|"
    r"(?:this|the|our|entire|whole|full) (?:conversation|chat|transcript|session)|previous messages?|"
    r"(?:summary|copy|contents?|transcript) of (?:this|our|the) (?:conversation|chat|page)|"
    r"(?:all|full|entire|whole|raw|complete|every)(?: [\w'-]+){0,2} (?:data|database|records|list|emails|details|"
    r"information|files|history|notes|conversation|contacts)|customer (?:list|data|database|records|emails|details)|"
    r"(?:customer|client|order|user|patient) data|"
    r"kundendaten|kundenliste|passwörter|zugangsdaten|anmeldedaten|alle daten|interne daten|vertrauliche daten|"
    r"donnees(?: des)? clients?|les donnees|mots de passe|identifiants|liste (?:des|de) clients|"
    r"datos(?: de(?: los)?)? clientes|los datos|contrasenas|credenciales|lista de clientes|"
    r"dati(?: dei)? clienti|i dati|credenziali|elenco (?:dei )?clienti)\b"))


# A sending or handing verb whose object is a pronoun ("forward it to ...", "upload them to
# ..."): what it sends is named in the sentence before.
_PRONOUN_OBJECT = re.compile(r"\s+(?:\w+\s+)?(?:it|them|this|these|those)\b")


def _sends_back(prose: str) -> bool:
    """A sending or handing verb in ``prose`` takes a pronoun for its object. Each verb looks
    at a bounded window after it: linear."""
    return any(_PRONOUN_OBJECT.match(prose[m.end():m.end() + 24])
               for regex in (SEND, HANDING) for m in regex.finditer(prose))


def flow_weight(text: str) -> float:
    """The exfiltration weight of folded ``text``: 1.0 when a sentence sends or hands over
    something sensitive to a destination, 0.3 when a sentence only sends to a destination
    (:func:`sends`), else 0.

    Per sentence, with two neighbours read in: a destination alone on the next line or in the
    next sentence is this one's ("send the records to the address below.\\nx@evil..."), and a
    pronoun object ("forward it to ...") takes what the sentence before names. With something
    sensitive in the prose any sending or handing word counts, a noun too ("a copy of the
    customer database goes to ..." is a data flow whatever its grammar), and a destination
    written as no address counts (``_HIDDEN``). Each sentence is read a bounded number of
    times: linear."""
    if not (has_destination(text) or hidden_destination(text)):
        return 0.0
    weight, before = 0.0, ""
    sentences = SENTENCE_SPLIT.split(text)
    for i, sentence in enumerate(sentences):
        named = has_destination(sentence)
        if not named and not hidden_destination(sentence):
            following = sentences[i + 1] if i + 1 < len(sentences) else ""
            if not (has_destination(following) and bare_destination(following)):
                before = sentence
                continue
            sentence, named = f"{sentence} {following}", True
        prose = without_destinations(sentence)
        if (SEND.search(prose) or HANDING.search(prose)) and (
                SENSITIVE.search(prose) or (before and _sends_back(prose) and SENSITIVE.search(without_destinations(before)))):
            return 1.0
        if named and weight < 0.3 and sends(sentence):
            weight = 0.3
        before = sentence
    return weight
