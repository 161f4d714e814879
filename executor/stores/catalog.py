"""The knowledge-base catalog and the documents each KB holds.

Two read paths are cut to what a tool call needs. Inside `reading()` (one tool
call or one graph expansion) a KB's row is read once, however many steps ask
for it. A KB's documents are kept per process as of the KB's version (its
revision and creation time, which every ingest, drop or re-create moves), so
grading and expansion read them again only after an ingest, in this process
or another.
"""

from __future__ import annotations

import shlex
import threading
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import delete, func, select, update

from executor.core.errors import BackendError, InputError
from executor.core.validation import check_description, validate_kb_name
from executor.stores import vector_versions
from executor.stores.database import (
    Database,
    DocumentRow,
    KnowledgeBase,
    LlmExtraction,
    SessionDocument,
    SessionLookup,
    utcnow,
)

LITE_FILE = "milvus.db"  # the home's own Milvus Lite file (Settings.milvus_target without MILVUS_URI)


def ingest_hint(kb: str, source: str | None) -> str:
    """What restores a KB: an ingest of the folder the catalog records for it. Never `executor ingest --kb KB`
    alone, which ingests the bundled sample into the KB (hostile21 finding 2); `FOLDER` when none is recorded."""
    folder = shlex.quote(source) if source else "FOLDER"
    return f"run `executor ingest {folder} --kb {kb}`"


@dataclass(frozen=True)
class DocumentChange:
    doc_key: str
    title: str
    domain: str
    keywords: list[str]
    error_codes: list[str]
    entities: list[dict]
    relations: list[dict]
    content_hash: str
    chunk_count: int
    # the file as read (executor/stores/migrations 0008): None leaves what the row had
    file_stat: str | None = None
    file_hash: str | None = None
    body: str | None = None
    warnings: list[str] | None = None


@dataclass(frozen=True)
class FileRecord:
    """A document's file as last read: what an incremental ingest compares before opening it."""

    file_stat: str | None
    file_hash: str | None
    has_body: bool
    warnings: list[str]


@dataclass(frozen=True)
class FileRefresh:
    """An unchanged document whose file was read again: its new state (and its text and warnings, for a row
    written before they were kept)."""

    doc_key: str
    file_stat: str | None
    file_hash: str
    body: str | None = None
    warnings: list[str] | None = None


def _compress(body: str) -> bytes:
    return zlib.compress(body.encode("utf-8"), 1)  # level 1: ~3x smaller, and fast on a large ingest


def version(row: KnowledgeBase) -> str:
    """What changes whenever a KB's content does: its revision, and its creation time (a dropped and re-created
    KB starts again at the same revision). A string, so that caches under EXECUTOR_HOME can keep it too."""
    return f"{row.revision}@{row.created_at.isoformat() if row.created_at else ''}"


def _forget_sent(s, kb: str, keys: list[str]) -> None:
    """The sessions no longer hold these pages of `kb` (in batches: a KB may change thousands at once)."""
    for start in range(0, len(keys), 500):
        batch = keys[start : start + 500]
        s.execute(delete(SessionDocument).where(SessionDocument.kb == kb, SessionDocument.doc_key.in_(batch)))


def _keep_held_texts(s, kb: str, removed: list[str]) -> dict[str, str]:
    """The sessions that were sent a removed page whose text the KB still holds under another name (its identical
    copy, or the page renamed or moved) hold it under that name now: action memory knows pages by name, and a
    session sent `archive/x.md` was sent `x.md`'s text in full again, as new, once a re-ingest dropped the archive
    copy (hostile18 finding 11). The name is the first of the text's names (`grading.copies`' choice). Returns
    each removed name whose text stays, with the name it stays under."""
    columns = (
        DocumentRow.doc_key,
        DocumentRow.content_hash,
        DocumentRow.file_hash,
        DocumentRow.domain,
        DocumentRow.title,
    )
    rows = s.execute(select(*columns).where(DocumentRow.kb == kb)).all()
    gone = set(removed)
    moved: dict[str, str] = {}
    named: dict[str, tuple[str, str, str]] = {}  # a text's hash -> its first remaining name, domain and title
    for key, content, file, domain, title in sorted(r for r in rows if r[0] not in gone):
        for h in (f"content:{content}", f"file:{file}" if file else ""):
            if h:
                named.setdefault(h, (key, domain, title))
    for key, content, file, _, _ in rows:
        if key not in gone:
            continue
        there = named.get(f"content:{content}") or (named.get(f"file:{file}") if file else None)
        if there is None:
            continue
        new_key, domain, title = there
        moved[key] = new_key
        # read first: MySQL refuses a DELETE whose subquery reads the table it deletes from (error 1093)
        holding = s.scalars(
            select(SessionDocument.session_id).where(SessionDocument.kb == kb, SessionDocument.doc_key == new_key)
        ).all()
        mine = (SessionDocument.kb == kb, SessionDocument.doc_key == key)
        if holding:
            s.execute(delete(SessionDocument).where(*mine, SessionDocument.session_id.in_(holding)))
        s.execute(update(SessionDocument).where(*mine).values(doc_key=new_key, domain=domain, title=title))
    return moved


