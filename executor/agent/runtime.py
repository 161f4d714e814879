"""The composition root: the stores and services one process works with, built lazily from the settings.

Each service gets its collaborators here, explicitly; nothing below this module imports it. Use it as a
context manager (`with Runtime(...) as rt:`): leaving the block closes what was opened.
"""

from __future__ import annotations

import threading
from functools import cached_property
from pathlib import Path

from executor.core.settings import Settings, get_settings
from executor.stores.catalog import Catalog
from executor.stores.database import Database
from executor.stores.embedders import Embedder, make_embedder
from executor.stores.falkordb_server import FalkorDBServer
from executor.stores.invocation_log import InvocationLog
from executor.stores.knowledge_graph import GraphStore
from executor.stores.knowledge_graph_drivers import FalkorDriver, Neo4jDriver
from executor.stores.knowledge_graph_sql import SqlGraphStore
from executor.stores.memory import ActionMemory
from executor.stores.vectors import VectorStore, open_vector_store


class Runtime:
    """`source` names the surface this process serves (chat, ask, eval, ...): every invocation row records it."""

    def __init__(self, settings: Settings | None = None, source: str | None = None):
        self.settings = settings or get_settings()
        self.source = source

    @cached_property
    def db(self) -> Database:
        self.settings.ensure_home()
        return Database(self.settings.db_url)

    @cached_property
    def catalog(self) -> Catalog:
        return Catalog(self.db, str(self.settings.home))

    @cached_property
    def memory(self) -> ActionMemory:
        return ActionMemory(self.db)

    @cached_property
    def log(self) -> InvocationLog:
        return InvocationLog(self.db, self.source)

    @cached_property
    def vectors(self) -> VectorStore:
        self.settings.ensure_home()
        return open_vector_store(
            self.settings.milvus_target, self.settings.milvus_token, self.settings.milvus_timeout_s
        )

    @cached_property
    def cache_dir(self) -> Path:
        """Derived state kept between runs (the embedder's, vocabularies, text profiles, entity names)."""
        return self.settings.ensure_home() / "cache"

    @cached_property
    def embedder(self) -> Embedder:
        return make_embedder(self.settings.embedder, self.settings.embedder_path, self.cache_dir)

    @cached_property
    def graph_server(self) -> FalkorDBServer:
        s = self.settings
        return FalkorDBServer(s.graph_folder, s.falkordb_bolt_port, s.falkordb_bolt_all_interfaces)

    @cached_property
    def graph(self) -> GraphStore | SqlGraphStore:
        """The app database with EXECUTOR_GRAPH_BACKEND=sql; else Neo4j if NEO4J_URI is set, else FalkorDB at
        FALKORDB_URL, else the embedded FalkorDB (started on demand)."""
        s = self.settings
        if s.graph_backend == "sql":
            return SqlGraphStore(self.db)
        if s.neo4j_uri:
            driver = Neo4jDriver(s.neo4j_uri, s.neo4j_user, s.neo4j_password, s.neo4j_database, s.graph_timeout_s)
        elif s.falkordb_url:
            driver = FalkorDriver(s.graph_name, url=s.falkordb_url, timeout_s=s.graph_timeout_s)
        else:
            socket = self.graph_server.ensure_running()
            driver = FalkorDriver(
                s.graph_name,
                socket_path=str(socket),
                timeout_s=s.graph_timeout_s,
                restart=self.graph_server.ensure_running,
            )
        return GraphStore(driver)

    @cached_property
    def known_entities(self):
        from executor.retrieval.extraction import KnownEntities

        s = self.settings
        local_graph = s.graph_backend == "sql" or not (s.neo4j_uri or s.falkordb_url)  # written by this home only
        return KnownEntities(
            s, self.catalog, self.embedder, lambda: self.graph, self.cache_dir if local_graph else None
        )

    @cached_property
    def traversals(self):
        from executor.retrieval.traversal_cache import TraversalCache

        return TraversalCache(self.catalog, lambda: self.graph)

    @cached_property
    def expander(self):
        from executor.retrieval.expansion import GraphExpander

        return GraphExpander(
            self.settings,
            self.catalog,
            self.vectors,
            self.embedder,
            self.memory,
            self.log,
            self.grader,
            self.known_entities,
            self.traversals,
            lambda: self.graph,
        )

    @cached_property
    def kg(self):
        from executor.retrieval.kg_query import KnowledgeGraphQuery

        return KnowledgeGraphQuery(
            self.settings,
            self.catalog,
            self.vectors,
            self.embedder,
            self.memory,
            self.grader,
            self.known_entities,
            self.traversals,
        )

    @cached_property
    def grader(self):
        from executor.retrieval.grading import Grader

        return Grader(self.catalog, self.vectors, self.embedder, self.cache_dir, self.settings.top_k)

    @cached_property
    def lookup_service(self):
        from executor.retrieval.lookup import LookupService

        return LookupService(
            self.settings, self.catalog, self.vectors, self.embedder, self.memory, self.grader, self.known_entities
        )

    def start_loading(self, segmenter: bool = True) -> None:
        """Start what a first lookup waits for, each on a thread of its own, so that their waits overlap: the
        vector store opens (Milvus Lite's server takes ~1 s to start), the embedder loads (the default one on
        its own thread) and, unless `segmenter` is false, jieba reads its dictionary. The first call that
        needs one waits for it. Threads share the interpreter: loading what the command will not use (jieba
        for an ASCII query: grading reads the KB's text profiles) only takes CPU from what it will."""
        from executor.retrieval.vocabulary import load_segmenter

        self.vectors.open_in_background()
        if segmenter:
            threading.Thread(target=load_segmenter, name="load-jieba", daemon=True).start()
        self.embedder

    def use_local_model(self, stack) -> None:
        """With EXECUTOR_LOCAL_MODEL set, serve that model on a free loopback port until `stack` (an ExitStack)
        closes, and point this runtime's LLM settings at it (no API key goes to it)."""
        settings = self.settings
        if not settings.local_model:
            return
        from executor.local_llm.serve import LocalEndpoint, engine_options

        endpoint = stack.enter_context(LocalEndpoint(engine_options(settings, settings.local_model)))
        self.settings = settings.model_copy(
            update={
                "openai_base_url": endpoint.base_url,
                "openai_api_key": None,
                "model": endpoint.options.alias,
                # the endpoint's own per-request timeout answers first, with a line that says so
                "llm_timeout_s": max(settings.llm_timeout_s, settings.local_model_timeout_s + 5),
            }
        )

    def app(self, model, mode: str, checkpointer=None):
        """The executor graph on this runtime's services: what the chat, `ask`, Studio and the eval all run.
        `mode`: "llm" (a chat model) or "offline" (the planner)."""
        from executor.agent.graph import build_graph

        return build_graph(
            self,
            lambda result: self.expander.expand(result),
            lambda kb, doc_key: self.vectors.document_text(kb, doc_key),
            model,
            mode,
            checkpointer,
        )

    def __enter__(self) -> Runtime:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self, stop_graph_server: bool = False) -> None:
        """Release what was opened; the embedded graph server keeps running for the next command unless asked."""
        if "vectors" in self.__dict__:
            self.vectors.close()
        if "graph" in self.__dict__:
            self.graph.close()
        if "db" in self.__dict__:
            self.db.engine.dispose()
        if stop_graph_server:
            self.graph_server.stop()
