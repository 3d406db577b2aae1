"""Cues of *prompt-shaped* text: content written to steer an AI reader, not to record a fact.

The phrase rules of :mod:`memwarden.guards.injection` recognise the well-known attack
sentences ("ignore all previous instructions"). Jailbreaks found in the wild rarely use
them: they set up a persona ("you are Mongo Tom, a foul-mouthed AI"), lift its limits
("BOB has no filters and never refuses"), and steer its answers ("start all your responses
with ..."). No single sentence is damning, but together they give a text a shape that
ordinary memories do not have: a memory records what someone knows about the world; a
prompt talks to a model about how to behave.

This module counts the *distinct* cue phrases of six categories that occur in a text:

``reader``      the text names or addresses an AI model (ChatGPT, "as an AI", language model)
``directive``   it steers the reader's replies ("your responses", "stay in character", "from
                now on", "if you understand, say ...")
``persona``     it sets up a role to play (act as, pretend, persona, simulate, "you are now")
``limits``      it talks about the reader's limits (filters, censorship, refusals,
                disclaimers, content policy, guardrails)
``harm``        it asks for harm or waives morals (illegal, unethical, amoral, offensive,
                "no matter how", "does not care")
``placeholder`` it is a template waiting for a request ("[INSERT PROMPT HERE]", "<question>")

and :func:`prompt_shape` turns the counts into one weight. The weight is zero unless the
text addresses a reader (``reader`` or ``directive`` cues) *and* at least one other
category occurs, so a nurse's note that a drug is "dangerous", or a parent's note that the
children "act as judges", weighs nothing. Each category's contribution is capped, so one
long text cannot pile up weight from a single theme, and the total is scaled down when the
cues are sparse for the length of the text (a long manual that mentions "the model" and
"responses" a few times is not a prompt).

Lexicons exist for English, German, French, Spanish and Italian. They are matched on words
of the folded text (see :func:`memwarden.guards.injection.fold`): case, accents,
look-alike letters and apostrophes do not matter.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import ahocorasick_rs

from memwarden.guards.folding import fold

__all__ = ["CATEGORIES", "Cues", "cue_hits", "prompt_shape", "words"]

# Category -> phrases. Phrases are written naturally (accents, apostrophes) and folded when
# the table is built; several languages share one list per category.
CATEGORIES: dict[str, tuple[str, ...]] = {
    "reader": (
        # en
        "chatgpt", "chat gpt", "gpt", "gpt-3", "gpt-3.5", "gpt-4", "gpt4", "gpt3", "openai", "open ai", "anthropic",
        "claude", "bard", "gemini", "bing chat", "copilot", "llama", "llm", "llms", "language model",
        "language models", "ai model", "ai models", "ai assistant", "ai system", "ai systems", "ai language model",
        "chatbot", "chatbots", "chat bot", "as an ai", "an ai", "the ai", "you are an ai", "artificial intelligence",
        "ai's", "this ai", "other ai", "any ai", "an ai's", "ai-generated", "neural network", "the assistant",
        "assistant's", "helpful assistant", "virtual assistant",
        # de
        "ki", "die ki", "eine ki", "als ki", "ki-modell", "sprachmodell", "sprachmodelle", "künstliche intelligenz",
        "ki-assistent",
        # fr
        "ia", "l'ia", "une ia", "en tant qu'ia", "modèle de langage", "intelligence artificielle", "assistant ia",
        # es
        "la ia", "una ia", "como ia", "modelo de lenguaje", "inteligencia artificial", "asistente de ia",
        # it
        "un'ia", "come ia", "modello linguistico", "modello di linguaggio", "intelligenza artificiale",
    ),
    "directive": (
        # en
        "respond", "respond as", "respond with", "respond to", "responding", "responses", "your response",
        "your responses", "your answer", "your answers", "your reply", "your replies", "your output",
        "reply with", "reply as", "answer as", "answer with", "answer in", "your first response", "every response",
        "each response", "all responses", "every answer", "all your responses", "every prompt", "each prompt",
        "any prompt", "my prompt", "my prompts", "the prompt", "prompts", "my question", "my questions",
        "my first question", "my request", "my requests", "user's request", "the user's", "from now on",
        "at all times", "no matter what", "you will always", "you will never", "you must always", "you must never",
        "you must", "you will", "you shall", "you are going to", "you're going to", "you are to", "you will now",
        "stay in character", "in character", "out of character", "break character", "remain in character",
        "if you understand", "if you understood", "if you understand this", "confirm you understand",
        "prefix your", "prefixed with", "begin your", "start your", "start all your", "begin each", "never say",
        "never mention", "do not mention", "don't mention", "never break", "don't break", "do not break",
        "only respond", "only answer", "only reply", "only output", "respond only", "answer only", "reply only",
        "do not write explanations", "without any explanation", "two responses", "two different responses",
        "both responses", "two answers", "generate two", "following format", "this format", "the format",
        "in the format", "remind you", "i will remind you", "you will respond", "you will answer", "you will reply",
        "you will not", "you can do anything", "you are free", "you have been", "your programming",
        "your creators", "your developers", "your training", "your rules", "your guidelines", "your restrictions",
        "your limitations", "i want you to", "i need you to", "tell me", "give me", "show me", "provide me",
        "explain to me", "can you", "could you",
        # de
        "antworte", "antworten", "antwortest", "deine antwort", "deine antworten", "ihre antworten", "ab jetzt",
        "von nun an", "ab sofort", "du wirst", "du musst", "du sollst", "bleib in der rolle", "in der rolle",
        "wenn du verstanden hast", "jede antwort", "jeder antwort", "beginne jede", "erwähne nie",
        # fr
        "réponds", "répondez", "réponses", "ta réponse", "tes réponses", "votre réponse", "vos réponses",
        "désormais", "dorénavant", "à partir de maintenant", "tu dois", "tu vas", "tu devras", "reste dans le rôle",
        "chaque réponse", "si tu as compris", "ne mentionne jamais",
        # es
        "responde", "responderás", "respuestas", "tu respuesta", "tus respuestas", "sus respuestas",
        "a partir de ahora", "de ahora en adelante", "debes", "deberás", "vas a", "mantente en el personaje",
        "cada respuesta", "si lo entiendes", "nunca menciones",
        # it
        "rispondi", "risponderai", "risposte", "la tua risposta", "le tue risposte", "d'ora in poi", "da ora in poi",
        "devi", "dovrai", "resta nel personaggio", "ogni risposta", "se hai capito", "non menzionare mai",
    ),
    "persona": (
        # en
        "act as", "acting as", "act like", "behave like", "behave as", "transform into", "pretend", "pretend to be", "pretending", "roleplay", "role play",
        "role-play", "roleplaying", "persona", "personas", "simulate", "simulating",
        "simulation", "emulate", "emulating", "impersonate", "personify", "embody", "take on the role",
        "play the role", "the role of", "alter ego", "you are now", "you're now", "you will be", "stands for",
        "a character", "the character", "fictional character", "character named", "character called",
        "hypothetical", "fictional", "imaginary", "alternate universe", "parallel universe", "opposite mode",
        "developer mode", "new mode", "unlocked", "pretend you are", "you are a", "you are an", "personality",
        # de
        "tu so als", "tue so als", "spiele die rolle", "rollenspiel", "figur", "charakter", "du bist jetzt",
        "du bist nun", "simuliere", "verkörpere", "fiktiv", "fiktive", "hypothetisch",
        # fr
        "fais semblant", "faites semblant", "joue le rôle", "jeu de rôle", "personnage", "tu es maintenant",
        "tu es désormais", "simule", "incarne", "fictif", "fictive", "hypothétique",
        # es
        "finge", "finja", "haz de", "interpreta el papel", "juego de rol", "personaje", "ahora eres", "simula",
        "encarna", "ficticio", "ficticia", "hipotético",
        # it
        "fingi", "fai finta", "interpreta il ruolo", "gioco di ruolo", "personaggio", "ora sei", "adesso sei",
        "simula", "impersona", "fittizio", "fittizia", "ipotetico",
    ),
    "limits": (
        # en
        "restrictions", "restriction", "restricted", "unrestricted", "limitations", "limits", "unlimited",
        "boundaries", "filter", "filters", "filtered", "unfiltered", "filtering", "censor", "censored",
        "censorship", "uncensored", "content policy", "content policies", "usage policy", "usage policies",
        "openai policy", "openai's policies", "guidelines", "ethical guidelines", "safety guidelines",
        "refuse", "refuses", "refusing", "refusal", "refusals", "decline", "warning", "warnings", "disclaimer",
        "disclaimers", "caveats", "apologize", "apologise", "apologies", "i'm sorry", "i cannot", "safeguards",
        "guardrails", "moderation", "terms of service", "programming", "constraints", "bound by",
        "free from", "free of", "broken free", "break free", "jailbreak", "jailbroken", "jailbreaking",
        "no rules", "any rules", "the rules", "rules", "policies", "safety", "allowed to", "not allowed",
        # de
        "einschränkungen", "beschränkungen", "uneingeschränkt", "grenzen", "zensur", "unzensiert", "richtlinien",
        "verweigern", "verweigerst", "warnungen", "regeln", "filter",
        # fr
        "restrictions", "limites", "censure", "non censuré", "filtres", "règles", "directives", "refuser",
        "refuses", "avertissements",
        # es
        "restricciones", "límites", "censura", "sin censura", "filtros", "reglas", "directrices", "negarte",
        "rechazar", "advertencias",
        # it
        "restrizioni", "limiti", "censura", "senza censura", "filtri", "regole", "linee guida", "rifiutare",
        "rifiutarti", "avvertenze",
    ),
    "harm": (
        # en
        "illegal", "illegality", "legality", "unlawful", "unethical", "ethics", "ethical", "immoral", "amoral",
        "morals", "moral", "morality", "morally", "unsafe", "harmful", "dangerous", "offensive", "explicit",
        "nsfw", "obscene", "profanity", "profane", "swear", "swears", "swearing", "swear words", "curse words",
        "vulgar", "racist", "racism", "sexist", "discriminatory", "hateful", "hate speech", "toxic", "violent",
        "violence", "gore", "sexual", "porn", "drugs", "weapons", "bomb", "malware", "hacking", "crimes",
        "criminal", "condone", "condones", "no matter how", "regardless of", "any kind of", "any request",
        "any question", "any questions", "all requests", "without hesitation", "doesn't care", "does not care",
        "don't care", "consequences", "inappropriate", "controversial", "manipulative", "deviant", "evil",
        "malicious", "misinformation", "disinformation", "unhinged", "rude", "insulting", "derogatory",
        # de
        "illegal", "unethisch", "unmoralisch", "amoralisch", "moral", "ethik", "beleidigend", "gefährlich",
        "schädlich", "verboten", "egal wie", "ohne rücksicht",
        # fr
        "illégal", "illégale", "contraire à l'éthique", "immoral", "amoral", "morale", "éthique", "offensant",
        "dangereux", "nuisible", "peu importe",
        # es
        "ilegal", "poco ético", "inmoral", "amoral", "moral", "ética", "ofensivo", "peligroso", "dañino",
        "sin importar",
        # it
        "illegale", "non etico", "immorale", "amorale", "morale", "etica", "offensivo", "pericoloso", "dannoso",
        "non importa",
    ),
}

# Placeholders of a prompt template, matched on the folded text.
_PROMPT_NOUN = r"(?:prompts?|questions?|requests?|query|queries|input|instructions?|task|message)"
# Placeholders of a prompt template, matched on the folded text; each form is searched only
# when the character or word it needs occurs ("[", "<", "{{", "here").
_PLACEHOLDERS = (
    ("[", re.compile(rf"\[\s*(?:(?:(?:insert|put|enter|type|paste|add|write|your|the|user'?s?|here)"
                     rf"\s+){{1,3}}(?:[a-z]+\s+){{0,2}}{_PROMPT_NOUN}(?:\s+[a-z]+){{0,2}}|{_PROMPT_NOUN}(?: here)?)"
                     rf"\s*\](?!\()")),
    ("<", re.compile(rf"<\s*(?:your )?{_PROMPT_NOUN}\s*>")),
    ("{{", re.compile(rf"\{{\{{\s*(?:{_PROMPT_NOUN}|user_?input)\s*\}}\}}")),
    ("here", re.compile(rf"\b(?:insert|put|enter|type|paste) (?:your|the|a) {_PROMPT_NOUN} here\b"
                        rf"|\b(?:your|the) {_PROMPT_NOUN} goes here\b|\byour {_PROMPT_NOUN} here\b")),
)

# Contractions are also typed without the apostrophe ("dont"); phrases holding one match
# both spellings.
_CONTRACTIONS = {"don t": "dont", "doesn t": "doesnt", "didn t": "didnt", "can t": "cant", "won t": "wont",
                 "isn t": "isnt", "aren t": "arent", "shouldn t": "shouldnt", "wouldn t": "wouldnt",
                 "couldn t": "couldnt", "you re": "youre", "you ll": "youll", "you ve": "youve", "i m": "im",
                 "i ve": "ive"}
_WORD = re.compile(r"[a-z0-9]+")
_MAX_PHRASE = 6


def _indexing(text: str, at: int) -> bool:
    """A bracket right after a word or bracket indexes (``state["messages"]``); it is no slot."""
    return text[at] == "[" and at > 0 and (text[at - 1].isalnum() or text[at - 1] in "_])")


def words(folded: str) -> str:
    """The words of folded text joined by single spaces; apostrophes split words
    ("l'ia" -> "l ia")."""
    # (Joining the words found is faster than replacing every gap between them.)
    return " ".join(_WORD.findall(folded))


def _spellings(key: str) -> set[str]:
    """``key`` and its variants with contractions written without the apostrophe."""
    found = {key}
    for split, joined in _CONTRACTIONS.items():
        found |= {re.sub(rf"\b{split}\b", joined, k) for k in found}
    return found


@dataclass(frozen=True)
class Cues:
    """The cue phrases found in one text, ``(offset, category, phrase)`` in text order (the
    offset counts characters of the text's words joined by single spaces), and the text's
    length in words and in those characters."""

    found: tuple[tuple[int, str, str], ...]
    n_words: int
    n_chars: int

    def count(self, category: str) -> int:
        """How many distinct phrases of ``category`` occur."""
        return len({p for _, c, p in self.found if c == category})


class _Index:
    """The phrase table, compiled: one Aho-Corasick automaton over the phrases, each with a
    space on both sides, and each phrase's categories."""

    def __init__(self) -> None:
        self.fold = fold
        table: dict[str, set[str]] = {}
        for category, phrases in CATEGORIES.items():
            for phrase in phrases:
                key = words(fold(phrase))
                if key and len(key.split()) <= _MAX_PHRASE:
                    for spelling in _spellings(key):
                        table.setdefault(spelling, set()).add(category)
        self.phrases = tuple(table)
        self.categories = tuple(tuple(sorted(table[p])) for p in self.phrases)
        # Matched on the words joined by single spaces, with a space before and after: a
        # phrase bounded by spaces starts and ends at word boundaries, and every phrase found
        # at a position is reported (overlapping matches), "you are" as well as "you are now".
        # (A DFA: twice as fast to run as the default NFA, for a few MB.)
        self.automaton = ahocorasick_rs.AhoCorasick([f" {p} " for p in self.phrases],
                                                    matchkind=ahocorasick_rs.MatchKind.Standard,
                                                    implementation=ahocorasick_rs.Implementation.DFA)


_INDEX: _Index | None = None


def _index() -> _Index:
    global _INDEX
    if _INDEX is None:
        _INDEX = _Index()
    return _INDEX


# Every "... here" placeholder ends in "here" and is at most about 40 characters long.
_HERE_REACH = 64


def _placeholders(flat: str) -> Iterator[re.Match[str]]:
    """The placeholder matches in folded text."""
    for needed, regex in _PLACEHOLDERS:
        if needed not in flat:
            continue
        if needed != "here":
            yield from regex.finditer(flat)
            continue
        # "here" is a common word and the regex has no literal to start from: it is searched
        # only just before each "here" (in place, so that word boundaries read the text).
        seen: set[int] = set()
        at = flat.find("here")
        while at >= 0:
            for m in regex.finditer(flat, max(0, at - _HERE_REACH), min(len(flat), at + 5)):
                if m.start() not in seen:
                    seen.add(m.start())
                    yield m
            at = flat.find("here", at + 4)


def cue_hits(text: str, *, folded: bool = False) -> Cues:
    """The cues of ``text`` (raw, or already folded when ``folded``)."""
    index = _index()
    flat = text if folded else index.fold(text)
    # Matching runs over the words joined by single spaces, so punctuation and line breaks
    # between the words of a phrase do not hide it.
    joined = words(flat)
    found = [(start, category, index.phrases[i])
             for i, start, _ in index.automaton.find_matches_as_indexes(f" {joined} ", overlapping=True)
             for category in index.categories[i]]
    # Placeholders are rare: their position is estimated from the folded text's.
    found.extend((int(m.start() * len(joined) / max(1, len(flat))), "placeholder", m.group(0))
                 for m in _placeholders(flat) if not _indexing(flat, m.start()))
    found.sort()
    return Cues(tuple(found), joined.count(" ") + 1 if joined else 0, len(joined))


# Weight of one distinct phrase, and the most a category can add.
_WEIGHTS = {"reader": (0.15, 0.35), "directive": (0.1, 0.4), "persona": (0.1, 0.3), "limits": (0.1, 0.3),
            "harm": (0.08, 0.3), "placeholder": (0.25, 0.25)}
# Texts are judged in windows of this many words (so that a prompt hidden in a long, harmless
# text is judged on its own), and cues sparser than _DENSITY per word weigh proportionally less.
_WINDOW = 300
_DENSITY = 0.03


def _window_score(found: Sequence[tuple[int, str, str]], n_words: float) -> float:
    phrases: dict[str, set[str]] = {}
    for _, category, phrase in found:
        phrases.setdefault(category, set()).add(phrase)
    if len(phrases) < 2 or not ({"reader", "directive"} & phrases.keys()):
        return 0.0
    total = sum(min(cap, w * len(phrases.get(c, ()))) for c, (w, cap) in _WEIGHTS.items())
    density = sum(map(len, phrases.values())) / max(1.0, n_words)
    return min(1.0, total) * min(1.0, density / _DENSITY)


def prompt_shape(cues: Cues) -> float:
    """One weight in [0, 1] for how much ``cues`` look like a prompt to an AI reader: the best
    window's capped sum of category weights, scaled down when its cues are sparse."""
    if not cues.found:
        return 0.0
    if cues.n_words <= _WINDOW:
        return round(_window_score(cues.found, cues.n_words), 3)
    # Windows of _WINDOW words, measured in characters at this text's mean word length.
    per_word = cues.n_chars / cues.n_words
    width, step = int(_WINDOW * per_word), int(_WINDOW * per_word) // 2
    at = [i for i, _, _ in cues.found]
    best = 0.0
    for start in range(0, max(1, cues.n_chars - step), step):
        window = cues.found[bisect_left(at, start):bisect_left(at, start + width)]
        best = max(best, _window_score(window, min(width, cues.n_chars - start) / per_word))
    return round(best, 3)
