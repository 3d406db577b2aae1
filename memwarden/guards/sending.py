"""The data-flow reading of a sentence: a sending verb, a destination, something sensitive.

The injection detector (:mod:`memwarden.guards.injection`) judges exfiltration per sentence
with these: a sending verb in the sentence's prose read as a verb (not a word of a URL or an
address, not a noun: "an email from", "the blog post"), a destination (an e-mail address, a
URL, an "external address" phrase) and something sensitive (credentials, the conversation,
customer data). Every scan here looks at each character a bounded number of times.
"""

from __future__ import annotations

import re

from memwarden.guards.folding import fold, prepare_rule

__all__ = ["SEND", "SENSITIVE", "destinations", "has_destination", "sends", "without_destinations"]

# Exfiltration is judged per sentence: a sending verb, a destination and something sensitive.
SEND = re.compile(prepare_rule(
    r"\b(?:send|forward|e-?mail|mail|post|upload|transmit|submit|exfiltrate|copy|cc|bcc|share|leak|sync|push|report|"
    r"deliver|dispatch|export|sende|senden|schicke|schicken|leite|leiten|übermittle|übermitteln|maile|exportiere|"
    r"envoie|envoyez|envoyer|transmets|transmettez|transfere|transferez|partage|partagez|envia|enviar|envie|reenvia|"
    r"manda|mande|comparte|invia|inviare|inoltra|inoltrare|manda|condividi|trasmetti)\b"))
_EMAIL_AT = re.compile(r"@[\w-]+(?:\.[\w-]+)+")
_EXTERNAL = re.compile(prepare_rule(
    r"(?:external|outside|third[- ]party|remote|personal|private) (?:address|server|endpoint|e-?mail|url|webhook|site|"
    r"party|inbox|account)\b|externally\b|off-?site\b|externe(?:n)? (?:adresse|e-?mail|server)\b|adresse externe\b|"
    r"direccion (?:externa|de correo externa)\b|indirizzo esterno\b|webhook"))


def has_destination(text: str) -> bool:
    """An e-mail address, a URL or an 'external address' phrase occurs in ``text``."""
    return bool(("@" in text and _EMAIL_AT.search(text)) or "://" in text or "www." in text
                or _EXTERNAL.search(text))


# A URL (up to its first space or bracket) and an e-mail address's local part (at most 64
# characters, the RFC 5321 bound, walked back from the "@"): the characters of a destination.
_URL_SPAN = re.compile(r"(?:[a-z][a-z0-9+.-]{0,15}://|www\.)[^\s<>()\[\]\"']*")
_LOCAL_PART = frozenset("abcdefghijklmnopqrstuvwxyz0123456789._%+-")
# The English sending verbs that are also nouns ("an email from", "the blog post", "a report
# on"): a noun when a determiner or a modifier comes before it or a preposition or a colon
# after it, or a key's "=" or ":" (``email=``, ``"email":``). A noun names a message or a field;
# it asks nobody to send anything.
_NOUN_VERBS = frozenset({"email", "e-mail", "mail", "post", "report", "copy", "share", "push", "sync", "export",
                         "forward", "submit"})
_NOUN_BEFORE = frozenset({"the", "a", "an", "this", "that", "these", "those", "my", "your", "his", "her", "our",
                          "their", "its", "latest", "last", "recent", "new", "next", "first", "blog", "every", "each",
                          "weekly", "daily", "monthly", "annual", "status", "bug", "security", "same"})
_NOUN_AFTER = re.compile(r"(?:e?s)?[\"']?\s*(?:[:=]|(?:from|of|on|about|by|address|addresses|list|thread)\b)")


def destinations(text: str) -> set[str]:
    """The e-mail addresses and URLs of ``text`` (folded), as :func:`without_destinations`
    finds them; an address's local part at most 64 characters."""
    folded = fold(text)
    found = {m.group(0).rstrip(".,;:") for m in _URL_SPAN.finditer(folded)} if "//" in folded or "www." in folded else set()
    for m in _EMAIL_AT.finditer(folded) if "@" in folded else ():
        start = m.start()
        while start > m.start() - 64 and start > 0 and folded[start - 1] in _LOCAL_PART:
            start -= 1
        found.add(folded[start:m.end()].strip("."))
    return found


def without_destinations(sentence: str) -> str:
    """``sentence`` with its URLs and e-mail addresses blanked: a sending verb must be in the
    prose, not a word of the destination ("mail.python.org", ".../blog/post/...",
    "report@example.com"). Each character is looked at a bounded number of times: linear."""
    text = _URL_SPAN.sub(" ", sentence) if ("//" in sentence or "www." in sentence) else sentence
    if "@" not in text:
        return text
    out, end = [], 0
    for m in _EMAIL_AT.finditer(text):
        start = m.start()
        while start > max(end, m.start() - 64) and text[start - 1] in _LOCAL_PART:
            start -= 1
        out += [text[end:start], " "]
        end = m.end()
    return "".join([*out, text[end:]])


def sends(sentence: str) -> bool:
    """A sending verb occurs in the prose of ``sentence`` (folded) read as a verb."""
    prose = without_destinations(sentence)
    for m in SEND.finditer(prose):
        word = m.group(0)
        if word not in _NOUN_VERBS:
            return True
        before = prose[max(0, m.start() - 16):m.start()].split()
        if not ((before and before[-1].lstrip("[(<*_\"'") in _NOUN_BEFORE) or _NOUN_AFTER.match(prose, m.end())):
            return True
    return False


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
