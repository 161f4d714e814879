"""What people say about answers: one row per (session, turn), and the calibration labels it implies.

A row keeps what the answer was built from: the question, the level of every
tool call of the turn, the documents the answer drew on and the ones it
cited. `labels_from_feedback` turns rows into the label structure of
`evals/labels/*.yaml` ({query, relevant: [doc_key, ...]}) for threshold
calibration (seed 000, phase 2): a good answer's cited documents are relevant;
a bad answer's documents are not (`relevant: []`, and `not_relevant` names
them for a calibration that reads it).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy import JSON, DateTime, Index, Integer, String, Text, delete, select
from sqlalchemy.orm import Mapped, mapped_column

from executor.stores.database import Base, Database, utcnow

VERDICTS = ("good", "bad")


class FeedbackRow(Base):
    __tablename__ = "feedback"
    __table_args__ = (Index("ix_feedback_session_turn", "session_id", "turn", unique=True),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    session_id: Mapped[str] = mapped_column(String(128))
    turn: Mapped[int] = mapped_column(Integer)
    verdict: Mapped[str] = mapped_column(String(8))
    note: Mapped[str | None] = mapped_column(Text, nullable=True)
    query: Mapped[str] = mapped_column(Text)
    kb: Mapped[str | None] = mapped_column(String(64), nullable=True)
    levels: Mapped[list] = mapped_column(JSON, default=list)  # [{tool, query, relevance_level, blocked, dedup_reason}]
    documents: Mapped[list] = mapped_column(JSON, default=list)  # doc keys the answer drew on
    cited: Mapped[list] = mapped_column(JSON, default=list)  # doc keys the answer cited
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)


@dataclass
class TurnRecord:
    """One answered turn, as feedback stores it."""

    session_id: str
    turn: int
    query: str
    kb: str | None = None
    levels: list[dict] = field(default_factory=list)
    documents: list[str] = field(default_factory=list)
    cited: list[str] = field(default_factory=list)


class FeedbackStore:
    def __init__(self, db: Database):
        self.db = db

    def record(self, turn: TurnRecord, verdict: str, note: str | None = None) -> FeedbackRow:
        """Store a verdict on a turn; a second verdict on the same turn replaces the first."""
        row = FeedbackRow(
            session_id=turn.session_id,
            turn=turn.turn,
            verdict=verdict,
            note=note,
            query=turn.query,
            kb=turn.kb,
            levels=turn.levels,
            documents=turn.documents,
            cited=turn.cited,
            created_at=utcnow(),
        )
        with self.db.session() as s:
            s.execute(
                delete(FeedbackRow).where(FeedbackRow.session_id == turn.session_id, FeedbackRow.turn == turn.turn)
            )
            s.add(row)
        return row

    def rows(self, kb: str | None = None, session_id: str | None = None) -> list[FeedbackRow]:
        stmt = select(FeedbackRow).order_by(FeedbackRow.id)
        if kb is not None:
            stmt = stmt.where(FeedbackRow.kb == kb)
        if session_id is not None:
            stmt = stmt.where(FeedbackRow.session_id == session_id)
        with self.db.session() as s:
            return list(s.scalars(stmt).all())


def labels_from_feedback(rows: list[FeedbackRow]) -> list[dict]:
    """Calibration labels, one per distinct question, in the order first given.

    good -> the cited documents are relevant; bad -> the documents it drew on are not relevant. When the same
    question got both, a document someone called relevant stays relevant. A good answer that cited nothing
    says nothing about documents and gives no label.
    """
    labels: dict[str, dict] = {}
    for row in rows:
        if row.verdict == "good" and not row.cited:
            continue
        label = labels.setdefault(row.query, {"query": row.query, "relevant": [], "not_relevant": []})
        if row.verdict == "good":
            label["relevant"] += [d for d in row.cited if d not in label["relevant"]]
        else:
            label["not_relevant"] += [d for d in row.documents if d not in label["not_relevant"]]
    for label in labels.values():
        label["not_relevant"] = [d for d in label["not_relevant"] if d not in label["relevant"]]
    return list(labels.values())
