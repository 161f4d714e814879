"""Per-session action memory: which domains and documents were already retrieved, and which lookups ran."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import cast

import numpy as np
from sqlalchemy import CursorResult, delete, select

from executor.core.relevance import Level
from executor.stores.database import Database, SessionDocument, SessionDomain, SessionLookup, utcnow


@dataclass(frozen=True)
class SentDocument:
    kb: str
    doc_key: str
    domain: str
    title: str


@dataclass
class EarlierLookup:
    """A lookup that ran in a session: what the repeat rule compares a new lookup with."""

    query: str
    vector: np.ndarray  # unit-length query embedding, from `embedder`
    level: str | None  # None: it found nothing
    domain: str | None = None
    doc_keys: list[str] = field(default_factory=list)
    batch: str | None = None
    kb: str = "sample"
    embedder: str = ""


@dataclass(frozen=True)
class Snapshot:
    """A session's memory at one moment, for `ActionMemory.forget_call`: its lookups (row ids), the documents it sent
    and each domain's row as it was. Equal snapshots: nothing was recorded in between."""

    session: str
    lookups: frozenset[int]
    documents: frozenset[tuple[str, str]]
    domains: frozenset[tuple[str, str, int, datetime]]  # domain, last level, lookups, updated at


class ActionMemory:
    def __init__(self, db: Database):
        self.db = db

    def sent_documents(self, session_id: str) -> dict[tuple[str, str], SentDocument]:
        with self.db.session() as s:
            rows = s.scalars(
                select(SessionDocument)
                .where(SessionDocument.session_id == session_id)
                .order_by(SessionDocument.created_at)
            ).all()
        return {(r.kb, r.doc_key): SentDocument(r.kb, r.doc_key, r.domain, r.title) for r in rows}

    def domain_levels(self, session_id: str) -> dict[str, str]:
        """domain -> level of the last lookup that landed there, in first-retrieved order."""
        with self.db.session() as s:
            rows = s.scalars(
                select(SessionDomain).where(SessionDomain.session_id == session_id).order_by(SessionDomain.updated_at)
            ).all()
        return {r.domain: r.last_level for r in rows}

    def by_domain(self, session_id: str) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        for doc in self.sent_documents(session_id).values():
            out.setdefault(doc.domain, []).append(doc.doc_key)
        return out

    def record(self, session_id: str, domain: str | None, level: str | None, docs: list[SentDocument]) -> None:
        """Remember one lookup: its landing domain's level and the documents it sent, atomically.

        Graph expansion records documents only (domain None): it does not answer a domain.
        """
        with self.db.session() as s:
            if domain is not None and level is not None:  # the two come together: a lookup's landing and its level
                row = s.get(SessionDomain, (session_id, domain))
                if row is None:
                    s.add(SessionDomain(session_id=session_id, domain=domain, last_level=level, lookups=1))
                else:
                    row.last_level, row.lookups, row.updated_at = level, row.lookups + 1, utcnow()
            for d in docs:
                if s.get(SessionDocument, (session_id, d.kb, d.doc_key)) is None:
                    s.add(
                        SessionDocument(
                            session_id=session_id, kb=d.kb, doc_key=d.doc_key, domain=d.domain, title=d.title
                        )
                    )

    def record_lookup(self, session_id: str, lookup: EarlierLookup) -> None:
        with self.db.session() as s:
            s.add(
                SessionLookup(
                    session_id=session_id,
                    kb=lookup.kb,
                    query=lookup.query,
                    embedder=lookup.embedder,
                    embedding=np.asarray(lookup.vector, dtype=np.float32).tobytes(),
                    level=lookup.level,
                    domain=lookup.domain,
                    doc_keys=list(lookup.doc_keys),
                    batch=lookup.batch and lookup.batch[:128],
                )
            )

    def lookups(self, session_id: str, kb: str | None = None, embedder: str | None = None) -> list[EarlierLookup]:
        """The session's lookups in the order they ran; only those of `kb` / `embedder` when given
        (vectors of different embedders are not comparable)."""
        stmt = select(SessionLookup).where(SessionLookup.session_id == session_id)
        if kb is not None:
            stmt = stmt.where(SessionLookup.kb == kb)
        if embedder is not None:
            stmt = stmt.where(SessionLookup.embedder == embedder)
        with self.db.session() as s:
            rows = s.scalars(stmt.order_by(SessionLookup.id)).all()
        return [
            EarlierLookup(
                query=r.query,
                vector=np.frombuffer(r.embedding, dtype=np.float32),
                level=r.level,
                domain=r.domain,
                doc_keys=list(r.doc_keys or []),
                batch=r.batch,
                kb=r.kb,
                embedder=r.embedder,
            )
            for r in rows
        ]

    # -- branches: the memory a checkpoint saw (see executor/nodes/memory_branch.py) -------------------------------
    def mark(self, session_id: str) -> dict:
        """What the session's memory holds now, as the graph's state keeps it: its lookups (row ids, in the
        order they ran) and the documents it sent. Small (ids and keys, no vectors or text)."""
        with self.db.session() as s:
            ids = s.scalars(
                select(SessionLookup.id).where(SessionLookup.session_id == session_id).order_by(SessionLookup.id)
            ).all()
            docs = s.execute(
                select(SessionDocument.kb, SessionDocument.doc_key).where(SessionDocument.session_id == session_id)
            ).all()
        return {"session": session_id, "lookups": list(ids), "documents": sorted([kb, key] for kb, key in docs)}

    def branch(self, mark: dict, new_session: str) -> None:
        """A new session holding exactly what `mark` names of its session's memory: the lookups and documents a
        checkpoint had seen, none that ran after it. Domain levels are rebuilt from those lookups (the domain
        rows are updated in place, so they cannot be copied as of a checkpoint)."""
        wanted_docs = {tuple(d) for d in mark.get("documents") or []}
        with self.db.session() as s:
            lookups = s.scalars(
                select(SessionLookup).where(SessionLookup.id.in_(mark.get("lookups") or [])).order_by(SessionLookup.id)
            ).all()
            docs = s.scalars(select(SessionDocument).where(SessionDocument.session_id == mark["session"])).all()
            domains: dict[str, SessionDomain] = {}
            for r in lookups:
                s.add(
                    SessionLookup(
                        session_id=new_session,
                        kb=r.kb,
                        query=r.query,
                        embedder=r.embedder,
                        embedding=r.embedding,
                        level=r.level,
                        domain=r.domain,
                        doc_keys=list(r.doc_keys or []),
                        batch=r.batch,
                    )
                )
                # a domain row is written by lookups that sent documents: not by a miss, nor by a blocked lookup
                # (remembered as DEDUPED for the repeat rule)
                if r.domain is not None and r.level not in (None, Level.DEDUPED.value):
                    row = domains.pop(r.domain, None) or SessionDomain(
                        session_id=new_session, domain=r.domain, lookups=0
                    )
                    row.last_level, row.lookups, row.updated_at = r.level, row.lookups + 1, utcnow()
                    domains[r.domain] = row  # re-inserted: the dict keeps the order of last update
            s.add_all(domains.values())
            for d in docs:
                if (d.kb, d.doc_key) in wanted_docs:
                    s.add(
                        SessionDocument(
                            session_id=new_session,
                            kb=d.kb,
                            doc_key=d.doc_key,
                            domain=d.domain,
                            title=d.title,
                            created_at=d.created_at,
                        )
                    )

    # -- one call's records: what a call the host cancelled recorded (executor/agent/mcp_server.py) ------------------
    def snapshot(self, session_id: str) -> Snapshot:
        with self.db.session() as s:
            return self._snapshot(s, session_id)

    def forget_call(self, before: Snapshot, after: Snapshot | None = None) -> None:
        """Forget what one call recorded in a session, between `before` and `after` (its start and end; None: it
        ended now): the lookups and sent documents it added, and the domain rows it wrote, put back as they were
        unless a later lookup has written them again since. What was recorded after the call stays: a host that
        cancelled a call late, after more calls of the same session, never read its documents, and must not be
        told they were sent (DEDUPED), nor lose what the later calls sent."""
        session_id = before.session
        with self.db.session() as s:
            now = self._snapshot(s, session_id)
            after = after or now
            if added := (after.lookups - before.lookups) & now.lookups:
                s.execute(delete(SessionLookup).where(SessionLookup.id.in_(added)))
            for kb, key in (after.documents - before.documents) & now.documents:
                s.execute(
                    delete(SessionDocument).where(
                        SessionDocument.session_id == session_id,
                        SessionDocument.kb == kb,
                        SessionDocument.doc_key == key,
                    )
                )
            was = {d[0]: d for d in before.domains}
            # a domain row as the call left it (added, or updated by it) and as it still is
            for domain, *_ in (after.domains - before.domains) & now.domains:
                row = s.get(SessionDomain, (session_id, domain))
                if row is None:
                    continue
                if domain in was:
                    _, row.last_level, row.lookups, row.updated_at = was[domain]
                else:
                    s.delete(row)

    @staticmethod
    def _snapshot(s, session_id: str) -> Snapshot:
        lookups = s.scalars(select(SessionLookup.id).where(SessionLookup.session_id == session_id)).all()
        documents = s.execute(
            select(SessionDocument.kb, SessionDocument.doc_key).where(SessionDocument.session_id == session_id)
        ).all()
        domains = s.execute(
            select(
                SessionDomain.domain, SessionDomain.last_level, SessionDomain.lookups, SessionDomain.updated_at
            ).where(SessionDomain.session_id == session_id)
        ).all()
        return Snapshot(
            session_id,
            frozenset(lookups),
            frozenset((kb, key) for kb, key in documents),
            frozenset(tuple(d) for d in domains),
        )

    def clear(self, session_id: str) -> int:
        """Forget a session's memory, and that of its branches (`session:fork-...`, made by forks of its thread)."""

        def mine(table):
            return (table.session_id == session_id) | table.session_id.startswith(session_id + BRANCH, autoescape=True)

        with self.db.session() as s:
            counts = {
                t: cast(CursorResult, s.execute(delete(t).where(mine(t)))).rowcount
                for t in (SessionDocument, SessionDomain, SessionLookup)
            }
        return counts[SessionDocument]


BRANCH = ":fork-"  # a branch's session id: the thread's id, this, and a random suffix
