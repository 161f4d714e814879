"""`query_knowledge_graph`: up to 10 knowledge bases queried concurrently, with real graph traversal.

Per knowledge base, with its own timeout: hybrid search, then (if the KB has a
graph config) traversal from the entities in the query and in the results,
returning real nodes and edges. A KB without a graph config gets hybrid
search and a warning; a failing or unknown KB becomes an error entry. One
KB's failure never fails the call. Results are merged across KBs by chunk id
(best score kept, every KB recorded) and graded like lookup: the LLM sees
levels, never scores (they go to `KGResult.details`, which the tool wrapper,
`ToolTable.run`, writes to the `tool_invocation` row).
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import dataclass
from typing import TYPE_CHECKING

from executor.core.errors import BackendError, ExecutorError, InputError
from executor.core.relevance import Level, language_of, page_key
from executor.core.results import KGHit, KGResult
from executor.core.validation import check_session_id, clean_query, validate_kb_name
from executor.prompts.framing import quoted_value
from executor.prompts.hints import hint
from executor.retrieval.graph_build import graph_failure, has_graph
from executor.retrieval.lookup import document_content
from executor.retrieval.repeats import (
    BLOCKED,
    WEAKER_BANDS,
    DedupReason,
    answered_pages,
    as_relevant,
    band_position,
    find_repeat,
    nearest,
    repeat_hint,
)
from executor.retrieval.traversal_cache import new_tally
from executor.stores.catalog import version
from executor.stores.memory import EarlierLookup, SentDocument

if TYPE_CHECKING:
    from executor.core.settings import Settings
    from executor.retrieval.extraction import KnownEntities
    from executor.retrieval.grading import Grader
    from executor.retrieval.traversal_cache import TraversalCache
    from executor.stores.catalog import Catalog
    from executor.stores.embedders import Embedder
    from executor.stores.memory import ActionMemory
    from executor.stores.vector_store import VectorStore

MAX_KBS = 10
MAX_SEEDS = 4
MAX_RESULTS = 8
GRAPH_HOPS = 2


def fold_ids(knowledge_base_ids) -> list[str]:
    if isinstance(knowledge_base_ids, str):
        knowledge_base_ids = [k for k in knowledge_base_ids.split(",")]
    if not isinstance(knowledge_base_ids, (list, tuple)):
        raise InputError("knowledge_base_ids must be a list of knowledge base names")
    ids = list(dict.fromkeys(str(k).strip() for k in knowledge_base_ids if str(k).strip()))
    if not ids:
        raise InputError("give at least one knowledge base id")
    if len(ids) > MAX_KBS:
        raise InputError(f"{len(ids)} knowledge bases asked for; at most {MAX_KBS} per call")
    return ids


class KnowledgeGraphQuery:
    def __init__(
        self,
        settings: Settings,
        catalog: Catalog,
        vectors: VectorStore,
        embedder: Embedder,
        memory: ActionMemory,
        grader: Grader,
        known_entities: KnownEntities,
        traversals: TraversalCache,
    ):
        self.settings, self.catalog, self.vectors, self.embedder = settings, catalog, vectors, embedder
        self.memory, self.grader = memory, grader
        self.known_entities, self.traversals = known_entities, traversals

    def query(
        self,
        knowledge_base_ids,
        query: str,
        session_id: str,
        timeout_s: float | None = None,
        concurrent: bool = True,
        rules: bool = True,
        batch: str | None = None,
    ) -> KGResult:
        """`rules`: the session's repeat rules (off for the guards-off baseline; documents already sent are
        never sent again either way). `batch`: the LLM message the call came in (its siblings are never
        repeats of each other)."""
        timeout_s = timeout_s or self.settings.kg_timeout_s
        query = clean_query(query, self.settings.max_query_chars)
        check_session_id(session_id)
        ids = fold_ids(knowledge_base_ids)
        out = KGResult(knowledge_base_ids=ids, query=query)
        known = {}
        for kb in ids:
            try:
                validate_kb_name(kb)
                known[kb] = self.catalog.require_ingested(kb)
            except ExecutorError as exc:
                out.add_error(kb, exc)
        vector = self.embedder.embed_query(query) if known else None
        per_kb: dict[str, tuple[list, dict]] = {}
        timings: dict[str, dict] = {}
        cache = new_tally()
        pool = ThreadPoolExecutor(max_workers=max(1, len(known) if concurrent else 1))
        futures = {pool.submit(self._one, kb, row, query, vector, cache): kb for kb, row in known.items()}
        done, pending = wait(futures, timeout=timeout_s)
        # a knowledge base past its time is reported, not waited for: its thread finishes in the background
        pool.shutdown(wait=False, cancel_futures=True)
        for future in pending:
            out.add_error(futures[future], f"timed out after {timeout_s:g} s")
        for future in done:
            kb = futures[future]
            try:
                hits, graph, timings[kb] = future.result()
                per_kb[kb] = hits, graph
            except BackendError as exc:  # one knowledge base failing must not fail the others
                out.add_error(kb, graph_failure(exc, self.catalog, kb))
            except Exception as exc:
                out.add_error(kb, exc)
        for kb in ids:  # report in the order asked
            if kb not in known:
                continue
            config = known[kb].extract_config or {}
            out.graph_config_by_kb[kb] = has_graph(config)
            out.has_graph_config = out.has_graph_config or has_graph(config)
            out.graph_configs[kb] = config if has_graph(config) else {}
            if not has_graph(config):
                out.warnings.append({"knowledge_base_id": kb, "message": "no graph config: hybrid search only"})
        self._merge(out, ids, per_kb)
        rule_details = self._session_rules(out, session_id, vector, known, rules, batch)
        out.errors.sort(key=lambda e: ids.index(e["knowledge_base_id"]))
        out.details = {
            "kb_counts": out.kb_counts,
            "scores": {h.chunk_id: round(h.score, 4) for h in out.results},
            "edges": len(out.graph_data["edges"]),
            "warnings": out.warnings,
            "errors": out.errors,
            "traversal_cache": cache,
            "kb_timings": {kb: timings[kb] for kb in ids if kb in timings},  # wall and CPU ms per knowledge base
            **rule_details,
        }
        return out

    def _one(self, kb: str, row, query: str, vector, cache: dict) -> tuple[list, dict, dict]:
        """One knowledge base, on a worker thread; `row` is its catalog row, read once by the caller. Also
        returns the KB's wall and CPU time: the CPU a worker spends holds the GIL, so the KBs' CPU summed is
        what running them concurrently cannot overlap (`python -m evals.bench_kg` prints it)."""
        wall, cpu = time.perf_counter(), time.thread_time()
        with self.catalog.reading({kb: row}):  # this thread reads the KB row (seeds, traversals) not at all
            hits, graph = self._one_kb(kb, row, query, vector, cache)
        return (
            hits,
            graph,
            {
                "ms": round((time.perf_counter() - wall) * 1000, 2),
                "cpu_ms": round((time.thread_time() - cpu) * 1000, 2),
            },
        )

    def _one_kb(self, kb: str, row, query: str, vector, cache: dict) -> tuple[list, dict]:
        config = row.extract_config
        self.vectors.check_embedder(kb, self.embedder, row.source_path)  # remembered per collection by the store
        t = self.settings.kb_thresholds(self.embedder.name, row)  # each KB graded its own way
        graded = self.grader.grade(kb, version(row), query, vector, t)
        # every chunk found for a relevant document, with its document's calibrated score and level
        hits = [
            (
                h,
                c.score,
                Level.HIGHLY_RELEVANT
                if c.score >= t.highly_relevant(c.features.get("other_language") == 1.0)
                else Level.REFERENCE,
            )
            for c in graded.relevant(t)
            for h in sorted(c.chunks.values(), key=lambda h: h.distance)
        ]
        graph = {"nodes": [], "edges": []}
        if has_graph(config) and hits:
            graph = self._graph(kb, query, [h.doc_key for h, _, _ in hits], cache)
        return hits, graph

    def _graph(self, kb: str, query: str, doc_keys: list[str], cache: dict) -> dict:
        seeds = self.known_entities.seeds(kb, query, list(dict.fromkeys(doc_keys))[:5], MAX_SEEDS)
        named = {n.casefold() for n in self.known_entities.in_text(kb, query)}
        nodes, edges = {}, {}
        for seed in seeds:
            for path in self.traversals.navigate(kb, seed, GRAPH_HOPS, None, 15, 10, cache):
                for n in path.nodes:
                    # in_query: the question names it, so a drawing can put it in the middle
                    nodes.setdefault(
                        n.name,
                        {
                            "id": f"{kb}:{n.name}",
                            "name": n.name,
                            "type": n.type,
                            "kb": kb,
                            "in_query": n.name.casefold() in named,
                        },
                    )
                for e in path.edges:
                    edges.setdefault(
                        (e.source, e.type, e.target),
                        {"source": e.source, "target": e.target, "type": e.type, "weight": e.weight, "kb": kb},
                    )
        return {"nodes": list(nodes.values()), "edges": list(edges.values())}

    def _merge(self, out: KGResult, ids: list[str], per_kb: dict) -> None:
        # one entry per document (its chunks found in every KB asked), its content the document's closest
        # chunks up to the size budget, as a lookup sends it. A document is the same in two KBs when its content
        # is: two KBs' pages at one path that say different things (production's and staging's `setup.md`) are
        # two entries, each with its own text (merged by path, one KB's text was shown as both KBs')
        merged: dict[tuple[str, str], KGHit] = {}
        chunks: dict[tuple[str, str], dict[str, object]] = {}
        for kb in ids:
            if kb not in per_kb:
                continue
            hits, graph = per_kb[kb]
            out.graph_data["nodes"] += graph["nodes"]
            out.graph_data["edges"] += graph["edges"]
            stored = self.catalog.documents(kb)
            documents = set()
            for h, sim, level in hits:
                documents.add(h.doc_key)
                row = stored.get(h.doc_key)
                key = (h.doc_key, row.content_hash if row is not None else f"{kb}/{h.doc_key}")
                hit = merged.get(key)
                if hit is None:
                    merged[key] = KGHit(
                        chunk_id=h.chunk_id,
                        doc_key=h.doc_key,
                        title=h.title,
                        domain=h.domain,
                        knowledge_bases=[kb],
                        relevance_level=level,
                        score=sim,
                    )
                else:
                    if kb not in hit.knowledge_bases:
                        hit.knowledge_bases.append(kb)
                    if sim > hit.score:
                        hit.chunk_id, hit.score, hit.relevance_level = h.chunk_id, sim, level
                if kb == merged[key].knowledge_bases[0]:
                    chunks.setdefault(key, {}).setdefault(h.chunk_id, h)
            out.kb_counts[kb] = len(documents)
        for key, hit in merged.items():
            hit.content = document_content(chunks[key].values(), self.settings.max_chars_per_doc)
        results = sorted(merged.values(), key=lambda h: -h.score)[:MAX_RESULTS]
        out.results, out.count = results, len(results)

    def _session_rules(
        self, out: KGResult, session_id: str, vector, known: dict, rules: bool, batch: str | None
    ) -> dict:
        """The lookup's session rules (executor/retrieval/repeats.py) on a merged result: documents already sent are
        not sent again; when the best page is one the session holds and nothing new is about as relevant, or
        the call repeats an earlier lookup in meaning, the call is answered from the session and sends nothing.
        Every call is remembered per knowledge base, blocked or not, so later lookups are compared with it."""
        sent = self.memory.sent_documents(session_id)
        held = {page_key(f"{kb}/{k}"): d for (kb, k), d in sent.items()}
        for hit in out.results:
            page = next((p for p in (page_key(f"{kb}/{hit.doc_key}") for kb in hit.knowledge_bases) if p in held), None)
            if page is not None:
                # a page the session holds, named by the key it was sent under (its translation is the same page)
                hit.doc_key, hit.title = held[page].doc_key, held[page].title
                hit.content, hit.already_returned = "", True
        # one hit per page, as a lookup sends one of a page and its translation
        out.results = _first_per_page(out.results)
        out.count = len(out.results)
        if vector is None:
            return {}
        name, lang = self.embedder.name, language_of(out.query)
        # an earlier miss makes a call a repeat only when this one finds nothing either: remembered per KB, a miss of
        # one KB blocked a call another KB now answers (its page ingested since; fix23c)
        earlier = (
            [
                e
                for kb in known
                for e in self.memory.lookups(session_id, kb, name)
                if e.level is not None or not out.results
            ]
            if rules
            else []
        )
        scale = {kb: self.settings.kb_thresholds(name, row) for kb, row in known.items()}
        # each page once, ranked on its own KB's scale (KBs graded differently compare on their bands)
        docs = sorted(
            _first_per_page(out.results),
            key=lambda h: -band_position(h.score, scale[h.knowledge_bases[0]]),
        )
        ranked = [
            _Ranked(f"{h.knowledge_bases[0]}/{h.doc_key}", band_position(h.score, scale[h.knowledge_bases[0]]))
            for h in docs
        ]
        # as in lookup: only the session's pages that answered an earlier lookup (not of this message) make it a repeat
        answering = set(held) & answered_pages(earlier, batch, qualified=True)
        keep = as_relevant(ranked, answering, WEAKER_BANDS) if rules and docs else None
        repeat = (
            find_repeat(
                vector, docs[0].doc_key if docs else None, earlier, self.settings.repeat_thresholds(name), batch
            )
            if rules
            else None
        )
        details: dict = {"repeat_nearest": nearest(vector, earlier, batch)} if rules else {}
        reason, pages = None, [h for h in docs if h.already_returned]
        if rules and ((keep is not None and not any(keep)) or (docs and all(h.already_returned for h in docs))):
            reason = DedupReason.DOC_RETRIEVED
            out.completeness_hint = hint("answered_from_session", lang, pages=_pages(pages))
        elif repeat is not None:
            reason = repeat.reason
            details.update(repeat_of=repeat.earlier.query, repeat_similarity=round(repeat.similarity, 4))
            out.completeness_hint = repeat_hint(repeat, lang, _pages(pages))
        if reason is not None:
            details["weaker_than_held"] = [h.doc_key for h in docs if not h.already_returned]
            out.dedup_reason = reason.value
            out.results = _first_per_page([h for h in out.results if h.already_returned])
            out.count, out.graph_data = len(out.results), {"nodes": [], "edges": []}
            level = None if reason == DedupReason.NOT_FOUND_REPEATED else BLOCKED
            self._remember(session_id, out, known, vector, batch, level)
            return details
        if keep is not None:  # the best page is held: only new pages about as relevant as it go out
            strong = {(h.knowledge_bases[0], h.doc_key) for h, k in zip(docs, keep) if k}
            details["weaker_than_held"] = [
                h.doc_key for h in docs if not h.already_returned and (h.knowledge_bases[0], h.doc_key) not in strong
            ]
            out.results = [h for h in out.results if h.already_returned or (h.knowledge_bases[0], h.doc_key) in strong]
            out.count = len(out.results)
        fresh = list(
            {
                (h.knowledge_bases[0], h.doc_key): SentDocument(h.knowledge_bases[0], h.doc_key, h.domain, h.title)
                for h in out.results
                if not h.already_returned
            }.values()
        )
        if fresh:
            self.memory.record(session_id, None, None, fresh)
        self._remember(session_id, out, known, vector, batch, None)
        return details

    def _remember(
        self, session_id: str, out: KGResult, known: dict, vector, batch: str | None, level: str | None
    ) -> None:
        """One row per knowledge base that answered: the call's query and the pages that answer it there (its best
        page there and the HIGHLY_RELEVANT ones, as a lookup is remembered), or those it pointed at. A knowledge
        base whose store failed is not remembered: its silence is not "nothing found"."""
        for kb in (kb for kb in known if kb in out.kb_counts):
            hits = [h for h in out.results if kb in h.knowledge_bases]
            answers = [h for i, h in enumerate(hits) if level or i == 0 or h.relevance_level == Level.HIGHLY_RELEVANT]
            found = level or (
                Level.HIGHLY_RELEVANT.value
                if any(h.relevance_level == Level.HIGHLY_RELEVANT for h in hits)
                else Level.REFERENCE.value
                if hits
                else None
            )
            if out.dedup_reason == DedupReason.NOT_FOUND_REPEATED:
                found = None
            self.memory.record_lookup(
                session_id,
                EarlierLookup(
                    query=out.query,
                    vector=vector,
                    level=found,
                    domain=hits[0].domain if hits else None,
                    doc_keys=list(dict.fromkeys(h.doc_key for h in answers)),
                    batch=batch,
                    kb=kb,
                    embedder=self.embedder.name,
                ),
            )


def _first_per_page(hits: list[KGHit]) -> list[KGHit]:
    """The best hit of each page of each knowledge base (a page and its translations are one, `page_key`; hits are
    best first), in that order."""
    seen: set[str] = set()
    out = []
    for h in hits:
        key = page_key(f"{h.knowledge_bases[0]}/{h.doc_key}")
        if key not in seen:
            seen.add(key)
            out.append(h)
    return out


@dataclass(frozen=True)
class _Ranked:
    """A merged document as the repeat rule ranks it: its KB-qualified key and its best calibrated score."""

    doc_key: str
    score: float


def _pages(hits: list[KGHit]) -> str:
    return "; ".join(f"{quoted_value(h.title)} ({quoted_value(h.doc_key)})" for h in hits) or "-"  # as page_list
