"""A store refuses an embedder other than the one its vectors were made with.

Embedded (Memory.open) and on a real Chroma server (Memory.connect, and the server backend on a
database of its own): the same embedder reopens a store; another name of the same dimension
and another dimension are refused with memwarden's message (not Chroma's dimension error), and
before anything is written; a store from before records were kept (no record) takes the first
embedder that opens it read-write, unless its rows' dimension disagrees; a read-only open
checks and records nothing.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest

from memwarden import InvalidRequest, Memory, Principal
from memwarden.memory.embedder_identity import EMBEDDER_DIM_KEY, EMBEDDER_KEY
from memwarden.memory.embeddings import HashingEmbedding, UnloadedEmbedder
from memwarden.memory.partitioned import LAYOUT

pytestmark = pytest.mark.integration

ALICE = Principal("alice")
NS = ("ward3", "beds", "p1")


class Renamed(HashingEmbedding):
    """Another model that happens to make vectors of the same dimension (256)."""

    def __init__(self) -> None:
        super().__init__(256)
        self.name = "another-model-256"


class Undeclared:
    """A LangChain-style embedder with no ``name`` and no ``dim``: 256-d vectors."""

    def __init__(self) -> None:
        self._inner = HashingEmbedding(256)

    def embed_documents(self, texts):
        return self._inner.embed_documents(texts)

    def embed_query(self, text):
        return self._inner.embed_query(text)


@pytest.fixture
def policy(tmp_path: Path) -> Path:
    path = tmp_path / "policy.csv"
    path.write_text("p, staff, ward3/**, read\np, staff, ward3/**, write\ng, alice, staff\n", encoding="utf-8")
    return path


def _open(root: Path, policy: Path, embedding: object, **options) -> Memory:
    return Memory.open(root, policy=policy, embedding=embedding, **options)


def _seed(root: Path, policy: Path, text: str = "Patient takes warfarin daily") -> str:
    with _open(root, policy, HashingEmbedding()) as mem:
        return mem.session(ALICE).write(text, NS).id


def _layout_meta(root: Path) -> dict:
    import chromadb
    from chromadb.config import Settings

    client = chromadb.PersistentClient(path=str(root / "chroma"), settings=Settings(anonymized_telemetry=False))
    try:
        return dict(client.get_collection(LAYOUT).metadata or {})
    finally:
        client.close()


def _forget_record(root: Path) -> None:
    """Make the store look like one written before embedders were recorded."""
    import chromadb
    from chromadb.config import Settings

    client = chromadb.PersistentClient(path=str(root / "chroma"), settings=Settings(anonymized_telemetry=False))
    try:
        col = client.get_collection(LAYOUT)
        meta = {k: v for k, v in (col.metadata or {}).items() if k not in (EMBEDDER_KEY, EMBEDDER_DIM_KEY)}
        col.modify(metadata=meta)
        assert EMBEDDER_KEY not in (client.get_collection(LAYOUT).metadata or {})
    finally:
        client.close()


# -- embedded ------------------------------------------------------------------------------------


def test_a_new_store_records_its_embedder_and_reopens_with_it(tmp_path: Path, policy: Path) -> None:
    root = tmp_path / "m"
    rid = _seed(root, policy)
    assert _layout_meta(root)[EMBEDDER_KEY] == "hashing-256"
    assert _layout_meta(root)[EMBEDDER_DIM_KEY] == 256
    with _open(root, policy, HashingEmbedding()) as mem:
        assert [r.record.id for r in mem.session(ALICE).search("warfarin", ("ward3",), k=1)] == [rid]


def test_another_model_of_the_same_dimension_is_refused(tmp_path: Path, policy: Path) -> None:
    root = tmp_path / "m"
    _seed(root, policy)
    with pytest.raises(InvalidRequest) as caught:
        _open(root, policy, Renamed())
    message = str(caught.value)
    assert "'hashing-256' (256-d)" in message and "'another-model-256' (256-d)" in message
    assert "open it with the embedder it was written with" in message and "new store" in message
    # Refused before anything was written, and the store is released: its own embedder opens it.
    with _open(root, policy, HashingEmbedding()) as mem:
        assert mem.session(ALICE).search("warfarin", ("ward3",), k=1)


def test_another_dimension_is_refused_with_memwardens_message(tmp_path: Path, policy: Path) -> None:
    root = tmp_path / "m"
    _seed(root, policy)
    with pytest.raises(InvalidRequest) as caught:
        _open(root, policy, HashingEmbedding(64))
    message = str(caught.value)
    assert "'hashing-256' (256-d)" in message and "'hashing-64' (64-d)" in message
    assert "expecting embedding" not in message  # Chroma's own wording


def test_an_undeclared_embedder_is_refused_by_name_and_its_dimension_learnt(tmp_path: Path, policy: Path) -> None:
    root = tmp_path / "m"
    _seed(root, policy)
    with pytest.raises(InvalidRequest, match="hashing-256"):
        _open(root, policy, Undeclared())
    other = tmp_path / "u"
    with _open(other, policy, Undeclared()) as mem:
        mem.session(ALICE).write("Patient takes warfarin daily", NS)
    assert EMBEDDER_DIM_KEY not in _layout_meta(other)  # nothing declared, no row yet at open
    with _open(other, policy, Undeclared()):
        pass
    assert _layout_meta(other)[EMBEDDER_DIM_KEY] == 256  # learnt from the rows at the next open
    with pytest.raises(InvalidRequest, match="256-d"):
        _open(other, policy, HashingEmbedding(64))


def test_an_old_store_takes_the_first_embedder_unless_its_rows_disagree(tmp_path: Path, policy: Path) -> None:
    root = tmp_path / "m"
    _seed(root, policy)
    _forget_record(root)
    with pytest.raises(InvalidRequest) as caught:
        _open(root, policy, HashingEmbedding(64))
    assert "holds 256-d vectors" in str(caught.value) and "'hashing-64' (64-d)" in str(caught.value)
    assert EMBEDDER_KEY not in _layout_meta(root)  # a refused open records nothing
    # No record to contradict it: the first read-write open's embedder is recorded from then on.
    with _open(root, policy, HashingEmbedding()):
        pass
    assert _layout_meta(root)[EMBEDDER_KEY] == "hashing-256"
    with pytest.raises(InvalidRequest, match="another-model-256"):
        _open(root, policy, Renamed())


def test_a_read_only_open_of_an_old_store_checks_and_records_nothing(tmp_path: Path, policy: Path) -> None:
    root = tmp_path / "m"
    rid = _seed(root, policy)
    _forget_record(root)
    before = _layout_meta(root)
    with _open(root, policy, Renamed(), read_only=True) as mem:  # same dimension: cannot be told apart
        assert [r.record.id for r in mem.session(ALICE).search("warfarin", ("ward3",), k=1)] == [rid]
    assert _layout_meta(root) == before
    with pytest.raises(InvalidRequest, match="holds 256-d vectors"):
        _open(root, policy, HashingEmbedding(64), read_only=True)
    assert _layout_meta(root) == before
    # The read-only open did not claim the store for Renamed: the store's real model still opens it.
    with _open(root, policy, HashingEmbedding()):
        pass
    assert _layout_meta(root)[EMBEDDER_KEY] == "hashing-256"


def test_a_read_only_open_of_a_recorded_store_still_refuses_another_model(tmp_path: Path, policy: Path) -> None:
    root = tmp_path / "m"
    _seed(root, policy)
    with pytest.raises(InvalidRequest, match="another-model-256"):
        _open(root, policy, Renamed(), read_only=True)


def test_an_old_single_collection_store_is_checked_after_its_migration(tmp_path: Path, policy: Path) -> None:
    root = tmp_path / "m"
    _seed(root, policy)
    with _open(root, policy, HashingEmbedding(), partition_depth=1, repartition=True):
        pass  # the migration rewrites the layout's metadata: the record must survive it
    assert _layout_meta(root)[EMBEDDER_KEY] == "hashing-256"
    with pytest.raises(InvalidRequest, match="hashing-64"):
        _open(root, policy, HashingEmbedding(64), partition_depth=1)


# -- a Chroma server -----------------------------------------------------------------------------


def _connect(server, policy: Path, state: Path, embedding: object) -> Memory:
    host, port = server
    return Memory.connect(host, port, policy=policy, state=state, embedding=embedding)


def test_a_server_store_refuses_another_embedder(chroma_server, policy: Path, tmp_path: Path) -> None:
    # The session's server, so its store, is shared by every server test, all with a model named
    # hashing-256 (tests/conformance/harness.py too): this one writes with it first, so whichever
    # test ran before, the store is hashing-256's.
    tag = uuid.uuid4().hex[:8]
    with _connect(chroma_server, policy, tmp_path / "a", HashingEmbedding()) as mem:
        rid = mem.session(ALICE).write(f"Patient {tag} takes warfarin", ("ward3", tag, "p1")).id
    with pytest.raises(InvalidRequest, match="'another-model-256' \\(256-d\\)"):
        _connect(chroma_server, policy, tmp_path / "b", Renamed())
    with pytest.raises(InvalidRequest) as caught:
        _connect(chroma_server, policy, tmp_path / "c", HashingEmbedding(64))
    assert "'hashing-256' (256-d)" in str(caught.value) and "on this Chroma server" in str(caught.value)
    with _connect(chroma_server, policy, tmp_path / "d", HashingEmbedding()) as mem:
        assert [r.record.id for r in mem.session(ALICE).search(f"{tag} warfarin", ("ward3", tag), k=1)] == [rid]


@pytest.fixture
def server_database(chroma_server):
    """A database of its own on the session's Chroma server, and a client of it."""
    import chromadb
    from chromadb.config import Settings

    host, port = chroma_server
    name = f"embcheck-{uuid.uuid4().hex[:12]}"
    admin = chromadb.AdminClient(Settings(chroma_api_impl="chromadb.api.fastapi.FastAPI",
                                          chroma_server_host=host, chroma_server_http_port=port))
    admin.create_database(name)

    def client():
        return chromadb.HttpClient(host=host, port=port, database=name, settings=Settings(anonymized_telemetry=False))

    return client


