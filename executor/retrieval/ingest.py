"""Ingest a folder of documents (Markdown, text, HTML, PDF, Office) into a knowledge base, idempotently.

Everything is parsed and embedded before anything is written; the catalog is
committed last, in one transaction. A failure part-way leaves the catalog as
it was, and the next ingest notices vectors that disagree with it and
re-embeds the whole KB.

A re-ingest opens only the files whose state moved since they were last read
(`executor/retrieval/sources.py`): an unchanged document costs a stat. Its chunks and
vectors stay as they are, and the graph build, which needs every page's text,
reads it from the catalog (`document.body`), as `parse_text` made it then.
"""

from __future__ import annotations

import threading
import time
from dataclasses import asdict, dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import numpy as np
from tqdm import tqdm

from executor.core.errors import BackendError, first_line, llm_unreachable
from executor.core.settings import SAMPLE_KB_PATH
from executor.core.validation import validate_kb_name
from executor.retrieval.calibration import load_fitter
from executor.retrieval.documents import Document
from executor.retrieval.graph_build import build_graph_data, has_graph
from executor.retrieval.self_calibration import after_ingest
from executor.retrieval.sources import MB, Known, SourceLimits, check_root, load_documents
from executor.retrieval.vocabulary import load_segmenter
from executor.stores.catalog import DocumentChange, FileRefresh
from executor.stores.catalog import version as catalog_version
from executor.stores.knowledge_graph import OldGraphLeft

if TYPE_CHECKING:
    from collections.abc import Callable, Collection

    from executor.core.settings import Settings
    from executor.retrieval.grading import Grader
    from executor.retrieval.llm_extraction import LLMExtractor
    from executor.stores.catalog import Catalog
    from executor.stores.embedders import Embedder
    from executor.stores.graph_store import GraphStore
    from executor.stores.vector_store import VectorStore


class IngestStores(Protocol):
    """What an ingest reads and writes; the composition root (`agent.runtime.Runtime`) is one."""

    # the runtime builds each on first use; as cached properties here too, since pyright (1.1.414) does not
    # match a cached_property against a property
    @property
    def settings(self) -> Settings: ...
    @cached_property
    def catalog(self) -> Catalog: ...
    @cached_property
    def vectors(self) -> VectorStore: ...
    @cached_property
    def embedder(self) -> Embedder: ...
    @cached_property
    def graph(self) -> GraphStore: ...
    @cached_property
    def grader(self) -> Grader: ...  # self-calibration grades the KB's generated questions as lookups would


SAMPLE_GRADING = "similarity"  # its thresholds were calibrated on it; the ranker is worse there (core.settings)
SAMPLE_EXTRACT_CONFIG = {
    "entity_types": ["Software", "Database", "Protocol", "Port", "ErrorCode", "Concept", "URL", "Path"],
    "relation_types": ["DEPENDS_ON", "REFERENCES", "CO_OCCURS", "CONFLICTS_WITH", "DERIVED_FROM", "RELATED_TO"],
}
EMBED_BATCH = 64


@dataclass
class IngestReport:
    kb: str
    documents: int
    chunks: int
    added: int
    changed: int
    removed: int
    unchanged: int
    seconds: float
    embedder: str
    graph: dict | None = None  # entity/relation counts, or None when the KB has no graph config
    graph_written: dict | None = None  # graph rows added, changed or removed by this ingest, per kind
    graph_error: str | None = None  # the KB has a graph config but its graph backend failed: why
    warnings: list[str] = field(default_factory=list)
    formats: dict[str, int] = field(default_factory=dict)  # documents read per format (md, pdf, docx...)
    skipped: int = 0  # files refused with a warning (links, limits, conversion failures)
    unsupported: dict[str, int] = field(default_factory=dict)  # extension -> files nobody converts
    calibration: dict | None = None  # the KB's self-calibration, when this ingest (re)fitted it

    def to_dict(self) -> dict:
        return asdict(self)


