"""Per-session action memory: which domains and documents were already retrieved."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import delete, select

from stores.database import Database, SessionDocument, SessionDomain, utcnow


@dataclass(frozen=True)
class SentDocument:
    kb: str
    doc_key: str
    domain: str
    title: str


class ActionMemory:
    def __init__(self, db: Database):
        self.db = db

    def sent_documents(self, session_id: str) -> dict[tuple[str, str], SentDocument]:
        with self.db.session() as s:
            rows = s.scalars(
                select(SessionDocument).where(SessionDocument.session_id == session_id).order_by(SessionDocument.created_at)
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
            if domain is not None:
                row = s.get(SessionDomain, (session_id, domain))
                if row is None:
                    s.add(SessionDomain(session_id=session_id, domain=domain, last_level=level, lookups=1))
                else:
                    row.last_level, row.lookups, row.updated_at = level, row.lookups + 1, utcnow()
            for d in docs:
                if s.get(SessionDocument, (session_id, d.kb, d.doc_key)) is None:
                    s.add(SessionDocument(session_id=session_id, kb=d.kb, doc_key=d.doc_key, domain=d.domain, title=d.title))

    def clear(self, session_id: str) -> int:
        with self.db.session() as s:
            n = s.execute(delete(SessionDocument).where(SessionDocument.session_id == session_id)).rowcount
            s.execute(delete(SessionDomain).where(SessionDomain.session_id == session_id))
        return n
