"""`lookup_knowledge`: L0 keywords + L1 vectors, graded, deduplicated against the session.

Only levels and hints go to the LLM; raw distances and similarities go to the
invocation log (`LookupResult.details`, excluded from every serialisation).
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from pydantic import BaseModel, Field

from agent.errors import ExecutorError, InputError
from prompts.hints import ALREADY_RETURNED, hint
from retrieval.keywords import KeywordIndex
from retrieval.relevance import DedupReason, Level, domain_block_reason, grade, language_of, similarity
from stores.invocation_log import Invocation
from stores.memory import SentDocument
from stores.vectors import ChunkHit

if TYPE_CHECKING:
    from agent.runtime import Runtime

CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
SESSION_ID = re.compile(r"^[\w.:\-]{1,128}$")
L0_BONUS = 0.1  # an exact keyword hit outranks a slightly closer vector neighbour
MAX_CHUNKS_PER_DOC = 20  # chunks fetched for a document found by keyword or by the graph


class DocumentOut(BaseModel):
    doc_key: str
    title: str
    domain: str
    kb: str
    content: str = ""
    already_returned: bool = False


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
    # raw scores and per-document similarities: for the log and graph expansion, never the LLM
    details: dict = Field(default_factory=dict, exclude=True)

    @property
    def documents(self) -> list[DocumentOut]:
        return self.primary + self.supplement

    def to_llm_text(self) -> str:
        lines = [
            f"relevance_level: {self.relevance_level or 'NONE'}",
            f"completeness_hint: {self.completeness_hint}",
        ]
        if self.dedup_reason:
            lines.append(f"dedup_reason: {self.dedup_reason}")
        lines.append(f"retrieved_domains_this_session: {', '.join(self.retrieved_domains_this_session) or '-'}")
        lang = language_of(self.query)
        for role, docs in (("primary", self.primary), ("supplement", self.supplement)):
            for d in docs:
                lines.append(f"\n[{role}] {d.title} — {d.doc_key} (domain: {d.domain})")
                lines.append(ALREADY_RETURNED[lang] if d.already_returned else d.content)
        return "\n".join(lines)


def clean_query(query: str | None, max_chars: int) -> str:
    if query is None or not str(query).strip():
        raise InputError("the query is empty")
    query = str(query)
    if len(query) > max_chars:
        raise InputError(f"the query is {len(query):,} characters long; the limit is {max_chars:,}")
    if CONTROL.search(query):
        raise InputError("the query contains control characters")
    return " ".join(query.split())


def document_content(chunks, budget: int) -> str:
    """A document's closest chunks, up to the size budget, in reading order."""
    picked: list[ChunkHit] = []
    used = 0
    for c in sorted(chunks, key=lambda c: c.distance):
        if picked and used + len(c.text) > budget:
            continue
        picked.append(c)
        used += len(c.text)
    text = "\n\n".join(c.text for c in sorted(picked, key=lambda c: c.chunk_index))
    return text if len(text) <= budget else text[: budget - 1] + "…"


def chunk_ids(doc_key: str, chunk_count: int) -> list[str]:
    return [f"{doc_key}#{i}" for i in range(min(chunk_count, MAX_CHUNKS_PER_DOC))]


def check_session_id(session_id: str) -> str:
    if not SESSION_ID.match(session_id or ""):
        raise InputError("a session id is 1-128 letters, digits, '_', '-', '.' or ':'")
    return session_id


@dataclass
class _Doc:
    doc_key: str
    title: str
    domain: str
    l0_terms: list[str] = field(default_factory=list)
    chunks: dict[int, ChunkHit] = field(default_factory=dict)