def _load_self_calibration() -> None:
    """What self-calibration needs and an ingest does not: the optimiser (~0.3 s) and jieba's dictionary (~0.6 s;
    its generated and off-topic questions are half Chinese, whatever the pages' language)."""
    load_fitter()
    load_segmenter()


def _embed_text(doc: Document, chunk_text: str) -> str:
    # The chunk already opens with its heading path (title first); the title once more in front
    # weighs the dense vector towards what the page is about. Measured on the labelled questions
    # (README, "What ingest reads"): better document ranking on both the sample and the Helm docs.
    return f"{doc.title}\n{chunk_text}"


def source_limits(settings) -> SourceLimits:
    return SourceLimits(
        max_file_bytes=int(settings.max_file_mb * MB),
        max_document_bytes=int(settings.max_document_mb * MB),
        max_unzipped_bytes=int(settings.max_unzipped_mb * MB),
        convert_timeout_s=settings.convert_timeout_s,
        convert_memory_bytes=int(settings.convert_memory_mb * MB),
    )


@dataclass
class Removal:
    """What an ingest of a folder does to the KB's documents that are not in it: the one rule, for the ingest and
    for its dry run."""

    documents: list[str]  # the doc keys it removes
    other_folder: str | None  # the folder the KB was last ingested from, when it is another one and documents go

    @classmethod
    def of(cls, catalog: Catalog, kb: str, here: str, found: Collection[str], failed: Collection[str] = ()) -> Removal:
        """`found`: the documents the folder `here` holds; `failed`: those still there that failed to load this
        time, which keep the version ingested before."""
        earlier = catalog.get(kb)
        if earlier is None:
            return cls([], None)
        documents = [k for k in catalog.documents(kb) if k not in found and k not in failed]
        moved = bool(documents) and earlier.source_path not in (None, here)
        return cls(documents, earlier.source_path if moved else None)

    def warning(self, kb: str, here: str, *, done: bool) -> str:
        """The other folder named, before (`done=False`, a dry run) or after the documents are removed."""
        n, folder = len(self.documents), self.other_folder
        fate = f"are removed (ingest {folder} again to bring them back)" if done else "would be removed"
        return (
            f"{kb} was last ingested from {folder}, not {here}: {n} of its documents are not in this folder and {fate}"
        )


