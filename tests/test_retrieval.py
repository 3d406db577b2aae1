"""Hybrid search inside the governed path: both legs, the policy in both, time, typed evidence.

Every test uses a real embedded Memory (Chroma PersistentClient plus memwarden's lexical
index). Candidate lists are observed by wrapping the backend's two leg calls (the dense
``query`` and the lexical ``text_query``, and the index's own SQL search under it) and
recording what they return: a restricted record must never be among them, not merely be
filtered out of the final results.
"""

from __future__ import annotations

import sqlite3
from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np
import pytest

from memwarden import AccessDenied, InvalidRequest, Memory, Principal
from memwarden.memory.embeddings import HashingEmbedding, MiniLMEmbedding
from memwarden.memory.lexical import INDEX_FILE, IndexedBackend, terms
from memwarden.core.ops import SearchOp
from memwarden.memory.retrieval import estimate_tokens

pytestmark = pytest.mark.integration

POLICY = """
p, staff, clinic/**, read
p, staff, clinic/**, write
p, staff, clinic/**, update
p, staff, clinic/**, forget
p, staff, clinic/private/**, read, deny
p, staff, clinic/review/**, write, review
p, historian, clinic/**, history
p, boss, clinic/**, read
p, boss, clinic/**, write
p, boss, clinic/**, approve
p, dpo_role, clinic/**, erase
p, dpo_role, clinic/**, read
g, alice, staff
g, hank, staff
g, hank, historian
g, boss1, boss
g, boss2, boss
g, dpo, dpo_role
"""
ALICE, BOSS, HANK, DPO = Principal("alice"), Principal("boss1"), Principal("hank"), Principal("dpo")
T0 = datetime(2023, 5, 1, tzinfo=timezone.utc)


@pytest.fixture
def policy(tmp_path: Path) -> Path:
    path = tmp_path / "policy.csv"
    path.write_text(POLICY, encoding="utf-8")
    return path


@pytest.fixture
def mem(tmp_path: Path, policy: Path):
    memory = Memory.open(tmp_path / "data", policy=policy, embedding=HashingEmbedding())
    yield memory
    memory.close()


def indexed(memory: Memory) -> IndexedBackend:
    """The memory's lexically indexed backend, beneath the batch coalescing layer."""
    backend = memory._backend._inner
    assert isinstance(backend, IndexedBackend)
    return backend


class Legs:
    """Records what each leg of every search returned (ids only)."""

    def __init__(self, memory: Memory, monkeypatch: pytest.MonkeyPatch) -> None:
        self.dense: list[list[str]] = []
        self.lexical: list[list[str]] = []
        self.sql: list[list[str]] = []
        backend = indexed(memory)  # observing the legs is the point of the test
        query, text_query, search = backend.query_targets, backend.text_query, backend._index.search

        def spy_query(*args, **kwargs):
            got = query(*args, **kwargs)
            self.dense.append([row.id for row, _ in got])
            return got

        def spy_text(*args, **kwargs):
            got = text_query(*args, **kwargs)
            self.lexical.append([i for i, _ in got])
            return got

        def spy_sql(*args, **kwargs):
            got = search(*args, **kwargs)
            self.sql.append([i for i, _ in got])
            return got

        monkeypatch.setattr(backend, "query_targets", spy_query)
        monkeypatch.setattr(backend, "text_query", spy_text)
        monkeypatch.setattr(backend._index, "search", spy_sql)

    def seen(self) -> set[str]:
        return {i for leg in (self.dense, self.lexical, self.sql) for ids in leg for i in ids}


# -- both legs find what only they can find -----------------------------------------------------


@pytest.fixture(scope="module")
def minilm() -> MiniLMEmbedding:
    return MiniLMEmbedding()


