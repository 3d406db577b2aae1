"""A second round of attacks on the bounded windows the write and read checks compare with.

tests/test_attack_flooding.py made one writer one voice. Attacked afresh:

- a writer was its principal *and source*, and any session may declare a less trusted
  source than its binding without a claim: one principal was up to four voices, and three
  copies of a poison under three sources made a true record "contested" in read-time
  consensus;
- the subject index was loaded from the first 4,096 rows about the subject in storage
  order, whatever their kind or state: a flood of events, of rows held for review or of
  facts written before the established record kept it out after a restart; against a Chroma
  server storage order is partition by partition, so a flood in a partition that sorts first
  (notes before patients) did so whenever it was written;
- a subject loaded while a write about it was stored (a consensus search runs outside the
  write lock) lost that record for good, and a record forgotten meanwhile came back;
- one bound of 64 records per subject, filled principal by principal, gave a flooder half of
  it: an established record that its own writer had followed with 40 records of its own fell
  out. Now each principal keeps its own 64 newest per subject (256 in all);
- a retraction of another's record (or a quorum) ranked as people's decision in the lesson
  cache whoever's session made it: a reviewer's agent retracting or rejecting a colluder's
  junk in bulk pushed the reviewer's own lesson out.

A changed account declared as an event, or without the established record's subject, was
never compared with it (strict xfails of branch wt-attackflood); since the contradiction
check compares an untrusted writer's procedure value whatever kind and subjects it declares
(and with its namespace's nearest records), those cases pass.

Each test failed on the code before its fix (see the report of branch wt-attackflood). The
three-sources case of read-time consensus is a parameter of the consensus test in
tests/test_attack_flooding.py.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given, strategies as st

from memwarden import Memory, Principal, Status, WriteOp
from memwarden.core.namespace import canonical_namespace
from memwarden.core.records import SOURCE_ORDER, Kind, MemoryRecord, Source
from memwarden.memory.caches import SubjectIndex
from memwarden.memory.embeddings import HashingEmbedding
from memwarden.memory.partitioned import PartitionedBackend
from memwarden.memory.writers import across_principals
from tests.test_attack_flooding import LESSON_POLICY, POLICY, lesson_survives

ACCOUNT = "Invoices for patient 12 are paid into account DE89 3704 0044 0532 0130 00."
CHANGED = "Invoices for patient 12 are paid into account GB29 NWBK 6016 1331 9268 19."


def _harmless(i: int) -> str:
    a, b = divmod(i, 26)
    return f"Observation note {chr(97 + a)}{chr(97 + b)}: patient twelve rested calmly during the ward round."


@pytest.mark.integration
def test_an_agent_flooding_under_its_users_name_does_not_outvote_her(tmp_path: Path) -> None:
    """The other side of one voice per principal: a principal's voice is what its most
    trusted source says, so her own agent's copies do not turn her against a true record."""
    policy = tmp_path / "policy.csv"
    policy.write_text(POLICY, encoding="utf-8")
    with Memory.open(tmp_path / "data", policy=policy, embedding=HashingEmbedding(), validators=[]) as mem:
        w, n1 = mem.session(Principal("w")), mem.session(Principal("n1"))
        agent = mem.session(Principal("n1"), source="agent")
        true1 = w.write("Patient 12 is allergic to penicillin", "ward/a", subjects=["p12"])
        n1.write("Patient 12 is allergic to penicillin.", "ward/b", subjects=["p12"])
        for end in ("", ".", "!"):
            agent.write(f"Patient 12 is not allergic to penicillin{end}", "ward/c", subjects=["p12"])
        hits = {h.record.id: h for h in w.search("penicillin allergy patient 12", "ward", k=10, consensus=True)}
        assert not hits[true1.id].contested


# -- what the subject index loads ------------------------------------------------------------

FLOOD = 70  # more than the 64 records the subject index keeps per subject
PATIENT, NOTES = ("ward3", "patients", "p12"), ("ward3", "notes", "p12")


def _flood(bob, namespace: tuple[str, ...], kind: Kind = Kind.FACT, source: Source | None = None) -> list:
    return bob.batch([WriteOp(_harmless(i), namespace, kind=kind, subjects=("p12",), source=source)
                      for i in range(FLOOD)])


