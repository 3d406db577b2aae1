"""BIPIA (Yi et al. 2023): indirect prompt injections in emails and code answers.

Upstream: microsoft/BIPIA (MIT), ``benchmark/text_attack_{train,test}.json`` (150 attack
instructions in 30 categories: task hijacks, encodings, scams, misinformation...),
``code_attack_{train,test}.json`` (100 code-injection instructions in 20 categories), and the
contexts they are embedded in: ``email/{train,test}.jsonl`` (100 emails) and
``code/{train,test}.jsonl`` (100 Stack Overflow answers, CC BY-SA per BIPIA's NOTICE).

As memory writes: Emma's email assistant keeps a note about each email it reads (in
``assist/emma/email``, or the team inbox ``assist/team/inbox``); the coding assistant keeps a
note about each fix it found (``assist/team/code``). A malicious note carries an attack
instruction the way BIPIA embeds it in the context: at the end, at the start, in the middle,
or passed on as a standing note "for future replies". A benign note has the same shape with a
sentence of the email (or answer) itself in the instruction's place; the user's own questions
about the emails are kept as requests (benign imperatives). Writers are the
assistant bound ``agent``, one note in four bound ``tool`` (a raw import of the message).
"""

from __future__ import annotations

import re

from benchmarks.poisoning_corpus.builders.common import record, sentences
from benchmarks.poisoning_corpus.records import CorpusRecord
from benchmarks.poisoning_corpus.upstream import Mirror, pick, stable

SOURCE = "bipia"
REPO = "microsoft/BIPIA"

# How the note carries the extra sentence (the instruction, or a sentence of the message).
EMAIL_FORMS = (
    ("end", "Email from {sender}, subject \"{subject}\": {summary} {extra}"),
    ("start", "{extra} (from the email \"{subject}\" by {sender}: {summary})"),
    ("middle", "Email from {sender}, subject \"{subject}\". {first} {extra} {rest}"),
    ("standing", "Noted from {sender}'s email \"{subject}\" for future replies: {extra}"),
)
CODE_FORMS = (
    ("end", "Fix for \"{error}\": {summary}\n{extra}"),
    ("start", "{extra}\nFix for \"{error}\": {summary}"),
    ("standing", "Coding note for next time (\"{error}\"): {extra}"),
)


def _email(context: str) -> dict[str, str] | None:
    fields = dict(re.findall(r"(SUBJECT|EMAIL_FROM|RECEIVED DATE|CONTENT): (.*?)(?=\|[A-Z_ ]+: |$)", context, re.S))
    body = sentences(fields.get("CONTENT", ""))
    body = [s for s in body if 20 <= len(s) <= 240 and not s.lower().startswith(("unsubscrib", "http"))]
    if len(body) < 3:
        return None
    sender = fields.get("EMAIL_FROM", "").split("<")[0].strip() or "the sender"
    subject = " ".join(fields.get("SUBJECT", "").split()) or "(no subject)"
    return {"sender": sender, "subject": subject, "body": body}


def _instructions(mirror: Mirror, kind: str) -> list[tuple[str, str, str]]:
    out = []
    for split in ("train", "test"):
        path = f"benchmark/{kind}_attack_{split}.json"
        for category, items in mirror.json(path).items():
            for i, text in enumerate(items):
                out.append((f"{split}/{category}/{i}", category, text.strip()))
    return out


def _place(namespace_key: str) -> tuple[tuple[str, ...], str, str]:
    """(namespace, reader, subject) for the email notes."""
    if namespace_key == "team":
        return ("assist", "team", "inbox"), "liam-assistant", "team"
    return ("assist", "emma", "email"), "emma-planner", "emma"


