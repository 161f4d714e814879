"""`lookup_knowledge`: L0 keywords + L1 vectors, graded, deduplicated against the session.

Only levels and hints go to the LLM; raw distances and similarities go to the
invocation log (`LookupResult.details`, excluded from every serialisation,
written by the one tool wrapper, `tools.registry.invoke`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from core.results import DocumentOut, LookupResult
from core.validation import check_session_id, clean_query
from prompts.hints import hint
from prompts.messages import lookup_message
from retrieval.alignment import search_text
from retrieval.graph_build import has_graph
from retrieval.grading import Grader
from retrieval.ranking import Candidate
from core.relevance import Level, language_of
from retrieval.repeats import DedupReason, Repeat, find_repeat, nearest, repeat_hint
from stores.catalog import version
from stores.memory import EarlierLookup, SentDocument
from stores.vectors import ChunkHit

if TYPE_CHECKING:
    from core.settings import Settings
    from stores.catalog import Catalog
    from stores.embedders import Embedder
    from retrieval.extraction import KnownEntities
    from stores.memory import ActionMemory
    from stores.vectors import VectorStore


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


class LookupService:
    def __init__(self, settings: "Settings", catalog: "Catalog", vectors: "VectorStore", embedder: "Embedder",
                 memory: "ActionMemory", grader: Grader, known_entities: "KnownEntities"):
        self.settings, self.catalog, self.vectors, self.embedder = settings, catalog, vectors, embedder
        self.memory, self.grader, self.known_entities = memory, grader, known_entities
        self._checked: set[tuple[str, str]] = set()

    def check_embedder(self, kb: str) -> None:
        """The KB was embedded with the active embedder (asked of the vector store once per KB and process)."""
        key = (kb, self.embedder.name)
        if key not in self._checked:
            self.vectors.check_embedder(kb, self.embedder)
            self._checked.add(key)

    # -- the tool -----------------------------------------------------------
    def lookup(
        self,
        query: str,
        session_id: str,
        kb: str = "sample",
        missing_dimension: str | None = None,
        rules: bool = True,
        batch: str | None = None,
        dry_run: bool = False,
    ) -> LookupResult:
        """`rules=False` turns off the session rules (no document or repeat dedup): the eval baseline.
        `batch` names the LLM message that proposed the call: lookups of one message are never repeats
        of each other. `dry_run` writes no session memory: calibration. The `tool_invocation` row is written
        by the tool's caller (`tools.registry.run`) from `details`."""
        query = clean_query(query, self.settings.max_query_chars)
        check_session_id(session_id)
        if missing_dimension is not None:
            missing_dimension = clean_query(missing_dimension, 200) if missing_dimension.strip() else None
        return self._lookup(query, session_id, kb, missing_dimension, rules, batch, dry_run)

    def _lookup(self, query, session_id, kb, missing_dimension, rules, batch, dry_run) -> LookupResult:
        kb_row = self.catalog.require(kb)
        self.check_embedder(kb)
        thresholds = self.settings.kb_thresholds(self.embedder.name, kb_row)
        lang = language_of(query)

        vector = self.embedder.embed_query(query)
        # graded as the query plus the graph entities a loose name in it means ("comfy" -> ComfyUI); the
        # session's memory keeps the query's own vector
        text, aligned = search_text(self.known_entities, kb, has_graph(kb_row.extract_config), query)
        searched = vector if text == query else self.embedder.embed_query(text)
        graded = self.grader.grade(kb, version(kb_row), text, searched, thresholds)
        level = graded.level
        details = graded.details() | aligned | {"thresholds": thresholds.model_dump(), "embedder": self.embedder.name}
        base = dict(query=query, session=session_id, kb=kb, missing_dimension=missing_dimension, details=details)
        sent = self.memory.sent_documents(session_id) if rules else {}
        domain_levels = self.memory.domain_levels(session_id)
        domains = list(dict.fromkeys([*domain_levels, *(d.domain for d in sent.values())]))
        earlier = self.memory.lookups(session_id, kb, self.embedder.name) if rules else []
        remembered = EarlierLookup(query=query, vector=vector, level=level and level.value, batch=batch, kb=kb,
                                   embedder=self.embedder.name)

        details["relevant_docs"] = 0
        if level is None:
            repeat = self._repeat(vector, None, earlier, batch, missing_dimension, details)
            if repeat is not None:
                return self._finish(self._repeated(repeat, kb, sent, lang, domains, base))
            if not dry_run:
                self.memory.record_lookup(session_id, remembered)
            unknown = graded.query_terms.unknown_names
            return self._finish(
                LookupResult(found=False, relevance_level=None,
                             completeness_hint=hint("not_mentioned", lang, names=", ".join(unknown)) if unknown
                             else hint("not_found", lang),
                             retrieved_domains_this_session=domains, **base)
            )

        valid = graded.relevant(thresholds)
        details["relevant_docs"] = len(valid)
        chosen = valid[: 1 + self.settings.max_supplement]
        landing = chosen[0].domain
        out = [self._document_out(kb, c, sent) for c in chosen]
        new = [d for d in out if not d.already_returned]

        details["landing_domain"] = landing
        repeat = self._repeat(vector, chosen[0].doc_key, earlier, batch, missing_dimension, details) if rules else None
        if not new:
            details["blocked_level"] = level.value
            titles_only = [d.model_copy(update={"content": "", "already_returned": True}) for d in out]
            dedup = DedupReason.DOC_RETRIEVED
            result = LookupResult(
                found=True, relevance_level=Level.DEDUPED, dedup_reason=dedup, completeness_hint=hint(dedup, lang),
                retrieved_domains_this_session=domains, primary=titles_only[:1],
                supplement=titles_only[1:], **base,
            )
            return self._finish(result)
        if repeat is not None:
            details["blocked_level"] = level.value
            return self._finish(self._repeated(repeat, kb, sent, lang, domains, base))

        remembered.domain, remembered.doc_keys = landing, [d.doc_key for d in out]
        if not dry_run:
            self.memory.record(
                session_id, landing, level.value, [SentDocument(kb, d.doc_key, d.domain, d.title) for d in new]
            )
            self.memory.record_lookup(session_id, remembered)
        domains += [d for d in dict.fromkeys(d.domain for d in out) if d not in domains]
        return self._finish(
            LookupResult(
                found=True, relevance_level=level, completeness_hint=self._level_hint(kb_row, graded, lang),
                retrieved_domains_this_session=domains, primary=out[:1], supplement=out[1:], **base,
            )
        )

    def _level_hint(self, kb_row, graded, lang: str) -> str:
        """A weak REFERENCE (core.relevance.weak) names what its best page lacks; every other level its own hint."""
        if not graded.weak:
            return hint(graded.level, lang)
        missing = self.grader.missing_terms(kb_row.name, version(kb_row), graded)
        return hint("weak_reference_missing", lang, missing=", ".join(missing)) if missing else hint("weak_reference", lang)

    def _repeat(self, vector, best_doc, earlier, batch, missing_dimension, details) -> Repeat | None:
        """The repeat rule (retrieval/repeats.py) on the embedding this lookup already computed."""
        name = self.embedder.name
        details["repeat_nearest"] = nearest(vector, earlier, batch)
        repeat = find_repeat(vector, best_doc, earlier, self.settings.repeat_thresholds(name), batch, missing_dimension)
        if repeat is not None:
            details.update(repeat_of=repeat.earlier.query, repeat_similarity=round(repeat.similarity, 4))
        return repeat

    def _repeated(self, repeat: Repeat, kb: str, sent: dict, lang: str, domains: list[str], base: dict) -> LookupResult:
        """A blocked repeat: it points back at what the earlier lookup returned (after a miss, nothing)."""
        pointed = []
        for k in repeat.earlier.doc_keys:
            if (kb, k) in sent:
                d = sent[(kb, k)]
                pointed.append(DocumentOut(doc_key=k, title=d.title, domain=d.domain, kb=kb, already_returned=True))
        return LookupResult(
            found=repeat.reason == DedupReason.QUERY_REPEATED, relevance_level=Level.DEDUPED,
            dedup_reason=repeat.reason, completeness_hint=repeat_hint(repeat, lang),
            retrieved_domains_this_session=domains, primary=pointed[:1], supplement=pointed[1:], **base,
        )

    @staticmethod
    def _finish(result: LookupResult) -> LookupResult:
        docs = result.documents
        fresh = sum(1 for d in docs if not d.already_returned)
        domain = result.details.get("landing_domain") or (docs[0].domain if docs else None)
        result.message = lookup_message(result.relevance_level, result.dedup_reason, [d.title for d in docs], fresh,
                                        domain, language_of(result.query))
        result.details.update(
            relevance_level=result.relevance_level,
            completeness_hint=result.completeness_hint,
            retrieved_domains=result.retrieved_domains_this_session,
            dedup_reason=result.dedup_reason,
            returned_docs=[d.doc_key for d in result.documents if not d.already_returned],
        )
        return result

    def _document_out(self, kb: str, doc: Candidate, sent) -> DocumentOut:
        already = (kb, doc.doc_key) in sent
        content = "" if already else self._content(doc)
        return DocumentOut(
            doc_key=doc.doc_key, title=doc.title, domain=doc.domain, kb=kb, content=content, already_returned=already
        )

    def _content(self, doc: Candidate) -> str:
        return document_content(doc.chunks.values(), self.settings.max_chars_per_doc)