class Catalog:
    def __init__(self, db: Database, home: str | None = None):
        """`home`: the EXECUTOR_HOME this catalog belongs to, named when a knowledge base is not in it (a host
        that started the server in another folder sees which home was read)."""
        self.db, self.home = db, home
        self._pinned = threading.local()  # rows read inside `reading()`, per thread
        self._documents: dict[str, tuple[str, dict[str, DocumentRow]]] = {}
        self._lock = threading.Lock()

    @contextmanager
    def reading(self, rows: dict[str, KnowledgeBase] | None = None) -> Iterator[None]:
        """Within the block, each KB row is read once (on this thread); nested blocks share the outer one's rows.
        `rows`: rows the caller already read (on another thread: a tool call's per-KB workers), used as read."""
        pinned = getattr(self._pinned, "rows", None)
        if pinned is not None:
            for name, row in (rows or {}).items():
                pinned.setdefault(name, row)
            yield
            return
        self._pinned.rows = dict(rows or {})
        try:
            yield
        finally:
            self._pinned.rows = None

    def get(self, name: str) -> KnowledgeBase | None:
        pinned = getattr(self._pinned, "rows", None)
        if pinned is not None and name in pinned:
            return pinned[name]
        with self.db.session() as s:
            row = s.get(KnowledgeBase, name)
        if pinned is not None:
            pinned[name] = row
        return row

    def names(self) -> list[str]:
        with self.db.session() as s:
            return list(s.scalars(select(KnowledgeBase.name).order_by(KnowledgeBase.name)))

    def rows(self) -> list[KnowledgeBase]:
        with self.db.session() as s:
            return list(s.scalars(select(KnowledgeBase).order_by(KnowledgeBase.name)))

    def document_counts(self) -> dict[str, int]:
        with self.db.session() as s:
            return dict(s.execute(select(DocumentRow.kb, func.count()).group_by(DocumentRow.kb)).all())

    def require(self, name: str) -> KnowledgeBase:
        validate_kb_name(name)
        kb = self.get(name)
        if kb is None:
            known = ", ".join(self.names()) or "none yet; run `executor ingest`"
            where = f"; home: {self.home}" if self.home else ""
            raise InputError(f"unknown knowledge base {name!r} (known: {known}{where})")
        return kb

    def require_ingested(self, name: str) -> KnowledgeBase:
        """`require`, and an ingest of the KB has been recorded (revision 0: `kb create` only, or a first ingest that
        died after it stored vectors and before the catalog recorded its documents, which then answered lookups from
        pages `kb list` did not show: hostile20 finding 5)."""
        kb = self.require(name)
        if not kb.revision:
            raise InputError(f"knowledge base {name!r} has no documents yet: {ingest_hint(name, kb.source_path)}")
        self._require_current_vectors(kb)
        return kb

    def _require_current_vectors(self, kb: KnowledgeBase) -> None:
        """The home's own Lite file holds the KB as the catalog records it. Another home sharing this database
        (EXECUTOR_DATABASE_URL) that ingested the KB moved the catalog on and left this home's vectors on the old
        text, which a lookup answered as the KB's current page (hostile24b finding 1)."""
        if self.home is None:
            return
        written = vector_versions.written(Path(self.home) / LITE_FILE, kb.name)
        if written is not None and written != version(kb):
            raise BackendError(
                f"knowledge base {kb.name!r} changed since this home's vectors of it were written (another home "
                f"sharing this database, EXECUTOR_DATABASE_URL, ingested it, or an ingest here was stopped): "
                f"{ingest_hint(kb.name, kb.source_path)} to re-embed it here"
            )

    def create(
        self, name: str, description: str = "", extract_config: dict | None = None, grading: str | None = None
    ) -> KnowledgeBase:
        validate_kb_name(name)
        check_description(description)
        with self.db.session() as s:
            if s.get(KnowledgeBase, name) is not None:
                raise InputError(f"knowledge base {name!r} already exists")
            kb = KnowledgeBase(name=name, description=description, extract_config=extract_config or {}, grading=grading)
            s.add(kb)
        return kb

    def set_grading(self, name: str, grading: str | None) -> None:
        """How lookups in this KB are graded (None: the settings' default)."""
        self.require(name)
        with self.db.session() as s:
            s.execute(update(KnowledgeBase).where(KnowledgeBase.name == name).values(grading=grading))

    def set_grading_model(self, name: str, model: dict | None) -> None:
        """This KB's own fitted grading model (None: back to the shared preset)."""
        self.require(name)
        with self.db.session() as s:
            s.execute(update(KnowledgeBase).where(KnowledgeBase.name == name).values(grading_model=model))

    def documents(self, kb: str) -> dict[str, DocumentRow]:
        """The KB's documents by key (read again only when the KB's version moved); the rows are shared: read-only."""
        row = self.get(kb)
        if row is None:
            return {}
        with self._lock:
            cached = self._documents.get(kb)
        if cached is not None and cached[0] == version(row):
            return dict(cached[1])
        with self.db.session() as s:
            rows = s.scalars(select(DocumentRow).where(DocumentRow.kb == kb)).all()
        docs = {r.doc_key: r for r in rows}
        with self._lock:
            self._documents[kb] = (version(row), docs)
        return dict(docs)

    def file_records(self, kb: str) -> dict[str, FileRecord]:
        """doc key -> its file as last read (no text loaded)."""
        query = select(
            DocumentRow.doc_key,
            DocumentRow.file_stat,
            DocumentRow.file_hash,
            DocumentRow.body.is_not(None),
            DocumentRow.warnings,
        ).where(DocumentRow.kb == kb)
        with self.db.session() as s:
            return {
                key: FileRecord(stat, digest, bool(has), list(warnings or []))
                for key, stat, digest, has, warnings in s.execute(query)
            }

    def stored_bodies(self, kb: str, doc_keys: set[str]) -> dict[str, str]:
        """The parsed text of the documents `doc_keys` (those that have one)."""
        if not doc_keys:
            return {}
        query = select(DocumentRow.doc_key, DocumentRow.body).where(DocumentRow.kb == kb, DocumentRow.body.is_not(None))
        with self.db.session() as s:
            rows = s.execute(query).all()  # the whole KB and a filter here: no bound on a key list's length
        return {
            key: zlib.decompress(body).decode("utf-8") for key, body in rows if key in doc_keys and body is not None
        }

    def apply_ingest(
        self,
        kb: str,
        changed: list[DocumentChange],
        removed: list[str],
        embedder: str,
        dim: int,
        source: str,
        refreshed: list[FileRefresh] | None = None,
        new: dict | None = None,
        graph_counts: dict | None = None,
    ) -> int:
        """Record one ingest in a single transaction; returns the new revision. `new`: the first ingest of a KB
        (its description, extract_config and grading) creates its row in the same transaction, so an ingest killed
        before this point leaves no KB behind that lists no documents yet answers from its vectors. `graph_counts`:
        what the graph holds after this ingest built it (None: not built this time, the record stays)."""
        with self.db.session() as s:
            row = s.get(KnowledgeBase, kb)
            if row is None and new is not None:
                validate_kb_name(kb)
                check_description(new.get("description") or "")
                row = KnowledgeBase(
                    name=kb,
                    description=new.get("description") or "",
                    extract_config=new.get("extract_config") or {},
                    grading=new.get("grading"),
                    revision=0,
                )
                s.add(row)
            if row is None:  # dropped while the ingest ran (`kb drop` in another process)
                raise InputError(f"unknown knowledge base {kb!r}: it was dropped during the ingest")
            row.embedder, row.dim, row.source_path = embedder, dim, source
            row.revision += 1
            if graph_counts is not None:
                row.graph_counts = {k: int(v) for k, v in graph_counts.items()}
            # each page's text as the sessions were sent it, before this ingest
            held = dict(
                s.execute(select(DocumentRow.doc_key, DocumentRow.content_hash).where(DocumentRow.kb == kb)).all()
            )
            for c in changed:
                values = {**c.__dict__, "body": None if c.body is None else _compress(c.body)}
                s.merge(DocumentRow(kb=kb, updated_at=utcnow(), **values))
            # a session holds a page's text as it was sent: once the page's text changes (or it goes), the session
            # no longer holds it, and its next lookup sends it again. Kept as sent, the lookup was DEDUPED ("answer
            # from what you have") on text the KB no longer says (hostile19 finding 1). A rebuild that re-embeds a
            # page without changing its text keeps it held, and so does a page whose text lives on under another
            # name (`_keep_held_texts`, after the changed pages' old texts are forgotten: a page may take on the
            # text of one removed)
            stale = [c.doc_key for c in changed if held.get(c.doc_key, c.content_hash) != c.content_hash]
            _forget_sent(s, kb, stale)
            if any(held.get(c.doc_key) != c.content_hash for c in changed):
                # a page added or rewritten may answer what a session's lookup found nothing on: its miss said
                # nothing about this text, so it no longer blocks the question (kept, the same question was
                # DEDUPED "not_found_repeated" and answered "the knowledge base has nothing on this" while a fresh
                # session found the new page: hostile23 finding 1). A removed page answers nothing new
                s.execute(delete(SessionLookup).where(SessionLookup.kb == kb, SessionLookup.level.is_(None)))
            moved: dict[str, str] = {}
            if removed:
                s.flush()  # the changed rows are among the names a removed page's text may live on under
                moved = _keep_held_texts(s, kb, removed)
                _forget_sent(s, kb, [k for k in removed if k not in moved])
                stale += [k for k in removed if k not in moved]
            if stale or moved:
                # nor do the session's earlier lookups that found it cover it any more: the repeat rule blocked the
                # same question as "query_repeated", pointing at a page the session no longer holds; a page held
                # under its new name is found under that name
                gone = set(stale)
                earlier = s.execute(select(SessionLookup.id, SessionLookup.doc_keys).where(SessionLookup.kb == kb))
                kept = [
                    {"id": i, "doc_keys": list(dict.fromkeys(moved.get(k, k) for k in keys if k not in gone))}
                    for i, keys in earlier
                    if (gone | moved.keys()) & set(keys)
                ]
                if kept:
                    s.execute(update(SessionLookup), kept)
            if removed:
                s.execute(delete(DocumentRow).where(DocumentRow.kb == kb, DocumentRow.doc_key.in_(removed)))
            updates = []
            for c in refreshed or []:
                values = {"kb": kb, "doc_key": c.doc_key, "file_stat": c.file_stat, "file_hash": c.file_hash}
                if c.body is not None:
                    values["body"], values["warnings"] = _compress(c.body), c.warnings
                updates.append(values)
            for keys in ({"body"}, set()):  # one executemany per shape of row
                batch = [u for u in updates if keys <= u.keys() and (keys or "body" not in u)]
                if batch:
                    s.execute(update(DocumentRow), batch)
            return row.revision

    def cached_extraction(self, kb: str, doc_key: str, cache_key: str) -> dict | None:
        with self.db.session() as s:
            row = s.get(LlmExtraction, (kb, doc_key, cache_key))
            return None if row is None else row.result

    def store_extraction(self, kb: str, doc_key: str, cache_key: str, result: dict) -> None:
        with self.db.session() as s:
            s.merge(LlmExtraction(kb=kb, doc_key=doc_key, cache_key=cache_key, result=result))

    def drop(self, name: str) -> None:
        with self.db.session() as s:
            s.execute(delete(LlmExtraction).where(LlmExtraction.kb == name))
            s.execute(delete(SessionDocument).where(SessionDocument.kb == name))
            # what a session looked up in the dropped KB says nothing about a KB of the same name created later:
            # kept, its lookups were "query_repeated", pointing at pages the drop removed (hostile23 finding 2)
            s.execute(delete(SessionLookup).where(SessionLookup.kb == name))
            s.execute(delete(DocumentRow).where(DocumentRow.kb == name))
            s.execute(delete(KnowledgeBase).where(KnowledgeBase.name == name))
