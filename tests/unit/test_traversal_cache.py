"""The traversal cache on fakes of its two collaborators (the KB catalog and the graph store): what it asks
the graph, and when. The same cache on a real graph: tests/integration/test_graph_ingest_and_expand.py."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from retrieval.traversal_cache import TraversalCache, new_tally
from stores.knowledge_graph import GraphEdge, GraphNode, GraphPath


@dataclass
class Row:
    revision: int
    created_at: datetime


class FakeCatalog:
    def __init__(self):
        self.rows = {"kb": Row(1, datetime(2026, 1, 1))}

    def require(self, kb: str) -> Row:
        return self.rows[kb]


class FakeGraph:
    """Answers every traversal with one path ending in a node named after the call's number."""

    def __init__(self):
        self.calls: list[tuple] = []

    def navigate(self, kb, entity, hops, relation_filter, max_paths, max_nodes_per_hop):
        self.calls.append((kb, entity, hops))
        end = GraphNode(name=f"reached {len(self.calls)}", type="Concept")
        edge = GraphEdge(type="DEPENDS_ON", source=entity, target=end.name, weight=1.0)
        return [GraphPath(nodes=[GraphNode(name=entity, type="Concept"), end], edges=[edge], score=1.0)]


def make_cache():
    catalog, graph, opened = FakeCatalog(), FakeGraph(), []
    cache = TraversalCache(catalog, lambda: opened.append(1) or graph)
    return cache, catalog, graph, opened


def test_a_repeated_traversal_is_served_without_asking_the_graph():
    cache, _, graph, _ = make_cache()
    tally = new_tally()
    first = cache.navigate("kb", "HikariCP", 2, None, 15, 10, tally)
    again = cache.navigate("kb", "  hikaricp ", 2, None, 15, 10, tally)  # the same entity, spelled loosely
    assert len(graph.calls) == 1
    assert again == first
    assert tally == {"hits": 1, "misses": 1}


def test_other_hops_or_relations_are_other_traversals():
    cache, _, graph, _ = make_cache()
    cache.navigate("kb", "HikariCP", 2, None, 15, 10)
    cache.navigate("kb", "HikariCP", 3, None, 15, 10)
    cache.navigate("kb", "HikariCP", 2, ["DEPENDS_ON"], 15, 10)
    assert len(graph.calls) == 3


def test_a_new_revision_of_the_kb_forgets_its_traversals():
    cache, catalog, graph, _ = make_cache()
    cache.navigate("kb", "HikariCP", 2, None, 15, 10)
    catalog.rows["kb"] = Row(2, datetime(2026, 1, 1))  # re-ingested
    paths = cache.navigate("kb", "HikariCP", 2, None, 15, 10)
    assert len(graph.calls) == 2
    assert paths[0].nodes[-1].name == "reached 2"


def test_the_graph_is_opened_only_when_a_traversal_misses():
    cache, _, _, opened = make_cache()
    assert opened == []
    cache.navigate("kb", "HikariCP", 2, None, 15, 10)
    cache.navigate("kb", "HikariCP", 2, None, 15, 10)
    assert opened == [1]


def test_the_oldest_traversal_goes_when_the_cache_is_full():
    catalog, graph = FakeCatalog(), FakeGraph()
    cache = TraversalCache(catalog, lambda: graph, max_entries=2)
    for entity in ("A", "B", "C"):
        cache.navigate("kb", entity, 2, None, 15, 10)
    cache.navigate("kb", "C", 2, None, 15, 10)
    cache.navigate("kb", "A", 2, None, 15, 10)
    assert [c[1] for c in graph.calls] == ["A", "B", "C", "A"]
