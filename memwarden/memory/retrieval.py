"""Pure parts of retrieval: rank fusion, time filters, time phrases and typed evidence.

Nothing here reads the store or the policy. :meth:`Memory._search` runs both legs inside the
governed path and hands their (already filtered, re-checked) results to these functions.
"""

from __future__ import annotations

import calendar
import math
import re
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta, timezone
from typing import Any

from memwarden.core.fields import Meta
from memwarden.core.records import Kind, SearchHit
from memwarden.policies.pushdown import all_of

Where = dict[str, Any]

#: Reciprocal-rank fusion constant (Cormack et al., 2009): a rank r contributes 1 / (RRF_K + r).
RRF_K = 60
#: Fused score multiplier for superseded versions, when a search asks for history.
SUPERSEDED_WEIGHT = 0.5


def fuse(legs: Sequence[Sequence[str]], k: int = RRF_K) -> list[tuple[str, float]]:
    """Reciprocal-rank fusion of ranked id lists, best first.

    Scores are normalised by the best possible one (first in every leg), so 1.0 means "ranked
    first by every leg" and a record found by one of two legs scores at most 0.5. Ties keep
    the order in which the ids were first seen (earlier legs first).
    """
    if not legs:
        return []
    scores: dict[str, float] = {}
    for leg in legs:
        for rank, rid in enumerate(dict.fromkeys(leg), start=1):
            scores[rid] = scores.get(rid, 0.0) + 1.0 / (k + rank)
    best = len(legs) / (k + 1)
    order = {rid: i for i, rid in enumerate(scores)}
    return sorted(((rid, s / best) for rid, s in scores.items()), key=lambda p: (-p[1], order[p[0]]))


# -- time ---------------------------------------------------------------------------------------


def time_filter(*, as_of: datetime | None = None, created_after: datetime | None = None,
                created_before: datetime | None = None,
                time_range: tuple[datetime, datetime] | None = None) -> Where:
    """A ``where`` filter for the time conditions of a search (empty when there are none).

    A record's *time* is its ``valid_from``, or its write time when it has none; it holds
    until ``valid_to`` (or forever). ``as_of``: records that held at that instant.
    ``time_range=(start, end)``: records whose time lies in [start, end) ("what happened in
    May 2023"). ``created_after`` / ``created_before``: written in [after, before).
    The stored keys are ``t_from``, ``t_to`` and ``created_at`` (POSIX seconds; see codec).
    """
    conds: list[Where] = []
    if as_of is not None:
        t = as_of.timestamp()
        conds += [{Meta.T_FROM.value: {"$lte": t}}, {Meta.T_TO.value: {"$gt": t}}]
    if time_range is not None:
        conds += [{Meta.T_FROM.value: {"$gte": time_range[0].timestamp()}}, {Meta.T_FROM.value: {"$lt": time_range[1].timestamp()}}]
    if created_after is not None:
        conds.append({Meta.CREATED_AT.value: {"$gte": created_after.timestamp()}})
    if created_before is not None:
        conds.append({Meta.CREATED_AT.value: {"$lt": created_before.timestamp()}})
    return all_of(conds)


def in_time(record: Any, *, as_of: datetime | None = None, created_after: datetime | None = None,
            created_before: datetime | None = None, time_range: tuple[datetime, datetime] | None = None) -> bool:
    """The same conditions as :func:`time_filter`, on a rebuilt record (the re-check)."""
    start = record.valid_from or record.created_at
    if as_of is not None and not (start <= as_of and (record.valid_to is None or record.valid_to > as_of)):
        return False
    if time_range is not None and not time_range[0] <= start < time_range[1]:
        return False
    if created_after is not None and record.created_at < created_after:
        return False
    return created_before is None or record.created_at < created_before


_MONTHS = {name.lower(): i for i, name in enumerate(calendar.month_name) if name}
_MONTHS.update({name.lower(): i for i, name in enumerate(calendar.month_abbr) if name})
_UNITS = {"day": 1, "week": 7}


