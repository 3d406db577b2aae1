"""The pure parts of retrieval: fusion, BM25 over in-scope postings, typed evidence, time."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta, timezone

import pytest
from hypothesis import given, settings, strategies as st

from memwarden.guards.values import procedure_values
from memwarden.memory.lexical import LexicalIndex, bm25, terms
from memwarden.core.records import Kind, MemoryRecord, SearchHit
from memwarden.memory.retrieval import RRF_K, compose, estimate_tokens, fuse, in_time, time_filter, timeframe

pytestmark = pytest.mark.unit

UTC = timezone.utc


def test_fuse_rewards_agreement_and_normalises() -> None:
    fused = fuse([["a", "b", "c"], ["b", "d"]])
    assert [i for i, _ in fused] == ["b", "a", "d", "c"]
    scores = dict(fused)
    assert scores["b"] == pytest.approx((1 / (RRF_K + 2) + 1 / (RRF_K + 1)) / (2 / (RRF_K + 1)))
    assert fuse([["x"], ["x"]]) == [("x", pytest.approx(1.0))]
    assert dict(fuse([["x"], []]))["x"] == pytest.approx(0.5)
    assert fuse([]) == [] and fuse([[], []]) == []


def test_fuse_breaks_ties_by_first_appearance() -> None:
    # a and d are both first in one leg only: equal scores, earlier leg first.
    assert [i for i, _ in fuse([["a", "b"], ["d", "e"]])] == ["a", "d", "b", "e"]


def test_terms_stem_fold_and_keep_codes() -> None:
    assert terms("The Allergies of patient P12") == ["allergi", "patient", "p12"]
    assert terms("INV-2024-0042") == ["inv", "2024", "0042"]
    assert terms("Ｒｕｎｎｉｎｇ") == terms("running") == ["run"]  # NFKC, case folding, stemming
    assert terms("the of and") == []


def test_bm25_ranks_by_rarity_and_length_within_the_given_postings() -> None:
    rows = [("rare", "d1", 1, 5), ("common", "d1", 1, 5), ("common", "d2", 1, 5), ("common", "d3", 2, 6),
            ("common", "d4", 1, 30)]
    ranked = bm25(rows)
    # d1 also has the rare word; d3 says "common" twice; d4 says it once in a long text.
    assert [i for i, _ in ranked] == ["d1", "d3", "d2", "d4"]
    assert bm25(rows, 2) == ranked[:2]
    assert bm25([]) == []


def _hit(content: str, kind: str, score: float) -> SearchHit:
    record = MemoryRecord(id=f"m-{content}", namespace=("a",), content=content, writer="w", kind=kind)
    return SearchHit(record=record, score=score)


def test_compose_takes_turns_per_kind_within_the_budget() -> None:
    hits = [_hit("fact one " * 3, "fact", 0.9), _hit("fact two", "fact", 0.8), _hit("rule one", "rule", 0.7),
            _hit("an event", "event", 0.6), _hit("pref one", "preference", 0.5)]
    chosen = compose(hits, 100, kinds=[Kind.RULE, Kind.FACT])
    assert [h.record.content for h in chosen] == ["fact one " * 3, "fact two", "rule one"]  # rank order kept
    tight = compose(hits, estimate_tokens("rule one") + estimate_tokens("fact two"), kinds=[Kind.RULE, Kind.FACT])
    assert [h.record.content for h in tight] == ["fact two", "rule one"]  # the long fact is skipped, not the end
    assert [h.record.kind for h in compose(hits, 100, limit=2)] == [Kind.FACT, Kind.RULE]  # one of each first
    assert compose(hits, 1) == []


def test_compose_drops_repeated_texts_and_refuses_a_zero_budget() -> None:
    hits = [_hit("same", "fact", 0.9), SearchHit(record=_hit("same", "fact", 0.8).record.model_copy(
        update={"id": "other"}), score=0.8), _hit("different", "fact", 0.7)]
    assert [h.record.id for h in compose(hits, 100)] == ["m-same", "m-different"]
    with pytest.raises(ValueError):
        compose(hits, 0)


def test_estimate_tokens() -> None:
    assert estimate_tokens("") == 0
    assert estimate_tokens("one two three") == 4
    assert estimate_tokens("a b c d e f g h") == 8  # never fewer than the words


def test_time_filter_and_in_time_agree() -> None:
    t = datetime(2023, 5, 10, tzinfo=UTC)
    rec = MemoryRecord(id="m", namespace=("a",), content="x", writer="w", created_at=t + timedelta(days=3),
                       valid_from=t, valid_to=t + timedelta(days=5))
    assert time_filter() == {}
    assert time_filter(as_of=t) == {"$and": [{"t_from": {"$lte": t.timestamp()}}, {"t_to": {"$gt": t.timestamp()}}]}
    assert in_time(rec, as_of=t) and not in_time(rec, as_of=t + timedelta(days=5))
    assert in_time(rec, time_range=timeframe("May 2023")) and not in_time(rec, time_range=timeframe("June 2023"))
    assert in_time(rec, created_after=t) and not in_time(rec, created_before=t + timedelta(days=3))
    undated = rec.model_copy(update={"valid_from": None, "valid_to": None})
    assert in_time(undated, as_of=t + timedelta(days=3)) and not in_time(undated, as_of=t)  # holds from its write


@pytest.mark.parametrize(("phrase", "start", "end"), [
    ("today", "2024-03-13", "2024-03-14"),
    ("yesterday", "2024-03-12", "2024-03-13"),
    ("this week", "2024-03-11", "2024-03-18"),      # weeks start on Monday
    ("last week", "2024-03-04", "2024-03-11"),
    ("this month", "2024-03-01", "2024-04-01"),
    ("last month", "2024-02-01", "2024-03-01"),
    ("last year", "2023-01-01", "2024-01-01"),
    ("in May 2023", "2023-05-01", "2023-06-01"),
    ("December, 2023", "2023-12-01", "2024-01-01"),
    ("dec 2023", "2023-12-01", "2024-01-01"),
    ("2023", "2023-01-01", "2024-01-01"),
    ("2023-05", "2023-05-01", "2023-06-01"),
    ("2023-05-07", "2023-05-07", "2023-05-08"),
])
def test_timeframe_phrases(phrase: str, start: str, end: str) -> None:
    now = datetime(2024, 3, 13, 15, 30, tzinfo=UTC)  # a Wednesday
    assert timeframe(phrase, now) == (datetime.fromisoformat(start).replace(tzinfo=UTC),
                                      datetime.fromisoformat(end).replace(tzinfo=UTC))


def test_timeframe_relative_spans_and_refusals() -> None:
    now = datetime(2024, 3, 13, 15, 30, tzinfo=UTC)
    assert timeframe("last 3 days", now) == (now - timedelta(days=3), now)
    assert timeframe("the past 2 weeks", now) == (now - timedelta(weeks=2), now)
    for bad in ("soon", "in Smarch 2023", "2023-13"):
        with pytest.raises(ValueError):
            timeframe(bad, now)
    with pytest.raises(ValueError):
        timeframe("today", datetime(2024, 3, 13))


@contextmanager
def _indexed(tmp_path_factory: pytest.TempPathFactory,
             docs: list[tuple[list[str], str, str]]) -> Iterator[tuple[LexicalIndex, list[str], list[str]]]:
    """A fresh index of ``docs`` (words, writer, source), with their ids and texts."""
    index = LexicalIndex(tmp_path_factory.mktemp("lexical") / "lexical.sqlite3")
    try:
        ids = [f"d{i}" for i in range(len(docs))]
        texts = [" ".join(words) for words, _, _ in docs]
        index.upsert(ids, texts, [{"writer": writer, "source": source, "status": "active"} for _, writer, source in docs])
        yield index, ids, texts
    finally:
        index.close()


WORDS = ["acme", "invoice", "paid", "iban", "ledger", "supplier", "call", "back", "DE89370400440532013000", "5 mg"]
#: Records of WORDS, each with its writer and source.
_DOCS = st.lists(st.tuples(st.lists(st.sampled_from(WORDS), min_size=1, max_size=6), st.sampled_from("abc"),
                           st.sampled_from(["user", "agent"])), min_size=1, max_size=25)


@settings(max_examples=60, deadline=None)
@given(_DOCS,
       st.lists(st.sampled_from(WORDS), min_size=1, max_size=4), st.integers(1, 10),
       st.sets(st.sampled_from(["account", "amount:mg", "destination"])))
def test_voices_rank_every_match_as_search_does_with_its_writer(tmp_path_factory: pytest.TempPathFactory,
                                                                docs: list[tuple[list[str], str, str]],
                                                                query: list[str], k: int, holding: set[str]) -> None:
    """The contradiction check's one query (memory/nearby.py) ranks exactly as the lexical leg:
    its first k are search's k, it holds every match, and each carries its own writer, source
    and whether its text holds one of the categories asked about."""
    with _indexed(tmp_path_factory, docs) as (index, ids, texts):
        text, where = " ".join(query), {"status": "active"}
        voices = index.voices(text, where, holding)
        assert [(rid, score) for rid, score, *_ in voices][:k] == index.search(text, k, where)
        matched = {rid for rid, t in zip(ids, texts) if set(terms(t)) & set(terms(text))}
        assert {rid for rid, *_ in voices} == matched
        written = {rid: (writer, source) for rid, (_, writer, source) in zip(ids, docs)}
        holds = {rid: bool(procedure_values(t).held() & holding) for rid, t in zip(ids, texts)}
        assert all(written[rid] == (writer, source) and holds[rid] is held for rid, _, writer, source, held in voices)


@settings(max_examples=60, deadline=None)
@given(_DOCS,
       st.lists(st.sampled_from(WORDS), min_size=1, max_size=4),
       st.sets(st.sampled_from(["account", "amount:mg", "destination"]), min_size=1))
def test_the_holders_of_a_query_are_the_same_from_either_plan(tmp_path_factory: pytest.TempPathFactory,
                                                              docs: list[tuple[list[str], str, str]],
                                                              query: list[str], holding: set[str]) -> None:
    """``only_holding`` ranks the matches that hold one of the categories by BM25 over them
    alone, and the query started from the holders gives exactly what the query started from
    the terms gives (the index chooses between them by their counts)."""
    with _indexed(tmp_path_factory, docs) as (index, ids, texts):
        text, where = " ".join(query), {"status": "active"}
        plans = []
        for fewer in (True, False):
            index._fewer_holders = lambda words, categories, fewer=fewer: fewer  # type: ignore[method-assign]
            plans.append(index.voices(text, where, holding, only_holding=True))
        assert plans[0] == plans[1]
        holders = {rid for rid, t in zip(ids, texts) if procedure_values(t).held() & holding}
        expected = bm25([(term, rid, terms(t).count(term), len(terms(t))) for rid, t in zip(ids, texts)
                         if rid in holders for term in dict.fromkeys(terms(t)) if term in terms(text)])
        assert [(rid, score) for rid, score, *_ in plans[0]] == expected
        assert all(held for *_, held in plans[0])


def test_the_plan_follows_the_counts(tmp_path_factory: pytest.TempPathFactory) -> None:
    """From the holders when they are fewer than half the terms' postings (none: nothing to
    read), from the terms otherwise."""
    index = LexicalIndex(tmp_path_factory.mktemp("lexical") / "lexical.sqlite3")
    try:
        texts = [f"acme invoice ledger note {i}" for i in range(40)] + ["acme invoice paid to DE89370400440532013000"]
        index.upsert([f"d{i}" for i in range(len(texts))], texts, [{"status": "active"}] * len(texts))
        assert index._fewer_holders(terms("acme invoice ledger"), ["account"])
        assert not index._fewer_holders(terms("paid"), ["account"])
        assert index._fewer_holders(terms("acme"), ["check"])  # no holder: nothing to read
    finally:
        index.close()
