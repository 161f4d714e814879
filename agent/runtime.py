"""The stores one process works with, built lazily from the settings."""

from __future__ import annotations

from functools import cached_property

from agent.settings import Settings, get_settings
from stores.catalog import Catalog
from stores.database import Database
from stores.embedders import Embedder, make_embedder
from stores.invocation_log import InvocationLog
from stores.memory import ActionMemory
from stores.vectors import MilvusVectorStore


class Runtime:
    def __init__(self, settings: Settings | None = None):
        self.settings = settings or get_settings()

    @cached_property
    def db(self) -> Database:
        self.settings.ensure_home()
        return Database(self.settings.db_url)

    @cached_property
    def catalog(self) -> Catalog:
        return Catalog(self.db)

    @cached_property
    def memory(self) -> ActionMemory:
        return ActionMemory(self.db)

    @cached_property
    def log(self) -> InvocationLog:
        return InvocationLog(self.db)

    @cached_property
    def vectors(self) -> MilvusVectorStore:
        self.settings.ensure_home()
        return MilvusVectorStore(self.settings.milvus_target, self.settings.milvus_token, self.settings.milvus_timeout_s)

    @cached_property
    def embedder(self) -> Embedder:
        return make_embedder(self.settings.embedder, self.settings.embedder_path)

    @cached_property
    def lookup(self):
        from retrieval.lookup import LookupService

        return LookupService(self)

    def close(self) -> None:
        if "vectors" in self.__dict__:
            self.vectors.close()
