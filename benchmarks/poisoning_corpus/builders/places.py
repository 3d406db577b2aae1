"""Where the generator's records are written: the shared places of each setting, who writes
there (agents, tools and the owners), who reads, and the users' own spaces."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Place:
    """A namespace of the deployment and its parties (names of deploy.ACTORS)."""

    key: str
    namespace: tuple[str, ...]
    agents: tuple[str, ...]
    owner: str
    reader: str
    subject: str
    topic: str
    # The kinds an agent declares here, as often as listed (the policy refuses an agent's rule
    # in a patient's record, so an attacker does not try it there).
    kinds: tuple[str, ...] = ("fact", "fact", "fact", "rule", "preference")


PLACES = {p.key: p for p in (
    Place("ward", ("ward3", "notes", "handover"), ("ward-scribe", "ward-scribe", "ward-importer"), "nurse",
          "ward-copilot", "ward3", "ward 3 handover notes"),
    Place("patient", ("ward3", "patients", "p12"), ("ward-scribe",), "physician", "ward-copilot", "p12",
          "patient 12 on ward 3", ("fact", "fact", "preference")),
    Place("home", ("home", "shared", "calendar", "family"), ("homebot", "homebot", "homebot-tool"), "parent",
          "family-planner", "family", "the family calendar"),
    Place("office", ("office", "projects", "apollo", "notes"), ("project-agent", "project-agent", "project-importer"),
          "manager", "project-copilot", "apollo", "Apollo project notes"),
    Place("it", ("office", "it", "runbooks"), ("it-agent",), "it-admin", "it-copilot", "it", "IT runbooks"),
    Place("emma", ("assist", "emma", "notes"), ("emma-assistant", "emma-assistant", "emma-assistant-tool"), "emma",
          "emma-planner", "emma", "Emma's notes"),
    Place("team", ("assist", "team", "notes"), ("emma-assistant", "liam-assistant"), "liam", "emma-planner", "team",
          "the team's shared notes"),
)}

# Places only an owner or an authorised role writes (no agent has write access there).
AUTHORISED = {p.key: p for p in (
    Place("ward-rules", ("ward3", "rules", "standing-orders"), (), "physician", "ward-copilot", "ward3",
          "ward 3 standing orders"),
    Place("home-rules", ("home", "shared", "rules"), (), "parent", "family-planner", "family", "house rules"),
    Place("handbook", ("office", "handbook", "policies"), (), "hr", "project-copilot", "office", "the staff handbook"),
    Place("it-policy", ("office", "it", "policies"), (), "it-admin", "it-copilot", "it", "IT policies"),
)}

# Users' own spaces: (key, namespace, the user, the user's assistant or None, a reader).
OWN_SPACES = (
    ("emma", ("assist", "emma", "preferences"), "emma", "emma-assistant", "emma-planner"),
    ("liam", ("assist", "liam", "preferences"), "liam", "liam-assistant", "liam-assistant"),
    ("lena", ("home", "kids", "lena", "prefs"), "kid", None, "parent2"),
)
