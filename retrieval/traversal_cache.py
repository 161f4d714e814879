"""Graph traversals remembered per knowledge-base revision (seed 001's L3: the same entity's BFS is reused).

Graph expansion and `query_knowledge_graph` traverse from the same few
entities over and over in a chat or an eval run. A traversal's result depends
only on the graph and the call's arguments, and the graph changes only at
ingest, which bumps the KB's revision: so the key is (kb, revision, entity,
hops, relation filter, caps), and an ingest invalidates by changing the key
(the old revision's entries are dropped on first sight of the new one).
Callers pass a tally that counts their hits and misses, so each logged call
says what the cache did for it and `executor stats` can total the hit rate.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import TYPE_CHECKING, Callable, Iterable

from stores.knowledge_graph import GraphPath, check_entity_name, entity_key, relation_types

if TYPE_CHECKING:
    from stores.catalog import Catalog
    from stores.knowledge_graph import GraphStore

MAX_ENTRIES = 4096


def new_tally() -> dict[str, int]:
    return {"hits": 0, "misses": 0}


class TraversalCache:
    def __init__(self, catalog: "Catalog", graph: "Callable[[], GraphStore]", max_entries: int = MAX_ENTRIES):
        self.catalog, self._open_graph = catalog, graph
        self.max_entries = max_entries
        self._entries: OrderedDict[tuple, list[GraphPath]] = OrderedDict()
        self._versions: dict[str, tuple] = {}
        self._lock = threading.Lock()

    @property
    def graph(self) -> "GraphStore":
        return self._open_graph()  # opened on first use: a KB without a graph never starts the graph server

    def navigate(self, kb: str, entity: str, hops: int, relation_filter: Iterable[str] | None, max_paths: int,
                 max_nodes_per_hop: int, tally: dict[str, int] | None = None) -> list[GraphPath]:
        row = self.catalog.require(kb)
        version = (row.revision, row.created_at)
        key = (kb, version, entity_key(check_entity_name(entity)), hops, tuple(sorted(relation_types(relation_filter))),
               max_paths, max_nodes_per_hop)
        with self._lock:
            if self._versions.get(kb) != version:  # re-ingested (or dropped and re-created): forget the old graph
                for old in [k for k in self._entries if k[0] == kb]:
                    del self._entries[old]
                self._versions[kb] = version
            paths = self._entries.get(key)
            if paths is not None:
                self._entries.move_to_end(key)
            if tally is not None:  # under the lock: one tally may serve several threads (one per KB)
                tally["hits" if paths is not None else "misses"] += 1
        if paths is not None:
            return list(paths)
        paths = self.graph.navigate(kb, entity, hops, relation_filter, max_paths, max_nodes_per_hop)
        with self._lock:
            if self._versions.get(kb) == version:
                self._entries[key] = list(paths)
                while len(self._entries) > self.max_entries:
                    self._entries.popitem(last=False)
        return paths
