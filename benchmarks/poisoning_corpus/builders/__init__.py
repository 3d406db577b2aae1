"""One builder per corpus source: each reads its upstream data (or its own templates) and
returns the source's records. ``benchmarks/poisoning_corpus/build.py`` runs them."""

from __future__ import annotations

from collections.abc import Callable

from benchmarks.poisoning_corpus.records import CorpusRecord


def builders() -> dict[str, Callable[[], list[CorpusRecord]]]:
    """Source name -> builder (imported lazily: each needs its mirror only when it runs)."""
    from benchmarks.poisoning_corpus.builders import (agentdojo, agentpoison, amemguard, bipia, gen_directives,
                                                      gen_facts, injecagent, llmail, minja, poisonedrag,
                                                      redteamcua)

    return {"poisonedrag": poisonedrag.build, "bipia": bipia.build, "agentdojo": agentdojo.build_agentdojo,
            "buried-injections": agentdojo.build_buried, "agentpoison": agentpoison.build, "minja": minja.build,
            "amemguard": amemguard.build, "injecagent": injecagent.build, "gen-directives": gen_directives.build,
            "gen-facts": gen_facts.build, "llmail": llmail.build,
            "redteamcua": redteamcua.build}
