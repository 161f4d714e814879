"""What each knowledge base is, in a few words (for the `list_knowledge_bases` tool, the MCP resource and the system
prompt), and dropping one."""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable

from pydantic import BaseModel

from retrieval.graph_build import has_graph
from stores.catalog import Catalog

if TYPE_CHECKING:
    from stores.graph import GraphStore
    from stores.vectors import MilvusVectorStore


class KnowledgeBaseInfo(BaseModel):
    name: str
    description: str
    documents: int
    has_graph: bool

    def line(self) -> str:
        """One line for the LLM (the system prompt and `list_knowledge_bases`)."""
        graph = "knowledge graph" if self.has_graph else "no knowledge graph"
        return f"{self.name}: {self.documents} documents, {graph}" + (f" — {self.description}" if self.description else "")


def knowledge_bases(catalog: Catalog) -> list[KnowledgeBaseInfo]:
    counts = catalog.document_counts()
    return [
        KnowledgeBaseInfo(name=row.name, description=row.description or "", documents=counts.get(row.name, 0),
                          has_graph=has_graph(row.extract_config))
        for row in catalog.rows()
    ]


def drop_knowledge_base(name: str, catalog: Catalog, vectors: MilvusVectorStore, graph: Callable[[], GraphStore]) -> None:
    """Remove a knowledge base: its graph (only a KB with a graph config opens the graph), its vectors, its row.

    The catalog row goes last: if a step fails, the KB is still listed and the drop can be repeated."""
    row = catalog.require(name)
    if has_graph(row.extract_config):
        graph().drop_kb(name)
    vectors.drop(name)
    catalog.drop(name)
