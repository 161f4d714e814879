"""The traversal cache on fakes of its two collaborators (the KB catalog and the graph store): what it asks
the graph, and when. The same cache on a real graph: tests/integration/test_graph_ingest_and_expand.py; the
in-memory traversal against the real stores' own: tests/integration/test_graph_memory.py."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from datetime import datetime

import pytest

from executor.core.errors import InputError
from executor.retrieval.traversal_cache import TraversalCache, new_tally
from executor.stores.knowledge_graph import GraphEdge, GraphNode, GraphPath


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
    """A graph store holding a chain A -> B -> C -> ... (weights 0.9, 0.8, ...); it counts the bulk reads the cache
    makes for its snapshot and the traversals it is asked to run itself."""

    def __init__(self, names=("A", "B", "C", "D")):
        self.set_chain(names)
        self.reads: list[str] = []
        self.calls: list[tuple] = []
        self.read_delay = 0.0

    def set_chain(self, names) -> None:
        self.entities = [(n.lower(), n, "Concept") for n in names]
        self.relations = [
            ("DEPENDS_ON", a.lower(), b.lower(), 0.9 - 0.1 * i) for i, (a, b) in enumerate(zip(names, names[1:]))
        ]

    def traversal_rows(self, kb, limit):
        self.reads.append(kb)
        time.sleep(self.read_delay)
        return self.entities, self.relations[: limit + 1]

    def navigate(self, kb, entity, hops, relation_filter, max_paths, max_nodes_per_hop):
        self.calls.append((kb, entity, hops))
        end = GraphNode(name=f"reached {len(self.calls)}", type="Concept")
        edge = GraphEdge(type="DEPENDS_ON", source=entity, target=end.name, weight=1.0)
        return [GraphPath(nodes=[GraphNode(name=entity, type="Concept"), end], edges=[edge], score=1.0)]


def make_cache(**kw):
    catalog, graph, opened = FakeCatalog(), FakeGraph(), []
    cache = TraversalCache(catalog, lambda: opened.append(1) or graph, **kw)
    return cache, catalog, graph, opened


def summaries(paths):
    return [p.summary() for p in paths]


def test_traversals_run_in_memory_on_one_read_of_the_graph():
    cache, _, graph, _ = make_cache()
    assert summaries(cache.navigate("kb", "A", 2, None, 15, 10)) == [
        "A -DEPENDS_ON-> B",
        "A -DEPENDS_ON-> B -DEPENDS_ON-> C",
    ]
    assert summaries(cache.navigate("kb", "C", 1, None, 15, 10)) == ["C <-DEPENDS_ON- B", "C -DEPENDS_ON-> D"]
    assert summaries(cache.navigate("kb", "B", 1, ["RELATED_TO"], 15, 10)) == []
    assert graph.reads == ["kb"] and graph.calls == []


def test_a_repeated_traversal_is_served_without_traversing_again():
    cache, _, graph, _ = make_cache()
    tally = new_tally()
    first = cache.navigate("kb", "A", 2, None, 15, 10, tally)
    again = cache.navigate("kb", "  a ", 2, None, 15, 10, tally)  # the same entity, spelled loosely
    assert again == first and again[0] is first[0]
    assert tally == {"hits": 1, "misses": 1}


def test_other_hops_or_relations_are_other_traversals():
    cache, _, _, _ = make_cache()
    tally = new_tally()
    cache.navigate("kb", "A", 2, None, 15, 10, tally)
    cache.navigate("kb", "A", 3, None, 15, 10, tally)
    cache.navigate("kb", "A", 2, ["DEPENDS_ON"], 15, 10, tally)
    cache.navigate("kb", "A", 2, ["depends_on"], 15, 10, tally)  # the same filter
    assert tally == {"hits": 1, "misses": 3}


def test_a_new_revision_of_the_kb_reads_the_graph_again():
    cache, catalog, graph, _ = make_cache()
    assert summaries(cache.navigate("kb", "A", 1, None, 15, 10)) == ["A -DEPENDS_ON-> B"]
    graph.set_chain(["A", "Z"])
    assert summaries(cache.navigate("kb", "A", 1, None, 15, 10)) == ["A -DEPENDS_ON-> B"]  # same revision: as read
    catalog.rows["kb"] = Row(2, datetime(2026, 1, 1))  # re-ingested
    assert summaries(cache.navigate("kb", "A", 1, None, 15, 10)) == ["A -DEPENDS_ON-> Z"]
    catalog.rows["kb"] = Row(2, datetime(2026, 2, 1))  # dropped and re-created: same revision, new creation time
    graph.set_chain(["A", "Y"])
    assert summaries(cache.navigate("kb", "A", 1, None, 15, 10)) == ["A -DEPENDS_ON-> Y"]
    assert graph.reads == ["kb", "kb", "kb"]


def test_the_graph_is_opened_only_when_a_traversal_misses():
    cache, _, _, opened = make_cache()
    assert opened == []
    cache.navigate("kb", "A", 2, None, 15, 10)
    cache.navigate("kb", "A", 2, None, 15, 10)
    assert opened == [1]


def test_a_graph_too_large_to_hold_is_traversed_in_its_store():
    cache, _, graph, _ = make_cache(max_snapshot_relations=2)  # the chain has 3 relations
    paths = cache.navigate("kb", "A", 2, None, 15, 10)
    cache.navigate("kb", "B", 2, None, 15, 10)
    assert summaries(paths) == ["A -DEPENDS_ON-> reached 1"]  # the store's answer
    assert graph.calls == [("kb", "A", 2), ("kb", "B", 2)]
    assert graph.reads == ["kb"]  # found too large once per revision, not on every call


def test_unknown_entities_and_bad_arguments_are_input_errors():
    cache, _, _, _ = make_cache()
    with pytest.raises(InputError, match="no entity 'Nope' in the graph of knowledge base 'kb'"):
        cache.navigate("kb", "Nope", 2, None, 15, 10)
    with pytest.raises(InputError, match="hops must be a whole number from 1 to 4"):
        cache.navigate("kb", "A", 9, None, 15, 10)
    with pytest.raises(InputError, match="unknown relation type"):
        cache.navigate("kb", "A", 2, ["MENTIONS"], 15, 10)


def test_threads_asking_at_once_share_one_read():
    cache, _, graph, _ = make_cache()
    graph.read_delay = 0.05
    results = []
    threads = [
        threading.Thread(target=lambda e=e: results.append(cache.navigate("kb", e, 2, None, 15, 10)))
        for e in ("A", "B", "C", "D")
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert graph.reads == ["kb"] and len(results) == 4 and all(results)


def test_the_oldest_traversal_goes_when_the_cache_is_full():
    cache, _, _, _ = make_cache(max_entries=2)
    tally = new_tally()
    for entity in ("A", "B", "C"):
        cache.navigate("kb", entity, 2, None, 15, 10, tally)
    cache.navigate("kb", "C", 2, None, 15, 10, tally)  # still there
    cache.navigate("kb", "A", 2, None, 15, 10, tally)  # pushed out by C
    assert tally == {"hits": 1, "misses": 4}
