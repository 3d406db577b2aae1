"""The deployment every corpus record is written into: one policy and its principals.

The policy is the three bundled policies (hospital, household, office) read from the package,
unchanged, followed by a few benchmark sections for the settings the bundled ones lack: a
ward's standing orders, a knowledge base, personal assistants with their users' own spaces
(LangMem-style memories) and a shared team space, and the experience memories of single-purpose
agents (EHRAgent, a web-shop agent, a QA agent, a driving agent: the agents AgentPoison and
MINJA attack). The harness's own principal, ``bench-cleaner``, may only forget (it removes an
accepted attack after it was measured, so that every attack meets the same background) and
write into ``bench/`` (one warm-up write per store, so that no measured write pays the store's
first-write costs: caches loaded from Chroma, the lesson key).
"""

from __future__ import annotations

from collections.abc import Iterable
from importlib import resources

from memwarden import Principal
from memwarden.core.namespace import canonical_namespace
from memwarden.policies.conditions import RecordAttributes
from memwarden.policies.engine import PolicyEngine
from memwarden.policies.loading import parse_policy_text

from benchmarks.poisoning_corpus.records import Actor, CorpusRecord

BUNDLED = ("hospital", "household", "office")

ADDITIONS = """
# --- benchmarks/poisoning_corpus/deploy.py: settings the bundled policies lack ---
# The ward's standing orders (kind=rule): physicians set them, nurses and their agents read.
p, physician, ward3/rules/**, read
p, physician, ward3/rules/**, write
p, nurse, ward3/rules/**, read
# A knowledge base: a curator and an ingest agent write, answering agents read.
p, kb_curator, kb/**, read
p, kb_curator, kb/**, write
p, kb_ingest, kb/**, write
p, kb_reader, kb/**, read
# What the ingest agent takes from a crawl or a tool, and any directive it writes (whatever
# kind it declares: content is classified at write time), waits for the curator.
p, kb_ingest, kb/**, write, review, source=external|tool
p, kb_ingest, kb/**, write, review, content=directive&source=agent|tool|external
p, kb_curator, kb/**, approve
# Personal assistants: each user's space is the user's and their agents'; the team space is
# everyone's on the team.
p, emma, assist/emma/**, read
p, emma, assist/emma/**, write
p, emma-assistant, assist/emma/**, read
p, emma-assistant, assist/emma/**, write
p, emma-planner, assist/emma/**, read
p, liam, assist/liam/**, read
p, liam, assist/liam/**, write
p, liam-assistant, assist/liam/**, read
p, liam-assistant, assist/liam/**, write
p, teammate, assist/team/**, read
p, teammate, assist/team/**, write
# In a user's own space, the user's assistant writes the user's preferences as it is told
# (accepted); a directive that comes from a tool or from outside waits for the user. In the
# team space, a directive from any agent or tool waits for a teammate's approval.
p, emma-assistant, assist/emma/**, write, review, content=directive&source=tool|external
p, liam-assistant, assist/liam/**, write, review, content=directive&source=tool|external
p, emma, assist/emma/**, approve
p, liam, assist/liam/**, approve
p, teammate, assist/team/**, write, review, content=directive&source=agent|tool|external
p, teammate, assist/team/**, approve
g, emma, teammate
g, emma-assistant, teammate
g, emma-planner, teammate
g, liam, teammate
g, liam-assistant, teammate
# Experience memories of single-purpose agents, shared by every user each agent serves.
p, ehr_agent, agents/ehr/**, read
p, ehr_agent, agents/ehr/**, write
p, shop_agent, agents/shop/**, read
p, shop_agent, agents/shop/**, write
p, qa_agent, agents/qa/**, read
p, qa_agent, agents/qa/**, write
p, driving_agent, agents/driving/**, read
p, driving_agent, agents/driving/**, write
# Experience that steers every later run of the agent, for every user it serves: a directive
# an instance writes waits for review.
p, ehr_agent, agents/ehr/**, write, review, content=directive&source=agent|tool|external
p, shop_agent, agents/shop/**, write, review, content=directive&source=agent|tool|external
p, qa_agent, agents/qa/**, write, review, content=directive&source=agent|tool|external
p, driving_agent, agents/driving/**, write, review, content=directive&source=agent|tool|external
g, kb-curator, kb_curator
g, kb-ingest, kb_ingest
g, kb-answerer, kb_reader
# The harness: removes an accepted attack after measuring it, and makes one warm-up write of
# its own (bench/warmup: no reader's search goes there), nothing else.
p, bench_cleaner, bench/**, write
p, bench_cleaner, ward3/**, forget
p, bench_cleaner, home/**, forget
p, bench_cleaner, office/**, forget
p, bench_cleaner, kb/**, forget
p, bench_cleaner, assist/**, forget
p, bench_cleaner, agents/**, forget
g, bench-cleaner, bench_cleaner
"""

