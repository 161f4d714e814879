"""The results the retrieval tools return, shared by every layer that carries them (services, tools, nodes, MCP).

Data only: how a result reads to the LLM is in `executor/prompts/results.py`. Raw scores live in `details` (and
`KGHit.score`), excluded from every serialisation: they go to the `tool_invocation` log, never the LLM.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from executor.core.errors import InputError, first_line


class DocumentOut(BaseModel):
    doc_key: str
    title: str
    domain: str
    kb: str
    content: str = ""
    already_returned: bool = False


class LookupScores(BaseModel):
    """The figures of a lookup that graph expansion reads: how many documents were relevant (fewer than the
    setting's minimum widen the lookup), and the grader's top score (the fusion weight), top similarity and
    background similarity (features a reached document is ranked with). Never sent to the LLM."""

    relevant_docs: int = 0
    top_score: float | None = None
    l1_top_similarity: float | None = None
    background_similarity: float | None = None


class LookupResult(BaseModel):
    found: bool
    relevance_level: str | None
    completeness_hint: str
    dedup_reason: str | None = None
    retrieved_domains_this_session: list[str]
    primary: list[DocumentOut] = Field(default_factory=list)
    supplement: list[DocumentOut] = Field(default_factory=list)
    query: str
    session: str
    kb: str
    missing_dimension: str | None = None
    message: str = ""  # one line for a person (seed 000's LookupResult.message), in the query's language
    # raw scores and per-document similarities: for the log, never the LLM
    details: dict = Field(default_factory=dict, exclude=True)
    scores: LookupScores = Field(default_factory=LookupScores, exclude=True)  # what graph expansion reads

    @property
    def documents(self) -> list[DocumentOut]:
        return self.primary + self.supplement


class GraphExpansion(BaseModel):
    """What graph expansion added to a lookup: the paths it followed and the documents they led to."""

    status: Literal["expanded", "nothing_new", "no_graph", "unavailable"]
    message: str
    seeds: list[str] = Field(default_factory=list)
    paths: list[str] = Field(default_factory=list)
    documents: list[DocumentOut] = Field(default_factory=list)
    # the graph's folder when it is unavailable because its files are damaged (not merely a server down): the
    # lookup still answers, and every surface says the graph needs mending (`executor lookup` on stderr)
    damaged: str | None = None
    details: dict = Field(default_factory=dict, exclude=True)


class KGHit(BaseModel):
    chunk_id: str
    doc_key: str
    title: str
    domain: str
    knowledge_bases: list[str]
    relevance_level: str
    content: str = ""
    already_returned: bool = False
    score: float = Field(default=0.0, exclude=True)  # for sorting and the log only


class KGResult(BaseModel):
    knowledge_base_ids: list[str] = Field(default_factory=list)  # as asked, duplicates folded
    query: str
    results: list[KGHit] = Field(default_factory=list)
    count: int = 0
    kb_counts: dict[str, int] = Field(default_factory=dict)
    graph_configs: dict[str, dict] = Field(default_factory=dict)
    # seed 002's contract: true when any knowledge base asked for has a graph config; the per-KB answer below
    has_graph_config: bool = False
    graph_config_by_kb: dict[str, bool] = Field(default_factory=dict)
    graph_data: dict = Field(default_factory=lambda: {"nodes": [], "edges": []})
    warnings: list[dict] = Field(default_factory=list)
    errors: list[dict] = Field(default_factory=list)
    display_type: str = "graph_query_results"
    # set when a session rule answered the call from what the session already has (nothing new is sent):
    # doc_retrieved, query_repeated or not_found_repeated, with the hint that says so
    dedup_reason: str | None = None
    completeness_hint: str | None = None
    # knowledge bases whose store failed or timed out (not a wrong id): for the caller, not the LLM
    failed_stores: list[str] = Field(default_factory=list, exclude=True)
    # raw scores and counts for the tool_invocation row (written by the tool wrapper), never the LLM
    details: dict = Field(default_factory=dict, exclude=True)

    def add_error(self, kb: str, exc: Exception | str) -> None:
        self.errors.append({"knowledge_base_id": kb, "error": exc if isinstance(exc, str) else first_line(exc)})
        if not isinstance(exc, InputError):
            self.failed_stores.append(kb)

    def backend_failure(self) -> str | None:
        """When no knowledge base answered and a store failed (not merely a wrong id): the errors, one line."""
        if self.kb_counts or not self.failed_stores:
            return None
        return "; ".join(f"{e['knowledge_base_id']}: {e['error']}" for e in self.errors)
