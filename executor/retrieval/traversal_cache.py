"""Graph traversals served from memory, per knowledge-base revision (seed 001's L3, issue 17).

Graph expansion, `query_knowledge_graph` and the `navigate_graph` tool
traverse from the same few entities over and over in a chat or an eval run. A
traversal's result depends only on the graph and the call's arguments, and the
graph changes only at ingest, which bumps the KB's revision (after the graph is
written). So, per KB revision:

- the KB's graph is read once into a `GraphSnapshot` (two bulk reads) and
  traversed in memory, with the stores' own semantics and caps: a capped
  3-hop `navigate` over 10,000 entities and 100,000 relations takes ~1 ms
  there against 10-50 ms in FalkorDB (`python -m evals.bench_graph`). A graph
  with more than `max_snapshot_relations` relations is not held (memory): it
  is traversed in its store, as before;
- each traversal's result is kept, keyed by (kb, revision, entity, hops,
  relation filter, caps).

An ingest invalidates both by changing the revision: the old revision's
entries and snapshot are dropped on first sight of the new one. Callers pass
a tally that counts their hits and misses of the result cache, so each logged
call says what the cache did for it and `executor stats` can total the hit rate.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from executor.stores.knowledge_graph import GraphPath, check_entity_name, entity_key, relation_types
from executor.stores.knowledge_graph_memory import GraphSnapshot

if TYPE_CHECKING:
    from executor.stores.catalog import Catalog
    from executor.stores.knowledge_graph_sql import GraphBackend

MAX_ENTRIES = 4096
# memory per relation held: ~280 bytes (both directions of the adjacency and the relation), up to ~480 once it
# has been on a returned path (its GraphEdge is kept); 200,000 relations is 56-96 MB. Larger graphs are
# traversed in their store.
MAX_SNAPSHOT_RELATIONS = 200_000


def new_tally() -> dict[str, int]:
    return {"hits": 0, "misses": 0}


class TraversalCache:
    def __init__(
        self,
        catalog: Catalog,
        graph: Callable[[], GraphBackend],
        max_entries: int = MAX_ENTRIES,
        max_snapshot_relations: int = MAX_SNAPSHOT_RELATIONS,
    ):
        self.catalog, self._open_graph = catalog, graph
        self.max_entries = max_entries
        self.max_snapshot_relations = max_snapshot_relations
        self._entries: OrderedDict[tuple, list[GraphPath]] = OrderedDict()
        self._versions: dict[str, tuple] = {}
        # kb -> (version, its snapshot, or None when the graph is too large to hold)
        self._snapshots: dict[str, tuple[tuple, GraphSnapshot | None]] = {}
        self._loading: dict[str, threading.Lock] = {}  # one load per KB at a time; other KBs load alongside
        self._lock = threading.Lock()

    @property
    def graph(self) -> GraphBackend:
        return self._open_graph()  # opened on first use: a KB without a graph never starts the graph server

    def navigate(
        self,
        kb: str,
        entity: str,
        hops: int,
        relation_filter: Iterable[str] | None,
        max_paths: int,
        max_nodes_per_hop: int,
        tally: dict[str, int] | None = None,
    ) -> list[GraphPath]:
        row = self.catalog.require(kb)
        version = (row.revision, row.created_at)
        key = (
            kb,
            version,
            entity_key(check_entity_name(entity)),
            hops,
            tuple(sorted(relation_types(relation_filter))),
            max_paths,
            max_nodes_per_hop,
        )
        with self._lock:
            if self._versions.get(kb) != version:  # re-ingested (or dropped and re-created): forget the old graph
                for old in [k for k in self._entries if k[0] == kb]:
                    del self._entries[old]
                self._snapshots.pop(kb, None)
                self._versions[kb] = version
            paths = self._entries.get(key)
            if paths is not None:
                self._entries.move_to_end(key)
            if tally is not None:  # under the lock: one tally may serve several threads (one per KB)
                tally["hits" if paths is not None else "misses"] += 1
        if paths is not None:
            return list(paths)
        snapshot = self.snapshot(kb, version)
        if snapshot is not None:
            paths = snapshot.navigate(entity, hops, relation_filter, max_paths, max_nodes_per_hop)
        else:
            paths = self.graph.navigate(kb, entity, hops, relation_filter, max_paths, max_nodes_per_hop)
        with self._lock:
            if self._versions.get(kb) == version:
                self._entries[key] = list(paths)
                while len(self._entries) > self.max_entries:
                    self._entries.popitem(last=False)
        return paths

    def snapshot(self, kb: str, version: tuple) -> GraphSnapshot | None:
        """The KB's graph in memory as of `version`, read from the store on first use; None when it is too
        large to hold."""
        with self._lock:
            held = self._snapshots.get(kb)
            if held is not None and held[0] == version:
                return held[1]
            loading = self._loading.setdefault(kb, threading.Lock())
        with loading:
            with self._lock:  # another thread may have loaded it while this one waited
                held = self._snapshots.get(kb)
                if held is not None and held[0] == version:
                    return held[1]
            snapshot = GraphSnapshot.load(self.graph, kb, self.max_snapshot_relations)
            with self._lock:
                if self._versions.get(kb) == version:  # not re-ingested meanwhile
                    self._snapshots[kb] = (version, snapshot)
        return snapshot