def test_an_old_server_store_records_the_first_embedder(server_database) -> None:
    import numpy as np

    from memwarden.memory.remote import RetryingPartitionedBackend

    meta = {"ns_depth": 3, "ns_0": "ward3", "ns_1": "beds", "ns_2": "p1"}
    store = RetryingPartitionedBackend(server_database())
    store.upsert(["r1"], np.ones((1, 256), dtype=np.float32), ["text"], [meta])
    store.close()
    layout = server_database().get_collection(LAYOUT)
    assert EMBEDDER_KEY not in (layout.metadata or {})  # never bound: a store from before records

    store = RetryingPartitionedBackend(server_database())
    with pytest.raises(InvalidRequest, match="holds 256-d vectors"):
        store.bind_embedder("hashing-64", 64)
    store.bind_embedder("hashing-256", 256, record=False)
    assert EMBEDDER_KEY not in (server_database().get_collection(LAYOUT).metadata or {})
    store.bind_embedder("hashing-256", 256)
    store.close()
    assert server_database().get_collection(LAYOUT).metadata[EMBEDDER_KEY] == "hashing-256"

    store = RetryingPartitionedBackend(server_database())
    with pytest.raises(InvalidRequest, match="'hashing-256' \\(256-d\\), not 'another-model-256'"):
        store.bind_embedder("another-model-256", 256)
    store.bind_embedder("hashing-256", 256)
    # A vector of another dimension is refused by memwarden, even for a partition Chroma has
    # not fixed a dimension for yet.
    fresh = {"ns_depth": 3, "ns_0": "ward4", "ns_1": "beds", "ns_2": "p1"}
    with pytest.raises(InvalidRequest, match="holds 256-d vectors of embedder 'hashing-256', got 64-d"):
        store.upsert(["r2"], np.ones((1, 64), dtype=np.float32), ["text"], [fresh])
    store.close()