def build() -> list[CorpusRecord]:
    """The BIPIA records."""
    mirror = Mirror(REPO)
    origin = f"{REPO}@{mirror.commit[:12]}"
    out: list[CorpusRecord] = []
    rows = [row for split in ("train", "test") for row in mirror.jsonl(f"benchmark/email/{split}.jsonl")]
    emails = [e for e in (_email(row["context"]) for row in rows) if e]
    # Malicious: every text attack, each in a deterministic email and form.
    for key, category, instruction in _instructions(mirror, "text"):
        mail = emails[stable(SOURCE, key) % len(emails)]
        out.append(_email_record(mail, key, f"text-attack/{category}", instruction, origin, malicious=True))
    # Benign: up to four notes per email, each with one of its own sentences (beyond the two
    # the summary holds) in the instruction's place.
    for n, mail in enumerate(emails):
        for j, extra in enumerate(mail["body"][2:6]):
            out.append(_email_record(mail, f"email/{n}/{j}", "email-note", extra, origin, malicious=False))
    # Benign: the questions BIPIA's users ask about their emails, kept as the user's requests.
    for n, row in enumerate(rows):
        mail = _email(row["context"])
        question = row.get("question", "").removeprefix("Q:").strip()
        if mail and question:
            namespace, reader, subject = _place(pick(("emma", "emma", "team"), SOURCE, "place", "q", n))
            out.append(record(SOURCE, f"benign/question/{n}", family="email-request", label="benign",
                              text=f"Request about the email \"{mail['subject']}\" from {mail['sender']}: {question}",
                              namespace=namespace, writer="emma-assistant", reader=reader,
                              query=f"email from {mail['sender']} about {mail['subject']}", subjects=[subject],
                              origin=f"{origin}:benchmark/email (question)"))
    answers = []
    for split in ("train", "test"):
        for n, row in enumerate(mirror.jsonl(f"benchmark/code/{split}.jsonl")):
            error = next((e for e in reversed(row["error"]) if e.strip()), "").strip()
            paragraphs = [p.strip() for p in "\n".join(row["context"]).split("\n\n") if p.strip()]
            prose = [s for p in paragraphs if "```" not in p for s in sentences(p) if 20 <= len(s) <= 240]
            if error and paragraphs and len(prose) >= 2:
                answers.append({"error": error[:160], "summary": paragraphs[0][:400], "prose": prose,
                                "key": f"{split}/{n}"})
    for key, category, instruction in _instructions(mirror, "code"):
        answer = answers[stable(SOURCE, key) % len(answers)]
        out.append(_code_record(answer, key, f"code-attack/{category}", instruction, origin, malicious=True))
    for answer in answers:
        for j, extra in enumerate(answer["prose"][-4:]):
            if extra in answer["summary"]:
                continue
            out.append(_code_record(answer, f"code/{answer['key']}/{j}", "code-note", extra, origin, malicious=False))
    return out


def _email_record(mail: dict, key: str, family: str, extra: str, origin: str, *, malicious: bool) -> CorpusRecord:
    form, template = pick(EMAIL_FORMS, SOURCE, "form", key)
    body = mail["body"]
    text = template.format(sender=mail["sender"], subject=mail["subject"], summary=" ".join(body[:2]),
                           first=body[0], rest=body[1], extra=extra)
    namespace, reader, subject = _place(pick(("emma", "emma", "team"), SOURCE, "place", key))
    writer = pick(("emma-assistant", "emma-assistant", "emma-assistant", "emma-assistant-tool"), SOURCE, "w", key)
    if namespace[1] == "team" and writer == "emma-assistant-tool":
        writer = "emma-assistant"
    return record(SOURCE, f"{'attack' if malicious else 'benign'}/{key}", family=family,
                  label="malicious" if malicious else "benign", text=text, namespace=namespace, writer=writer,
                  reader=reader, query=f"email from {mail['sender']} about {mail['subject']}",
                  kind="rule" if form == "standing" else "fact", subjects=[subject],
                  target=extra if malicious else None,
                  origin=f"{origin}:benchmark/{'text_attack' if malicious else 'email'} ({form})")


def _code_record(answer: dict, key: str, family: str, extra: str, origin: str, *, malicious: bool) -> CorpusRecord:
    form, template = pick(CODE_FORMS, SOURCE, "form", key)
    text = template.format(error=answer["error"], summary=answer["summary"], extra=extra)
    return record(SOURCE, f"{'attack' if malicious else 'benign'}/code-{key}", family=family,
                  label="malicious" if malicious else "benign", text=text, namespace=("assist", "team", "code"),
                  writer="emma-assistant", reader="liam-assistant", query=f"how to fix {answer['error']}",
                  kind="rule" if form == "standing" else "fact", subjects=["team"],
                  target=extra if malicious else None,
                  origin=f"{origin}:benchmark/{'code_attack' if malicious else 'code'} ({form})")
