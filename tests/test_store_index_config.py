"""LangGraph's index configuration on ``as_store``: the keys LangGraph's SQLite and Postgres
stores accept, with the memory's own embeddings only (tests/conformance covers the searches)."""

from __future__ import annotations

import pytest

from memwarden import InvalidRequest, Memory, Principal
from memwarden.integrations.binding import bind_principal
from memwarden.integrations.store_options import StoreOptions
from memwarden.memory.embeddings import FunctionEmbedding, HashingEmbedding, as_embedder

pytestmark = pytest.mark.unit

EMBED = HashingEmbedding(dim=64)


def embed_texts(texts: list[str]) -> list[list[float]]:
    """An embedding function in LangGraph's EmbeddingsFunc shape."""
    return EMBED.embed_documents(texts)


def other_texts(texts: list[str]) -> list[list[float]]:
    """Another function, with the same vectors: a different model as far as a store knows."""
    return EMBED.embed_documents(texts)


def test_embed_may_name_the_memorys_own_embeddings() -> None:
    assert StoreOptions.of(index={"dims": 64, "embed": EMBED}, embedder=EMBED).fields == ("$",)
    wrapped = as_embedder(embed_texts)
    assert StoreOptions.of(index={"embed": embed_texts, "fields": ["text"]}, embedder=wrapped).fields == ("text",)


@pytest.mark.parametrize("embed", [HashingEmbedding(dim=64), other_texts, "openai:text-embedding-3-small"])
def test_embed_naming_other_embeddings_is_refused(embed: object) -> None:
    # An equal-looking model is still another object: two vector spaces in one index.
    with pytest.raises(InvalidRequest, match="not the memory's embeddings"):
        StoreOptions.of(index={"dims": 64, "embed": embed}, embedder=as_embedder(embed_texts))
    with pytest.raises(InvalidRequest, match="not the memory's embeddings"):
        StoreOptions.of(index={"embed": embed}, embedder=None)  # a runner that names no embedder


def test_dims_must_be_the_embeddings_own() -> None:
    with pytest.raises(InvalidRequest, match=r"index\['dims'\] is 500, but .* have 64 dimensions"):
        StoreOptions.of(index={"dims": 500}, embedder=EMBED)
    # An embedder that declares no dimension cannot be checked here (the store checks vectors).
    assert StoreOptions.of(index={"dims": 500}, embedder=as_embedder(embed_texts)).fields == ("$",)


def test_the_sqlite_and_postgres_stores_keys() -> None:
    assert StoreOptions.of(index={"text_fields": ["a", "b.c"]}).fields == ("a", "b.c")
    assert StoreOptions.of(index={"text_fields": "a"}).fields == ("a",)  # one path, as the SQLite store takes
    assert StoreOptions.of(index={"fields": ["a"], "text_fields": ["a"]}).fields == ("a",)
    with pytest.raises(InvalidRequest, match="differ; give one"):
        StoreOptions.of(index={"fields": ["a"], "text_fields": ["b"]})
    assert StoreOptions.of(index={"distance_type": "cosine", "ann_index_config": {"kind": "hnsw"}}).fields == ("$",)
    for distance in ("cosine", "l2", "inner_product"):
        assert StoreOptions.of(index={"distance_type": distance}).distance == distance
    for distance in ("hamming", "L2", None, 2):
        with pytest.raises(InvalidRequest, match=r"distance_type'\] must be one of cosine, inner_product, l2"):
            StoreOptions.of(index={"distance_type": distance})
    # A distance chooses a dense score; a hybrid search's score is the fusion's.
    with pytest.raises(InvalidRequest, match="scores by fusion"):
        StoreOptions.of(index={"distance_type": "l2"}, search="hybrid")
    assert StoreOptions.of(index={"distance_type": "cosine"}, search="hybrid").search == "hybrid"
    with pytest.raises(InvalidRequest, match="ann_index_config'] must be a mapping"):
        StoreOptions.of(index={"ann_index_config": "hnsw"})
    with pytest.raises(InvalidRequest, match=r"unknown key\(s\) \['text_feilds'\]"):
        StoreOptions.of(index={"text_feilds": ["a"]})
    with pytest.raises(InvalidRequest, match=r"text_fields'\] must be a non-empty list"):
        StoreOptions.of(index={"text_fields": []})


def test_an_embedding_function_is_an_embedder_named_after_it() -> None:
    wrapped = as_embedder(embed_texts)
    assert isinstance(wrapped, FunctionEmbedding) and wrapped.func is embed_texts
    assert wrapped.name == f"function:{__name__}.embed_texts" != as_embedder(other_texts).name
    assert wrapped.embed_query("a b") == EMBED.embed_documents(["a b"])[0]


def test_what_cannot_embed_says_what_can() -> None:
    async def aembed(texts: list[str]) -> list[list[float]]:
        return []

    with pytest.raises(TypeError, match="async embedding function cannot be used"):
        as_embedder(aembed)
    with pytest.raises(TypeError, match="provider string"):
        as_embedder("openai:text-embedding-3-small")
    with pytest.raises(TypeError, match="or a function of a list of texts"):
        as_embedder(object())


@pytest.mark.integration
def test_a_store_built_as_langgraphs_sqlite_tests_build_theirs(tmp_path) -> None:
    """Memory.open(embedding=f) and as_store(index={"dims", "embed": f, "text_fields"}):
    the text at the field is what is embedded, the rest is not."""
    policy = tmp_path / "policy.csv"
    policy.write_text("p, member, docs/**, read\np, member, docs/**, write\ng, tester, member\n", encoding="utf-8")
    with Memory.open(tmp_path / "data", policy=policy, embedding=embed_texts, validators=[]) as mem, \
            bind_principal(Principal("tester")):
        store = mem.as_store(index={"dims": 64, "embed": embed_texts, "text_fields": ["text"],
                                    "distance_type": "cosine"})
        store.put(("docs", "lib"), "a", {"text": "apple orchard harvest", "other": "zebra savanna"})
        store.put(("docs", "lib"), "b", {"text": "zebra savanna migration", "other": "apple orchard"})
        hits = store.search(("docs", "lib"), query="apple orchard harvest")
        assert [h.key for h in hits] == ["a", "b"] and hits[0].score > 0.99


@pytest.mark.integration
def test_a_store_written_with_one_function_refuses_another(tmp_path) -> None:
    policy = tmp_path / "policy.csv"
    policy.write_text("p, member, docs/**, write\ng, tester, member\n", encoding="utf-8")
    with Memory.open(tmp_path / "data", policy=policy, embedding=embed_texts, validators=[]) as mem:
        mem.session(Principal("tester")).write("apple orchard", ("docs", "lib"))
    with pytest.raises(InvalidRequest, match="other_texts"):
        Memory.open(tmp_path / "data", policy=policy, embedding=other_texts, validators=[])
