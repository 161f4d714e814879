"""A KB's graph entity names are read from the graph once per KB version, then from the cache by later processes."""

from __future__ import annotations

from datetime import datetime
from types import SimpleNamespace

from executor.retrieval.extraction import KnownEntities

SETTINGS = SimpleNamespace(
    entity_fuzzy_cutoff=0.8, entity_embedding_threshold=0.9, graph_backend="cypher", graph_name="executor"
)
NAMES = {"comfyui": ("ComfyUI", "Software"), "comfy": ("ComfyUI", "Software"), "postgresql": ("PostgreSQL", None)}


class Graph:
    def __init__(self):
        self.asked = 0

    def entity_names(self, kb):
        self.asked += 1
        return dict(NAMES)


def known(row, graph, cache):
    catalog = SimpleNamespace(require=lambda kb: row)
    return KnownEntities(SETTINGS, catalog, SimpleNamespace(embed_documents=None), lambda: graph, cache)


def test_names_come_from_the_cache_until_the_kb_changes(tmp_path):
    row = SimpleNamespace(revision=3, created_at=datetime(2026, 1, 2, 3, 4, 5))
    graph = Graph()
    first = known(row, graph, tmp_path).in_text("kb", "deploy ComfyUI on PostgreSQL")
    assert graph.asked == 1
    assert known(row, graph, tmp_path).in_text("kb", "deploy ComfyUI on PostgreSQL") == first  # a later process
    assert graph.asked == 1
    row.revision = 4  # an ingest
    known(row, graph, tmp_path).in_text("kb", "comfy")
    assert graph.asked == 2


def test_without_a_cache_the_graph_is_asked(tmp_path):
    row = SimpleNamespace(revision=1, created_at=datetime(2026, 1, 1))
    graph = Graph()
    for _ in range(2):
        known(row, graph, None).in_text("kb", "ComfyUI")
    assert graph.asked == 2