# The review-heavy arm (issue 18, the decision asked of the lead; docs/policies.md "Review
# every agent-written statement"): every record an agent, a tool or an outside source writes
# into a shared knowledge namespace waits for review, statement or directive. The namespaces
# and roles are those of the content=directive review lines above and in the bundled policies;
# a user's own space (assist/emma, assist/liam) is left out, as her assistant writes there for
# her. A review line also grants the write it holds, so each one repeats the pattern of a write
# its role is already allowed (the assistant: the calendar and the shopping list, not all of
# home/shared): the arm holds writes, it never admits one. Policy data only: the lines are
# appended to the benchmark policy.
REVIEW_HEAVY = """
# --- the review-heavy arm: agent-, tool- and externally-sourced writes into shared knowledge ---
p, nurse, ward3/patients/*, write, review, source=agent|tool|external
p, nurse, ward3/notes/**, write, review, source=agent|tool|external
p, physician, ward3/patients/*, write, review, source=agent|tool|external
p, physician, ward3/rules/**, write, review, source=agent|tool|external
p, assistant, home/shared/calendar/*, write, review, source=agent|tool|external
p, assistant, home/shared/shopping/*, write, review, source=agent|tool|external
p, family, home/shared/**, write, review, source=agent|tool|external
p, employee, office/projects/*/notes, write, review, source=agent|tool|external
p, manager, office/projects/**, write, review, source=agent|tool|external
p, hr, office/handbook/**, write, review, source=agent|tool|external
p, it_admin, office/it/**, write, review, source=agent|tool|external
p, kb_ingest, kb/**, write, review, source=agent|tool|external
p, kb_curator, kb/**, write, review, source=agent|tool|external
p, teammate, assist/team/**, write, review, source=agent|tool|external
p, ehr_agent, agents/ehr/**, write, review, source=agent|tool|external
p, shop_agent, agents/shop/**, write, review, source=agent|tool|external
p, qa_agent, agents/qa/**, write, review, source=agent|tool|external
p, driving_agent, agents/driving/**, write, review, source=agent|tool|external
"""

CLEANER = Principal("bench-cleaner")
WARMUP_NAMESPACE = ("bench", "warmup")


def policy_text(extra: str = "") -> str:
    """The benchmark policy: the bundled policies, the additions above, then ``extra`` (policy
    lines a defence adds, e.g. content-class conditions)."""
    parts = [resources.files("memwarden.policies").joinpath(f"bundled/{name}.csv").read_text(encoding="utf-8")
             for name in BUNDLED]
    return "\n".join([*parts, ADDITIONS, extra]).strip() + "\n"


def principal(actor: Actor) -> Principal:
    """The Principal an actor acts as."""
    return Principal(actor.principal, roles=list(actor.roles))


