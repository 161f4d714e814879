"""The in-memory graph (executor/stores/knowledge_graph_memory.py) against the stores' own traversal, on real engines.

The traversal cache answers `navigate` from a snapshot of the KB's graph; these tests hold it to the
result of FalkorDB's Cypher traversal and of the SQL backend's, call for call: the same paths in the same
order, the same summaries and scores, the same caps, relation filters and directions. (The hand-worked
paths of tests/integration/test_graph_store.py also run on the snapshot: its `memory-*` store variants.)
Weights are drawn from a continuous distribution so that no two paths tie (the engines order ties as they
please), except in the test that is about ties."""

from __future__ import annotations

import random

import numpy as np
import pytest

from executor.core.errors import BackendError, InputError
from executor.stores.knowledge_graph import RELATION_TYPES, GraphData
from executor.stores.knowledge_graph_memory import GraphSnapshot

KB = "mem"


def random_graph(nodes: int, edges: int, seed: int) -> GraphData:
    rng = np.random.default_rng(seed)
    data = GraphData()
    names = [f"Node {i}" for i in range(nodes)]
    for i, n in enumerate(names):
        data.add_entity(n, None if i % 7 == 0 else ("Service", "Tool", "Concept")[i % 3])
    src, dst = rng.integers(0, nodes, edges), rng.integers(0, nodes, edges)
    data.relations = [
        {
            "type": RELATION_TYPES[int(k)],
            "s": data.add_entity(names[a]),
            "t": data.add_entity(names[b]),
            "weight": float(w),
            "sources": [],
        }
        for a, b, k, w in zip(src, dst, rng.integers(0, len(RELATION_TYPES), edges), rng.uniform(0.05, 1.0, edges))
    ]
    return data


def dumped(paths):
    return [p.model_dump() for p in paths]


CALLS = [  # (hops, relation filter, max_paths, max_nodes_per_hop)
    (1, None, 20, 25),
    (2, None, 20, 25),
    (3, None, 50, 25),
    (4, None, 200, 10),
    (3, None, 5, 3),
    (2, ["DEPENDS_ON", "related_to"], 30, 25),
    (3, ["CO_OCCURS"], 50, 500),
    (4, ["REFERENCES", "DERIVED_FROM"], 40, 8),
    (3, None, 200, 1),
    (2, [], 20, 25),
]


@pytest.mark.parametrize("engine", ["falkordb", "sqlite"])
def test_the_snapshot_traverses_exactly_as_the_store(request, engine):
    """1,500 entities and 12,000 relations (self-loops and parallel relations among them, as random endpoints
    give): every call of CALLS from 25 random starts returns what the store returns."""
    store = request.getfixturevalue("falkor_store" if engine == "falkordb" else "sql_store_sqlite")
    data = random_graph(1500, 12_000, seed=23)
    store.replace_kb(KB, data)
    snapshot = GraphSnapshot.load(store, KB, 100_000)
    assert (snapshot.entity_count, snapshot.relation_count) == (1500, 12_000)
    starts = random.Random(4).sample([e["name"] for e in data.entities.values()], 25)
    compared = 0
    for start in starts:
        for hops, relations, max_paths, fan in CALLS:
            expected = store.navigate(KB, start, hops, relations, max_paths, fan)
            assert dumped(snapshot.navigate(start, hops, relations, max_paths, fan)) == dumped(expected), (
                start,
                hops,
                relations,
                max_paths,
                fan,
            )
            compared += len(expected)
    assert compared > 5000  # the comparison covered real paths, not empty answers


def test_edge_cases_match_the_store(falkor_store):
    """A relation without a weight, a self-loop, two relations between the same pair, both directions,
    an isolated entity, names that look like Cypher, and the entity named loosely."""
    data = GraphData()
    for name in ["Alpha", "Beta", "Gamma", "Delta", "Lonely", "x'}) MATCH (n) DETACH DELETE n //", 'Quote "q" \\ end']:
        data.add_entity(name, "Concept")
    data.relations = [
        {"type": "DEPENDS_ON", "s": "alpha", "t": "beta", "weight": None, "sources": []},
        {"type": "RELATED_TO", "s": "alpha", "t": "beta", "weight": 0.75, "sources": []},
        {"type": "RELATED_TO", "s": "gamma", "t": "alpha", "weight": 0.25, "sources": []},
        {"type": "CO_OCCURS", "s": "alpha", "t": "alpha", "weight": 0.9, "sources": []},
        {"type": "DERIVED_FROM", "s": "beta", "t": "delta", "weight": 1, "sources": []},
        {"type": "REFERENCES", "s": "x'}) match (n) detach delete n //", "t": "gamma", "weight": 0.6, "sources": []},
        {"type": "CONFLICTS_WITH", "s": 'quote "q" \\ end', "t": "delta", "weight": 0.33, "sources": []},
    ]
    falkor_store.replace_kb(KB, data)
    snapshot = GraphSnapshot.load(falkor_store, KB, 100)
    for start in ["Alpha", "  alpha ", "BETA", "Lonely", "x'}) MATCH (n) DETACH DELETE n //", 'Quote "q" \\ end']:
        for hops in (1, 2, 3, 4):
            for relations in (None, ["RELATED_TO"], ["DEPENDS_ON", "DERIVED_FROM"]):
                assert dumped(snapshot.navigate(start, hops, relations, 50, 25)) == dumped(
                    falkor_store.navigate(KB, start, hops, relations, 50, 25)
                ), (start, hops, relations)
    paths = snapshot.navigate("Alpha", 1)
    assert [(p.summary(), p.score) for p in paths] == [
        ("Alpha -RELATED_TO-> Beta", 0.75),  # the better of the two relations to Beta
        ("Alpha <-RELATED_TO- Gamma", 0.25),  # walked against its direction, drawn as it points
    ]
    assert snapshot.navigate("Lonely", 3) == []