@pytest.mark.integration
@pytest.mark.parametrize("flood", ["events", "quarantined rows", "facts"])
def test_rows_written_first_do_not_hide_the_established_record_after_a_restart(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, flood: str) -> None:
    # Before the fix the load read the first 4,096 rows about the subject (SUBJECT_SCAN),
    # whatever their kind or state; 32 here, so that the flood is 70 writes, not 4,097. The
    # code after it has no such scan (raising=False): the flood is then larger than the window.
    monkeypatch.setattr("memwarden.memory.pipeline.SUBJECT_SCAN", 32, raising=False)
    with Memory.open(tmp_path / "data", policy="hospital", embedding=HashingEmbedding()) as mem:
        bob = mem.session(Principal("bob", roles=["nurse"]), source="agent")
        if flood == "quarantined rows":  # what a nurse copies from a tool is held, and stored
            assert all(r.status is Status.QUARANTINED for r in _flood(bob, PATIENT, source=Source.TOOL))
        else:
            assert all(r.status is Status.ACTIVE
                       for r in _flood(bob, PATIENT, Kind.EVENT if flood == "events" else Kind.FACT))
        alice = mem.session(Principal("alice", roles=["physician"]))
        assert alice.write(ACCOUNT, PATIENT, subjects=["p12"]).status is Status.ACTIVE
    with Memory.open(tmp_path / "data", policy="hospital", embedding=HashingEmbedding()) as mem:
        bob = mem.session(Principal("bob", roles=["nurse"]), source="agent")
        assert bob.write(CHANGED, PATIENT, subjects=["p12"]).status is Status.QUARANTINED


@pytest.mark.integration
@pytest.mark.parametrize("kind", [Kind.EVENT, Kind.FACT])
def test_a_flood_in_a_partition_read_first_does_not_hide_the_established_record(
        chroma_server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: Kind) -> None:
    # Against a Chroma server rows about a subject were read partition by partition, in the
    # partitions' order: a flood in one that sorts first, written at any time, filled the read.
    monkeypatch.setattr("memwarden.memory.pipeline.SUBJECT_SCAN", 32, raising=False)
    site = f"site{uuid.uuid4().hex[:12]}"  # the session's server is shared by every server test
    patient, notes = (site, "patients", "p12"), (site, "notes", "p12")
    policy = tmp_path / "policy.csv"
    policy.write_text(f"""
p, physician, {site}/**, read
p, physician, {site}/**, write
p, nurse, {site}/**, read
p, nurse, {site}/**, write
g, alice, physician
g, bob, nurse
""", encoding="utf-8")
    host, port = chroma_server

    def connect() -> Memory:
        return Memory.connect(host, port, policy=policy, state=tmp_path / "state", embedding=HashingEmbedding())

    with connect() as mem:
        alice = mem.session(Principal("alice"))
        assert alice.write(ACCOUNT, patient, subjects=["p12" + site]).status is Status.ACTIVE
        bob = mem.session(Principal("bob"), source="agent")
        done = bob.batch([WriteOp(_harmless(i), notes, kind=kind, subjects=("p12" + site,)) for i in range(FLOOD)])
        assert all(r.status is Status.ACTIVE for r in done)
    with connect() as mem:  # another process: its subject index is loaded from the server
        bob = mem.session(Principal("bob"), source="agent")
        assert bob.write(CHANGED, patient, subjects=["p12" + site]).status is Status.QUARANTINED


@pytest.mark.integration
def test_the_lexical_index_and_the_chroma_filter_choose_the_same_rows(tmp_path: Path) -> None:
    """The subject index's load as the embedded store answers it (one SQL query over the
    lexical index) and as a Chroma server would (a filtered read of every partition)."""
    policy = tmp_path / "policy.csv"
    policy.write_text(POLICY + "p, staff, ward/**, forget\n", encoding="utf-8")
    with Memory.open(tmp_path / "data", policy=policy, embedding=HashingEmbedding(), validators=[]) as mem:
        for principal in ("w", "n1", "mallory"):
            session = mem.session(Principal(principal))
            ops = [WriteOp(f"{principal} note {i} about patient twelve", ("ward", f"b{i % 3}"),
                           kind=(Kind.EVENT, Kind.FACT, Kind.RULE)[i % 3], subjects=("p12", f"x{i % 2}"),
                           source=(Source.USER, Source.AGENT, Source.TOOL)[i % 4 % 3]) for i in range(14)]
            written = session.batch(ops)
            session.forget(written[1].id)  # forgotten: not active
        backend = mem._backend
        store = backend
        while not isinstance(store, PartitionedBackend):
            store = store._inner
        kinds = {Kind.FACT.value, Kind.RULE.value}
        every = [r for r in store.fetch(where={"subjects": {"$contains": "p12"}})]
        expected, capped = set(), 0
        for voice in {(r.metadata["writer"], r.metadata["source"]) for r in every}:
            mine = sorted((r for r in every if (r.metadata["writer"], r.metadata["source"]) == voice
                           and r.metadata["status"] == "active" and r.metadata["kind"] in kinds),
                          key=lambda r: r.metadata["created_at"], reverse=True)
            expected |= {r.id for r in mine[:2]}
            capped += len(mine) > 2
        assert capped >= 3 and len(expected) >= 15  # the bound drops rows, of several writers
        assert {r.id for r in backend.newest_about("p12", kinds, 2)} == expected
        assert {r.id for r in store.newest_about("p12", kinds, 2)} == expected
        assert backend.newest_about("nobody", kinds, 2) == []