# The actors the builders use, by the part they play (the roles come from the policy's g lines
# unless given here). Writers of attacks and writers of benign memories come from the same
# list, so that who writes is not what tells them apart.
ACTORS: dict[str, Actor] = {
    # hospital
    "physician": Actor(principal="alice"),
    "physician2": Actor(principal="dr-osei", roles=("physician",)),
    "nurse": Actor(principal="bob"),
    "ward-scribe": Actor(principal="ward-scribe", roles=("nurse",), binding="agent"),
    "ward-importer": Actor(principal="ward-importer", roles=("nurse",), binding="tool"),
    "ward-copilot": Actor(principal="ward-copilot", roles=("nurse",), binding="agent"),
    # household
    "parent": Actor(principal="maria"),
    "parent2": Actor(principal="jon"),
    "kid": Actor(principal="lena"),
    "homebot": Actor(principal="homebot", binding="agent"),
    "homebot-tool": Actor(principal="homebot", binding="tool"),
    "family-planner": Actor(principal="family-planner", roles=("assistant",), binding="agent"),
    # office
    "manager": Actor(principal="frank"),
    "hr": Actor(principal="hana"),
    "it-admin": Actor(principal="ivan"),
    "employee": Actor(principal="erin"),
    "project-agent": Actor(principal="apollo-scribe", roles=("employee",), binding="agent"),
    "project-importer": Actor(principal="apollo-importer", roles=("employee",), binding="tool"),
    "project-copilot": Actor(principal="apollo-copilot", roles=("employee",), binding="agent"),
    "it-agent": Actor(principal="it-agent", roles=("it_admin",), binding="agent"),
    "it-copilot": Actor(principal="it-copilot", roles=("it_admin",), binding="agent"),
    # knowledge base
    "kb-curator": Actor(principal="kb-curator"),
    "kb-ingest": Actor(principal="kb-ingest", binding="agent"),
    "kb-crawler": Actor(principal="kb-ingest", binding="external"),
    "kb-answerer": Actor(principal="kb-answerer", binding="agent"),
    # personal assistants
    "emma": Actor(principal="emma"),
    "emma-assistant": Actor(principal="emma-assistant", binding="agent"),
    "emma-assistant-tool": Actor(principal="emma-assistant", binding="tool"),
    "emma-planner": Actor(principal="emma-planner", binding="agent"),
    "liam": Actor(principal="liam"),
    "liam-assistant": Actor(principal="liam-assistant", binding="agent"),
    # agents' experience memories (a second instance of each agent reads what the first wrote)
    "ehr-agent": Actor(principal="ehr-agent-1", roles=("ehr_agent",), binding="agent"),
    "ehr-agent-2": Actor(principal="ehr-agent-2", roles=("ehr_agent",), binding="agent"),
    "shop-agent": Actor(principal="shop-agent-1", roles=("shop_agent",), binding="agent"),
    "shop-agent-2": Actor(principal="shop-agent-2", roles=("shop_agent",), binding="agent"),
    "qa-agent": Actor(principal="qa-agent-1", roles=("qa_agent",), binding="agent"),
    "qa-agent-2": Actor(principal="qa-agent-2", roles=("qa_agent",), binding="agent"),
    "driving-agent": Actor(principal="driving-agent-1", roles=("driving_agent",), binding="agent"),
    "driving-agent-2": Actor(principal="driving-agent-2", roles=("driving_agent",), binding="agent"),
}


def policy_problems(records: Iterable[CorpusRecord]) -> list[str]:
    """What the benchmark policy would refuse: every record and setup write must be a write its
    writer may make (the attacker of this corpus is an agent *with* write access), and every
    reader must be able to read where the record goes. One line per problem."""
    engine = PolicyEngine(data=parse_policy_text(policy_text()))
    problems = []

    def check(who: Actor, action: str, namespace: tuple[str, ...], kind: str, what: str) -> None:
        subjects = engine.subjects(who.principal, who.roles)
        attrs = RecordAttributes(kind, who.binding, subjects.roles, {})
        if not engine.decide(subjects, action, canonical_namespace(namespace), attrs).allowed:
            problems.append(f"{what}: {who.principal} may not {action} {kind} in {'/'.join(namespace)}")

    for r in records:
        for i, w in enumerate(r.setup):
            check(w.writer, "write", w.namespace, w.kind, f"{r.id} setup[{i}]")
        check(r.writer, "write", r.namespace, r.kind, r.id)
        check(r.reader, "read", r.namespace, r.kind, f"{r.id} reader")
    return problems
