"""What a vector search returns, whichever vector store ran it (`stores.vector_store.VectorStore`)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ChunkHit:
    chunk_id: str
    doc_key: str
    chunk_index: int
    domain: str
    title: str
    text: str
    distance: float  # squared L2 between unit vectors, in [0, 4]
    rank: int  # position in the (hybrid) result list, 0 = best
