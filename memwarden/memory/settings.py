"""``Settings``: the tunables of a Memory, checked when it opens."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from memwarden.core.errors import InvalidRequest
from memwarden.memory.partitioned import check_breadth, check_depth

#: What ``Settings.search_index`` accepts (memwarden.memory.derived).
SEARCH_INDEX = ("sq8", "float32", "off")
#: The default: exact. 8-bit codes halve the index's RAM but measured recall@10 0.976-0.985 on
#: 100k uniformly random rows whatever their ranges were trained with (issue 19 asks 0.98;
#: benchmarks/README.md), float32 1.00 at the same search latency.
DEFAULT_SEARCH_INDEX = "float32"


@dataclass(frozen=True, slots=True)
class Settings:
    """Tunables of a Memory, passed as keyword arguments to ``Memory.open``.

    ``count_withheld``: count, for every search, the records under the searched prefix that
    policy hid (two small id-only queries per partition the caller may not read, and one per
    partition it may read in part; off by default).
    ``quorum``: distinct approvers (never the writer) needed to release a quarantined write,
    and distinct rejections that reject it. With n = 3f + 1 voters, a quorum of 2f + 1
    means f colluders can never release a write alone.
    ``review_timeout``: seconds a quarantined write waits for its quorum; after that it is
    rejected (fail closed).
    ``lessons``: the core writes a lesson record (see :mod:`memwarden.guards.lessons`) when
    validators reject a write, when reviewers reject a quarantined one, and when a record is
    retracted as poisoned.
    ``cache_ttl``: seconds after which the lesson and subject caches of the write path are
    read again from the store (None: never, right for an embedded store only this process
    writes; ``Memory.connect`` uses 30, since other processes may write to the server).
    ``partition_depth``: how many leading namespace labels choose a record's partition (one
    Chroma collection each) in a new store; None keeps an existing store's depth, or 2 for a
    new one (docs/performance.md). ``repartition``: migrate an existing store to
    ``partition_depth`` instead of refusing to open it at another depth.
    ``search_threads``: partitions queried side by side by one search.
    ``search_breadth``: how many candidates Chroma's HNSW index weighs per partition query
    (its ``ef_search``; None: Chroma's default, 100). Wider finds more of the true nearest
    rows and costs time (docs/performance.md); it applies to new partitions at once and to
    existing ones from the next time a process loads them.
    ``search_index``: how an embedded store's derived in-RAM search index holds vectors:
    "float32" (exact, the default), "sq8" (8-bit codes, a quarter of the vector RAM, recall
    about 0.98 on hard data), or "off" (every
    search queries Chroma partition by partition); see docs/performance.md. A store behind a
    Chroma server (``Memory.connect``) has none.
    """

    count_withheld: bool = False
    quorum: int = 2
    review_timeout: float = 7 * 86400.0
    lessons: bool = True
    cache_ttl: float | None = None
    partition_depth: int | None = None
    repartition: bool = False
    search_threads: int = 4
    search_breadth: int | None = None
    search_index: str = DEFAULT_SEARCH_INDEX

    def __post_init__(self) -> None:
        if isinstance(self.quorum, bool) or not isinstance(self.quorum, int) or self.quorum < 1:
            raise InvalidRequest(f"quorum must be a positive integer, got {self.quorum!r}")
        if not isinstance(self.review_timeout, (int, float)) or not self.review_timeout > 0:
            raise InvalidRequest(f"review_timeout must be a positive number of seconds, got {self.review_timeout!r}")
        if self.cache_ttl is not None and (not isinstance(self.cache_ttl, (int, float)) or not self.cache_ttl > 0):
            raise InvalidRequest(f"cache_ttl must be a positive number of seconds or None, got {self.cache_ttl!r}")
        if not isinstance(self.lessons, bool):
            raise InvalidRequest(f"lessons must be True or False, got {self.lessons!r}")
        if isinstance(self.search_threads, bool) or not isinstance(self.search_threads, int) or self.search_threads < 1:
            raise InvalidRequest(f"search_threads must be a positive integer, got {self.search_threads!r}")
        check_breadth(self.search_breadth)
        if self.search_index not in SEARCH_INDEX:
            raise InvalidRequest(f"search_index must be one of {', '.join(map(repr, SEARCH_INDEX))}, "
                                 f"got {self.search_index!r}")
        check_depth(self.partition_depth)
        if not isinstance(self.repartition, bool):
            raise InvalidRequest(f"repartition must be True or False, got {self.repartition!r}")

    def backend_options(self) -> dict[str, Any]:
        """The options a :class:`PartitionedBackend` takes from these settings."""
        return {"depth": self.partition_depth, "repartition": self.repartition, "workers": self.search_threads,
                "breadth": self.search_breadth}