def test_hybrid_finds_what_only_one_leg_finds(tmp_path: Path, policy: Path, minilm: MiniLMEmbedding) -> None:
    with Memory.open(tmp_path / "m", policy=policy, embedding=minilm) as mem:
        alice = mem.session(ALICE)
        notes = [
            "The quarterly meeting moved to the large conference room",
            "Invoice ZX-88412 from Globex was paid on Friday",
            "Remember to water the plants in the lobby",
            "The patient complained of a sore throat and a mild fever",
            "Lunch orders go to the front desk before eleven",
            "The new printer on floor two jams with thick paper",
            "Parking permits are renewed every January",
            "Dr. Okonkwo's pager number is 4471",
        ]
        recs = {n: alice.write(n, ("clinic", "notes")) for n in notes}
        code, pager, throat = recs[notes[1]], recs[notes[7]], recs[notes[3]]

        lexical_only = alice.search("ZX-88412", ("clinic",), k=1, mode="lexical")
        assert [h.record.id for h in lexical_only] == [code.id]
        hybrid = alice.search("ZX-88412", ("clinic",), k=2)
        assert hybrid[0].record.id == code.id and hybrid[0].bm25 is not None
        assert alice.search("4471", ("clinic",), k=1)[0].record.id == pager.id

        # No shared word at all: only the dense leg can find it, and hybrid still does.
        query = "someone has an illness with a high temperature"
        assert not set(terms(query)) & set(terms(throat.content))
        assert alice.search(query, ("clinic",), k=1, mode="lexical") == []
        top = alice.search(query, ("clinic",), k=2)
        assert top[0].record.id == throat.id and top[0].bm25 is None and top[0].similarity > 0.3


def test_scores_rank_the_results_in_every_mode(mem: Memory) -> None:
    alice = mem.session(ALICE)
    for text in ("alpha beta gamma", "alpha beta", "alpha", "delta epsilon"):
        alice.write(text, ("clinic", "notes"))
    for mode in ("hybrid", "dense", "lexical"):
        hits = alice.search("alpha beta gamma", ("clinic",), k=4, mode=mode)
        scores = [h.score for h in hits]
        assert scores == sorted(scores, reverse=True) and hits[0].record.content == "alpha beta gamma"
    best = alice.search("alpha beta gamma", ("clinic",), k=1)[0]
    assert best.score == pytest.approx(1.0)  # first in both legs


# -- adversarial: nothing unauthorised enters either candidate list -----------------------------


def test_no_restricted_record_enters_either_leg(mem: Memory, monkeypatch: pytest.MonkeyPatch) -> None:
    alice, boss = mem.session(ALICE), mem.session(BOSS)
    secret = "Vault code QX-7731 opens the pharmacy safe"
    ok = alice.write("The pharmacy safe is in room 4", ("clinic", "notes"))
    private = boss.write(secret, ("clinic", "private", "boss"))                       # policy: denied to alice
    quarantined = alice.write(secret + " (copy)", ("clinic", "review", "q"))           # review rule: quarantined
    assert quarantined.status.value == "quarantined"
    forgotten = alice.write(secret + " (old note)", ("clinic", "notes"))
    alice.forget(forgotten.id)
    expired = alice.write(secret + " (temporary)", ("clinic", "notes"), ttl=0.05)
    old = alice.write(secret + " (draft)", ("clinic", "notes"))
    alice.update(old.id, "The safe code was changed; ask the head pharmacist")     # old is superseded
    erased = alice.write(secret + " (patient copy)", ("clinic", "notes"), subjects=["p9"])
    mem.session(DPO).erase(subject="p9")
    import time

    time.sleep(0.1)
    forbidden = {private.id, quarantined.id, forgotten.id, expired.id, old.id, erased.id}
    legs = Legs(mem, monkeypatch)

    for mode in ("hybrid", "lexical", "dense"):
        for query in (secret, "QX-7731", "vault code pharmacy safe"):
            hits = alice.search(query, ("clinic",), k=10, mode=mode)
            assert not {h.record.id for h in hits} & forbidden
    assert legs.sql and legs.lexical and legs.dense
    assert not legs.seen() & forbidden, legs.seen() & forbidden
    assert ok.id in legs.seen()

    # The boss may read the private note; the same query then finds it in both legs.
    legs.dense.clear(), legs.lexical.clear(), legs.sql.clear()
    assert private.id in {h.record.id for h in boss.search(secret, ("clinic",), k=3)}
    assert private.id in {i for ids in legs.sql for i in ids} and private.id in {i for ids in legs.dense for i in ids}


