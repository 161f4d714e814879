"""Every backend has each method of its kind's protocol, with the same parameters (names, kinds, defaults): a
backend that misses one, or takes other arguments, fails here instead of in a user's first call. The types of
the parameters and results are pyright's to check: the lists below are typed with the protocols, so a class
that does not satisfy one is an error there (`pyright tests/unit/test_store_protocols.py`)."""

from __future__ import annotations

import inspect

import pytest

from executor.stores.embedders import BgeM3Embedder, Embedder, FlagEncoderEmbedder, UseEmbedder
from executor.stores.graph_store import GraphStore
from executor.stores.knowledge_graph import PathEnds
from executor.stores.knowledge_graph_cypher import CypherGraphStore
from executor.stores.knowledge_graph_memory import TraversalRows
from executor.stores.knowledge_graph_sql import SqlGraphStore
from executor.stores.vector_store import VectorStore
from executor.stores.vectors import MilvusVectorStore

GRAPH_STORES: list[type[GraphStore]] = [CypherGraphStore, SqlGraphStore]
VECTOR_STORES: list[type[VectorStore]] = [MilvusVectorStore]
EMBEDDERS: list[type[Embedder]] = [UseEmbedder, FlagEncoderEmbedder, BgeM3Embedder]


def protocol_methods(protocol: type) -> dict[str, inspect.Signature]:
    """The public methods a protocol declares, its own and those of the protocols it extends."""
    methods = {}
    for cls in reversed(protocol.__mro__):
        if cls.__module__.startswith("executor."):
            for name, value in vars(cls).items():
                if inspect.isfunction(value) and not name.startswith("_"):
                    methods[name] = inspect.signature(value)
    return methods


def parameters(signature: inspect.Signature) -> list[tuple[str, str, object]]:
    return [(p.name, p.kind.name, p.default) for p in signature.parameters.values()]


def mismatches(protocol: type, backend: type) -> list[str]:
    """One line per protocol method the backend lacks or declares with other parameters."""
    found = []
    for name, wanted in protocol_methods(protocol).items():
        method = getattr(backend, name, None)
        if not callable(method):
            found.append(f"{name}: missing")
        elif parameters(inspect.signature(method)) != parameters(wanted):
            found.append(f"{name}: takes {inspect.signature(method)}, the protocol {wanted}")
    return found


@pytest.mark.parametrize(
    "protocol, backend",
    [(GraphStore, b) for b in GRAPH_STORES]
    + [(VectorStore, b) for b in VECTOR_STORES]
    + [(Embedder, b) for b in EMBEDDERS]
    # what the in-memory snapshot loads from, and what paths_between and the nearest-pair search read: any graph
    # store can be handed to them
    + [(TraversalRows, GraphStore), (PathEnds, GraphStore)],
    ids=lambda c: c.__name__,
)
def test_the_backend_has_every_method_of_its_protocol(protocol, backend):
    assert mismatches(protocol, backend) == []


def test_a_missing_method_or_another_parameter_list_is_reported():
    def navigate(self, kb, entity, max_hops=2, relation_filter=None, max_paths=20):  # no max_nodes_per_hop
        return []

    members = {k: v for k, v in vars(SqlGraphStore).items() if k != "counts"}
    lacking = type("Lacking", (), {**members, "navigate": navigate})
    assert [line.split(":")[0] for line in mismatches(GraphStore, lacking)] == ["navigate", "counts"]