# -- work that embeds nothing ----------------------------------------------------------------------


def test_a_store_of_any_model_opens_for_work_that_embeds_nothing(tmp_path: Path, policy: Path) -> None:
    root = tmp_path / "m"
    with _open(root, policy, Renamed()) as mem:
        rid = mem.session(ALICE).write("Patient takes warfarin daily", NS).id
    with _open(root, policy, UnloadedEmbedder()) as mem:
        session = mem.session(ALICE)
        assert session.get(rid) is not None
        with pytest.raises(InvalidRequest, match="needs the embedder the store was written with"):
            session.write("Patient is allergic to penicillin", NS)
        with pytest.raises(InvalidRequest, match="needs the embedder the store was written with"):
            session.search("warfarin", ("ward3",), k=1)
    assert _layout_meta(root)[EMBEDDER_KEY] == "another-model-256"
    fresh = tmp_path / "fresh"
    with _open(fresh, policy, UnloadedEmbedder()):
        pass
    assert EMBEDDER_KEY not in _layout_meta(fresh)  # a stand-in never claims a store


def test_the_cli_erases_from_a_store_written_with_a_model_it_cannot_load(tmp_path: Path,
                                                                         policy_file: Path, capsys) -> None:
    from memwarden.cli import main

    root = tmp_path / "data"
    with _open(root, policy_file, Renamed()) as mem:
        mem.session(ALICE).write("Patient 1 is stable", ("ward3", "patients", "p1"), subjects=["p1"])
    args = ["--data", str(root), "--policy", str(policy_file), "--principal", "dpo", "--subject", "p1"]
    assert main(["erase", *args]) == 0
    assert json.loads(capsys.readouterr().out)["count"] == 1
    assert _layout_meta(root)[EMBEDDER_KEY] == "another-model-256"


def test_another_applications_collection_on_the_server_does_not_count(server_database) -> None:
    import numpy as np

    from memwarden.memory.remote import RetryingPartitionedBackend

    foreign = server_database().create_collection("someone-elses-vectors", embedding_function=None)
    foreign.add(ids=["x"], embeddings=np.ones((1, 64), dtype=np.float32))
    store = RetryingPartitionedBackend(server_database())
    store.bind_embedder("hashing-256", 256)
    store.close()
    assert server_database().get_collection(LAYOUT).metadata[EMBEDDER_KEY] == "hashing-256"
