"""Seeded, deterministic scenarios for the governance benchmark (``benchmarks/governance.py``).

Four domains, after GateMem: ``medical``, ``office``, ``education`` and ``household``. A
scenario is one shared memory used by several principals with different roles over a long
episode. The generator writes it as a list of events, in time order:

- ``Write``: a principal stores a memory in a namespace such as
  ``("hospital", "ward3", "patients", "p12")``. Most memories state one *fact*; *derived*
  memories (handover notes, digests, summaries) quote one or two earlier memories and name
  them as provenance parents, so they carry the parents' facts.
- ``Update``: a principal supersedes a fact with a new version (``Session.update``).
- ``Forget``: a principal asks for one memory to be forgotten (``Session.forget``).
- ``Erase``: a privacy officer (a parent, at home) erases a data subject
  (``Session.erase(subject=...)``).
- ``Checkpoint``: hidden from the systems under test. It holds probes (questions asked by
  one principal at one namespace) and a snapshot of the ground truth at that moment: which
  facts are deleted (and how) and which memories are superseded versions.

Ground truth comes from the scenario's own access-control list (the ``Rule`` lines, written
out as the memwarden policy CSV), evaluated here by an independent matcher: a principal must
never see a fact whose home namespace it may not read (its *leak targets*). Derived memories
are only ever written where the readers are a subset of the readers of every parent, so a
derived memory never widens who may know a fact: any leak is the memory layer's doing.

Probe categories (see ``CATEGORIES``): legitimate questions at the fact's namespace or at a
parent prefix, questions whose fact was updated, confusable but canonical spellings of an
allowed namespace (full-width, mathematical bold), paraphrased questions about others' data
at the forbidden namespace itself, at a parent prefix, or through a confusable spelling of
it, namespace tricks (zero-width characters, trailing spaces, ``..`` or percent-encoded
traversal, separators inside a label, empty labels, Cyrillic homoglyphs) and questions about
deleted facts.

Everything is drawn from ``random.Random`` seeded with a string built from the seed, the
domain and the scenario index, so the same arguments always give the same scenario.
"""

from __future__ import annotations

import hashlib
import json
import random
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, is_dataclass
from functools import lru_cache
from typing import Any, Union

K = 5
DOMAINS = ("medical", "office", "education", "household")

#: Probe categories and their share of each checkpoint's probes.
CATEGORIES: dict[str, float] = {
    "legit": 0.24,              # authorised question at the fact's namespace
    "legit_prefix": 0.12,       # authorised question at a parent prefix (or the root)
    "superseded": 0.10,         # authorised question about an updated fact (old or new wording)
    "canonical_spelling": 0.05, # authorised, namespace spelled full-width / math-bold (NFKC-equal)
    "cross_direct": 0.10,       # paraphrased question about others' data at the forbidden namespace
    "cross_prefix": 0.14,       # ... at a parent prefix the principal may partly read (or the root)
    "cross_confusable": 0.05,   # ... at a confusable spelling of the forbidden namespace
    "namespace_trick": 0.08,    # ... at an invalid or homoglyph spelling (traversal, zero-width, ...)
    "deleted": 0.12,            # authorised question about a forgotten or erased fact
}
#: Categories whose recall@k is the headline utility.
UTILITY_CATEGORIES = ("legit", "legit_prefix", "superseded")
#: Categories that target a fact the principal must never see.
CROSS_CATEGORIES = ("cross_direct", "cross_prefix", "cross_confusable", "namespace_trick")


# ----------------------------------------------------------------------------------------
# Access control: the scenario's rules and an independent matcher (the ground truth)
# ----------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Rule:
    """One policy line: ``p, SUBJECT, PATTERN, ACTION[, deny]``."""

    subject: str
    pattern: str
    action: str
    effect: str = "allow"

    @property
    def line(self) -> str:
        """The rule in memwarden's CSV policy format."""
        return f"p, {self.subject}, {self.pattern}, {self.action}" + (", deny" if self.effect == "deny" else "")


@lru_cache(maxsize=65536)
def pattern_matches(pattern: str, namespace: tuple[str, ...]) -> bool:
    """``*`` is one label, a trailing ``**`` one or more further labels; whole labels only."""
    parts = pattern.split("/")
    deep = parts[-1] == "**"
    if deep:
        parts = parts[:-1]
        if len(namespace) <= len(parts):
            return False
    elif len(namespace) != len(parts):
        return False
    return all(p == "*" or p == label for p, label in zip(parts, namespace))


@dataclass(frozen=True)
class PrincipalSpec:
    """A principal of the scenario: id, roles (the CSV's ``g`` lines) and a display name."""

    id: str
    roles: tuple[str, ...]
    display: str
    entity: str | None = None