def test_a_stale_index_entry_cannot_surface_a_record(mem: Memory) -> None:
    """If the index wrongly says a forgotten record is active (as after a crash between the
    two writes), the lexical leg may propose it, but the re-check on Chroma's row drops it."""
    alice = mem.session(ALICE)
    rec = alice.write("Zebra crossing repainted near gate K9", ("clinic", "notes"))
    active = dict(indexed(mem).fetch(ids=[rec.id])[0].metadata)
    alice.forget(rec.id)
    index = indexed(mem)._index
    index.update_metadata([rec.id], [active])  # the index now disagrees with Chroma
    index.done([rec.id])
    assert [i for i, _ in index.search("zebra K9", 5, {"status": "active"})] == [rec.id]
    assert alice.search("zebra crossing K9", ("clinic",), k=5, mode="lexical") == []
    assert alice.search("zebra crossing K9", ("clinic",), k=5) == []


def test_lexical_scores_ignore_records_out_of_scope(mem: Memory) -> None:
    """BM25 statistics come from in-scope records only: what others may not read cannot move
    a score (no document-frequency side channel)."""
    alice, boss = mem.session(ALICE), mem.session(BOSS)
    mine = alice.write("orchid delivery for the lobby", ("clinic", "notes"))
    alice.write("tulip delivery for the lobby", ("clinic", "notes"))
    before = alice.search("orchid delivery", ("clinic",), k=2, mode="lexical")
    for i in range(20):
        boss.write(f"orchid invoice number {i} for the board", ("clinic", "private", "boss"))
    after = alice.search("orchid delivery", ("clinic",), k=2, mode="lexical")
    assert [(h.record.id, h.score) for h in before] == [(h.record.id, h.score) for h in after]
    assert before[0].record.id == mine.id
    boss_view = boss.search("orchid delivery", ("clinic",), k=2, mode="lexical")
    assert boss_view[0].score != before[0].score  # the boss's scope has other statistics


# -- time -------------------------------------------------------------------------------------


def test_time_filters_apply_in_both_legs(mem: Memory, monkeypatch: pytest.MonkeyPatch) -> None:
    alice = mem.session(ALICE)
    may = alice.write("Team picnic at the lake", ("clinic", "events"), kind="event", valid_from=T0 + timedelta(days=6))
    june = alice.write("Team picnic at the park", ("clinic", "events"), kind="event",
                       valid_from=T0 + timedelta(days=40))
    lease = alice.write("The lake house lease runs through the summer", ("clinic", "facts"),
                        valid_from=T0 - timedelta(days=30), valid_to=T0 + timedelta(days=120))
    legs = Legs(mem, monkeypatch)
    in_may = (T0, T0 + timedelta(days=31))
    for mode in ("hybrid", "lexical", "dense"):
        hits = alice.search("team picnic", ("clinic",), k=5, mode=mode, time_range=in_may)
        assert [h.record.id for h in hits] == [may.id]
    assert june.id not in legs.seen() and lease.id not in legs.seen()

    def lake(**when) -> set[str]:
        return {h.record.id for h in alice.search("lake", ("clinic",), k=5, mode="lexical", **when)}

    assert lake(as_of=T0 + timedelta(days=100)) == {lease.id, may.id}  # an event with no end still holds
    assert lake(as_of=T0 + timedelta(days=200)) == {may.id}            # the lease has ended
    assert lake(as_of=T0 - timedelta(days=60)) == set()
    dense = alice.search("lake", ("clinic",), k=5, mode="dense", as_of=T0 + timedelta(days=200))
    assert {h.record.id for h in dense} == {may.id, june.id}           # the dense leg returns all that hold

    now = datetime.now(timezone.utc)
    assert len(alice.search("picnic", ("clinic",), k=5, mode="lexical", created_after=now - timedelta(minutes=5))) == 2
    assert alice.search("picnic", ("clinic",), k=5, created_before=now - timedelta(minutes=5)) == []


def test_history_is_opt_in_needs_permission_and_ranks_lower(mem: Memory) -> None:
    hank, alice = mem.session(HANK), mem.session(ALICE)
    old = hank.write("The clinic opens at 8am", ("clinic", "facts"), valid_from=T0)
    new = hank.update(old.id, "The clinic opens at 9am")
    assert [h.record.id for h in hank.search("clinic opens", ("clinic",), k=5)] == [new.id]
    both = hank.search("clinic opens", ("clinic",), k=5, include_superseded=True)
    assert [h.record.id for h in both] == [new.id, old.id]
    assert both[1].record.status.value == "superseded" and both[1].score < both[0].score
    # As of a moment before the update, the old version held and the new one did not yet.
    then = hank.search("clinic opens", ("clinic",), k=5, include_superseded=True, as_of=T0 + timedelta(days=1))
    assert [h.record.id for h in then] == [old.id]
    # Alice may read the namespace but not its history: no superseded version for her.
    assert [h.record.id for h in alice.search("clinic opens", ("clinic",), k=5, include_superseded=True)] == [new.id]