# -- a load racing with a change -------------------------------------------------------------

def _record(n: int, writer: str = "alice") -> MemoryRecord:
    return MemoryRecord(id=f"r{n}", content=f"Patient twelve note number {n}.", namespace=canonical_namespace("ward"),
                        subjects=("p12",), writer=writer)


@pytest.mark.unit
def test_a_record_stored_while_its_subject_loads_is_kept() -> None:
    stored = [_record(1)]
    index: SubjectIndex

    def load(subject: str, per_principal: int, limit: int) -> list[MemoryRecord]:
        before = list(stored)  # the store as the load read it
        stored.append(_record(2))  # meanwhile a write stores a record and tells the index
        index.add(stored[-1])
        return before

    index = SubjectIndex(load)
    assert {r.record.id for r in index.about(["p12"])} == {"r1", "r2"}


@pytest.mark.unit
def test_a_record_discarded_while_its_subject_loads_does_not_come_back() -> None:
    stored = [_record(1), _record(2)]
    index: SubjectIndex

    def load(subject: str, per_principal: int, limit: int) -> list[MemoryRecord]:
        before = list(stored)
        gone = stored.pop()  # meanwhile it is erased, and the index told
        index.discard([gone])
        return before

    index = SubjectIndex(load)
    assert {r.record.id for r in index.about(["p12"])} == {"r1"}


# -- lessons --------------------------------------------------------------------------------------

JUNK = ("Bed four was made up with fresh linen this morning.", "The corridor lights flicker near the lift.",
        "Visiting hours end at eight on Sundays.", "The coffee machine on level two takes coins only.")


@pytest.mark.integration
@pytest.mark.parametrize("restart", [False, True])
def test_a_reviewers_agent_retracting_in_bulk_does_not_evict_the_reviewers_lesson(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, restart: bool) -> None:
    # A retraction of another's record ranked as people's decision whoever's session made it:
    # a reviewer's agent (the reviewer's rights, the agent's judgement) retracting a
    # colluder's junk made as many "decided" lessons as it liked, and the newest of those
    # pushed the reviewer's own out.
    def retract_junk(mem: Memory) -> None:
        mallory = mem.session(Principal("mallory"), source="agent")
        agent = mem.session(Principal("r1"), source="agent")
        for junk in JUNK:  # unlike each other: no lesson of one holds the next
            agent.retract(mallory.write(junk, "ward/a").id)

    lesson_survives(tmp_path, monkeypatch, LESSON_POLICY, restart, retract_junk)


