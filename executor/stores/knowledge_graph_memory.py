"""One knowledge base's graph held in memory, for `navigate` at memory speed (issue 17).

A capped 3-hop `navigate` over 10,000 entities and 100,000 relations took
10-50 ms in FalkorDB (the per-hop aggregation of its subqueries), and the same
breadth-first search over an adjacency list in Python takes ~0.5 ms. The
graph changes only at ingest, so the traversal cache
(`executor/retrieval/traversal_cache.py`) loads a snapshot once per KB revision with
two reads (`traversal_rows`, on every graph store) and traverses it here.

`navigate` has the stores' semantics exactly (executor/stores/knowledge_graph_cypher.py's
`_navigate_query`, executor/stores/knowledge_graph_sql.py's chained CTEs): relations
walked both ways, per hop the best-scoring path to each node not reached
before (score = product of weights, a missing weight counts as
`DEFAULT_WEIGHT`), only the `max_nodes_per_hop` best new nodes kept per hop,
the `max_paths` best paths returned, best first and shorter first among equal
scores. The engines leave ties among equal scores in no particular order;
here they fall in the order the relations were read, which is one of the
orders an engine may give. The same inputs are checked the same way (hops,
caps, relation whitelist, entity name) with the same errors.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable
from typing import Protocol

from executor.stores.knowledge_graph import (
    DEFAULT_WEIGHT,
    RELATION_TYPES,
    GraphEdge,
    GraphNode,
    GraphPath,
    entity_key,
    navigation,
    unknown_entity,
)

_TYPE_INDEX = {t: i for i, t in enumerate(RELATION_TYPES)}
_ALL_TYPES = frozenset(range(len(RELATION_TYPES)))


class TraversalRows(Protocol):
    """What a graph store hands over for a snapshot: every entity of the KB, and its relations (at most
    `limit`; one more tells the caller the graph is larger than it wants in memory)."""

    def traversal_rows(
        self, kb: str, limit: int
    ) -> tuple[list[tuple[str, str, str | None]], list[tuple[str, str, str, float | None]]]: ...


class GraphSnapshot:
    """Entities and relations of one KB as lists indexed by small integers; immutable once built, so any
    number of threads may traverse it at once."""

    def __init__(
        self,
        kb: str,
        entities: Iterable[tuple[str, str, str | None]],
        relations: Iterable[tuple[str, str, str, float | None]],
    ):
        """`entities`: (key, name, type); `relations`: (type, source key, target key, weight), as stored
        (a relation whose end is not an entity of the KB, which no load writes, is skipped)."""
        self.kb = kb
        self._index: dict[str, int] = {}
        self._names: list[str] = []
        self._types: list[str | None] = []
        for key, name, type_ in entities:
            if key not in self._index:
                self._index[key] = len(self._names)
                self._names.append(name)
                self._types.append(type_)
        # per node: (neighbour, weight, relation id, relation type) for each relation touching it, both ways
        self._adjacent: list[list[tuple[int, float, int, int]]] = [[] for _ in self._names]
        self._edges: list[tuple[int, int, int, float]] = []  # relation id -> (type, source, target, weight)
        for type_, s, t, weight in relations:
            a, b, kind = self._index.get(s), self._index.get(t), _TYPE_INDEX.get(type_)
            if a is None or b is None or kind is None:
                continue
            w = DEFAULT_WEIGHT if weight is None else float(weight)
            rid = len(self._edges)
            self._edges.append((kind, a, b, w))
            self._adjacent[a].append((b, w, rid, kind))
            if b != a:  # a self-loop is one relation, matched once from its node (and never followed: seen)
                self._adjacent[b].append((a, w, rid, kind))
        self._node_objects: dict[int, GraphNode] = {}
        self._edge_objects: dict[int, GraphEdge] = {}

    @classmethod
    def load(cls, store: TraversalRows, kb: str, max_relations: int) -> GraphSnapshot | None:
        """The KB's graph from `store`, or None when it has more than `max_relations` relations (too large to
        hold: the caller traverses in the store instead)."""
        entities, relations = store.traversal_rows(kb, max_relations)
        if len(relations) > max_relations:
            return None
        return cls(kb, entities, relations)

    @property
    def entity_count(self) -> int:
        return len(self._names)

    @property
    def relation_count(self) -> int:
        return len(self._edges)

    def navigate(
        self,
        entity: str,
        max_hops: int = 2,
        relation_filter: Iterable[str] | None = None,
        max_paths: int = 20,
        max_nodes_per_hop: int = 25,
    ) -> list[GraphPath]:
        """Paths from `entity` to the nodes around it, best score first: `GraphStore.navigate` in memory."""
        name, hops, types, fan, limit = navigation(entity, max_hops, relation_filter, max_paths, max_nodes_per_hop)
        kinds = frozenset(_TYPE_INDEX[t] for t in types)
        allowed = None if kinds == _ALL_TYPES else kinds
        start = self._index.get(entity_key(name))
        if start is None:
            raise unknown_entity(self.kb, name)

        adjacent = self._adjacent
        seen = {start}
        # a reached node: (node, score, hops, parent entry or None, relation id)
        frontier: list[tuple] = [(start, 1.0, 0, None, -1)]
        found: list[tuple] = []
        for _ in range(hops):
            best: dict[int, float] = {}  # new node -> its best score (the first of equal ones kept)
            via: dict[int, tuple] = {}  # new node -> (parent entry, relation id) of that score
            for entry in frontier:
                a, score = entry[0], entry[1]
                for m, w, rid, kind in adjacent[a]:
                    if m in seen or (allowed is not None and kind not in allowed):
                        continue
                    s = score * w
                    old = best.get(m)
                    if old is None or s > old:
                        best[m] = s
                        via[m] = (entry, rid)
            if not best:
                break
            # nlargest is sorted(..., reverse=True)[:fan] and keeps equal scores in the order they came
            kept = heapq.nlargest(fan, best, key=best.__getitem__)
            frontier = []
            for m in kept:
                parent, rid = via[m]
                frontier.append((m, best[m], parent[2] + 1, parent, rid))
            seen.update(kept)
            found += frontier
        found.sort(key=lambda e: (-e[1], e[2]))  # stable: equal (score, hops) keep their hop and fan order
        return [self._path(e) for e in found[:limit]]

    def _path(self, entry: tuple) -> GraphPath:
        score = round(float(entry[1]), 6)
        nodes, edges = [], []
        while entry[3] is not None:
            nodes.append(self._node(entry[0]))
            edges.append(self._edge(entry[4]))
            entry = entry[3]
        nodes.append(self._node(entry[0]))
        nodes.reverse()
        edges.reverse()
        return GraphPath.model_construct(nodes=nodes, edges=edges, score=score)

    # GraphNode and GraphEdge are frozen: one object per node and relation serves every path (building them
    # anew was half of a 3-hop call)
    def _node(self, i: int) -> GraphNode:
        node = self._node_objects.get(i)
        if node is None:
            node = self._node_objects[i] = GraphNode.model_construct(name=self._names[i], type=self._types[i])
        return node

    def _edge(self, rid: int) -> GraphEdge:
        edge = self._edge_objects.get(rid)
        if edge is None:
            kind, s, t, w = self._edges[rid]
            edge = self._edge_objects[rid] = GraphEdge.model_construct(
                type=RELATION_TYPES[kind], source=self._names[s], target=self._names[t], weight=w
            )
        return edge
