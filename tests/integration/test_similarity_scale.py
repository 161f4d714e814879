"""The similarity scale (executor/core/relevance.py) against what Milvus itself computes."""

import numpy as np
import pytest

from executor.core.relevance import similarity
from executor.stores.vectors import MilvusVectorStore


def test_similarity_of_milvus_squared_l2_equals_cosine_for_unit_vectors(tmp_path):
    """Milvus returns squared L2; for unit vectors 1 - d/2 must be the cosine (clipped at 0)."""

    class Fake:  # only name/dim/has_lexical_weights are read when creating the collection
        name, dim, has_lexical_weights = "probe", 16, False

    rng = np.random.default_rng(7)
    docs = rng.normal(size=(50, 16)).astype(np.float32)
    docs /= np.linalg.norm(docs, axis=1, keepdims=True)
    query = rng.normal(size=16).astype(np.float32)
    query /= np.linalg.norm(query)
    store = MilvusVectorStore(str(tmp_path / "m.db"))
    store.create("probe", Fake())
    rows = [
        {"chunk_id": f"d{i}#0", "doc_key": f"d{i}", "chunk_index": 0, "domain": "x", "title": "t", "text": f"doc {i}"}
        for i in range(50)
    ]
    store.upsert("probe", rows, Fake(), docs)
    store.flush_and_load("probe")
    hits = store.dense_search("probe", query, limit=50)
    raw = store.client.search(
        "kb_probe", data=[query.tolist()], anns_field="dense", limit=50, search_params={"metric_type": "L2"}
    )[0]
    milvus_d = {h["id"]: h["distance"] for h in raw}
    store.close()
    assert len(hits) == 50
    for h in hits:
        i = int(h.doc_key[1:])
        cos = float(docs[i] @ query)
        assert h.distance == pytest.approx(milvus_d[h.chunk_id], abs=1e-4)  # our local distance is Milvus's
        assert similarity(milvus_d[h.chunk_id], 2.0) == pytest.approx(max(cos, 0.0), abs=1e-4)