def ingest(
    rt: IngestStores,
    path: Path,
    kb: str,
    rebuild: bool = False,
    progress: bool = True,
    description: str = "",
    extract_config: dict | None = None,
    llm_extractor: LLMExtractor | None = None,
    grading: str | None = None,
) -> IngestReport:
    """`grading` sets how the KB is graded (None: a new KB gets the default, an existing one keeps its own)."""
    started = time.perf_counter()
    validate_kb_name(kb)
    check_root(Path(path))  # a wrong folder is an error before any store is opened
    embedder = rt.embedder
    vectors = rt.vectors

    vectors.discard_unfinished(kb)  # what a rebuild killed half-way left
    recorded = vectors.recorded_embedder(kb)
    if recorded is not None and (recorded.get("embedder"), recorded.get("dim")) != (embedder.name, embedder.dim):
        if not rebuild:
            raise BackendError(
                f"knowledge base {kb!r} was embedded with {recorded.get('embedder')} ({recorded.get('dim')}-d), "
                f"not {embedder.name} ({embedder.dim}-d): pass --rebuild to re-embed it"
            )
    existing = rt.catalog.documents(kb)
    stored_chunks = vectors.count(kb) if recorded is not None else 0
    consistent = stored_chunks == sum(d.chunk_count for d in existing.values()) and _current(rt, kb)
    full = rebuild or recorded is None or not consistent

    # a file read before and unchanged since is not read again (executor/retrieval/sources.py); one whose text the
    # catalog does not hold (a row from before it was kept) is read, as the graph build needs its text
    records = {} if full else {k: r for k, r in rt.catalog.file_records(kb).items() if r.has_body}
    known = {k: Known(r.file_stat, r.file_hash) for k, r in records.items()}
    loaded = load_documents(Path(path), source_limits(rt.settings), known, progress=progress)
    read = loaded.documents
    changed = [
        d for d in read if full or d.doc_key not in existing or existing[d.doc_key].content_hash != d.content_hash
    ]
    changed_keys = {d.doc_key for d in changed}
    keys = set(loaded.order)
    kept = [k for k in loaded.order if k in loaded.unchanged]
    here = str(Path(path).resolve())
    # a file that failed to load keeps its last version, but a full re-embed has no old version to keep
    removal = Removal.of(rt.catalog, kb, here, keys, failed=set() if full else loaded.failed)
    removed = removal.documents
    # an unchanged file's own warnings, as when it was read (the folder's are in loaded.warnings)
    warnings = list(loaded.warnings) + [f"{k}: {w}" for k in kept for w in records[k].warnings]
    if removal.other_folder is not None:  # another folder (a typo, a subfolder) must not quietly replace the KB
        warnings.append(removal.warning(kb, here, done=True))

    if changed and rt.settings.self_calibrate:  # what it loads overlaps the embedding instead of following it
        threading.Thread(target=_load_self_calibration, name="load-self-calibration", daemon=True).start()
    rows, texts = [], []
    for doc in changed:
        for chunk in doc.chunks():
            rows.append(
                {
                    "chunk_id": chunk.chunk_id,
                    "doc_key": doc.doc_key,
                    "chunk_index": chunk.index,
                    "domain": doc.domain,
                    "title": doc.title,
                    "keywords": doc.keywords,
                    "text": chunk.text,
                }
            )
            texts.append(_embed_text(doc, chunk.text))
    parts = []
    with tqdm(total=len(texts), desc=f"embedding {kb}", unit="chunk", disable=not progress, leave=False) as bar:
        for i in range(0, len(texts), EMBED_BATCH):
            parts.append(embedder.embed_documents(texts[i : i + EMBED_BATCH]))
            bar.update(len(texts[i : i + EMBED_BATCH]))
    matrix = np.concatenate(parts) if parts else np.zeros((0, embedder.dim), dtype=np.float32)

    # a full ingest (the first, or a re-embed) writes beside the KB's vectors: the old ones, or none, answer until the
    # new are complete, and what one killed half-way left is dropped by the next (`discard_unfinished`). The first
    # too: written in place, its vectors answered lookups of a KB whose catalog listed no documents (hostile20 #5)
    target = vectors.staging(kb) if full else kb
    if not vectors.has(target):
        warning = vectors.create(target, embedder)
        if warning:
            warnings.append(warning)
    stale = [d.doc_key for d in changed if d.doc_key in existing and not full] + removed
    if rows:
        vectors.upsert(target, rows, embedder, matrix)
    # only after the new chunks are in: an ingest killed before this leaves a changed document findable (its old
    # or new chunks, and the catalog's old state, so the next ingest does it again), never gone from the vectors
    if stale and target == kb:
        vectors.delete_docs(kb, stale, keep={r["chunk_id"] for r in rows})
    vectors.flush_and_load(target)

    # A graph that is down does not stop the ingest: lookups work without it, expansion says it is
    # unavailable, and the next ingest builds it. Written after the vectors, just before they are promoted: a first
    # ingest killed while it embeds or writes them leaves no graph either.
    kb_row = rt.catalog.get(kb)
    config = kb_row.extract_config if kb_row is not None else (extract_config or {})
    graph_counts, graph_written, graph_error = None, None, None
    if has_graph(config):

        def all_documents() -> list[Document]:  # the unchanged ones from the catalog, in the folder's order
            # (the order matters: the first page that names an entity gives its spelling)
            bodies = rt.catalog.stored_bodies(kb, set(kept))
            by_key = {d.doc_key: d for d in read} | {k: _stored_document(existing[k], bodies[k]) for k in kept}
            return [by_key[k] for k in loaded.order]

        try:
            graph_counts, graph_written, graph_warnings = _update_graph(
                rt,
                kb,
                all_documents,
                len(keys),
                config,
                llm_extractor,
                progress,
                full=full,
                unchanged=not (changed or removed),
            )
            warnings += graph_warnings
        except BackendError as exc:  # the vectors are still stored, so lookups answer; the caller says it failed
            warnings.append(f"graph not built: {exc}")
            graph_error = str(exc)

    # A re-embed's vectors replace the old ones before the catalog records it, as the old ones answer until then.
    # A KB without vectors gets them only after: one whose first ingest died before its catalog commit has none
    # that answer, and one that died between the two is told it has no vectors (the next ingest re-embeds it).
    if target != kb and recorded is not None:
        vectors.promote(kb, target)

    new = None  # a new KB's row is written with its documents, in one transaction
    if kb_row is None:
        bundled = Path(path).resolve() == SAMPLE_KB_PATH.resolve()
        new = {
            "description": description,
            "extract_config": config,
            "grading": grading or (SAMPLE_GRADING if bundled else None),
        }
    elif grading is not None:
        rt.catalog.set_grading(kb, grading)
    states = loaded.states
    rt.catalog.apply_ingest(
        kb,
        changed=[
            DocumentChange(
                doc_key=d.doc_key,
                title=d.title,
                domain=d.domain,
                keywords=d.keywords,
                error_codes=d.error_codes,
                entities=d.entities,
                relations=d.relations,
                content_hash=d.content_hash,
                chunk_count=len(d.chunks()),
                file_stat=states[d.doc_key].file_stat,
                file_hash=states[d.doc_key].file_hash,
                body=d.body,
                warnings=d.warnings,
            )
            for d in changed
        ],
        removed=removed,
        # read again but the same: the new file state (and the text, which a row from before 0007 lacks)
        refreshed=[
            FileRefresh(d.doc_key, states[d.doc_key].file_stat, states[d.doc_key].file_hash, d.body, d.warnings)
            for d in read
            if d.doc_key not in changed_keys
        ]
        + [FileRefresh(k, states[k].file_stat, states[k].file_hash) for k in kept if k in states],
        embedder=embedder.name,
        dim=embedder.dim,
        source=here,
        new=new,
        graph_counts=graph_counts,
    )
    if target != kb and recorded is None:
        vectors.promote(kb, target)
    # after the commit: killed in between, the KB is refused as changed and the next ingest re-embeds it
    vectors.note_version(kb, catalog_version(rt.catalog.require(kb)))
    added = sum(1 for d in changed if d.doc_key not in existing)
    calibration = after_ingest(rt, kb, len(changed) + len(removed), progress)
    return IngestReport(
        kb=kb,
        documents=len(keys),
        chunks=vectors.count(kb),
        added=added,
        changed=len(changed) - added,
        removed=len(removed),
        unchanged=len(keys) - len(changed),
        seconds=round(time.perf_counter() - started, 2),
        embedder=embedder.name,
        graph=graph_counts,
        graph_written=graph_written,
        graph_error=graph_error,
        warnings=warnings,
        formats=loaded.formats,
        skipped=loaded.skipped,
        unsupported=loaded.unsupported,
        calibration=calibration,
    )


