"""The vector store: what retrieval and ingest call on the chunk vectors, and the one factory.

Milvus implements it (`vectors.MilvusVectorStore`: Milvus Lite on a local file, or a Milvus server). A new
backend is one module with a class that has these methods (returning `vector_hits.ChunkHit`s), and one branch
in `make_vector_store`.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Protocol

from executor.stores.vectors import MilvusVectorStore

if TYPE_CHECKING:
    import numpy as np

    from executor.core.settings import Settings
    from executor.stores.embedders import Embedder
    from executor.stores.vector_hits import ChunkHit


class VectorStore(Protocol):
    """What retrieval and ingest need from a store of chunk vectors, one collection per knowledge base.

    Chunk rows are {chunk_id, doc_key, chunk_index, domain, title, keywords, text}; every hit carries its
    dense squared-L2 distance to the query vector, whatever the backend ranks by."""

    # -- collections
    def has(self, kb: str) -> bool: ...

    def recorded_embedder(self, kb: str) -> dict | None:
        """{embedder, dim, lexical} the KB was embedded with; None when it has no vectors."""
        ...

    def check_embedder(self, kb: str, embedder: Embedder, source: str | None = None) -> None:
        """BackendError unless the KB's vectors come from `embedder`; `source`: the folder the catalog records for
        the KB, named in the hint when it has no vectors."""
        ...

    def create(self, kb: str, embedder: Embedder) -> str | None:
        """Create the KB's collection; a warning when the backend cannot keep the lexical half."""
        ...

    def drop(self, kb: str) -> None: ...

    def staging(self, kb: str) -> str:
        """A key to fill `kb` under (its first ingest, or a rebuild); its writes become the KB's only at `promote`."""
        ...

    def promote(self, kb: str, staging: str) -> None: ...

    def discard_unfinished(self, kb: str) -> None: ...

    def written_version(self, kb: str) -> str | None:
        """The catalog version the KB's vectors here were written at (`executor.stores.vector_versions`); None when
        none was noted, or the vectors are on a server every home shares."""
        ...

    def note_version(self, kb: str, version: str | None) -> None:
        """Note the catalog version the KB's vectors were just written at (None: forget the KB)."""
        ...

    # -- writes
    def delete_docs(self, kb: str, doc_keys: list[str], keep: set[str] | None = None) -> None:
        """Remove these documents' chunks, but those whose chunk id is in `keep` (just written again)."""
        ...

    def upsert(self, kb: str, rows: list[dict], embedder: Embedder, vectors: np.ndarray) -> None: ...

    def flush_and_load(self, kb: str) -> None:
        """Make the writes so far searchable."""
        ...

    def count(self, kb: str) -> int: ...

    # -- reads
    def search(self, kb: str, query: str, vector: np.ndarray, embedder: Embedder, limit: int) -> list[ChunkHit]:
        """Hybrid (dense + lexical) search, best first."""
        ...

    def dense_search(self, kb: str, vector: np.ndarray, limit: int) -> list[ChunkHit]: ...

    def dense_search_many(self, kb: str, vectors: list[np.ndarray], limit: int) -> list[list[ChunkHit]]:
        """`dense_search` for each vector, in one request."""
        ...

    def lexical_search(
        self, kb: str, query: str, vector: np.ndarray, embedder: Embedder, limit: int
    ) -> list[tuple[ChunkHit, float]]:
        """The lexical layer alone with its raw scores (empty when the KB has none)."""
        ...

    def lexical_search_many(
        self, kb: str, queries: list[str], vectors: list[np.ndarray], embedder: Embedder, limit: int
    ) -> list[list[tuple[ChunkHit, float]]]:
        """`lexical_search` for each query (with its vector), in one request."""
        ...

    def get_chunks(self, kb: str, chunk_ids: list[str], vector: np.ndarray) -> list[ChunkHit]: ...

    def document_text(self, kb: str, doc_key: str) -> str: ...

    def texts(self, kb: str, batch_size: int = 1000) -> Iterator[tuple[str, str, str, str]]:
        """Every chunk's (chunk_id, doc_key, title, text)."""
        ...

    def open_in_background(self) -> None:
        """Start connecting on a thread of its own; the first call waits for it (and raises what it met)."""
        ...

    def close(self) -> None: ...


def make_vector_store(settings: Settings) -> VectorStore:
    """The vector store the settings name (nothing is opened until the first call): Milvus at MILVUS_URI, else
    Milvus Lite on a file under EXECUTOR_HOME."""
    return MilvusVectorStore(settings.milvus_target, settings.milvus_token, settings.milvus_timeout_s)
