"""Milvus servers too old for hybrid search: detected from the version, dense-only with a warning, one-line errors."""

import json

import numpy as np
import pytest
from pymilvus import MilvusClient

from executor.core.errors import BackendError
from executor.stores.vectors import MilvusVectorStore, lexical_support, server_version


class Embedder:
    name, dim, has_lexical_weights = "fake", 4, False


class FakeServer:
    """The calls MilvusVectorStore makes, answered as a server of `version` would (schemas built by pymilvus)."""

    create_schema = staticmethod(MilvusClient.create_schema)
    prepare_index_params = staticmethod(MilvusClient.prepare_index_params)

    def __init__(self, version: str, fail: Exception | None = None):
        self.version, self.fail, self.created, self.searches = version, fail, {}, []

    def get_server_version(self, **kw):
        return self.version

    def create_collection(self, name, schema, index_params, **kw):
        if self.fail:
            raise self.fail
        self.created[name] = (schema, index_params)

    def has_collection(self, name, **kw):
        return name in self.created

    def list_collections(self, **kw):  # a KB's rebuild generations are found by listing
        return list(self.created)

    def describe_collection(self, name, **kw):
        return {"description": self.created[name][0].description}

    def search(self, name, **kw):
        self.searches.append(("dense", name))
        return [[]]

    def hybrid_search(self, name, *a, **kw):
        self.searches.append(("hybrid", name))
        return [[]]


def store(server) -> MilvusVectorStore:
    s = MilvusVectorStore("http://milvus.example:19530")
    s._client = server
    return s


@pytest.mark.parametrize("text, version", [("v2.3.5", (2, 3)), ("2.5.4-gpu", (2, 5)), ("", None), ("dev", None)])
def test_server_versions(text, version):
    assert server_version(text) == version


def test_which_servers_keep_the_lexical_half():
    assert not lexical_support((2, 3), needs_bm25=True) and not lexical_support((2, 4), needs_bm25=True)
    assert lexical_support((2, 5), needs_bm25=True) and lexical_support((2, 4), needs_bm25=False)
    assert not lexical_support((2, 3), needs_bm25=False) and lexical_support(None, needs_bm25=True)


def test_an_old_server_gets_a_dense_only_collection_and_a_warning():
    server = FakeServer("v2.3.5")
    vectors = store(server)
    warning = vectors.create("sample", Embedder())
    assert warning.startswith("Milvus server 2.3 has no BM25 function (needs 2.5+)") and "dense vectors only" in warning
    schema, index = server.created[vectors.collection_name("sample")]
    assert "sparse" not in [f.name for f in schema.fields] and schema.functions == []
    assert json.loads(schema.description.split(":", 1)[1])["lexical"] is False
    assert [i.field_name for i in index] == ["dense"]
    fresh = store(server)  # another process reads the mode from the collection
    fresh.search("sample", "q", np.zeros(4, dtype=np.float32), Embedder(), 5)
    assert server.searches == [("dense", fresh.collection_name("sample"))]


def test_a_current_server_keeps_hybrid_search():
    server = FakeServer("v2.5.4")
    vectors = store(server)
    assert vectors.create("sample", Embedder()) is None
    schema, _ = server.created[vectors.collection_name("sample")]
    assert "sparse" in [f.name for f in schema.fields] and [f.name for f in schema.functions] == ["text_bm25"]
    vectors.search("sample", "q", np.zeros(4, dtype=np.float32), Embedder(), 5)
    assert server.searches == [("hybrid", vectors.collection_name("sample"))]


def test_a_refused_collection_is_one_line():
    from pymilvus.exceptions import MilvusException

    server = FakeServer("v2.5.0", fail=MilvusException(message="function type BM25 not supported\nat proxy.go:123"))
    with pytest.raises(BackendError) as err:
        store(server).create("sample", Embedder())
    assert "\n" not in str(err.value) and "cannot create the collection for 'sample'" in str(err.value)


# -- a real Milvus 2.3.5 standalone server (the `milvus` wheel) -----------------------------------------
@pytest.fixture(scope="module")
def old_milvus(tmp_path_factory):
    milvus = pytest.importorskip("milvus", reason="the `milvus` wheel (a Milvus 2.3.5 server) is not installed")
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = milvus.MilvusServer()
    server.set_base_dir(str(tmp_path_factory.mktemp("milvus-2.3")))
    server.listen_port = port
    server.start()
    yield f"http://127.0.0.1:{port}"
    server.stop()


def test_ingest_and_lookup_on_a_real_milvus_2_3_server(old_milvus, tmp_path):
    from conftest import run_cli

    home = tmp_path / "home"
    r = run_cli(home, "ingest", MILVUS_URI=old_milvus, timeout=600)
    assert r.returncode == 0, r.stderr
    assert "warning: Milvus server 2.3 has no BM25 function (needs 2.5+)" in " ".join(r.stdout.split())
    r = run_cli(home, "lookup", "ERR_TIMEOUT 是什么？", "--json", MILVUS_URI=old_milvus)
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    assert data["relevance_level"] == "PRECISE" and data["primary"][0]["doc_key"] == "troubleshooting/err-timeout.md"
