"""The graph store: what retrieval, the tools and the agent call on a knowledge graph, and the one factory.

Two backends implement it: Cypher (`knowledge_graph_cypher.CypherGraphStore`, on FalkorDB or Neo4j through
`knowledge_graph_drivers`) and SQL (`knowledge_graph_sql.SqlGraphStore`, in the application database). Both
speak the vocabulary of `knowledge_graph` (nodes, paths, the graph to load, the argument checks), and both
hand `knowledge_graph_memory.GraphSnapshot` its rows (`traversal_rows`). A new backend is one module with a
class that has these methods, and one branch in `make_graph_store`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Protocol

from executor.stores.knowledge_graph_cypher import CypherGraphStore
from executor.stores.knowledge_graph_drivers import FalkorDriver, Neo4jDriver
from executor.stores.knowledge_graph_sql import SqlGraphStore

if TYPE_CHECKING:
    from executor.core.settings import Settings
    from executor.stores.database import Database
    from executor.stores.falkordb_server import FalkorDBServer
    from executor.stores.knowledge_graph import GraphData, GraphNode, GraphPath, PathsBetween


class GraphStore(Protocol):
    """One graph per knowledge base (`kb`); entities are looked up by name (case and spacing ignored)."""

    # -- reads
    def entity(self, kb: str, name: str) -> GraphNode | None:
        """The entity, or None (`knowledge_graph.require_entity` turns None into the error)."""
        ...

    def navigate(
        self,
        kb: str,
        entity: str,
        max_hops: int = 2,
        relation_filter: Iterable[str] | None = None,
        max_paths: int = 20,
        max_nodes_per_hop: int = 25,
    ) -> list[GraphPath]:
        """Paths from `entity` to the nodes around it, best score first (score = product of weights)."""
        ...

    def navigate_between(
        self,
        kb: str,
        source: str,
        target: str,
        max_hops: int = 3,
        relation_filter: Iterable[str] | None = None,
        max_paths: int = 5,
    ) -> PathsBetween:
        """Cycle-free paths between two entities, or unreachable with the nearest pair."""
        ...

    def neighbours(
        self, kb: str, keys: list[str], relation_filter: Iterable[str] | None = None
    ) -> list[tuple[str, str, str, str]]:
        """(key, neighbour key, neighbour name, relation type) for every relation touching `keys`, both ways."""
        ...

    def traversal_rows(
        self, kb: str, limit: int
    ) -> tuple[list[tuple[str, str, str | None]], list[tuple[str, str, str, float | None]]]:
        """Every entity as (key, name, type) and up to `limit` + 1 relations as (type, source key, target key,
        weight): what `GraphSnapshot` traverses in memory."""
        ...

    def entity_names(self, kb: str) -> dict[str, tuple[str, str | None]]:
        """Key (case-folded name or alias) -> (name, type)."""
        ...

    def entities_of_documents(self, kb: str, doc_keys: list[str], limit: int = 10) -> list[GraphNode]:
        """The entities these documents mention most, most-mentioned first."""
        ...

    def documents_mentioning(self, kb: str, names: list[str]) -> dict[str, dict]:
        """doc_key -> {doc_key, title, domain, entities: [names]} for documents that mention any of `names`."""
        ...

    def stats(self, kb: str) -> dict[str, int]:
        """{entities, documents, relations}."""
        ...

    def counts(self, kb: str) -> dict[str, int]:
        """{entities, documents, mentions, relations}: the totals `replace_kb` and `update_kb` report."""
        ...

    # -- writes
    def drop_kb(self, kb: str) -> None: ...

    def discard_unfinished(self, kb: str) -> None:
        """Remove what a load or swap of `kb` killed half-way left (every ingest calls it first)."""
        ...

    def replace_kb(self, kb: str, data: GraphData, progress=None) -> dict[str, int]:
        """Load `data` as the whole graph of `kb`; readers see the old graph or the new one, never neither."""
        ...

    def update_kb(self, kb: str, data: GraphData, progress=None) -> tuple[dict[str, int], dict[str, int]]:
        """Write only the difference between the stored graph and `data`: (totals, rows written per kind)."""
        ...

    def close(self) -> None: ...


def make_graph_store(
    settings: Settings, database: Callable[[], Database], server: Callable[[], FalkorDBServer]
) -> GraphStore:
    """The graph store the settings name: the application database with EXECUTOR_GRAPH_BACKEND=sql; else Neo4j
    if NEO4J_URI is set, else FalkorDB at FALKORDB_URL, else the embedded FalkorDB (started on demand, and again
    by its driver if it dies). `database` and `server` are called only by the backend that uses them."""
    s = settings
    if s.graph_backend == "sql":
        return SqlGraphStore(database())
    if s.neo4j_uri:
        return CypherGraphStore(
            Neo4jDriver(s.neo4j_uri, s.neo4j_user, s.neo4j_password, s.neo4j_database, s.graph_timeout_s)
        )
    if s.falkordb_url:
        return CypherGraphStore(FalkorDriver(s.graph_name, url=s.falkordb_url, timeout_s=s.graph_timeout_s))
    embedded = server()
    return CypherGraphStore(
        FalkorDriver(
            s.graph_name,
            socket_path=str(embedded.ensure_running()),
            timeout_s=s.graph_timeout_s,
            restart=embedded.ensure_running,
        ),
        written=embedded.compact,
    )
