"""Physical erasure: after an erasure no copy of an erased record is left on disk.

Every check here is against the real embedded Chroma (chromadb's Rust core) on a temporary
directory. "No copy" is checked by byte-scanning every file of the data directory for the
erased texts (any 16-byte fragment) and vectors (bit-exact, and within 64 ulps of their
unit-normalised form, which is how HNSW stores cosine vectors), by asking Chroma every way it
can be asked (id, metadata filter, document filter, nearest-neighbour query at k = collection
size), from a second process and after a restart; and the FTS index must equal one rebuilt
from the surviving documents alone. A positive control shows the same scan does find the data
that stock Chroma keeps after ``collection.delete``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from memwarden import Memory, Principal
from memwarden.memory.backends import ChromaBackend
from memwarden.memory.compaction import find_remnants, fts_is_clean
from memwarden.memory.codec import stored_metadata, to_metadata
from memwarden.memory.derived import derived_index
from memwarden.memory.embeddings import HashingEmbedding, embed_many
from memwarden.core.records import MemoryRecord, record_id

from tests.ram_scan import ram_remnants

pytestmark = pytest.mark.integration

DIM = 64
POLICY = """
p, clinician, ward3/**, write
p, clinician, ward3/**, read
p, privacy_officer, ward3/**, erase
p, privacy_officer, ward3/**, read
g, alice, clinician
g, dpo, privacy_officer
"""


def _rows(n: int, tag: str, seed: int) -> tuple[list[str], list[str], list[dict], np.ndarray]:
    rng = np.random.default_rng(seed)
    secrets = [rng.bytes(16).hex() for _ in range(n)]
    ids = [f"{tag}-{i:05d}-{s[:12]}" for i, s in enumerate(secrets)]
    docs = [f"{tag} record {s} about the patient" for s in secrets]
    metas = [{"tag": tag, "secret": f"meta {s} secret", "n": i} for i, s in enumerate(secrets)]
    # Low intrinsic dimension, like real embeddings (and cheap for HNSW to index).
    vectors = (rng.standard_normal((n, 8)) @ rng.standard_normal((8, DIM)) + 0.3 * rng.standard_normal((n, DIM)))
    return ids, docs, metas, vectors.astype(np.float32)


def _store(path: Path, n_erase: int, n_keep: int):
    """A backend holding ``n_erase`` canary rows and ``n_keep`` unrelated ones, interleaved and
    in uneven batches so that Chroma's HNSW has persisted some rows and not others."""
    backend = ChromaBackend.embedded(str(path))
    canary = _rows(n_erase, "canary", 1)
    other = _rows(n_keep, "other", 2)
    order = [(canary, i) for i in range(n_erase)] + [(other, i) for i in range(n_keep)]
    np.random.default_rng(3).shuffle(order)
    for start in range(0, len(order), 333):
        part = order[start:start + 333]
        backend.upsert([s[0][i] for s, i in part], np.stack([s[3][i] for s, i in part]),
                       [s[1][i] for s, i in part], [s[2][i] for s, i in part])
    return backend, canary, other


def _texts(rows) -> list[str]:
    return list(rows[1]) + [m["secret"] for m in rows[2]]


def _assert_nothing_retrievable(col, canary, k: int) -> None:
    ids, docs, metas, vectors = canary
    assert col.get(ids=list(ids))["ids"] == []
    assert col.get(where={"tag": "canary"})["ids"] == []
    assert col.get(where={"secret": metas[0]["secret"]})["ids"] == []
    assert col.get(where_document={"$contains": "canary record"})["ids"] == []
    assert col.get(where_document={"$contains": docs[-1].split()[2]})["ids"] == []
    got = col.query(query_embeddings=vectors[::50], n_results=k, include=[])["ids"]
    assert not set(ids) & {i for row in got for i in row}


def _assert_survivors_intact(col, other, before: dict | None = None, *, sample: int = 100) -> None:
    ids, docs, metas, vectors = other
    got = col.get(ids=list(ids), include=["documents", "metadatas", "embeddings"])
    assert sorted(got["ids"]) == sorted(ids)  # 100% recall by id
    by_id = {i: (d, m, e) for i, d, m, e in zip(got["ids"], got["documents"], got["metadatas"], got["embeddings"])}
    for i, d, m in zip(ids, docs, metas):
        assert by_id[i][0] == d and by_id[i][1] == m
    if before is not None:
        for i, (_, _, e) in by_id.items():
            assert np.array_equal(np.asarray(e, np.float32).view(np.int32), before[i].view(np.int32))
    picks = np.linspace(0, len(ids) - 1, sample).astype(int)
    res = col.query(query_embeddings=vectors[picks], n_results=1, include=[])["ids"]
    assert [r[0] for r in res] == [ids[p] for p in picks]


def _embeddings(col, ids) -> dict[str, np.ndarray]:
    got = col.get(ids=list(ids), include=["embeddings"])
    return {i: np.asarray(e, np.float32) for i, e in zip(got["ids"], got["embeddings"])}


_SECOND_CLIENT = r"""
import json, sys
import numpy as np
import chromadb
from chromadb.config import Settings
path, ids, keep = sys.argv[1], json.loads(sys.argv[2]), json.loads(sys.argv[3])
vectors, needle = np.array(json.loads(sys.argv[4]), dtype=np.float32), sys.argv[5]
client = chromadb.PersistentClient(path=path, settings=Settings(anonymized_telemetry=False))
count, found, near, kept = 0, [], set(), 0
for col in client.list_collections():  # one collection, or memwarden's partitions
    n = col.count()
    if not n:
        continue
    count += n
    found += col.get(ids=ids)["ids"] + col.get(where_document={"$contains": needle})["ids"]
    near |= {i for r in col.query(query_embeddings=vectors, n_results=n, include=[])["ids"] for i in r}
    kept += len(col.get(ids=keep)["ids"])
print(json.dumps({"count": count, "found": found, "near": sorted(near & set(ids)), "kept": kept}))
"""


def _second_process(path: Path, ids, keep, vectors: np.ndarray, needle: str) -> dict:
    """Open the directory with a fresh PersistentClient in a new process (a second client, and
    a restart from disk) and report what it can find in any of its collections."""
    out = subprocess.run([sys.executable, "-c", _SECOND_CLIENT, str(path), json.dumps(list(ids)),
                          json.dumps(list(keep)), json.dumps(vectors.tolist()), needle],
                         capture_output=True, text=True, timeout=120, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


# -- the problem, shown with the same instruments ---------------------------------------------


@pytest.mark.slow
def test_stock_chroma_keeps_deleted_rows_on_disk(tmp_path: Path) -> None:
    """Positive control: after a plain delete the scan finds the rows (so a clean scan later
    means something)."""
    path = tmp_path / "chroma"
    backend, canary, other = _store(path, 1200, 300)
    backend.delete(canary[0])
    assert backend.fetch(ids=canary[0]) == []
    backend._client.close()  # let Chroma write what it writes at shutdown
    found = find_remnants(path, _texts(canary), canary[3], exclude=_texts(other))
    assert found.texts > 0  # text in the log, free pages and index pages
    assert found.vectors_near > 0  # vectors in the HNSW segment (and in the log)
    assert any(f.endswith("data_level0.bin") for f in found.files)


def test_compact_directory_cleans_up_after_plain_deletes(tmp_path: Path) -> None:
    """The offline clean-up (e.g. of a stopped server's directory) removes what earlier plain
    deletes left, for every collection."""
    from memwarden.memory.compaction import compact_directory

    path = tmp_path / "chroma"
    backend, canary, other = _store(path, 1200, 300)
    backend.delete(canary[0])
    backend._client.close()

    reports = compact_directory(path)

    assert [r.mechanism for r in reports] == ["surgery"]
    assert find_remnants(path, _texts(canary), canary[3], exclude=_texts(other)).clean
    fresh = ChromaBackend.embedded(str(path))
    _assert_survivors_intact(fresh._col, other)


# -- ChromaBackend.purge ----------------------------------------------------------------------


@pytest.mark.system
@pytest.mark.slow
def test_purge_leaves_no_copy_and_keeps_everything_else(tmp_path: Path) -> None:
    path = tmp_path / "chroma"
    backend, canary, other = _store(path, 1000, 1000)
    before = _embeddings(backend._col, other[0])

    report = backend.purge(canary[0])

    assert report.mechanism == "surgery", report.fallback_reason
    assert report.erased == 1000 and report.kept == 1000 and report.scrubbed
    col = backend._col
    assert col.count() == 1000
    _assert_nothing_retrievable(col, canary, k=col.count())
    _assert_survivors_intact(col, other, before)
    remnants = find_remnants(path, _texts(canary) + list(canary[0]), canary[3], exclude=_texts(other))
    assert remnants.clean, remnants
    # FTS5 deletes leave postings behind; the index must equal one rebuilt from live rows.
    assert fts_is_clean(path / "chroma.sqlite3", tmp_path)
    assert not list(path.glob("*.purge-*")) and not (path / "memwarden-purge.json").exists()

    # The backend keeps working: writes, deletes and reads after the purge.
    extra = _rows(50, "late", 4)
    backend.upsert(extra[0], extra[3], extra[1], extra[2])
    assert len(backend.fetch(ids=extra[0])) == 50
    assert backend.query(extra[3][7], 1, None)[0][0].id == extra[0][7]

    # A second process sees the erased rows nowhere and every other row.
    seen = _second_process(path, canary[0], other[0], canary[3][::100], "canary record")
    assert seen == {"count": 1050, "found": [], "near": [], "kept": 1000}

    # Restart: close the client (the native system stops) and open the directory again.
    backend._client.close()
    reopened = ChromaBackend.embedded(str(path))
    _assert_nothing_retrievable(reopened._col, canary, k=reopened.count())
    _assert_survivors_intact(reopened._col, other, before)
    assert find_remnants(path, _texts(canary), canary[3], exclude=_texts(other)).clean


@pytest.mark.system
def test_purge_by_rebuild_gives_the_same_guarantees(tmp_path: Path) -> None:
    path = tmp_path / "chroma"
    backend, canary, other = _store(path, 300, 300)
    before = _embeddings(backend._col, other[0])

    report = backend.purge(canary[0], mode="rebuild")

    assert report.mechanism == "rebuild" and report.scrubbed and report.segments_removed
    col = backend._col
    _assert_nothing_retrievable(col, canary, k=col.count())
    _assert_survivors_intact(col, other)
    after = _embeddings(col, other[0])
    # Chroma returns a cosine vector as unit vector times norm: a copy may move one ulp.
    assert max(np.abs(after[i].view(np.int32).astype(np.int64) - before[i].view(np.int32)).max()
               for i in before) <= 2
    assert find_remnants(path, _texts(canary) + list(canary[0]), canary[3], exclude=_texts(other)).clean
    # FTS5 deletes leave postings behind; the index must equal one rebuilt from live rows.
    assert fts_is_clean(path / "chroma.sqlite3", tmp_path)
    assert _second_process(path, canary[0], other[0], canary[3][::100], "canary record")["found"] == []


def test_purge_falls_back_to_rebuild_when_another_client_shares_the_store(tmp_path: Path) -> None:
    import chromadb
    from chromadb.config import Settings

    path = tmp_path / "chroma"
    backend, canary, other = _store(path, 200, 200)
    # A second client in this process shares Chroma's native system and its in-memory index,
    # which would write erased vectors back: the purge must not edit files under it.
    other_client = chromadb.PersistentClient(path=str(path), settings=Settings(anonymized_telemetry=False))

    report = backend.purge(canary[0])

    assert report.mechanism == "rebuild" and "another client" in report.fallback_reason
    assert find_remnants(path, _texts(canary), canary[3], exclude=_texts(other)).clean
    _assert_survivors_intact(backend._col, other)
    shared = other_client.get_collection("memwarden-records")
    assert shared.count() == 200 and shared.get(ids=list(canary[0]))["ids"] == []
    other_client.close()


@pytest.mark.slow
def test_half_the_store_churned_away(tmp_path: Path) -> None:
    """50% churn in rounds, interleaved with new writes: every survivor stays reachable."""
    path = tmp_path / "chroma"
    backend, first, second = _store(path, 600, 600)
    live = {i: (d, m, v) for rows in (first, second) for i, d, m, v in zip(*rows)}
    gone: list[tuple[str, str, np.ndarray]] = []
    rng = np.random.default_rng(7)
    for round_ in range(4):
        batch = _rows(150, f"new{round_}", 10 + round_)
        backend.upsert(batch[0], batch[3], batch[1], batch[2])
        live.update({i: (d, m, v) for i, d, m, v in zip(*batch)})
        victims = sorted(rng.choice(sorted(live), size=len(live) // 2 // 2 + 1, replace=False))
        for v in victims:
            gone.append((v, live[v][0], live[v][2]))
            del live[v]
        report = backend.purge(victims)
        assert report.mechanism == "surgery", report.fallback_reason
    assert backend.count() == len(live)
    ids = sorted(live)
    assert sorted(r.id for r in backend.fetch(ids=ids)) == ids
    assert backend.fetch(ids=[g[0] for g in gone]) == []
    picks = rng.choice(len(ids), size=150, replace=False)
    assert [backend.query(live[ids[p]][2], 1, None)[0][0].id for p in picks] == [ids[p] for p in picks]
    found = find_remnants(path, [g[1] for g in gone], np.stack([g[2] for g in gone]),
                          exclude=[d for d, _, _ in live.values()])
    assert found.clean, found


def test_purge_of_unknown_ids_is_harmless(tmp_path: Path) -> None:
    backend, canary, other = _store(tmp_path / "chroma", 20, 20)
    assert backend.purge([]).mechanism == "none"
    report = backend.purge(["no-such-id"])
    assert report.erased == 0 and backend.count() == 40


# -- end to end, through the public API -------------------------------------------------------


def _seed(mem: Memory, writer: Principal, texts: list[str], namespace: tuple[str, ...], subject: str,
          embedding: HashingEmbedding) -> list[str]:
    """Store records exactly as ``Session.write`` stores them (same id, metadata and vector),
    but in bulk. memwarden makes one Chroma upsert per write, 10-60 ms each, so writing 2,000
    records one by one would take most of this test's time budget; the erasure under test
    goes through the public API either way."""
    records = [MemoryRecord(id=record_id(writer.id, namespace, t, None), namespace=namespace, content=t,
                            subjects=(subject,), writer=writer.id, writer_roles=writer.roles) for t in texts]
    vectors = embed_many(embedding, texts)
    backend = mem._backend  # bulk seeding only
    for s in range(0, len(records), 500):
        part = records[s:s + 500]
        backend.upsert([r.id for r in part], vectors[s:s + 500], [r.content for r in part],
                       [stored_metadata(to_metadata(r)) for r in part])
    return [r.id for r in records]


#: Rows per namespace in the end-to-end erasure. A new partition persists its HNSW index every
#: 100 writes (memory/partitioned.py), so 250 rows, seeded in batches of 75, leave some erased
#: rows in the persisted index and some only in Chroma's log, in both partitions: what 1,000
#: rows each did, in a quarter of the time.
SESSION_ROWS = 250


@pytest.mark.system
@pytest.mark.slow
def test_session_erase_leaves_no_copy_anywhere(tmp_path: Path) -> None:
    """Memory.open + Session.erase: no text or vector of the erased records is left anywhere
    under the memory directory (Chroma store, audit log, tombstones), for no client, before
    or after a restart. Needs Memory._erase to call ``backend.purge`` (see docs/erasure.md)."""
    policy = tmp_path / "policy.csv"
    policy.write_text(POLICY, encoding="utf-8")
    root = tmp_path / "mem"
    embedding = HashingEmbedding()
    rng = np.random.default_rng(11)
    canary = [f"Canary patient {rng.bytes(16).hex()} has a rare allergy" for _ in range(SESSION_ROWS)]
    other = [f"Unrelated note {rng.bytes(16).hex()} on ward routine" for _ in range(SESSION_ROWS)]
    ns_canary, ns_other = ("ward3", "patients", "p-canary"), ("ward3", "notes")
    with Memory.open(root, policy=policy, embedding=embedding) as mem:
        alice = mem.session(Principal("alice"))
        # Some through Session.write (the real write path: audit, tombstone check, validators) ...
        written = [alice.write(t, ns_canary, subjects=["p-canary"]) for t in canary[:25]]
        written += [alice.write(t, ns_other, subjects=["p-other"]) for t in other[:25]]
        canary_ids = [r.id for r in written[:25]]
        other_ids = [r.id for r in written[25:]]
        # ... and the rest in bulk, interleaved so both kinds share HNSW neighbourhoods.
        writer = Principal("alice", roles=["clinician"])
        for start in range(25, SESSION_ROWS, 75):
            canary_ids += _seed(mem, writer, canary[start:start + 75], ns_canary, "p-canary", embedding)
            other_ids += _seed(mem, writer, other[start:start + 75], ns_other, "p-other", embedding)
        assert alice.get(canary_ids[-1]) is not None and len(set(canary_ids + other_ids)) == 2 * SESSION_ROWS

        receipt = mem.session(Principal("dpo")).erase(subject="p-canary")

        assert receipt.count == SESSION_ROWS
        assert all(alice.get(i) is None for i in canary_ids[::20])
        assert sum(alice.get(i) is not None for i in other_ids[::10]) == SESSION_ROWS // 10
        hits = alice.search("Canary patient has a rare allergy", namespace=("ward3",), k=50)
        assert hits and not {h.record.id for h in hits} & set(canary_ids)
        assert alice.search(None, namespace=ns_canary, k=100) == []
        vectors = embed_many(embedding, canary)
        # Nor in the derived search index in RAM (its codes and its copies of rows).
        index = derived_index(mem._backend)
        assert index is not None and index.wait_ready(60)
        assert ram_remnants(index.index, canary, vectors, exclude=other) == {"texts": 0, "vectors": 0, "codes": 0}

    found = find_remnants(root, canary, vectors, exclude=other)
    assert found.clean, found
    # Record ids (hashes of writer, namespace and content) stay in the audit log by design;
    # the store keeps none of them.
    assert find_remnants(root / "chroma", canary_ids, exclude=other_ids).clean

    # A fresh process (a second client, and a restart) sees none of it and all of the rest.
    seen = _second_process(root / "chroma", canary_ids, other_ids, vectors[::25], "Canary patient")
    assert seen == {"count": SESSION_ROWS, "found": [], "near": [], "kept": SESSION_ROWS}
    with Memory.open(root, policy=policy, embedding=embedding) as mem:
        alice = mem.session(Principal("alice"))
        assert all(alice.get(i) is None for i in canary_ids[::20])
        assert sum(alice.get(i) is not None for i in other_ids[::10]) == SESSION_ROWS // 10


# -- crashes ----------------------------------------------------------------------------------


def test_a_purge_interrupted_after_the_log_edit_is_finished_by_recover(tmp_path: Path, monkeypatch) -> None:
    from memwarden.memory import compaction
    from memwarden.memory.compaction import surgery

    path = tmp_path / "chroma"
    backend, canary, other = _store(path, 300, 300)

    def crash(*args, **kwargs):
        raise KeyboardInterrupt("power cut")

    monkeypatch.setattr(surgery, "swap_segment", crash)
    with pytest.raises(KeyboardInterrupt):
        backend.purge(canary[0])
    monkeypatch.undo()
    assert compaction.pending(path)

    assert compaction.recover(path)  # what Memory.open runs first after a crash
    assert not compaction.pending(path)
    fresh = ChromaBackend.embedded(str(path))
    _assert_nothing_retrievable(fresh._col, canary, k=fresh.count())
    _assert_survivors_intact(fresh._col, other)
    assert find_remnants(path, _texts(canary), canary[3], exclude=_texts(other)).clean


def test_a_rebuild_interrupted_between_renames_is_finished_by_recover(tmp_path: Path, monkeypatch) -> None:
    from chromadb.api.models.Collection import Collection

    from memwarden.memory import compaction

    path = tmp_path / "chroma"
    backend, canary, other = _store(path, 200, 200)
    real_modify = Collection.modify

    def modify(self, name=None, **kwargs):
        if name == "memwarden-records":  # the copy is about to take the live name
            raise KeyboardInterrupt("power cut")
        return real_modify(self, name=name, **kwargs)

    monkeypatch.setattr(Collection, "modify", modify)
    with pytest.raises(KeyboardInterrupt):
        backend.purge(canary[0], mode="rebuild")
    monkeypatch.undo()
    backend._client.close()
    assert compaction.pending(path)

    assert compaction.recover(path)
    fresh = ChromaBackend.embedded(str(path))
    assert [c.name for c in fresh._client.list_collections()] == ["memwarden-records"]
    _assert_nothing_retrievable(fresh._col, canary, k=fresh.count())
    _assert_survivors_intact(fresh._col, other)
    assert find_remnants(path, _texts(canary), canary[3], exclude=_texts(other)).clean


def test_a_failed_purge_leaves_a_working_backend_and_the_next_purge_finishes(tmp_path: Path,
                                                                            monkeypatch) -> None:
    from memwarden.memory import compaction
    from memwarden.memory.compaction import surgery

    path = tmp_path / "chroma"
    backend, canary, other = _store(path, 300, 300)

    def disk_full(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(surgery, "purge_queue", disk_full)
    with pytest.raises(compaction.PurgeError):
        backend.purge(canary[0])
    monkeypatch.undo()
    assert backend.fetch(ids=canary[0]) == [] and len(backend.fetch(ids=other[0])) == 300  # still usable
    assert compaction.pending(path)

    report = backend.purge([])  # e.g. the retried erasure, which finds nothing left to delete
    assert report.mechanism == "surgery" and not compaction.pending(path)
    _assert_nothing_retrievable(backend._col, canary, k=backend.count())
    _assert_survivors_intact(backend._col, other)
    assert find_remnants(path, _texts(canary), canary[3], exclude=_texts(other)).clean


LOG_POLICY = """
p, staff, ward/**, read
p, staff, ward/**, write
p, staff, ward/**, update
p, staff, ward/pat/*, write, review, kind=rule
p, officer, ward/**, erase
g, alice, staff
g, bob, staff
g, dpo, officer
"""


def test_writes_after_an_erasure_that_empties_a_partition_are_stored(tmp_path: Path) -> None:
    # Found by the reference model: dropping the emptied partition deleted the newest log
    # entries, Chroma numbered the next write below what the other partition had applied, and
    # that write was skipped: reported stored, never readable, not even after reopening.
    policy = tmp_path / "policy.csv"
    policy.write_text(LOG_POLICY, encoding="utf-8")
    opened = dict(policy=policy, embedding=HashingEmbedding(), validators=[], lessons=False)
    with Memory.open(tmp_path / "d", **opened) as mem:
        alice, bob = mem.session(Principal("alice")), mem.session(Principal("bob"))
        note = alice.write("a note about p2", "ward/pat/p2", subjects=["p2"])
        bob.write("p1 takes drug A daily", "ward/board", kind="event", subjects=["p1"])  # its partition empties
        bob.update(note.id, "p2 has diabetes")
        assert bob.write("a note", "ward/pat/p1", kind="rule", subjects=["p1"]).status.value == "quarantined"
        assert mem.session(Principal("dpo")).erase(subject="p1").count == 2
        after = [bob.write(f"p3 visit {i}", "ward/pat/p3", kind="event") for i in range(3)]
        assert all(alice.get(r.id) is not None for r in after)
    with Memory.open(tmp_path / "d", **opened) as mem:
        alice = mem.session(Principal("alice"))
        assert all(alice.get(r.id) is not None for r in after)
        later = alice.write("written after reopening", "ward/pat/p3")
        assert alice.get(later.id) is not None