def _stored_document(row, body: str) -> Document:
    """A document as the catalog holds it, for the graph build: what `parse_text` made of its file last time."""
    return Document(
        doc_key=row.doc_key,
        title=row.title,
        domain=row.domain,
        keywords=list(row.keywords or []),
        body=body,
        entities=list(row.entities or []),
        relations=list(row.relations or []),
    )


def _update_graph(
    rt,
    kb: str,
    documents: Callable[[], list[Document]],
    count: int,
    config: dict,
    llm_extractor,
    progress: bool,
    *,
    full: bool,
    unchanged: bool,
) -> tuple[dict, dict, list[str]]:
    """Bring the KB's graph in line with its documents: (totals, rows written per kind, warnings).

    The graph is derived from all documents (a name found in one page is matched in every page, and
    co-occurrence weights are KB-wide), so it is computed whole; what is written is only its difference
    from the stored graph (`update_kb`): a changed page replaces its own mentions and the relations it
    sourced, and entities no page mentions any more go. Nothing changed, the graph holds every document
    and no LLM extractor is given (one retries the pages it failed on before): not even computed. A first
    or full (--rebuild) ingest loads the graph whole, atomically.
    """
    graph = rt.graph
    graph.discard_unfinished(kb)
    stored = graph.counts(kb)
    if unchanged and not full and llm_extractor is None and stored["documents"] == count:
        return stored, {"entities": 0, "documents": 0, "mentions": 0, "relations": 0}, []
    docs = documents()
    llm_results, warnings = _llm_extractions(rt, kb, docs, llm_extractor, progress) if llm_extractor else ({}, [])
    data, graph_warnings = build_graph_data(docs, config, llm_results)
    warnings += graph_warnings
    with tqdm(total=len(data.relations), desc=f"graph {kb}", unit="edge", disable=not progress, leave=False) as bar:
        if full or stored["documents"] == 0:
            try:
                counts = graph.replace_kb(kb, data, progress=bar.update)
            except OldGraphLeft as exc:  # built and in place: a warning, not "graph not built"
                counts = exc.counts
                warnings.append(f"graph: {exc}")
            return counts, dict(counts), warnings
        counts, written = graph.update_kb(kb, data, progress=bar.update)
    return counts, written, warnings