# -- typed evidence ---------------------------------------------------------------------------


def test_search_composes_kinds_within_a_token_budget(mem: Memory) -> None:
    alice = mem.session(ALICE)
    alice.write("Visitors must sign in at the front desk", ("clinic", "rules"), kind="rule")
    alice.write("Visitors badge policy: badges are returned when visitors leave the building at the end of the "
                "day, and lost badges are reported to security", ("clinic", "rules"), kind="rule")
    alice.write("Dr. Lee prefers visitors to call ahead", ("clinic", "prefs"), kind="preference")
    alice.write("Visitors came in on Monday for the open day", ("clinic", "events"), kind="event")
    alice.write("Visitors parking is on level B", ("clinic", "facts"), kind="fact")
    everything = alice.search("visitors", ("clinic",), k=10)
    assert len(everything) == 5
    composed = alice.search("visitors", ("clinic",), k=10, kinds=["rule", "preference"], budget_tokens=20)
    assert {h.record.kind.value for h in composed} == {"rule", "preference"}
    assert sum(estimate_tokens(h.record.content) for h in composed) <= 20
    assert len(composed) == 2  # the long rule does not fit next to the short one


# -- persistence, crash repair, erasure -------------------------------------------------------


def test_the_lexical_index_persists_across_restarts(tmp_path: Path, policy: Path) -> None:
    root = tmp_path / "m"
    with Memory.open(root, policy=policy, embedding=HashingEmbedding()) as mem:
        rec = mem.session(ALICE).write("Locker 5521 holds the spare keys", ("clinic", "notes"))
    with Memory.open(root, policy=policy, embedding=HashingEmbedding()) as mem:
        hits = mem.session(ALICE).search("5521", ("clinic",), k=1, mode="lexical")
        assert [h.record.id for h in hits] == [rec.id]


def _index_ids(root: Path) -> set[str]:
    with sqlite3.connect(root / INDEX_FILE) as db:
        return {r[0] for r in db.execute("SELECT id FROM docs")}