class LookupService:
    def __init__(self, runtime: "Runtime"):
        self.rt = runtime
        self._indexes: dict[str, tuple[int, KeywordIndex]] = {}
        self._checked: set[tuple[str, str]] = set()

    # -- caches -------------------------------------------------------------
    def keyword_index(self, kb: str, revision: int) -> KeywordIndex:
        cached = self._indexes.get(kb)
        if cached is None or cached[0] != revision:
            docs = self.rt.catalog.documents(kb)
            index = KeywordIndex((k, [*d.keywords, d.title]) for k, d in docs.items())
            cached = (revision, index)
            self._indexes[kb] = cached
        return cached[1]

    def _check_embedder(self, kb: str) -> None:
        key = (kb, self.rt.embedder.name)
        if key not in self._checked:
            self.rt.vectors.check_embedder(kb, self.rt.embedder)
            self._checked.add(key)

    # -- the tool -----------------------------------------------------------
    def lookup(
        self,
        query: str,
        session_id: str,
        kb: str = "sample",
        missing_dimension: str | None = None,
        rules: bool = True,
    ) -> LookupResult:
        """`rules=False` turns off the session rules (no document or domain dedup): the eval baseline."""
        started = time.perf_counter()
        query = clean_query(query, self.rt.settings.max_query_chars)
        check_session_id(session_id)
        if missing_dimension is not None:
            missing_dimension = clean_query(missing_dimension, 200) if missing_dimension.strip() else None
        try:
            result = self._lookup(query, session_id, kb, missing_dimension, rules)
        except ExecutorError as exc:
            self._log(session_id, kb, query, missing_dimension, started, error=str(exc))
            raise
        self._log(session_id, kb, query, missing_dimension, started, result=result)
        return result

    def _lookup(self, query, session_id, kb, missing_dimension, rules) -> LookupResult:
        rt = self.rt
        kb_row = rt.catalog.require(kb)
        self._check_embedder(kb)
        thresholds = rt.settings.thresholds(rt.embedder.name)
        lang = language_of(query)

        # L0 and L1
        l0 = self.keyword_index(kb, kb_row.revision).match(query)
        vector = rt.embedder.embed_query(query)
        hits = rt.vectors.search(kb, query, vector, rt.embedder, rt.settings.top_k)
        docs: dict[str, _Doc] = {}
        for h in hits:
            docs.setdefault(h.doc_key, _Doc(h.doc_key, h.title, h.domain)).chunks[h.chunk_index] = h
        if l0:
            catalog_docs = rt.catalog.documents(kb)
            wanted = [cid for k in l0 if k in catalog_docs for cid in chunk_ids(k, catalog_docs[k].chunk_count)]
            for h in rt.vectors.get_chunks(kb, wanted, vector):
                docs.setdefault(h.doc_key, _Doc(h.doc_key, h.title, h.domain)).chunks.setdefault(h.chunk_index, h)
            for k, terms in l0.items():
                if k in docs:
                    docs[k].l0_terms = terms

        sim = {k: similarity(min(c.distance for c in d.chunks.values()), thresholds.max_l2_distance) for k, d in docs.items()}
        top_similarity = max(sim.values(), default=None)
        l0_count = sum(1 for d in docs.values() if d.l0_terms)
        level = grade(l0_count, top_similarity, thresholds)
        top_distance = min((h.distance for h in hits), default=None)
        details = {
            "l0_titles": [docs[k].title for k in l0 if k in docs],
            "l0_match_count": l0_count,
            "l0_terms": sorted({t for d in docs.values() for t in d.l0_terms}),
            "l1_scores": [round(h.distance, 4) for h in hits],
            "l1_top_score": None if top_distance is None else round(top_distance, 4),
            "l1_top_similarity": None if top_similarity is None else round(top_similarity, 4),
            "doc_similarities": {k: round(v, 4) for k, v in sim.items()},
            "thresholds": thresholds.model_dump(),
            "embedder": rt.embedder.name,
        }
        base = dict(query=query, session=session_id, kb=kb, missing_dimension=missing_dimension, details=details)
        sent = rt.memory.sent_documents(session_id) if rules else {}
        domain_levels = rt.memory.domain_levels(session_id)

        details["relevant_docs"] = 0
        if level is None:
            return self._finish(
                LookupResult(found=False, relevance_level=None, completeness_hint=hint("not_found", lang),
                             retrieved_domains_this_session=list(domain_levels), **base)
            )

        valid = [k for k in docs if docs[k].l0_terms or sim[k] >= thresholds.reference_threshold]
        if level == Level.PRECISE:
            valid.sort(key=lambda k: (not docs[k].l0_terms, -sim[k]))
        else:
            valid.sort(key=lambda k: -(sim[k] + (L0_BONUS if docs[k].l0_terms else 0.0)))
        details["relevant_docs"] = len(valid)
        chosen = valid[: 1 + rt.settings.max_supplement]
        landing = docs[chosen[0]].domain
        out = [self._document_out(kb, docs[k], vector, sent) for k in chosen]
        new = [d for d in out if not d.already_returned]

        details["landing_domain"] = landing
        dedup: DedupReason | None = None
        if not new:
            dedup = DedupReason.DOC_RETRIEVED
        elif rules:
            dedup = domain_block_reason(domain_levels.get(landing), missing_dimension)
        if dedup is not None:
            details["blocked_level"] = level.value
            titles_only = [d.model_copy(update={"content": "", "already_returned": True}) for d in out]
            if dedup == DedupReason.DOMAIN_RETRIEVED:
                titles_only = []  # nothing of it is sent: the domain is answered
            result = LookupResult(
                found=True, relevance_level=Level.DEDUPED, dedup_reason=dedup, completeness_hint=hint(dedup, lang),
                retrieved_domains_this_session=list(domain_levels), primary=titles_only[:1],
                supplement=titles_only[1:], **base,
            )
            return self._finish(result)

        rt.memory.record(
            session_id, landing, level.value, [SentDocument(kb, d.doc_key, d.domain, d.title) for d in new]
        )
        domains = list(domain_levels) + ([landing] if landing not in domain_levels else [])
        return self._finish(
            LookupResult(
                found=True, relevance_level=level, completeness_hint=hint(level, lang),
                retrieved_domains_this_session=domains, primary=out[:1], supplement=out[1:], **base,
            )
        )

    @staticmethod
    def _finish(result: LookupResult) -> LookupResult:
        result.details.update(
            relevance_level=result.relevance_level,
            completeness_hint=result.completeness_hint,
            retrieved_domains=result.retrieved_domains_this_session,
            dedup_reason=result.dedup_reason,
            returned_docs=[d.doc_key for d in result.documents if not d.already_returned],
        )
        return result

    def _document_out(self, kb: str, doc: _Doc, vector, sent) -> DocumentOut:
        already = (kb, doc.doc_key) in sent
        content = "" if already else self._content(doc)
        return DocumentOut(
            doc_key=doc.doc_key, title=doc.title, domain=doc.domain, kb=kb, content=content, already_returned=already
        )

    def _content(self, doc: _Doc) -> str:
        return document_content(doc.chunks.values(), self.rt.settings.max_chars_per_doc)

    def _log(self, session_id, kb, query, missing_dimension, started, result: LookupResult | None = None, error=None):
        entry = Invocation(
            session_id=session_id,
            tool_name="lookup_knowledge",
            query=query,
            kb=kb,
            arguments={"query": query, "missing_dimension": missing_dimension, "kb": kb},
            latency_ms=round((time.perf_counter() - started) * 1000, 2),
            error=error,
        )
        if result is not None:
            entry.relevance_level = result.relevance_level
            entry.dedup_reason = result.dedup_reason
            entry.blocked = result.dedup_reason == DedupReason.DOMAIN_RETRIEVED
            entry.retrieval_details = result.details
        self.rt.log.write(entry)