def _current(rt: IngestStores, kb: str) -> bool:
    """Whether this home's vectors of `kb` were written at the version the catalog records; a home that never
    noted one (older than the note) counts as current. Another home sharing the database may have ingested the KB
    since: its pages then read as unchanged here, over vectors that hold the old text (hostile24b finding 1)."""
    row = rt.catalog.get(kb)
    written = rt.vectors.written_version(kb)
    return row is None or written is None or written == catalog_version(row)


def _llm_extractions(rt, kb: str, docs: list[Document], extractor, progress: bool) -> tuple[dict, list[str]]:
    """doc_key -> Extraction, from the cache or the LLM; a document the LLM fails on is a warning, not a failure."""
    import hashlib

    from executor.retrieval.llm_extraction import Extraction

    results: dict[str, Extraction] = {}
    warnings: list[str] = []
    unreachable = False
    for doc in tqdm(docs, desc=f"LLM extraction {kb}", unit="doc", disable=not progress, leave=False):
        key = hashlib.sha256(extractor.cache_key(doc.content_hash).encode()).hexdigest()
        cached = rt.catalog.cached_extraction(kb, doc.doc_key, key)
        if cached is None:
            if unreachable:
                continue  # the cached extractions are still read; the endpoint is not asked again
            try:
                extraction, dropped = extractor.extract(doc.title, doc.body)
            except Exception as exc:  # any model or transport failure: the rule-based graph still stands
                if llm_unreachable(exc):
                    # every later page would wait as long (a hung endpoint at the default timeout: ~2 min a page)
                    unreachable = True
                    warnings.append(
                        f"{doc.doc_key}: the LLM endpoint did not answer "
                        f"({exc.__class__.__name__}: {first_line(exc)}); LLM extraction stopped for this ingest, "
                        "the graph of the pages left is rule-based "
                        "(check OPENAI_BASE_URL, or ingest with --no-llm-extract)"
                    )
                    continue
                warnings.append(f"{doc.doc_key}: LLM extraction failed ({exc.__class__.__name__}: {str(exc)[:120]})")
                continue
            warnings += [f"{doc.doc_key}: {line}" for line in dropped]
            cached = extraction.model_dump()
            rt.catalog.store_extraction(kb, doc.doc_key, key, cached)
        results[doc.doc_key] = Extraction.model_validate(cached)
    return results, warnings
