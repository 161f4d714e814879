"""The composition root: the stores and services one process works with, built lazily from the settings.

Each service gets its collaborators here, explicitly; nothing below this module imports it. The settings are
settled before anything is built (with `serve_model`, the local model's endpoint is started first), and the
runtime builds what every surface runs: the chat model, the checkpointer, the tool table and the compiled
graph (ask, chat, Studio, the MCP server, the eval). Use it as a context manager (`with Runtime(...) as rt:`):
leaving the block closes what was opened.
"""

from __future__ import annotations

import threading
from contextlib import AbstractContextManager, ExitStack, nullcontext
from functools import cached_property
from pathlib import Path

from executor.core.settings import Settings, get_settings
from executor.stores.catalog import Catalog
from executor.stores.database import Database
from executor.stores.embedders import Embedder, make_embedder
from executor.stores.falkordb_server import FalkorDBServer
from executor.stores.graph_store import GraphStore, make_graph_store
from executor.stores.invocation_log import InvocationLog
from executor.stores.memory import ActionMemory
from executor.stores.vector_store import VectorStore, make_vector_store


class Runtime:
    """`source` names the surface this process serves (chat, ask, eval, ...): every invocation row records it.
    `serve_model`: with EXECUTOR_LOCAL_MODEL set, that model is served on a free loopback port until the runtime
    closes, and the settings the runtime is built on point the chat model at it."""

    def __init__(self, settings: Settings | None = None, source: str | None = None, serve_model: bool = False):
        self._opened = ExitStack()  # what the runtime entered for its lifetime: the local model, the checkpointer
        settings = settings or get_settings()
        if serve_model:
            from executor.agent.llm import serve_local_model

            settings = serve_local_model(settings, self._opened)
        self.settings = settings
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
        return make_vector_store(self.settings)

    @cached_property
    def cache_dir(self) -> Path:
        """Derived state kept between runs (the embedder's, vocabularies, text profiles, entity names). Only an
        optimisation: a folder this user may not write is one warning, and every command answers without it (a
        lookup failed with "cache/vocabulary-KB.tmp: Permission denied")."""
        import os

        from executor.core.errors import warn
        from executor.core.fs import private_dir

        folder = self.settings.ensure_home() / "cache"
        try:
            writable = os.access(private_dir(folder), os.W_OK | os.X_OK)
        except OSError:
            writable = False
        if not writable:
            warn(
                f"cannot write {folder}, so what a command builds there (the embedder's state, a KB's vocabulary) "
                "is not kept for the next one; give this user write access to it"
            )
        return folder

    @cached_property
    def embedder(self) -> Embedder:
        return make_embedder(self.settings, self.cache_dir)

    @cached_property
    def graph_server(self) -> FalkorDBServer:
        s = self.settings
        return FalkorDBServer(s.graph_folder, s.falkordb_bolt_port, s.falkordb_bolt_all_interfaces)

    @cached_property
    def graph(self) -> GraphStore:
        """The app database with EXECUTOR_GRAPH_BACKEND=sql; else Neo4j if NEO4J_URI is set, else FalkorDB at
        FALKORDB_URL, else the embedded FalkorDB (started on demand)."""
        return make_graph_store(self.settings, lambda: self.db, lambda: self.graph_server)

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
        _ = self.embedder

    @cached_property
    def chat_model(self):
        """(model, mode): the configured chat model and "llm", or the offline planner and "offline"."""
        from executor.agent.llm import make_chat_model

        return make_chat_model(self.settings)

    @cached_property
    def checkpointer(self):
        """The configured checkpointer (sessions resume from it), open until the runtime closes."""
        from executor.agent.checkpoints import open_checkpointer

        return self._opened.enter_context(open_checkpointer(self.settings))

    def checkpoints(self) -> AbstractContextManager:
        """The session checkpoints for one use: this runtime's checkpointer when it is open, else the configured
        one, opened for that use only."""
        from executor.agent.checkpoints import open_checkpointer

        return nullcontext(self.checkpointer) if "checkpointer" in self.__dict__ else open_checkpointer(self.settings)

    @cached_property
    def feedback(self):
        from executor.agent.feedback import Feedback
        from executor.stores.feedback import FeedbackStore

        return Feedback(FeedbackStore(self.db), self.checkpoints)

    @cached_property
    def tools(self):
        """The tool table: the executor's tools, each bound to the services it declares, and the host's own
        (feedback on answers), served over MCP only."""
        from executor.agent.feedback import feedback_tool
        from executor.tools.registry import ToolServices, ToolTable, agent_tools, tool_map

        services = ToolServices(
            self.settings,
            self.catalog,
            lookup_service=lambda: self.lookup_service,
            kg=lambda: self.kg,
            traversals=lambda: self.traversals,
            graph=lambda: self.graph,
        )
        return ToolTable(
            agent=tool_map(agent_tools(services)),
            host=tool_map([feedback_tool(lambda: self.feedback)]),
            log=self.log,
            catalog=self.catalog,
            expand=lambda result: self.expander.expand(result),
        )

    def app(self, model=None, mode: str = "llm", checkpointer=None, tools=None):
        """The executor graph on this runtime's services: what the chat, `ask`, Studio and the eval all run.
        `model` and `mode` ("llm": a chat model, "offline": the planner) default to this runtime's chat model;
        `tools`, to its tool table."""
        from executor.agent.graph import build_graph

        if model is None:
            model, mode = self.chat_model
        return build_graph(
            tools or self.tools,
            self.catalog,
            self.memory,
            lambda kb, doc_key: self.vectors.document_text(kb, doc_key),
            model,
            mode,
            checkpointer,
            max_query_chars=self.settings.max_query_chars,
        )

    def __enter__(self) -> Runtime:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self, stop_graph_server: bool = False) -> None:
        """Release what was opened; the embedded graph server keeps running for the next command unless asked."""
        self._opened.close()
        if "vectors" in self.__dict__:
            self.vectors.close()
        if "graph" in self.__dict__:
            self.graph.close()
        if "db" in self.__dict__:
            self.db.engine.dispose()
        if stop_graph_server:
            self.graph_server.stop()