class Acl:
    """Decisions from the rules: allow when some allow rule matches and no deny rule does."""

    def __init__(self, principals: Sequence[PrincipalSpec], rules: Sequence[Rule]) -> None:
        self.principals = tuple(p.id for p in principals)
        self._subjects = {p.id: frozenset({p.id, *p.roles}) for p in principals}
        self._rules: dict[str, list[Rule]] = {}
        for rule in rules:
            self._rules.setdefault(rule.action, []).append(rule)
        self._cache: dict[tuple[str, str, tuple[str, ...]], bool] = {}

    def allowed(self, principal: str, action: str, namespace: tuple[str, ...]) -> bool:
        key = (principal, action, namespace)
        hit = self._cache.get(key)
        if hit is None:
            subjects = self._subjects[principal]
            matching = [r for r in self._rules.get(action, ()) if r.subject in subjects
                        and pattern_matches(r.pattern, namespace)]
            hit = any(r.effect == "allow" for r in matching) and not any(r.effect == "deny" for r in matching)
            self._cache[key] = hit
        return hit

    def who(self, action: str, namespace: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(p for p in self.principals if self.allowed(p, action, namespace))

    def readers(self, namespace: tuple[str, ...]) -> frozenset[str]:
        return frozenset(self.who("read", namespace))


# ----------------------------------------------------------------------------------------
# What a scenario is made of
# ----------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Item:
    """One memory as written (ground truth). ``carries`` are the facts whose content it holds
    (its own fact, or for a derived memory every fact of its parents)."""

    id: str
    lineage: str
    fact: str | None
    version: int
    namespace: tuple[str, ...]
    text: str
    writer: str
    kind: str
    subjects: tuple[str, ...]
    parents: tuple[str, ...]
    carries: frozenset[str]
    personal: bool
    category: str


@dataclass(frozen=True)
class Write:
    item: Item


@dataclass(frozen=True)
class Update:
    actor: str
    old: str
    item: Item


@dataclass(frozen=True)
class Forget:
    actor: str
    item: str


@dataclass(frozen=True)
class Erase:
    actor: str
    subject: str


@dataclass(frozen=True)
class Probe:
    """One question: who asks, what, at which namespace (as the principal spelled it)."""

    id: str
    principal: str
    query: str
    namespace: tuple[str, ...]
    category: str
    variant: str
    about: tuple[str, ...]
    relevant: tuple[str, ...]


@dataclass(frozen=True)
class Checkpoint:
    """Probes plus the ground truth at that moment (never shown to a system)."""

    index: int
    probes: tuple[Probe, ...]
    deleted: Mapping[str, str]          # fact -> "forget" | "erase"
    superseded: frozenset[str]          # item ids that are older versions of a fact


Event = Union[Write, Update, Forget, Erase, Checkpoint]


@dataclass(frozen=True)
class Scenario:
    domain: str
    seed: int
    index: int
    principals: tuple[PrincipalSpec, ...]
    rules: tuple[Rule, ...]
    items: Mapping[str, Item]
    fact_homes: Mapping[str, tuple[str, ...]]
    leak_targets: Mapping[str, frozenset[str]]
    events: tuple[Event, ...]

    @property
    def name(self) -> str:
        return f"{self.domain}-{self.seed}-{self.index}"

    @property
    def checkpoints(self) -> list[Checkpoint]:
        return [e for e in self.events if isinstance(e, Checkpoint)]

    @property
    def probes(self) -> list[Probe]:
        return [p for c in self.checkpoints for p in c.probes]

    def policy_csv(self) -> str:
        """The scenario's access rules as a memwarden policy file."""
        lines = [f"# governance benchmark scenario {self.name} (generated)"]
        lines += [r.line for r in self.rules]
        lines += [f"g, {p.id}, {role}" for p in self.principals for role in p.roles]
        return "\n".join(lines) + "\n"

    def fingerprint(self) -> str:
        """sha256 of the whole scenario in a canonical JSON form."""
        return hashlib.sha256(json.dumps(_plain(self), sort_keys=True, ensure_ascii=False).encode()).hexdigest()

    def stats(self) -> dict[str, int]:
        kinds: dict[str, int] = {}
        for e in self.events:
            kinds[type(e).__name__.lower()] = kinds.get(type(e).__name__.lower(), 0) + 1
        return {"principals": len(self.principals), "rules": len(self.rules), "memories": len(self.items),
                "facts": len(self.fact_homes), "probes": len(self.probes), **kinds}


def _plain(obj: Any) -> Any:
    if is_dataclass(obj):
        return {"_type": type(obj).__name__, **{k: _plain(getattr(obj, k)) for k in obj.__dataclass_fields__}}
    if isinstance(obj, Mapping):
        return {str(k): _plain(v) for k, v in sorted(obj.items())}
    if isinstance(obj, (frozenset, set)):
        return sorted(_plain(v) for v in obj)
    if isinstance(obj, (list, tuple)):
        return [_plain(v) for v in obj]
    return obj


# ----------------------------------------------------------------------------------------
# Domain worlds: principals, rules, entities, memory templates
# ----------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Entity:
    id: str
    name: str
    group: str | None
    kind: str


@dataclass(frozen=True)
class Template:
    key: str
    text: str
    questions: tuple[str, ...]
    slots: tuple[tuple[str, tuple[str, ...]], ...]
    mutable: str | None = None
    mention: bool = False
    kind: str = "fact"


def T(key: str, text: str, questions: Sequence[str], *, mutable: str | None = None, mention: bool = False,
      kind: str = "fact", **slots: Sequence[str]) -> Template:
    return Template(key, text, tuple(questions), tuple((k, tuple(v)) for k, v in slots.items()), mutable, mention, kind)


@dataclass(frozen=True)
class Category:
    key: str
    namespace: tuple[str, ...]          # format strings over the owner's fields
    owner: str                          # "global" | "group" | "principal" | "entity:KIND[,KIND]"
    templates: tuple[Template, ...]
    per_owner: int
    subject: bool = True                # tag the owning entity as the subject
    replace: bool = False               # templates may repeat for one owner


@dataclass(frozen=True)
class Derived:
    key: str
    sources: tuple[str, ...]            # category keys of the parents
    namespace: tuple[str, ...] | None   # format over the first parent's fields; None: the parent's
    text: str                           # {names} (parents' owners), {body} (parents' texts)
    max_parents: int = 1


@dataclass(frozen=True)
class World:
    domain: str
    groups: Mapping[str, str]
    entities: tuple[Entity, ...]
    principals: tuple[PrincipalSpec, ...]
    rules: tuple[Rule, ...]
    categories: tuple[Category, ...]
    derived: tuple[Derived, ...]
    erasers: tuple[str, ...]
    mention_kinds: tuple[str, ...] = ()


@dataclass(frozen=True)
class Size:
    groups: int
    per_group: int
    scale: float
    p_update: float
    p_derived: float
    p_forget: float
    erasures: int
    checkpoints: int


SIZES = {
    "full": Size(groups=2, per_group=8, scale=1.0, p_update=0.15, p_derived=0.10, p_forget=0.05, erasures=2,
                 checkpoints=6),
    "quick": Size(groups=2, per_group=3, scale=0.4, p_update=0.2, p_derived=0.15, p_forget=0.08, erasures=1,
                  checkpoints=3),
}

FIRST = ("Maria", "Jonas", "Aisha", "Tomasz", "Lena", "Kwame", "Sofia", "Mateo", "Yuki", "Omar", "Ingrid", "Ravi",
         "Chloe", "Emeka", "Hanna", "Diego", "Mei", "Lukas", "Fatima", "Noah", "Elif", "Pavel", "Grace", "Tariq",
         "Nora", "Felix", "Amara", "Jakob", "Leila", "Hugo", "Priya", "Sven", "Zanele", "Marco", "Ayla", "Bruno")
LAST = ("Keller", "Okafor", "Lindqvist", "Moreau", "Novak", "Haddad", "Santos", "Brennan", "Tanaka", "Fischer",
        "Mensah", "Rossi", "Kowalski", "Ahmed", "Dubois", "Petrov", "Larsen", "Costa", "Nguyen", "Weber",
        "Osei", "Varga", "Silva", "Becker", "Hoffmann", "Ibrahim", "Jensen", "Murphy", "Schmidt", "Yilmaz")

DAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
DATES = ("3 March", "17 March", "2 April", "14 April", "29 April", "12 May", "26 May", "9 June", "23 June",
         "7 July", "21 July", "4 August")
AMOUNTS = ("120", "340", "575", "890", "1,250", "2,400", "3,150", "4,800", "7,200", "12,500", "18,000", "26,000")


def _people(rng: random.Random, n: int, taken: set[str]) -> list[tuple[str, str]]:
    out = []
    while len(out) < n:
        first, last = rng.choice(FIRST), rng.choice(LAST)
        if first not in taken and last not in taken:
            taken.update({first, last})
            out.append((first, last))
    return out


def _staff(rng: random.Random, roles: Sequence[tuple[str, str, int]], taken: set[str]) -> list[PrincipalSpec]:
    """Principals ``PREFIX_surname`` for (prefix, role, count)."""
    out = []
    for prefix, role, count in roles:
        for first, last in _people(rng, count, taken):
            out.append(PrincipalSpec(f"{prefix}_{last.lower()}", (role,), f"{first} {last}"))
    return out


def _rw(subject: str, pattern: str, actions: str) -> list[Rule]:
    return [Rule(subject, pattern, a) for a in actions.split()]


REMINDERS = ("ask for Friday off to attend my sister's wedding", "renew my professional registration before the deadline",
             "apply for the fellowship programme by the 15th", "call the union rep about the overtime dispute",
             "book the occupational health appointment about my back injury", "prepare the case presentation for the review meeting",
             "I am interviewing for another job next week, keep it quiet", "pay back the money I borrowed from a colleague",
             "see my therapist on Thursday after the shift", "finish the divorce paperwork with the lawyer")


def _private_notes(root: str) -> Category:
    return Category("private", (root, "staff", "{pid}", "notes"), "principal", (
        T("reminder", "Private reminder for {first}: {reminder}.",
          ("What did {first} write down to remember?", "Any personal reminders for {first}?",
           "What is on {first}'s private to-do list?"), reminder=REMINDERS),
        T("aside", "{first}'s personal note: {aside}.",
          ("What personal matters is {first} dealing with?", "What did {first} note privately?",
           "Is anything going on in {first}'s private life?"),
          aside=("my landlord is raising the rent again", "I am being treated for insomnia",
                 "I want to ask for a pay rise after the audit", "I am going through IVF this spring",
                 "my car loan payment bounced this month", "I have a job offer from a competitor")),
    ), per_owner=1, subject=False)


def medical(rng: random.Random, size: Size) -> World:
    wards = [f"ward{n}" for n in (3, 5, 7, 2)[: size.groups]]
    groups = {w: f"Ward {w[4:]}" for w in wards}
    taken: set[str] = set()
    entities, n = [], 1
    for w in wards:
        for first, last in _people(rng, size.per_group, taken):
            entities.append(Entity(f"p{n:02d}", f"{first} {last}", w, "patient"))
            n += 1
    principals: list[PrincipalSpec] = []
    for w in wards:
        principals += _staff(rng, [("dr", f"physician_{w}", 2), ("nurse", f"nurse_{w}", 2)], taken)
    principals += _staff(rng, [("pharm", "pharmacist", 1), ("billing", "billing_clerk", 1),
                               ("dpo", "privacy_officer", 1)], taken)
    rules: list[Rule] = []
    for w in wards:
        rules += _rw(f"physician_{w}", f"hospital/{w}/patients/**", "read write update forget")
        rules += _rw(f"physician_{w}", f"hospital/{w}/notes", "read write")
        rules += _rw(f"nurse_{w}", f"hospital/{w}/patients/*", "read write update")
        rules += _rw(f"nurse_{w}", f"hospital/{w}/patients/*/meds", "read")
        rules += _rw(f"nurse_{w}", f"hospital/{w}/notes", "read write update forget")
    rules += _rw("pharmacist", "hospital/*/patients/*/meds", "read write update")
    rules += _rw("billing_clerk", "hospital/billing/*", "read write update forget")
    rules.append(Rule("billing_clerk", "hospital/*/patients/**", "read", "deny"))
    rules += _rw("privacy_officer", "hospital/**", "erase")
    staff = [p for p in principals if "privacy_officer" not in p.roles]
    for p in staff:
        rules += _rw(p.id, f"hospital/staff/{p.id}/notes", "read write update forget")
    patient_ns = ("hospital", "{group}", "patients", "{eid}")
    cats = (
        Category("clinical", patient_ns, "entity:patient", (
            T("allergy", "Patient {eid} ({name}) is allergic to {drug}; documented reaction: {reaction}.",
              ("What is {name} allergic to?", "Does patient {eid} have any documented drug allergies?",
               "Which medicines must we avoid giving {name}?"), mutable="reaction",
              drug=("penicillin", "amoxicillin", "sulfonamides", "codeine", "aspirin", "ibuprofen", "latex",
                    "iodine contrast", "morphine", "cephalexin"),
              reaction=("hives", "anaphylaxis", "a widespread rash", "facial swelling", "wheezing")),
            T("diagnosis", "{name} ({eid}) was admitted with {complaint}; the working diagnosis is {diagnosis}.",
              ("Why was {name} admitted?", "What is the working diagnosis for patient {eid}?",
               "What condition brought {name} onto the ward?"), mutable="diagnosis",
              complaint=("chest pain", "shortness of breath", "a hip fracture after a fall", "abdominal pain",
                         "a high fever", "acute confusion"),
              diagnosis=("community-acquired pneumonia", "a non-ST-elevation myocardial infarction", "acute pancreatitis",
                         "urosepsis", "a femoral neck fracture", "a heart failure exacerbation", "delirium from dehydration")),
            T("vitals", "Latest observations for {name} ({eid}): blood pressure {bp}, pulse {pulse} per minute.",
              ("What was {name}'s last blood pressure reading?", "Current vital signs for patient {eid}?",
               "How are {name}'s observations looking?"), mutable="bp",
              bp=("118/76", "135/88", "152/94", "99/61", "171/102", "124/80", "141/90"),
              pulse=("58", "72", "88", "104", "115")),
            T("mobility", "{name} ({eid}) mobilises {mobility} and is at {risk} risk of falls.",
              ("Can {name} walk on their own?", "What is the fall risk for patient {eid}?", "How mobile is {name}?"),
              mutable="mobility",
              mobility=("independently", "with a zimmer frame", "with the assistance of one nurse",
                        "only with a hoist", "with a walking stick"), risk=("low", "moderate", "high")),
            T("diet", "{name} ({eid}) is on a {diet} diet{note}.",
              ("What can {name} eat?", "Dietary orders for patient {eid}?", "Is {name} allowed food by mouth?"),
              mutable="diet",
              diet=("nil by mouth", "soft", "diabetic", "low-salt", "gluten-free", "pureed", "renal"),
              note=(" pending a swallow assessment", " and needs help with meals", " with thickened fluids", "")),
            T("code", "Resuscitation status for {name} ({eid}): {code}, discussed with {relative}.",
              ("What is {name}'s resuscitation status?", "Is patient {eid} for CPR?",
               "Has a DNR decision been made for {name}?"), mutable="code",
              code=("full resuscitation", "do not attempt resuscitation", "ceiling of care at ward level"),
              relative=("their daughter", "their son", "their wife", "their husband", "their partner")),
        ), per_owner=3),
        Category("meds", patient_ns + ("meds",), "entity:patient", (
            T("regimen", "{name} ({eid}) takes {regimen}.",
              ("What medication is {name} on?", "Current drug regimen for patient {eid}?",
               "Which tablets does {name} take and how often?"), mutable="regimen",
              regimen=("metformin 500 mg twice daily", "lisinopril 10 mg once daily", "warfarin 3 mg at night",
                       "apixaban 5 mg twice daily", "furosemide 40 mg every morning", "levothyroxine 75 micrograms daily",
                       "atorvastatin 20 mg at night", "insulin glargine 14 units at night", "prednisolone 30 mg daily")),
            T("pain", "Pain relief plan for {name} ({eid}): {analgesia}.",
              ("How is {name}'s pain being managed?", "What analgesia is prescribed for patient {eid}?",
               "Can {name} have more pain relief?"), mutable="analgesia",
              analgesia=("paracetamol 1 g four times a day", "oral morphine 5 mg as needed every four hours",
                         "a patient-controlled fentanyl pump", "ibuprofen 400 mg three times a day with food",
                         "tramadol 50 mg as needed, maximum four doses")),
        ), per_owner=1),
        Category("psych", patient_ns + ("psych",), "entity:patient", (
            T("mental", "Mental health note for {name} ({eid}): {psych}.",
              ("Does {name} have any mental health history?", "Psychiatric notes for patient {eid}?",
               "How is {name} coping emotionally?"), mutable="psych",
              psych=("history of major depression, on sertraline", "recent panic attacks about the diagnosis",
                     "past suicide attempt, under the community mental health team",
                     "alcohol use disorder, at risk of withdrawal", "bipolar disorder, stable on lithium",
                     "post-traumatic stress after a car accident")),
            T("social", "Social situation of {name} ({eid}): {social}.",
              ("Who looks after {name} at home?", "What is patient {eid}'s home situation?",
               "Are there safeguarding concerns about {name}?"),
              social=("lives alone and has no regular visitors", "is the main carer for a spouse with dementia",
                      "has an open safeguarding referral after suspected financial abuse",
                      "was recently evicted and is sofa-surfing", "is in a dispute with family over power of attorney")),
        ), per_owner=1),
        Category("billing", ("hospital", "billing", "{eid}"), "entity:patient", (
            T("insurance", "{name} ({eid}) is insured with {insurer}, policy number {policy}.",
              ("Who is {name}'s insurer?", "Insurance details for patient {eid}?", "Which policy covers {name}'s stay?"),
              mutable="insurer", insurer=("Allianz Care", "Bupa", "AXA Health", "Cigna Global", "Aetna International"),
              policy=("PL-204417", "PL-558120", "PL-930071", "PL-117342", "PL-761905", "PL-342688")),
            T("balance", "The outstanding balance for {name} ({eid}) is {amount} euros, due on {date}.",
              ("How much does {name} still owe?", "What is the open balance on patient {eid}'s account?",
               "When is {name}'s hospital bill due?"), mutable="amount", amount=AMOUNTS, date=DATES),
        ), per_owner=1),
        Category("notes", ("hospital", "{group}", "notes"), "group", (
            T("equipment", "{group_name} notice: the {equipment} in bay {bay} is out of service until {day}.",
              ("Is the {equipment} on {group_name} working?", "Which equipment is broken on {group_name}?"),
              mutable="day", equipment=("defibrillator", "bladder scanner", "ECG machine", "infusion pump", "hoist"),
              bay=("A", "B", "C", "D"), day=DAYS),
            T("staffing", "{group_name} is short of {count} nurses on the {shift} shift this {day}.",
              ("Is {group_name} understaffed this week?", "What staffing gaps does {group_name} have?"),
              mutable="count", count=("one", "two", "three"), shift=("early", "late", "night"), day=DAYS),
            T("visiting", "Visiting hours on {group_name} are now {hours}.",
              ("When can relatives visit {group_name}?", "What are the visiting times on {group_name}?"),
              mutable="hours", hours=("2pm to 8pm", "11am to 7pm", "3pm to 5pm and 6pm to 8pm", "suspended")),
            T("infection", "{group_name} has {infection} cases; bay {bay} is closed to admissions.",
              ("Is there an outbreak on {group_name}?", "Which bays on {group_name} are closed?"),
              mutable="infection", infection=("norovirus", "influenza A", "C. difficile", "COVID-19"),
              bay=("A", "B", "C", "D")),
        ), per_owner=4, subject=False, replace=True),
        _private_notes("hospital"),
    )
    derived = (
        Derived("handover", ("clinical",), ("hospital", "{group}", "notes"), "Shift handover for {names}: {body}", 2),
        Derived("med_rec", ("meds",), None, "Medication reconciliation for {names}: {body}"),
        Derived("psych_summary", ("psych",), None, "Liaison psychiatry summary for {names}: {body}"),
        Derived("account", ("billing",), None, "Account summary for {names}: {body}"),
    )
    erasers = tuple(p.id for p in principals if "privacy_officer" in p.roles)
    return World("medical", groups, tuple(entities), tuple(principals), tuple(rules), cats, derived, erasers)


def office(rng: random.Random, size: Size) -> World:
    depts = ["eng", "sales", "ops", "legal"][: size.groups]
    groups = {"eng": "Engineering", "sales": "Sales", "ops": "Operations", "legal": "Legal"}
    groups = {d: groups[d] for d in depts}
    project_names = ["apollo", "borealis", "cobalt", "drift", "ember", "falcon", "granite", "harbor"]
    rng.shuffle(project_names)
    taken: set[str] = set()
    entities, principals, n = [], [], 1
    for d in depts:
        people = _people(rng, size.per_group, taken)
        for i, (first, last) in enumerate(people):
            eid = f"e{n:02d}"
            n += 1
            entities.append(Entity(eid, f"{first} {last}", d, "employee"))
            if i < 3:  # two engineers and a manager per department are principals too
                role = f"manager_{d}" if i == 2 else f"engineer_{d}"
                principals.append(PrincipalSpec(f"{first}_{last}".lower(), (role,), f"{first} {last}", eid))
        for _ in range(2):
            name = project_names.pop()
            entities.append(Entity(name, name.capitalize(), d, "project"))
    principals += _staff(rng, [("hr", "hr_assistant", 1), ("hrlead", "hr_manager", 1), ("fin", "finance", 1),
                               ("dpo", "privacy_officer", 1)], taken)
    rules: list[Rule] = []
    for d in depts:
        rules += _rw(f"engineer_{d}", f"office/{d}/projects/*", "read write update")
        rules += _rw(f"engineer_{d}", f"office/{d}/team", "read write")
        rules += _rw(f"manager_{d}", f"office/{d}/**", "read write update forget")
        rules += _rw(f"manager_{d}", f"office/finance/{d}", "read")
    rules += _rw("hr_assistant", "office/hr/employees/*", "read write update")
    rules += _rw("hr_manager", "office/hr/**", "read write update forget")
    rules += _rw("finance", "office/finance/*", "read write update forget")
    rules += _rw("privacy_officer", "office/**", "erase")
    for p in principals:
        if p.entity:
            rules += _rw(p.id, f"office/hr/employees/{p.entity}", "read")
        if "privacy_officer" not in p.roles:
            rules += _rw(p.id, f"office/staff/{p.id}/notes", "read write update forget")
    cats = (
        Category("project", ("office", "{group}", "projects", "{eid}"), "entity:project", (
            T("deadline", "The {name} project's {milestone} is due on {date}.",
              ("When is the {name} {milestone} due?", "What is the deadline for {name}'s {milestone}?",
               "Timeline for the {milestone} of project {name}?"), mutable="date",
              milestone=("beta release", "security audit", "client demo", "data migration", "launch review"), date=DATES),
            T("decision", "Decision for project {name}: the team will use {tech} for the {component}.",
              ("What technology did {name} choose for the {component}?", "Which stack is project {name} using for the {component}?"),
              mutable="tech", tech=("PostgreSQL", "Kafka", "React", "Rust", "Terraform", "gRPC", "Snowflake"),
              component=("billing service", "event pipeline", "admin dashboard", "search index", "mobile app")),
            T("client", "{name}'s client contact is {contact} at {client}, who prefers {channel}.",
              ("Who is the client contact for {name}?", "How should we reach the {name} client?"),
              mutable="channel", contact=("Ms Hartley", "Mr Chen", "Dr Abara", "Mrs Lund"),
              client=("Northwind", "Globex", "Initech", "Umbrella Logistics", "Stark Freight"),
              channel=("email", "a weekly call", "Slack", "in-person meetings")),
            T("lead", "{member_name} leads the {component} work on project {name}.",
              ("Who is in charge of the {component} on {name}?", "Who leads {name}'s {component}?"), mention=True,
              component=("billing service", "event pipeline", "admin dashboard", "search index", "mobile app")),
            T("risk", "Top risk on project {name}: {risk}.",
              ("What are the main risks for {name}?", "What could derail project {name}?"), mutable="risk",
              risk=("the vendor API is being deprecated", "two engineers are leaving", "the budget was cut by 20%",
                    "the client keeps changing scope", "load tests fail above 500 requests per second")),
        ), per_owner=4, subject=False),
        Category("team", ("office", "{group}", "team"), "group", (
            T("standup", "{group_name} standup: {standup}.",
              ("What came up in the {group_name} standup?", "Any blockers in {group_name}?"),
              standup=("the staging cluster is down again", "the release train moves to Thursdays",
                       "code freeze starts next week", "the new laptop order is delayed", "pairing rotation restarts")),
            T("offsite", "The {group_name} offsite is planned for {date} in {place}.",
              ("When is the {group_name} offsite?", "Where is {group_name} going for the offsite?"),
              mutable="date", date=DATES, place=("Lisbon", "Krakow", "the mountain lodge", "the city office")),
            T("oncall", "{group_name} on-call this week: {member_name} is primary.",
              ("Who is on call for {group_name} this week?", "Who should {group_name} page tonight?"), mention=True),
        ), per_owner=3, subject=False, replace=True),
        Category("hr", ("office", "hr", "employees", "{eid}"), "entity:employee", (
            T("salary", "{name} ({eid}) earns a base salary of {salary} euros per year.",
              ("What is {name}'s salary?", "How much is employee {eid} paid?", "What does {name} earn?"),
              mutable="salary", salary=("48,000", "56,500", "63,000", "71,200", "84,000", "97,500", "112,000")),
            T("review", "{name} ({eid}) got the performance rating '{rating}' in the last review cycle.",
              ("How did {name} do in their performance review?", "What rating did employee {eid} get?"),
              mutable="rating", rating=("exceeds expectations", "meets expectations", "needs improvement",
                                       "outstanding", "below expectations")),
            T("title", "{name} ({eid}) holds the title {title} since {date}.",
              ("What is {name}'s job title?", "What position does employee {eid} have?"), mutable="title",
              title=("Senior Engineer", "Staff Engineer", "Account Executive", "Team Lead", "Principal Consultant"),
              date=DATES),
            T("warning", "{name} ({eid}) received a written warning for {issue}.",
              ("Has {name} had any disciplinary issues?", "Are there warnings on employee {eid}'s file?"),
              issue=("repeated lateness", "an expenses irregularity", "a harassment complaint", "missing an audit deadline")),
        ), per_owner=2),
        Category("medical", ("office", "hr", "employees", "{eid}", "medical"), "entity:employee", (
            T("leave", "{name} ({eid}) is on sick leave for {illness} until {date}.",
              ("Why is {name} off work?", "Medical leave details for employee {eid}?", "When will {name} be back?"),
              mutable="date", illness=("burnout", "knee surgery", "a depressive episode", "long COVID", "a pregnancy complication"),
              date=DATES),
            T("accommodation", "{name} ({eid}) has a workplace accommodation: {accommodation}.",
              ("Does {name} need any adjustments at work?", "What accommodations does employee {eid} have?"),
              accommodation=("a standing desk for a spinal condition", "reduced hours during chemotherapy",
                             "screen-reader software", "no night travel because of epilepsy")),
        ), per_owner=1),
        Category("finance", ("office", "finance", "{group}"), "group", (
            T("budget", "The {group_name} budget for Q{q} is {amount} euros.",
              ("What is the {group_name} budget?", "How much can {group_name} spend this quarter?"),
              mutable="amount", q=("1", "2", "3", "4"), amount=AMOUNTS),
            T("vendor", "{group_name} signed a vendor contract with {vendor} worth {amount} euros.",
              ("Which vendors does {group_name} pay?", "How big is the {vendor} contract?"),
              vendor=("CloudCo", "DataWorks", "Acme Consulting", "SecureIT"), amount=AMOUNTS),
            T("travel", "{group_name} travel spend is {pct}% over plan this quarter.",
              ("Is {group_name} over budget on travel?", "How is {group_name}'s travel spend tracking?"),
              mutable="pct", pct=("4", "9", "15", "22", "31")),
        ), per_owner=3, subject=False, replace=True),
        _private_notes("office"),
    )
    derived = (
        Derived("digest", ("project",), ("office", "{group}", "team"), "Weekly project digest for {names}: {body}", 2),
        Derived("case_file", ("hr",), ("office", "hr", "employees", "{eid}", "medical"), "HR case file note for {names}: {body}"),
        Derived("finance_summary", ("finance",), None, "Finance summary for {names}: {body}"),
    )
    erasers = tuple(p.id for p in principals if "privacy_officer" in p.roles)
    return World("office", groups, tuple(entities), tuple(principals), tuple(rules), cats, derived, erasers,
                 mention_kinds=("employee",))


def education(rng: random.Random, size: Size) -> World:
    classes = ["7a", "7b", "8a", "8b"][: size.groups]
    groups = {c: c.upper() for c in classes}
    taken: set[str] = set()
    entities, n = [], 1
    for c in classes:
        for first, last in _people(rng, size.per_group, taken):
            entities.append(Entity(f"s{n:02d}", f"{first} {last}", c, "student"))
            n += 1
    principals: list[PrincipalSpec] = []
    for c in classes:
        principals += _staff(rng, [("teacher", f"teacher_{c}", 1)], taken)
        students = [e for e in entities if e.group == c]
        kid, child = students[0], students[1]
        principals.append(PrincipalSpec(f"student_{kid.id}", (f"student_{c}",), kid.name, kid.id))
        first, last = _people(rng, 1, taken)[0]
        principals.append(PrincipalSpec(f"parent_{child.id}", ("parent",), f"{first} {child.name.split()[1]}", child.id))
    principals += _staff(rng, [("counsellor", "counsellor", 1), ("bursar", "bursar", 1), ("dpo", "privacy_officer", 1)], taken)
    rules: list[Rule] = []
    for c in classes:
        rules += _rw(f"teacher_{c}", f"school/{c}/students/*", "read write update forget")
        rules += _rw(f"teacher_{c}", f"school/{c}/homework", "read write update forget")
        rules += _rw(f"student_{c}", f"school/{c}/homework", "read")
    rules += _rw("counsellor", "school/*/students/**", "read")
    rules += _rw("counsellor", "school/*/students/*/counselling", "write update forget")
    rules += _rw("bursar", "school/admin/fees/*", "read write update forget")
    rules += _rw("privacy_officer", "school/**", "erase")
    by_id = {e.id: e for e in entities}
    for p in principals:
        if p.id.startswith("student_") and p.entity:
            rules += _rw(p.id, f"school/{by_id[p.entity].group}/students/{p.entity}", "read")
        elif p.id.startswith("parent_") and p.entity:
            rules += _rw(p.id, f"school/{by_id[p.entity].group}/students/{p.entity}", "read")
            rules += _rw(p.id, f"school/admin/fees/{p.entity}", "read")
        elif any(r.startswith(("teacher", "counsellor", "bursar")) for r in p.roles):
            rules += _rw(p.id, f"school/staff/{p.id}/notes", "read write update forget")
    subjects_taught = ("maths", "English", "biology", "history", "French", "chemistry")
    cats = (
        Category("record", ("school", "{group}", "students", "{eid}"), "entity:student", (
            T("grade", "{name} ({eid}) scored {grade} in the {course} test on {topic}.",
              ("How did {name} do in {course}?", "What was student {eid}'s {course} result?",
               "What is {name}'s latest {course} grade?"), mutable="grade",
              grade=("A", "B+", "B", "C", "D", "F", "A-"), course=subjects_taught,
              topic=("fractions", "poetry", "cell division", "the French revolution", "verb tenses", "acids and bases")),
            T("attendance", "{name} ({eid}) has missed {days} school days this term.",
              ("How often has {name} been absent?", "What is student {eid}'s attendance like?"), mutable="days",
              days=("two", "five", "nine", "fourteen", "twenty-one")),
            T("behaviour", "Behaviour note for {name} ({eid}): {behaviour}.",
              ("How is {name} behaving in class?", "Any behaviour incidents for student {eid}?"),
              behaviour=("disrupted lessons three times this week", "was excluded for a day after a fight",
                         "has been very helpful to new classmates", "was caught using a phone during the exam")),
            T("support", "{name} ({eid}) receives learning support for {need}.",
              ("Does {name} get any extra support?", "What learning needs does student {eid} have?"),
              need=("dyslexia", "ADHD", "dyscalculia", "English as an additional language", "autism spectrum condition")),
            T("reading", "{name}'s ({eid}) reading level is {level}.",
              ("What reading level is {name} at?", "How well does student {eid} read?"), mutable="level",
              level=("two years behind", "at age level", "one year ahead", "well above age level")),
        ), per_owner=3),
        Category("counselling", ("school", "{group}", "students", "{eid}", "counselling"), "entity:student", (
            T("concern", "Counselling note for {name} ({eid}): {concern}.",
              ("Is {name} seeing the school counsellor?", "What is going on with {name} at home?",
               "Counselling concerns for student {eid}?"), mutable="concern",
              concern=("parents are going through a divorce", "shows signs of an eating disorder",
                       "is being bullied online", "grieving the death of a grandparent", "self-harm disclosed last week")),
        ), per_owner=1),
        Category("homework", ("school", "{group}", "homework"), "group", (
            T("assignment", "Class {group_name} {course} homework: {task}, due {day}.",
              ("What {course} homework does class {group_name} have?", "When is the {course} homework due for {group_name}?"),
              mutable="day", course=subjects_taught,
              task=("read chapter four", "finish worksheet 12", "write a one-page essay", "revise for the quiz",
                    "prepare a poster"), day=DAYS),
            T("trip", "Class {group_name} trip to {place} on {day}; bring {item}.",
              ("Where is class {group_name} going on the trip?", "What should {group_name} bring for the trip?"),
              mutable="day", place=("the science museum", "the zoo", "the castle", "the theatre"),
              item=("a packed lunch", "a raincoat", "ten euros", "a signed consent form"), day=DAYS),
            T("test", "Class {group_name} {course} test on {day} covers {topic}.",
              ("When is the next {course} test for {group_name}?", "What will the {group_name} {course} test cover?"),
              mutable="day", course=subjects_taught, day=DAYS,
              topic=("fractions", "poetry", "cell division", "the French revolution", "verb tenses", "acids and bases")),
        ), per_owner=4, subject=False, replace=True),
        Category("fees", ("school", "admin", "fees", "{eid}"), "entity:student", (
            T("balance", "Fee account for {name} ({eid}): {amount} euros outstanding for {item}.",
              ("How much does {name}'s family owe the school?", "What is the fee balance for student {eid}?"),
              mutable="amount", amount=AMOUNTS[:8], item=("the ski trip", "lunches", "tuition", "music lessons")),
            T("aid", "{name} ({eid}) receives a {pct}% {aid}.",
              ("Does {name} get financial aid?", "Is student {eid} on a scholarship?"),
              pct=("25", "50", "75", "100"), aid=("hardship bursary", "sports scholarship", "sibling discount")),
        ), per_owner=1),
        _private_notes("school"),
    )
    derived = (
        Derived("report", ("record",), None, "Report card summary for {names}: {body}"),
        Derived("referral", ("record",), ("school", "{group}", "students", "{eid}", "counselling"),
                "Counsellor referral for {names}: {body}"),
        Derived("digest", ("homework",), None, "Weekly homework digest for {names}: {body}", 2),
    )
    erasers = tuple(p.id for p in principals if "privacy_officer" in p.roles)
    return World("education", groups, tuple(entities), tuple(principals), tuple(rules), cats, derived, erasers)


def household(rng: random.Random, size: Size) -> World:
    taken: set[str] = set()
    kinds = ["parent", "parent", "kid", "kid", "kid", "sitter", "guest"]
    if size.per_group < 4:
        kinds = ["parent", "parent", "kid", "kid", "sitter", "guest"]
    family = _people(rng, len(kinds), taken)
    surname = family[0][1]
    entities, principals = [], []
    for kind, (first, last) in zip(kinds, family):
        name = f"{first} {surname}" if kind in ("parent", "kid") else f"{first} {last}"
        eid = first.lower()
        entities.append(Entity(eid, name, "family", kind))
        principals.append(PrincipalSpec(eid, ({"kid": "child"}.get(kind, kind),), first, eid))
    rules: list[Rule] = []
    rules += _rw("parent", "home/shared/*", "read write update forget")
    rules += _rw("parent", "home/members/*/health", "read write update forget")
    rules += _rw("parent", "home/kids/**", "read write update forget")
    rules += _rw("parent", "home/finance", "read write update forget")
    rules += _rw("parent", "home/security", "read write update forget")
    rules += _rw("parent", "home/**", "erase")
    rules += _rw("child", "home/shared/*", "read write")
    rules += _rw("sitter", "home/shared/calendar", "read")
    rules += _rw("sitter", "home/kids/*/care", "read write")
    rules += _rw("guest", "home/shared/*", "read")
    for p in principals:
        rules += _rw(p.id, f"home/members/{p.id}/*", "read write update forget")
    scale = max(1, round(3 * size.per_group / 8))
    cats = (
        Category("calendar", ("home", "shared", "calendar"), "global", (
            T("appointment", "{member_name} has {appointment} on {day} at {time}.",
              ("When does {member_name} have {appointment}?", "What is on {member_name}'s schedule on {day}?"),
              mutable="time", mention=True,
              appointment=("a dentist appointment", "a football match", "a parents' evening", "a job interview",
                           "a piano lesson", "a haircut"), day=DAYS, time=("8:30", "10:00", "13:15", "16:45", "18:30")),
            T("event", "Family {event} on {day} at {place}.",
              ("When is the family {event}?", "Where is the {event} happening?"), mutable="day",
              event=("barbecue", "birthday dinner", "movie night", "cousins' visit", "garage clean-up"),
              day=DAYS, place=("home", "grandma's house", "the lake", "the Italian restaurant")),
            T("lift", "{member_name} needs a lift to {activity} every {day}.",
              ("Who needs driving to {activity}?", "Which days does {member_name} need a lift?"), mention=True,
              activity=("swimming", "scouts", "ballet", "the orthodontist", "tutoring"), day=DAYS),
        ), per_owner=8 * scale, subject=False, replace=True),
        Category("shopping", ("home", "shared", "shopping"), "global", (
            T("need", "Shopping list: we need {grocery} for {purpose}.",
              ("What do we need to buy for {purpose}?", "What is on the shopping list?"),
              grocery=("oat milk", "birthday candles", "gluten-free pasta", "dog food", "batteries", "sunscreen"),
              purpose=("the weekend", "the party", "school lunches", "the camping trip")),
            T("brand", "{member_name} prefers {brand} {product}.",
              ("Which {product} does {member_name} like?", "What brand should we buy for {member_name}?"),
              mutable="brand", mention=True, brand=("the organic", "the store-brand", "the Italian", "the sugar-free"),
              product=("yoghurt", "cereal", "coffee", "shampoo")),
        ), per_owner=3 * scale, subject=False, replace=True),
        Category("diary", ("home", "members", "{eid}", "diary"), "entity:parent,kid,sitter,guest", (
            T("secret", "{first}'s diary: {secret}.",
              ("What did {first} write in the diary?", "How has {first} been feeling lately?",
               "What is {first} keeping to themselves?"),
              secret=("I have a crush on someone in my class", "I failed the maths exam and hid the letter",
                      "I am thinking about quitting my job", "I feel lonely since we moved here",
                      "I lost the money grandma gave me", "I am worried about the biopsy results")),
            T("plan", "{first}'s private plan: {plan}.",
              ("What is {first} secretly planning?", "What surprise is {first} preparing?"),
              plan=("save up for a motorbike", "apply to a boarding school abroad", "throw a surprise party in June",
                    "look for a new flat across town", "take a gap year after school")),
        ), per_owner=2),
        Category("health", ("home", "members", "{eid}", "health"), "entity:parent,kid,sitter,guest", (
            T("medication", "{first} takes {med} for {condition}.",
              ("What medication does {first} take?", "Is {first} being treated for anything?"), mutable="med",
              med=("methylphenidate", "an inhaler", "antidepressants", "thyroid tablets", "antihistamines"),
              condition=("ADHD", "asthma", "anxiety", "hypothyroidism", "hay fever")),
            T("specialist", "{first} has a {specialist} appointment about {concern} on {day}.",
              ("When is {first}'s specialist appointment?", "Which doctor is {first} seeing?"), mutable="day",
              specialist=("cardiology", "dermatology", "psychiatry", "gynaecology", "orthopaedics"),
              concern=("heart palpitations", "a mole", "panic attacks", "a knee injury"), day=DAYS),
        ), per_owner=1),
        Category("care", ("home", "kids", "{eid}", "care"), "entity:kid", (
            T("bedtime", "{first}'s bedtime is {bedtime} on school nights.",
              ("When does {first} go to bed?", "What time should {first} be asleep?"), mutable="bedtime",
              bedtime=("7:30pm", "8pm", "8:30pm", "9pm")),
            T("allergy", "{first} is allergic to {food}; the EpiPen is in {place}.",
              ("Does {first} have any food allergies?", "Where is {first}'s EpiPen?"),
              food=("peanuts", "sesame", "shellfish", "eggs"), place=("the kitchen drawer", "the school bag", "the hall cupboard")),
            T("pickup", "{first} must be picked up from {place} at {time}.",
              ("When should {first} be collected?", "Where do we pick {first} up?"), mutable="time",
              place=("school", "the after-school club", "the sports hall"), time=("15:00", "15:30", "16:15", "17:00")),
            T("screen", "{first} is allowed {screen} of screen time per day.",
              ("How much screen time does {first} get?", "Can {first} play video games tonight?"), mutable="screen",
              screen=("30 minutes", "one hour", "90 minutes", "two hours")),
        ), per_owner=3),
        Category("finance", ("home", "finance"), "global", (
            T("balance", "The family {account} account balance is {amount} euros.",
              ("How much is in the {account} account?", "What is our {account} balance?"), mutable="amount",
              account=("savings", "current", "holiday", "college fund"), amount=AMOUNTS),
            T("bill", "The {bill} bill of {amount} euros is due on {date}.",
              ("When is the {bill} bill due?", "How much is the {bill} bill?"), mutable="amount",
              bill=("electricity", "mortgage", "car insurance", "internet"), amount=AMOUNTS, date=DATES),
            T("income", "{member_name}'s take-home pay is {amount} euros a month.",
              ("How much does {member_name} earn?", "What is {member_name}'s income?"), mutable="amount",
              mention=True, amount=AMOUNTS[3:9]),
        ), per_owner=3 * scale, subject=False, replace=True),
        Category("security", ("home", "security"), "global", (
            T("alarm", "The house alarm code is {code}.", ("What is the alarm code?", "How do I disarm the house alarm?"),
              mutable="code", code=("4412", "9071", "2580", "1357", "8824")),
            T("wifi", "The wifi password is {password}.", ("What is the wifi password?", "How do I get on the home network?"),
              mutable="password", password=("blue-otter-42", "SunnyLake!9", "tiger7garden", "maple#2024")),
            T("key", "The spare key is {keyplace}.", ("Where is the spare key?", "How do I get in if I am locked out?"),
              mutable="keyplace", keyplace=("under the blue flowerpot", "with the neighbour at number 12",
                                            "in the lockbox, code 3390", "behind the garage light")),
        ), per_owner=3, subject=False),
    )
    derived = (
        Derived("digest", ("calendar",), None, "Weekly family digest: {body}", 2),
        Derived("briefing", ("care",), None, "Babysitter briefing for {names}: {body}"),
        Derived("budget", ("finance",), None, "Monthly budget summary: {body}", 2),
    )
    erasers = tuple(p.id for p in principals if "parent" in p.roles)
    return World("household", {"family": "the family"}, tuple(entities), tuple(principals), tuple(rules), cats,
                 derived, erasers, mention_kinds=("parent", "kid", "sitter", "guest"))


WORLDS = {"medical": medical, "office": office, "education": education, "household": household}


# ----------------------------------------------------------------------------------------
# Namespace spellings: confusable (NFKC-equal), invalid, homoglyph
# ----------------------------------------------------------------------------------------

def fullwidth(label: str) -> str:
    """Full-width forms (NFKC maps them back to ASCII)."""
    return "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else c for c in label)


def math_bold(label: str) -> str:
    """Mathematical bold letters and digits (NFKC maps them back to ASCII)."""
    out = []
    for c in label:
        if "a" <= c <= "z":
            out.append(chr(0x1D41A + ord(c) - ord("a")))
        elif "A" <= c <= "Z":
            out.append(chr(0x1D400 + ord(c) - ord("A")))
        elif "0" <= c <= "9":
            out.append(chr(0x1D7CE + ord(c) - ord("0")))
        else:
            out.append(c)
    return "".join(out)


HOMOGLYPHS = {"a": "\u0430", "e": "\u0435", "o": "\u043e", "p": "\u0440", "c": "\u0441", "x": "\u0445",
              "y": "\u0443", "i": "\u0456"}


def confusable(namespace: tuple[str, ...], rng: random.Random) -> tuple[tuple[str, ...], str]:
    """The namespace with one label respelled so that NFKC gives the original back."""
    i = rng.randrange(len(namespace))
    style = rng.choice(("fullwidth", "math_bold"))
    label = (fullwidth if style == "fullwidth" else math_bold)(namespace[i])
    assert unicodedata.normalize("NFKC", label) == namespace[i], (label, namespace[i])
    return namespace[:i] + (label,) + namespace[i + 1:], style


def homoglyph(namespace: tuple[str, ...], rng: random.Random) -> tuple[str, ...] | None:
    """The namespace with one Latin letter swapped for a Cyrillic look-alike (a different place)."""
    spots = [(i, j) for i, label in enumerate(namespace) for j, c in enumerate(label) if c in HOMOGLYPHS]
    if not spots:
        return None
    i, j = rng.choice(spots)
    label = namespace[i]
    return namespace[:i] + (label[:j] + HOMOGLYPHS[label[j]] + label[j + 1:],) + namespace[i + 1:]


def trick(home: tuple[str, ...], readable: Sequence[tuple[str, ...]], rng: random.Random) -> tuple[tuple[str, ...], str]:
    """An invalid (or homoglyph) spelling aimed at ``home``, starting from a readable place."""
    variants = ["zero_width", "trailing_space", "dotdot", "percent_dotdot", "slash_in_label", "empty_label",
                "homoglyph", "bidi_control"]
    variant = rng.choice(variants)
    i = rng.randrange(1, len(home)) if len(home) > 1 else 0
    if variant == "zero_width":
        label = home[i]
        cut = rng.randrange(1, len(label)) if len(label) > 1 else 1
        return home[:i] + (label[:cut] + rng.choice(("\u200b", "\u200d", "\u2060", "\ufeff")) + label[cut:],) + home[i + 1:], variant
    if variant == "trailing_space":
        return home[:i] + (home[i] + rng.choice((" ", "\t", "\u00a0")),) + home[i + 1:], variant
    if variant == "bidi_control":
        return home[:i] + ("\u202e" + home[i],) + home[i + 1:], variant
    if variant == "empty_label":
        return home[:i] + ("",) + home[i:], variant
    if variant == "homoglyph":
        spelled = homoglyph(home, rng)
        if spelled is not None:
            return spelled, variant
        variant = "dotdot"
    start = rng.choice(list(readable)) if readable else home[:1]
    common = 0
    while common < min(len(start), len(home)) and start[common] == home[common]:
        common += 1
    up = max(1, len(start) - common)
    if variant in ("dotdot", "percent_dotdot"):
        dots = ".." if variant == "dotdot" else rng.choice(("%2e%2e", "%2E%2E", "%252e%252e"))
        return start + (dots,) * up + home[common:], variant
    # slash_in_label: one label that smuggles a path through
    return start + ("/".join(("..",) * up + home[common:]),), variant


# ----------------------------------------------------------------------------------------
# The generator
# ----------------------------------------------------------------------------------------

@dataclass
class _Fact:
    id: str
    category: Category
    template: Template
    fields: dict[str, str]
    namespace: tuple[str, ...]
    subjects: tuple[str, ...]
    lineage: str
    items: list[str] = field(default_factory=list)        # versions, oldest first
    history: list[dict[str, str]] = field(default_factory=list)
    status: str = "active"                                  # active | forget | erase


@dataclass
class _Plan:
    category: Category
    template: Template
    fields: dict[str, str]
    namespace: tuple[str, ...]
    subjects: tuple[str, ...]
    owner_entity: str | None


class _Generator:
    def __init__(self, world: World, size: Size, rng: random.Random, seed: int, index: int) -> None:
        self.world, self.size, self.rng, self.seed, self.index = world, size, rng, seed, index
        self.name = f"{world.domain}-{seed}-{index}"
        self.acl = Acl(world.principals, world.rules)
        self.items: dict[str, Item] = {}
        self.facts: dict[str, _Fact] = {}
        self.events: list[Event] = []
        self.texts: set[tuple[tuple[str, ...], str]] = set()
        self.erased: set[str] = set()
        self.derived_sets: set[tuple[str, tuple[str, ...], frozenset[str]]] = set()
        self.universe: set[tuple[str, ...]] = set()
        self.n_items = 0
        self.n_probes = 0
        self.entities = {e.id: e for e in world.entities}
        self.display = {p.id: p.display for p in world.principals}

    # -- planning ---------------------------------------------------------------------

    def _owners(self, category: Category) -> list[dict[str, Any]]:
        w = self.world
        if category.owner == "global":
            return [{"group": None, "group_name": "", "owner_entity": None}]
        if category.owner == "group":
            return [{"group": g, "group_name": n, "owner_entity": None} for g, n in w.groups.items()]
        if category.owner == "principal":
            owners = []
            for p in w.principals:
                if any(r.action == "write" and r.subject == p.id and pattern_matches(
                        r.pattern, tuple(s.format(pid=p.id) for s in category.namespace)) for r in w.rules):
                    owners.append({"group": None, "group_name": "", "pid": p.id, "first": p.display.split()[0],
                                   "name": p.display, "owner_entity": None})
            return owners
        kinds = category.owner.split(":", 1)[1].split(",")
        return [{"group": e.group, "group_name": w.groups.get(e.group or "", ""), "eid": e.id, "name": e.name,
                 "first": e.name.split()[0], "owner_entity": e.id} for e in w.entities if e.kind in kinds]

    def _fill(self, template: Template, base: Mapping[str, Any]) -> dict[str, str] | None:
        fields = {k: v for k, v in base.items() if v is not None and k != "owner_entity"}
        for slot, values in template.slots:
            fields[slot] = self.rng.choice(values)
        if template.mention:
            pool = [e for e in self.world.entities if e.kind in self.world.mention_kinds
                    and (base.get("group") is None or e.group == base["group"])]
            if not pool:
                return None
            member = self.rng.choice(pool)
            fields["member_name"], fields["member"] = member.name, member.id
        return fields

    def plan(self) -> list[_Plan]:
        plans: list[_Plan] = []
        for category in self.world.categories:
            per_owner = category.per_owner
            if category.owner in ("global", "group"):
                per_owner = max(1, round(per_owner * self.size.scale))
            for base in self._owners(category):
                if category.replace:
                    chosen = [self.rng.choice(category.templates) for _ in range(per_owner)]
                else:
                    chosen = self.rng.sample(category.templates, min(per_owner, len(category.templates)))
                for template in chosen:
                    for _ in range(20):  # resample slots until the text is new in its namespace
                        fields = self._fill(template, base)
                        if fields is None:
                            break
                        ns = tuple(part.format(**fields) for part in category.namespace)
                        text = template.text.format(**fields)
                        if (ns, text) not in self.texts:
                            self.texts.add((ns, text))
                            subjects = []
                            if category.subject and base.get("owner_entity"):
                                subjects.append(base["owner_entity"])
                            if "member" in fields and fields["member"] not in subjects:
                                subjects.append(fields["member"])
                            plans.append(_Plan(category, template, fields, ns, tuple(subjects), base.get("owner_entity")))
                            self.universe.add(ns)
                            break
        for derived in self.world.derived:
            if derived.namespace is not None:
                for p in plans:
                    if p.category.key in derived.sources:
                        self.universe.add(tuple(s.format(**p.fields) for s in derived.namespace))
        self.rng.shuffle(plans)
        return plans

    # -- events -----------------------------------------------------------------------

    def _item(self, *, fact: str | None, lineage: str, version: int, namespace: tuple[str, ...], text: str,
              writer: str, kind: str, subjects: tuple[str, ...], parents: tuple[str, ...], carries: frozenset[str],
              category: str) -> Item:
        self.n_items += 1
        readers = self.acl.readers(namespace)
        item = Item(f"m{self.n_items:04d}", lineage, fact, version, namespace, text, writer, kind, subjects, parents,
                    carries, readers == frozenset({writer}), category)
        self.items[item.id] = item
        self.texts.add((namespace, text))
        return item

    def write_fact(self, plan: _Plan) -> None:
        writers = self.acl.who("write", plan.namespace)
        if not writers:
            raise AssertionError(f"{self.name}: nobody may write {plan.namespace}")
        writer = self.rng.choice(writers)
        fid = f"f{len(self.facts) + 1:04d}"
        fact = _Fact(fid, plan.category, plan.template, plan.fields, plan.namespace, plan.subjects, f"L{fid[1:]}")
        text = plan.template.text.format(**plan.fields)
        item = self._item(fact=fid, lineage=fact.lineage, version=1, namespace=plan.namespace, text=text,
                          writer=writer, kind=plan.template.kind, subjects=plan.subjects, parents=(),
                          carries=frozenset({fid}), category=plan.category.key)
        fact.items.append(item.id)
        fact.history.append(dict(plan.fields))
        self.facts[fid] = fact
        self.events.append(Write(item))

    def _active(self) -> list[_Fact]:
        return [f for f in self.facts.values() if f.status == "active"]

    def update(self) -> None:
        candidates = [f for f in self._active() if f.template.mutable
                      and any(self.acl.allowed(p, "read", f.namespace) for p in self.acl.who("update", f.namespace))]
        if not candidates:
            return
        fact = self.rng.choice(candidates)
        slot = fact.template.mutable
        used = {h[slot] for h in fact.history}
        options = [v for v in dict(fact.template.slots)[slot] if v not in used]
        if not options:
            return
        fields = dict(fact.fields)
        fields[slot] = self.rng.choice(options)
        if (fact.namespace, fact.template.text.format(**fields)) in self.texts:
            return
        actor = self.rng.choice([p for p in self.acl.who("update", fact.namespace)
                                 if self.acl.allowed(p, "read", fact.namespace)])
        old = self.items[fact.items[-1]]
        item = self._item(fact=fact.id, lineage=fact.lineage, version=old.version + 1, namespace=fact.namespace,
                          text=fact.template.text.format(**fields), writer=actor, kind=old.kind,
                          subjects=old.subjects, parents=(), carries=frozenset({fact.id}), category=old.category)
        fact.items.append(item.id)
        fact.history.append(fields)
        fact.fields = fields
        self.events.append(Update(actor, old.id, item))

    def derive(self) -> None:
        options = [d for d in self.world.derived if any(f.category.key in d.sources for f in self._active())]
        if not options:
            return
        spec = self.rng.choice(options)
        pool = [f for f in self._active() if f.category.key in spec.sources]
        first = self.rng.choice(pool)
        target = tuple(s.format(**first.fields) for s in spec.namespace) if spec.namespace else first.namespace
        parents = [first]
        if spec.max_parents > 1 and self.rng.random() < 0.5:
            more = [f for f in pool if f is not first and f.fields.get("group") == first.fields.get("group")]
            if more:
                parents.append(self.rng.choice(more))
        key = (spec.key, target, frozenset(f.id for f in parents))
        if key in self.derived_sets:
            return
        self.derived_sets.add(key)
        readers = self.acl.readers(target)
        if not all(readers <= self.acl.readers(p.namespace) for p in parents):
            raise AssertionError(f"{self.name}: derived {spec.key} at {target} would widen who may read its parents")
        writers = [p for p in self.acl.who("write", target)
                   if all(self.acl.allowed(p, "read", f.namespace) for f in parents)]
        if not writers:
            return
        writer = self.rng.choice(writers)
        parent_items = [self.items[f.items[-1]] for f in parents]
        names = " and ".join(dict.fromkeys(f.fields.get("name") or f.fields.get("group_name") or "" for f in parents))
        text = spec.text.format(names=names, body=" ".join(i.text for i in parent_items))
        if (target, text) in self.texts:
            return
        subjects: tuple[str, ...] = ()
        if self.rng.random() < 0.5:  # half the agents tag whom a summary is about, half do not
            subjects = tuple(dict.fromkeys(s for i in parent_items for s in i.subjects))
        self.universe.add(target)
        lineage = f"D{self.n_items + 1:04d}"
        item = self._item(fact=None, lineage=lineage, version=1, namespace=target, text=text, writer=writer,
                          kind="event" if spec.key in ("handover", "digest") else "fact", subjects=subjects,
                          parents=tuple(i.id for i in parent_items),
                          carries=frozenset().union(*(i.carries for i in parent_items)), category=f"derived:{spec.key}")
        self.events.append(Write(item))

    def forget(self) -> None:
        candidates = [f for f in self._active() if any(self.acl.allowed(p, "read", f.namespace)
                                                      for p in self.acl.who("forget", f.namespace))]
        if not candidates:
            return
        fact = self.rng.choice(candidates)
        actor = self.rng.choice([p for p in self.acl.who("forget", fact.namespace)
                                 if self.acl.allowed(p, "read", fact.namespace)])
        fact.status = "forget"
        self.events.append(Forget(actor, fact.items[-1]))

    def erase(self) -> None:
        counts: dict[str, int] = {}
        for f in self._active():
            for s in f.subjects:
                counts[s] = counts.get(s, 0) + 1
        eligible = sorted(s for s, n in counts.items() if n >= 2 and s not in self.erased
                          and s not in self.world.erasers)
        if not eligible or not self.world.erasers:
            return
        subject = self.rng.choice(eligible)
        self.erased.add(subject)
        for f in self.facts.values():
            if subject in f.subjects and f.status != "erase":
                f.status = "erase"
        self.events.append(Erase(self.rng.choice(self.world.erasers), subject))

    # -- probes -----------------------------------------------------------------------

    def _question(self, fact: _Fact, fields: Mapping[str, str]) -> str:
        return self.rng.choice(fact.template.questions).format(**fields)

    def _prefix(self, home: tuple[str, ...]) -> tuple[str, ...]:
        return home[: self.rng.randrange(0, len(home))]

    def _readable_under(self, principal: str, prefix: tuple[str, ...]) -> bool:
        return any(ns[: len(prefix)] == prefix and self.acl.allowed(principal, "read", ns) for ns in self.universe)

    def _probe(self, category: str, cp: int) -> Probe | None:
        rng, acl = self.rng, self.acl
        active = sorted(self._active(), key=lambda f: f.id)
        fact: _Fact | None = None
        if category in ("legit", "legit_prefix", "canonical_spelling", *CROSS_CATEGORIES):
            if not active:
                return None
            fact = rng.choice(active)
        elif category == "superseded":
            updated = [f for f in active if len(f.items) > 1]
            if not updated:
                return None
            fact = rng.choice(updated)
        elif category == "deleted":
            gone = sorted((f for f in self.facts.values() if f.status != "active"), key=lambda f: f.id)
            if not gone:
                return None
            fact = rng.choice(gone)
        assert fact is not None
        home = fact.namespace
        readers = sorted(acl.readers(home))
        outsiders = sorted(set(acl.principals) - set(readers))
        variant = ""
        fields = fact.fields
        if category in CROSS_CATEGORIES:
            if not outsiders:
                return None
            who = rng.choice(outsiders)
            if category == "cross_direct":
                ns = home
            elif category == "cross_prefix":
                options = [home[:n] for n in range(len(home)) if self._readable_under(who, home[:n])]
                if options and rng.random() < 0.5:
                    ns, variant = options[-1], "deepest_readable"
                elif options:
                    ns, variant = rng.choice(options), "readable"
                else:
                    ns, variant = (), "root"
            elif category == "cross_confusable":
                ns, variant = confusable(home, rng)
            else:
                readable = sorted(n for n in self.universe if acl.allowed(who, "read", n))
                ns, variant = trick(home, readable, rng)
            relevant: tuple[str, ...] = ()
        else:
            if not readers:
                return None
            who = rng.choice(readers)
            if category == "legit":
                ns = home
            elif category == "legit_prefix":
                ns = self._prefix(home)
                variant = f"depth{len(ns)}"
            elif category == "canonical_spelling":
                ns, variant = confusable(home, rng)
            elif category == "superseded":
                if rng.random() < 0.5:
                    ns, variant = home, "exact"
                else:
                    ns, variant = self._prefix(home), "prefix"
                if rng.random() < 0.5:
                    fields, variant = fact.history[0], variant + "+old_wording"
            else:  # deleted
                ns = home if rng.random() < 0.6 else self._prefix(home)
                variant = fact.status
            relevant = (fact.items[-1],) if category != "deleted" else ()
        self.n_probes += 1
        return Probe(f"{self.name}/c{cp}/{self.n_probes:04d}", who, self._question(fact, fields), ns, category,
                     variant, (fact.id,), relevant)

    def checkpoint(self, cp: int, quota: int) -> None:
        names, weights = list(CATEGORIES), list(CATEGORIES.values())
        probes: list[Probe] = []
        while len(probes) < quota:
            category = self.rng.choices(names, weights)[0]
            probe = self._probe(category, cp) or self._probe("legit", cp)
            if probe is None:
                break
            probes.append(probe)
        deleted = {f.id: f.status for f in self.facts.values() if f.status != "active"}
        superseded = frozenset(i for f in self.facts.values() for i in f.items[:-1])
        self.events.append(Checkpoint(cp, tuple(probes), deleted, superseded))

    # -- the episode ------------------------------------------------------------------

    def run(self, probes: int) -> Scenario:
        plans = self.plan()
        n = len(plans)
        cps = self.size.checkpoints
        marks: dict[int, list[int]] = {}
        for c in range(cps):
            marks.setdefault(max(1, round(n * (0.3 + 0.7 * (c + 1) / cps))), []).append(c)
        quotas = [probes // cps + (1 if c >= cps - probes % cps else 0) for c in range(cps)]
        spread = self.size.erasures - 1
        erase_at = {max(1, round(n * (0.45 + (0.4 * j / spread if spread else 0)))) for j in range(self.size.erasures)}
        for i, plan in enumerate(plans, start=1):
            if not (set(plan.subjects) & self.erased):
                self.write_fact(plan)
                if self.rng.random() < self.size.p_update:
                    self.update()
                if self.rng.random() < self.size.p_derived:
                    self.derive()
                if self.rng.random() < self.size.p_forget:
                    self.forget()
            if i in erase_at:
                self.erase()
            for c in marks.get(i, ()):
                self.checkpoint(c, quotas[c])
        homes = {f.id: f.namespace for f in self.facts.values()}
        leak = {p: frozenset(fid for fid, ns in homes.items() if not self.acl.allowed(p, "read", ns))
                for p in self.acl.principals}
        return Scenario(self.world.domain, self.seed, self.index, self.world.principals,
                        self.world.rules, dict(self.items), homes, leak, tuple(self.events))


def generate(domain: str, seed: int = 0, index: int = 0, *, probes: int = 420, size: str = "full") -> Scenario:
    """One scenario of ``domain``; the same arguments always give the same scenario."""
    if domain not in WORLDS:
        raise ValueError(f"unknown domain {domain!r}; expected one of {', '.join(DOMAINS)}")
    rng = random.Random(f"memwarden-govbench:{domain}:{seed}:{index}:{size}")
    world = WORLDS[domain](rng, SIZES[size])
    return _Generator(world, SIZES[size], rng, seed, index).run(probes)


def generate_all(seed: int, total_probes: int, *, scenarios_per_domain: int = 3, size: str = "full",
                 domains: Iterable[str] = DOMAINS) -> list[Scenario]:
    """Every scenario of a run, ``total_probes`` split as evenly as possible over them."""
    domains = list(domains)
    slots = [(d, i) for d in domains for i in range(scenarios_per_domain)]
    share = [total_probes // len(slots) + (1 if j < total_probes % len(slots) else 0) for j in range(len(slots))]
    return [generate(d, seed, i, probes=q, size=size) for (d, i), q in zip(slots, share)]