@pytest.mark.integration
def test_a_reviewers_agent_rejecting_in_bulk_does_not_evict_the_reviewers_lesson(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The same through votes: what mallory's agent writes is held for review, and a
    # reviewer's agent rejects each; the quorum its vote makes is the agent's decision.
    def reject_junk(mem: Memory) -> None:
        mallory = mem.session(Principal("mallory"), source="agent")
        agent = mem.session(Principal("r2"), source="agent")
        for junk in JUNK:
            held = mallory.write(junk, "ward/a")
            assert held.status is Status.QUARANTINED
            assert agent.reject(held.id).status is Status.FORGOTTEN

    lesson_survives(tmp_path, monkeypatch, LESSON_POLICY + "p, staff, ward/**, write, review, source=agent\n"
                    "g, r2, reviewer\n", False, reject_junk, quorum=1)


# -- the rules themselves -------------------------------------------------------------------

VOICES = st.tuples(st.sampled_from("abc"), st.sampled_from([s.value for s in Source]))


@pytest.mark.unit
@given(st.lists(VOICES, max_size=40))
def test_principals_take_turns_and_within_them_their_sources(voices: list[tuple[str, str]]) -> None:
    items = list(enumerate(voices))  # (preference, (principal, source)), best first
    out = list(across_principals(items, writer=lambda item: item[1]))
    assert sorted(out) == items  # a reordering, nothing lost or added
    for key in set(voices):  # each source's own order is kept
        assert [i for i in out if i[1] == key] == [i for i in items if i[1] == key]

    def fair(key: Callable[[tuple[str, str]], object]) -> None:
        groups: dict[object, list[tuple[str, str]]] = {}
        for v in voices:
            groups.setdefault(key(v), []).append(v)
        for group in groups.values():  # a principal's sources, or the principals themselves
            total = {key2: group.count(key2) for key2 in group}
            seen: dict[object, int] = {}
            for _, v in out:
                if v in total:
                    seen[v] = seen.get(v, 0) + 1
                    assert all(seen[v] <= seen.get(w, 0) + 1 for w in total if seen.get(w, 0) < total[w])

    fair(lambda v: v[0])  # within a principal, no source two ahead of another with records left
    principals = [v[0] for v in voices]
    seen_p: dict[str, int] = {}
    for _, (principal, _) in out:  # no principal two ahead of one with records left
        seen_p[principal] = seen_p.get(principal, 0) + 1
        assert all(seen_p[principal] <= seen_p.get(q, 0) + 1
                   for q in set(principals) if seen_p.get(q, 0) < principals.count(q))


@pytest.mark.unit
@given(st.lists(st.tuples(st.sampled_from("abcdef"), st.sampled_from([s.value for s in Source])), max_size=60))
def test_a_principal_within_its_fair_share_loses_nothing(voices: list[tuple[str, str]]) -> None:
    index = SubjectIndex(lambda *_: [], per_principal=6, per_subject=8)
    index.about(["p12"])  # loaded (empty): adds are indexed from now on
    for n, (principal, source) in enumerate(voices):
        index.add(_record(n, principal).model_copy(update={"source": Source(source)}))
    held = [r.record for r in index.about(["p12"])]
    assert len(held) <= 8
    writers = {principal for principal, _ in voices}
    for principal in writers:
        mine = [r for r in held if r.writer == principal]
        assert len(mine) <= 6
        written = sum(1 for p, _ in voices if p == principal)
        if written <= min(6, 8 // len(writers)):  # never the one holding the most past a bound
            assert len(mine) == written
        # What it wrote from its most trusted source is never all gone while it has records.
        if mine:
            best = min(SOURCE_ORDER.index(Source(s)) for p, s in voices if p == principal)
            assert any(SOURCE_ORDER.index(r.source) == best for r in mine)


# -- what is left --------------------------------------------------------------------------------

@pytest.mark.integration
@pytest.mark.parametrize("restart", [False, True])
def test_an_established_record_followed_by_its_writers_own_does_not_fall_out(tmp_path: Path, restart: bool) -> None:
    # One bound per subject, filled principal by principal, gave each of two principals half
    # of it: the record its writer had followed with 40 of its own fell out of a flooded window.
    with Memory.open(tmp_path / "data", policy="hospital", embedding=HashingEmbedding()) as mem:
        alice = mem.session(Principal("alice", roles=["physician"]))
        assert alice.write(ACCOUNT, PATIENT, subjects=["p12"]).status is Status.ACTIVE
        alice.batch([WriteOp(f"Ward round {_harmless(i)}", PATIENT, subjects=("p12",)) for i in range(40)])
        bob = mem.session(Principal("bob", roles=["nurse"]), source="agent")
        assert all(r.status is Status.ACTIVE for r in _flood(bob, NOTES))
        if not restart:
            assert bob.write(CHANGED, PATIENT, subjects=["p12"]).status is Status.QUARANTINED
    if restart:
        with Memory.open(tmp_path / "data", policy="hospital", embedding=HashingEmbedding()) as mem:
            bob = mem.session(Principal("bob", roles=["nurse"]), source="agent")
            assert bob.write(CHANGED, PATIENT, subjects=["p12"]).status is Status.QUARANTINED


@pytest.mark.integration
@pytest.mark.parametrize("how", [
    pytest.param({"kind": Kind.EVENT}, id="declared an event"),
    pytest.param({"subjects": []}, id="no subject"),
    pytest.param({"subjects": ["patient-12"]}, id="another subject"),
])
def test_a_changed_account_is_held_however_it_is_declared(tmp_path: Path, how: dict) -> None:
    with Memory.open(tmp_path / "data", policy="hospital", embedding=HashingEmbedding()) as mem:
        alice = mem.session(Principal("alice", roles=["physician"]))
        assert alice.write(ACCOUNT, PATIENT, subjects=["p12"]).status is Status.ACTIVE
        bob = mem.session(Principal("bob", roles=["nurse"]), source="agent")
        # Control: declared as a fact about the subject, it is held.
        assert bob.write(CHANGED, PATIENT, subjects=["p12"]).status is Status.QUARANTINED
        written = bob.write(CHANGED + " (updated)", PATIENT, **{"subjects": ["p12"], **how})
        found = {h.record.id for h in alice.search("invoices patient 12 account", ("ward3", "patients"), k=10)}
        assert written.status is Status.QUARANTINED and written.id not in found
