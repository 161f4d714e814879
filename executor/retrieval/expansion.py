"""graph_expand: widen a thin or REFERENCE-level lookup through the knowledge graph.

Entities in the query and in the returned documents are traversed (2 hops by
default); documents that mention the entities reached are scored

    graph    = sum over reached entities of path score x decay^(hops-1),
               divided by the largest such sum when that exceeds 1
    fused    = lambda x semantic + (1 - lambda) x graph

where `semantic` is the document's calibrated relevance score (the one lookup
grades with), and lambda is 0.8 / 0.5 / 0.3 when the lookup's best score was
HIGHLY_RELEVANT or better / REFERENCE / below: the weaker the semantic match,
the more the graph is trusted. A document the grader scores below REFERENCE
is never added, however connected (the graph widens a lookup, it does not
overrule the grader). Documents already sent in the session are skipped. A
graph that is down never fails the turn: the expansion says "graph unavailable",
and names the graph's folder (`damaged`) when its files are damaged.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from executor.core.errors import BackendError, DamagedError
from executor.core.relevance import Level, language_of, similarity
from executor.core.results import DocumentOut, GraphExpansion, LookupResult
from executor.core.settings import Thresholds
from executor.retrieval.grading import chunk_ids
from executor.retrieval.graph_build import graph_failure, has_graph
from executor.retrieval.lookup import document_content
from executor.retrieval.ranking import Candidate, features, rank
from executor.retrieval.traversal_cache import new_tally
from executor.retrieval.vocabulary import query_terms
from executor.stores.catalog import version
from executor.stores.invocation_log import Invocation
from executor.stores.knowledge_graph import GraphPath, entity_key
from executor.stores.memory import SentDocument

if TYPE_CHECKING:
    from collections.abc import Callable

    from executor.core.settings import Settings
    from executor.retrieval.extraction import KnownEntities
    from executor.retrieval.grading import Grader
    from executor.retrieval.traversal_cache import TraversalCache
    from executor.stores.catalog import Catalog
    from executor.stores.embedders import Embedder
    from executor.stores.graph_store import GraphStore
    from executor.stores.invocation_log import InvocationLog
    from executor.stores.memory import ActionMemory
    from executor.stores.vector_store import VectorStore

MAX_SEEDS = 5
MAX_SUMMARIES = 6


def fusion_lambda(top_score: float | None, t: Thresholds) -> float:
    top = top_score or 0.0
    if top >= t.highly_relevant_threshold:
        return 0.8
    if top >= t.reference_threshold:
        return 0.5
    return 0.3


def should_expand(result: LookupResult, min_results: int) -> bool:
    """Expand after a REFERENCE result, or when fewer than `min_results` documents were relevant."""
    if result.relevance_level in (Level.PRECISE, Level.DEDUPED):
        return False
    return result.relevance_level == Level.REFERENCE or result.scores.relevant_docs < min_results


class GraphExpander:
    def __init__(
        self,
        settings: Settings,
        catalog: Catalog,
        vectors: VectorStore,
        embedder: Embedder,
        memory: ActionMemory,
        log: InvocationLog,
        grader: Grader,
        known_entities: KnownEntities,
        traversals: TraversalCache,
        graph: Callable[[], GraphStore],
    ):
        self.settings, self.catalog, self.vectors, self.embedder = settings, catalog, vectors, embedder
        self.memory, self.log, self.grader = memory, log, grader
        self.known_entities, self.traversals, self._open_graph = known_entities, traversals, graph

    @property
    def graph(self) -> GraphStore:
        return self._open_graph()  # opened on first use: a KB without a graph never starts the graph server

    def expand(self, result: LookupResult, hops: int | None = None) -> GraphExpansion:
        started = time.perf_counter()
        hops = hops or self.settings.graph_hops
        zh = language_of(result.query) == "zh"
        with self.catalog.reading():  # the KB row once for the whole expansion (seeds, traversals, scores)
            expansion = self._expand_or_explain(result, hops, zh)
        self._log(result, hops, expansion, started)
        return expansion

    def _expand_or_explain(self, result: LookupResult, hops: int, zh: bool) -> GraphExpansion:
        if not has_graph(self.catalog.require(result.kb).extract_config):
            expansion = GraphExpansion(
                status="no_graph",
                message="该知识库没有图谱配置" if zh else "this knowledge base has no graph config",
            )
        else:
            try:
                expansion = self._expand(result, hops, zh)
            except BackendError as failed:
                exc = graph_failure(failed, self.catalog, result.kb)
                message = str(exc) if str(exc).startswith("graph unavailable") else f"graph unavailable: {exc}"
                damaged = exc.path if isinstance(exc, DamagedError) else None
                details = {"error": message, **({"damaged": damaged} if damaged else {})}
                expansion = GraphExpansion(status="unavailable", message=message, damaged=damaged, details=details)
        return expansion

    def _expand(self, result: LookupResult, hops: int, zh: bool) -> GraphExpansion:
        kb = result.kb
        graph = self.graph
        settings = self.settings

        returned = [d.doc_key for d in result.documents]
        seeds = self.known_entities.seeds(kb, result.query, returned, MAX_SEEDS)
        if not seeds:
            return GraphExpansion(
                status="nothing_new", message="查询与结果中没有可扩展的实体" if zh else "no entities to expand from"
            )

        # entity -> (contribution, best path); a node reached from several seeds keeps its best path
        reached: dict[str, tuple[float, GraphPath]] = {}
        cache = new_tally()
        for seed in seeds:
            for path in self.traversals.navigate(
                kb, seed, hops, None, settings.graph_max_paths, settings.graph_max_nodes_per_hop, cache
            ):
                end = path.nodes[-1].name
                contribution = path.score * settings.graph_hop_decay ** (path.hops - 1)
                if end not in reached or contribution > reached[end][0]:
                    reached[end] = (contribution, path)
        seed_keys = {entity_key(s) for s in seeds}
        reached = {k: v for k, v in reached.items() if entity_key(k) not in seed_keys}

        sent = self.memory.sent_documents(result.session)
        skip = set(returned) | {doc_key for (k, doc_key) in sent if k == kb}
        mentioning = graph.documents_mentioning(kb, list(reached)) if reached else {}
        candidates = {k: v for k, v in mentioning.items() if k not in skip}
        if not candidates:
            return GraphExpansion(
                status="nothing_new",
                seeds=seeds,
                details={"traversal_cache": cache},
                message="图谱没有找到新的文档" if zh else "the graph reaches no document not already sent",
            )

        raw = {k: sum(reached[name][0] for name in v["entities"] if name in reached) for k, v in candidates.items()}
        scale = max(1.0, *raw.values())  # sums above 1 are scaled so the best-connected document gets 1
        graph_score = {k: v / scale for k, v in raw.items()}
        catalog = self.catalog.documents(kb)
        vector = self.embedder.embed_query(result.query)
        ids = [cid for k in candidates if k in catalog for cid in chunk_ids(k, catalog[k].chunk_count)]
        chunks_by_doc: dict[str, list] = {}
        for hit in self.vectors.get_chunks(kb, ids, vector):
            chunks_by_doc.setdefault(hit.doc_key, []).append(hit)
        t = self.settings.kb_thresholds(self.embedder.name, self.catalog.require(kb))
        semantic = self._scores(result, chunks_by_doc, t)
        relevant = {k: v for k, v in semantic.items() if v >= t.reference_threshold}
        if not relevant:
            return GraphExpansion(
                status="nothing_new",
                seeds=seeds,
                message="图谱找到的文档都与问题无关"
                if zh
                else "the documents the graph reaches do not answer the query",
                details={"candidates": len(candidates), "below_reference": len(semantic), "traversal_cache": cache},
            )
        lam = fusion_lambda(result.scores.top_score, t)
        fused = {k: lam * relevant[k] + (1 - lam) * graph_score[k] for k in relevant}
        chosen = sorted(fused, key=lambda k: -fused[k])[: max(1, settings.max_supplement)]

        documents = [
            DocumentOut(
                doc_key=k,
                title=candidates[k]["title"],
                domain=candidates[k]["domain"],
                kb=kb,
                content=document_content(chunks_by_doc[k], settings.max_chars_per_doc),
            )
            for k in chosen
        ]
        self.memory.record(
            result.session, None, None, [SentDocument(kb, d.doc_key, d.domain, d.title) for d in documents]
        )

        via = {name for k in chosen for name in candidates[k]["entities"] if name in reached}
        best_paths = sorted((reached[name] for name in via), key=lambda cp: -cp[0])[:MAX_SUMMARIES]
        return GraphExpansion(
            status="expanded",
            seeds=seeds,
            paths=[p.summary() for _, p in best_paths],
            documents=documents,
            message=(
                f"经由 {len(via)} 个相关实体补充了 {len(documents)} 篇文档"
                if zh
                else f"{len(documents)} more documents through {len(via)} related entities"
            ),
            details={
                "lambda": lam,
                "graph_scores": {k: round(graph_score[k], 4) for k in chosen},
                "semantic": {k: round(semantic[k], 4) for k in chosen},
                "fused": {k: round(fused[k], 4) for k in chosen},
                "candidates": len(candidates),
                "reached_entities": len(reached),
                "traversal_cache": cache,
            },
        )

    def _scores(self, result: LookupResult, chunks_by_doc: dict[str, list], t: Thresholds) -> dict[str, float]:
        """Each reached document's relevance on the grader's calibrated scale, against the lookup's query."""
        kb_row = self.catalog.require(result.kb)
        q = query_terms(result.query, self.grader.vocabulary(result.kb, version(kb_row)))
        profile = self.grader.profile(result.kb, version(kb_row))
        top_similarity = result.scores.l1_top_similarity or 0.0
        candidates = []
        for k, chunks in chunks_by_doc.items():
            c = Candidate(k, chunks[0].title, chunks[0].domain, {h.chunk_index: h for h in chunks})
            c.similarity = max(similarity(h.distance, t.max_l2_distance) for h in chunks)
            c.features = features(c, top_similarity, result.scores.background_similarity or 0.0, 0.0, q, profile)
            candidates.append(c)
        return {c.doc_key: c.score for c in rank(candidates, t.ranker)}

    def _log(self, result: LookupResult, hops: int, expansion: GraphExpansion, started: float) -> None:
        self.log.write(
            Invocation(
                session_id=result.session,
                tool_name="graph_expand",
                query=result.query,
                kb=result.kb,
                arguments={"hops": hops, "after_level": result.relevance_level},
                latency_ms=round((time.perf_counter() - started) * 1000, 2),
                error=expansion.message if expansion.status == "unavailable" else None,
                retrieval_details={
                    **expansion.details,
                    "status": expansion.status,
                    "seeds": expansion.seeds,
                    "paths": expansion.paths,
                    "returned_docs": [d.doc_key for d in expansion.documents],
                },
            )
        )