def test_a_crash_between_the_two_writes_is_repaired_on_open(tmp_path: Path, policy: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "m"
    with Memory.open(root, policy=policy, embedding=HashingEmbedding()) as mem:
        kept = mem.session(ALICE).write("Boiler serviced by Acme on Tuesday", ("clinic", "notes"))
        inner = indexed(mem)._inner

        def power_cut(*args, **kwargs):
            raise KeyboardInterrupt("power cut")

        # The index is written first; the process dies before Chroma is.
        monkeypatch.setattr(inner, "upsert", power_cut)
        monkeypatch.setattr(indexed(mem), "_reconcile", lambda ids: None)  # a dead process repairs nothing
        with pytest.raises(KeyboardInterrupt):
            mem.session(ALICE).write("Boiler code zq77k leaks in winter", ("clinic", "notes"))
        monkeypatch.undo()
        ghost = [i for i in _index_ids(root) if i != kept.id]
        assert b"zq77k" in b"".join(p.read_bytes() for p in root.glob(INDEX_FILE + "*"))
        assert len(ghost) == 1 and indexed(mem)._index.pending() == ghost
        indexed(mem)._index._db.close()  # abandon it like a crashed process
        indexed(mem)._index._db = None
    with Memory.open(root, policy=policy, embedding=HashingEmbedding()) as mem:
        assert _index_ids(root) == {kept.id}
        assert indexed(mem)._index.pending() == []
        assert b"zq77k" not in b"".join(p.read_bytes() for p in root.glob(INDEX_FILE + "*"))

    # The other way round: Chroma has a record the index lost (the index file is gone).
    for leftover in root.glob(INDEX_FILE + "*"):
        leftover.unlink()
    with Memory.open(root, policy=policy, embedding=HashingEmbedding()) as mem:
        assert [h.record.id for h in mem.session(ALICE).search("Acme boiler", ("clinic",), k=1,
                                                               mode="lexical")] == [kept.id]


def test_a_failed_chroma_write_leaves_the_index_as_chroma_is(mem: Memory, monkeypatch: pytest.MonkeyPatch) -> None:
    inner = indexed(mem)._inner

    def refused(*args, **kwargs):
        raise RuntimeError("server said no")

    monkeypatch.setattr(inner, "upsert", refused)
    with pytest.raises(RuntimeError):
        mem.session(ALICE).write("Generator fuel delivered by Initech", ("clinic", "notes"))
    monkeypatch.undo()
    assert indexed(mem)._index.count() == 0 and indexed(mem)._index.pending() == []


@pytest.mark.slow
def test_erasure_leaves_no_trace_in_the_lexical_index(tmp_path: Path, policy: Path) -> None:
    root = tmp_path / "m"
    rng = np.random.default_rng(5)
    secrets = [f"{rng.bytes(8).hex()}x{i}" for i in range(40)]  # unique words with digits: never stemmed
    with Memory.open(root, policy=policy, embedding=HashingEmbedding()) as mem:
        alice = mem.session(ALICE)
        gone = [alice.write(f"Patient note {s} about the allergy", ("clinic", "patients"), subjects=["p1"]) for s in secrets]
        kept = alice.write("Unrelated note about the allergy clinic hours", ("clinic", "notes"))
        data = (root / INDEX_FILE).read_bytes() + (root / (INDEX_FILE + "-wal")).read_bytes()
        assert secrets[0].encode() in data  # the positive control: the scan sees indexed words
        receipt = mem.session(DPO).erase(subject="p1")
        assert receipt.count == len(gone)
        assert alice.search(secrets[3], ("clinic",), k=5, mode="lexical") == []
        assert [h.record.id for h in alice.search("allergy", ("clinic",), k=5, mode="lexical")] == [kept.id]
    blob = b"".join(p.read_bytes() for p in root.glob(INDEX_FILE + "*"))
    assert not [s for s in secrets if s.encode() in blob]
    assert not [r.id for r in gone if r.id.encode() in blob]
    assert _index_ids(root) == {kept.id}


# -- Memory.connect: no lexical index there -----------------------------------------------------


def test_against_a_server_hybrid_falls_back_to_dense_and_says_so(chroma_server, policy: Path, tmp_path: Path) -> None:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from memwarden.memory import tracing

    provider, exporter = TracerProvider(), InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracing.set_tracer_provider(provider)
    host, port = chroma_server
    try:
        with Memory.connect(host, port, policy=policy, state=tmp_path / "s", embedding=HashingEmbedding()) as mem:
            alice = mem.session(ALICE)
            rec = alice.write(f"Server note {tmp_path.name}", ("clinic", "server-notes"))
            hits = alice.search(f"Server note {tmp_path.name}", ("clinic", "server-notes"), k=1)
            assert [h.record.id for h in hits] == [rec.id] and hits[0].bm25 is None
            with pytest.raises(InvalidRequest, match="lexical index"):
                alice.search("note", ("clinic",), mode="lexical")
    finally:
        tracing.set_tracer_provider(None)
    search = [dict(s.attributes) for s in exporter.get_finished_spans() if s.name == "search_memory"][0]
    assert search["memwarden.search.mode"] == "dense"
    assert "dense leg only" in search["memwarden.search.note"]
    provider.shutdown()


# -- validation at the edge ---------------------------------------------------------------------


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"mode": "bm25"}, "unknown search mode"),
    ({"budget_tokens": 0}, "budget_tokens must be an integer"),
    ({"budget_tokens": True}, "budget_tokens must be an integer"),
    ({"budget_tokens": 10, "offset": 5}, "cannot be combined with offset"),
    ({"as_of": datetime(2023, 5, 1)}, "timezone-aware"),
    ({"time_range": (T0, T0)}, "end must be after"),
    ({"time_range": (T0,)}, "pair of datetimes"),
    ({"time_range": "May 2023"}, "pair of datetimes"),
    ({"created_after": T0, "created_before": T0 - timedelta(days=1)}, "created_before must be after"),
    ({"include_superseded": "yes"}, "include_superseded must be True or False"),
])
def test_bad_search_arguments_are_refused_before_any_work(kwargs: dict, message: str) -> None:
    with pytest.raises(InvalidRequest, match=message):
        SearchOp("q", **kwargs).canonical()


def test_a_denied_search_still_raises(mem: Memory) -> None:
    with pytest.raises(AccessDenied):
        mem.session(ALICE).search("anything", ("elsewhere",), mode="lexical")