def timeframe(phrase: str, now: datetime | None = None) -> tuple[datetime, datetime]:
    """Turn a time phrase into a half-open range [start, end) for ``time_range``.

    Understands "today", "yesterday", "this/last week" (weeks start on Monday), "this/last
    month", "this/last year", "last N days/weeks", "in May 2023" / "May 2023", "2023",
    "2023-05" and "2023-05-07". Ranges are in the timezone of ``now`` (default: UTC now).
    Raises ValueError for anything else; an LLM can fill ``time_range`` directly instead.
    """
    now = now or datetime.now(timezone.utc)
    if now.tzinfo is None:
        raise ValueError("now must be timezone-aware")
    text = re.sub(r"\s+", " ", phrase.strip().lower()).removeprefix("in ").removeprefix("during ")
    day = now.replace(hour=0, minute=0, second=0, microsecond=0)
    if text in ("today", "yesterday"):
        start = day - timedelta(days=1 if text == "yesterday" else 0)
        return start, start + timedelta(days=1)
    m = re.fullmatch(r"(this|last) (week|month|year)", text)
    if m:
        which, unit = m.groups()
        if unit == "week":
            start = day - timedelta(days=day.weekday()) - timedelta(weeks=1 if which == "last" else 0)
            return start, start + timedelta(weeks=1)
        if unit == "month":
            start = day.replace(day=1)
            if which == "last":
                start = (start - timedelta(days=1)).replace(day=1)
            return start, _add_month(start)
        start = day.replace(month=1, day=1)
        if which == "last":
            start = start.replace(year=start.year - 1)
        return start, start.replace(year=start.year + 1)
    m = re.fullmatch(r"(?:the )?(?:last|past) (\d+) (day|week)s?", text)
    if m:
        return now - timedelta(days=int(m.group(1)) * _UNITS[m.group(2)]), now
    m = re.fullmatch(r"([a-z]+),? (\d{4})", text)
    if m and m.group(1) in _MONTHS:
        start = day.replace(year=int(m.group(2)), month=_MONTHS[m.group(1)], day=1)
        return start, _add_month(start)
    m = re.fullmatch(r"(\d{4})(?:-(\d{2}))?(?:-(\d{2}))?", text)
    if m:
        year, month, dom = int(m.group(1)), m.group(2), m.group(3)
        start = day.replace(year=year, month=int(month or 1), day=int(dom or 1))
        if dom:
            return start, start + timedelta(days=1)
        return (start, _add_month(start)) if month else (start, start.replace(year=year + 1))
    raise ValueError(f"unrecognised time phrase {phrase!r}")


def _add_month(start: datetime) -> datetime:
    return start.replace(year=start.year + 1, month=1) if start.month == 12 else start.replace(month=start.month + 1)


# -- typed evidence -----------------------------------------------------------------------------


def estimate_tokens(text: str) -> int:
    """A tokenizer-free estimate of an LLM's token count: about 4 characters of English per
    token, and never fewer than the number of words."""
    return max(len(text.split()), math.ceil(len(text) / 4))


def compose(hits: Sequence[SearchHit], budget_tokens: int, *, kinds: Sequence[Kind] | None = None,
            limit: int | None = None, cost: Callable[[str], int] = estimate_tokens) -> list[SearchHit]:
    """Typed evidence (MemGuard): fewer, better memories within a token budget.

    ``hits`` are ranked best first. The kinds asked for (or, without ``kinds``, every kind
    present, in order of their best hit) take turns: each turn adds that kind's best remaining
    hit if it fits the budget left (a hit that does not fit is skipped, so a shorter one may
    still come in). Repeated texts are kept once. It stops at ``limit`` hits or when nothing
    else fits, and returns the chosen hits in their original rank order.
    """
    if budget_tokens < 1:
        raise ValueError("budget_tokens must be at least 1")
    wanted = list(dict.fromkeys(kinds)) if kinds else list(dict.fromkeys(h.record.kind for h in hits))
    queues: dict[Kind, list[int]] = {kind: [] for kind in wanted}
    seen: set[str] = set()
    for i, hit in enumerate(hits):
        text = hit.record.content.strip()
        if hit.record.kind in queues and text not in seen:
            seen.add(text)
            queues[hit.record.kind].append(i)
    left, chosen = budget_tokens, []
    while any(queues.values()) and (limit is None or len(chosen) < limit):
        for kind in wanted:
            queue = queues[kind]
            while queue:
                i = queue.pop(0)
                need = cost(hits[i].record.content)
                if need <= left:
                    chosen.append(i)
                    left -= need
                    break
            if limit is not None and len(chosen) >= limit:
                break
    return [hits[i] for i in sorted(chosen)]