def test_bad_input_is_refused_as_the_store_refuses_it(falkor_store):
    from conftest import known_graph_data

    falkor_store.replace_kb(KB, known_graph_data())
    snapshot = GraphSnapshot.load(falkor_store, KB, 100)
    cases = [
        dict(entity="Nope"),
        dict(entity="   "),
        dict(entity="x" * 201),
        dict(entity="ComfyUI", max_hops=0),
        dict(entity="ComfyUI", max_hops=5),
        dict(entity="ComfyUI", max_hops="2"),
        dict(entity="ComfyUI", max_hops=True),
        dict(entity="ComfyUI", relation_filter=["MENTIONS"]),
        dict(entity="ComfyUI", relation_filter=["DEPENDS_ON]-(x) //"]),
        dict(entity="ComfyUI", max_paths=0),
        dict(entity="ComfyUI", max_paths=201),
        dict(entity="ComfyUI", max_nodes_per_hop=0),
        dict(entity="ComfyUI", max_nodes_per_hop=501),
    ]
    for case in cases:
        with pytest.raises(InputError) as from_store:
            falkor_store.navigate(KB, **case)
        with pytest.raises(InputError) as from_memory:
            snapshot.navigate(**case)
        assert str(from_memory.value) == str(from_store.value), case


def test_ties_keep_every_cap(falkor_store):
    """All weights equal: which of the tied nodes a hop keeps is the engine's choice, but the shape is not:
    the same number of paths per hop, the same scores, each node reached once, within the caps."""
    data = random_graph(400, 4000, seed=5)
    for rel in data.relations:
        rel["weight"] = 0.5
    falkor_store.replace_kb(KB, data)
    snapshot = GraphSnapshot.load(falkor_store, KB, 10_000)
    for start in ["Node 1", "Node 2", "Node 3"]:
        ours, theirs = snapshot.navigate(start, 3, None, 40, 6), falkor_store.navigate(KB, start, 3, None, 40, 6)
        assert [(p.hops, p.score) for p in ours] == [(p.hops, p.score) for p in theirs]
        ends = [p.nodes[-1].name for p in ours]
        assert len(ends) == len(set(ends)) and all(sum(p.hops == h for p in ours) <= 6 for h in (1, 2, 3))


def test_a_graph_larger_than_allowed_is_not_held(falkor_store):
    falkor_store.replace_kb(KB, random_graph(100, 300, seed=1))
    assert GraphSnapshot.load(falkor_store, KB, 299) is None
    assert GraphSnapshot.load(falkor_store, KB, 300).relation_count == 300


def test_bulk_reads_take_parameters_and_report_engine_errors_in_one_line(falkor_store):
    falkor_store.replace_kb(KB, random_graph(10, 10, seed=1))
    with pytest.raises(BackendError, match="graph query failed"):
        falkor_store.driver.run_scalars("MATCH (e:Entity {kb: $kb}) RETURN e.key +", {"kb": KB})
    with pytest.raises(BackendError, match="graph query failed: Division by zero"):  # raised while it runs
        falkor_store.driver.run_scalars("UNWIND [1, 0] AS x RETURN 1 / x", {"kb": KB})
    patient, falkor_store.driver.timeout_ms = falkor_store.driver.timeout_ms, 1
    try:
        with pytest.raises(BackendError, match="timed out after 1 ms"):
            falkor_store.driver.run_scalars("UNWIND range(1, 30000000) AS x WITH x WHERE x % 7 = 0 RETURN count(x)")
    finally:
        falkor_store.driver.timeout_ms = patient
    hostile = 'a "b" \\ 中文 \x00\x07 \'}) MATCH (n) DETACH DELETE n //'
    rows = falkor_store.driver.run_scalars("RETURN $s, $i, $f, $n", {"s": hostile, "i": 3, "f": 0.25, "n": None})
    # control characters dropped (as every parameter is), doubles as their text, as documented
    assert rows == [['a "b" \\ 中文  \'}) MATCH (n) DETACH DELETE n //', 3, "0.25", None]]
    assert falkor_store.stats(KB)["entities"] == 10
