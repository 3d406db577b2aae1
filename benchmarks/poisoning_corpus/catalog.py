"""The corpus's sources and the groups they are held out in.

Leave-one-source-out holds out a source's whole *group*: sources that share upstream material
(AgentDojo's injection goals appear in both ``agentdojo`` and ``buried-injections``; the two
generator sources share one author's templates and vocabularies) are never used to tune the
figure of one another, so a held-out figure is measured on material the tuning never saw.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class SourceInfo(BaseModel):
    """One source of the corpus."""

    model_config = ConfigDict(frozen=True)

    name: str
    group: str
    title: str


SOURCES: tuple[SourceInfo, ...] = (
    SourceInfo(name="poisonedrag", group="poisonedrag",
               title="PoisonedRAG adversarial passages (sleeepeer/PoisonedRAG, MIT)"),
    SourceInfo(name="bipia", group="bipia", title="BIPIA attack instructions and contexts (microsoft/BIPIA, MIT)"),
    SourceInfo(name="agentdojo", group="agentdojo",
               title="AgentDojo injection tasks and attack templates (ethz-spylab/agentdojo, MIT)"),
    SourceInfo(name="buried-injections", group="agentdojo",
               title="AgentDojo goals buried in tool output (rudratoshs/buried-injections, MIT)"),
    SourceInfo(name="agentpoison", group="agentpoison",
               title="AgentPoison backdoored memories (ChinmayB1/AgentPoison-Reproduction, MIT)"),
    SourceInfo(name="minja", group="minja", title="MINJA's published injection recipe (Dong et al. 2025)"),
    SourceInfo(name="amemguard", group="amemguard",
               title="A-MemGuard multi-domain poisons (cky332/AMemGuard, MIT)"),
    SourceInfo(name="injecagent", group="injecagent",
               title="InjecAgent attacker and user cases, published examples (Zhan et al. 2024)"),
    SourceInfo(name="llmail", group="llmail",
               title="LLMail-Inject attackers' emails and the challenge's benign emails (Microsoft, MIT)"),
    SourceInfo(name="redteamcua", group="redteamcua",
               title="RedTeamCUA forum and chat tutorials with an injected first step (OSU-NLP-Group/RedTeamCUA, Apache-2.0)"),
    SourceInfo(name="gen-directives", group="generator", title="this corpus's generator: directive-shaped texts"),
    SourceInfo(name="gen-facts", group="generator", title="this corpus's generator: procedure-changing facts"),
)

BY_NAME = {s.name: s for s in SOURCES}


def group_of(source: str) -> str:
    """The group a source is held out with (a source not in the catalog is its own group)."""
    info = BY_NAME.get(source)
    return info.group if info else source
