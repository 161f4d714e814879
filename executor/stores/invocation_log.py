"""The `tool_invocation` log: every tool call, executed or blocked, with its raw scores."""

from __future__ import annotations

from dataclasses import dataclass, field

from sqlalchemy import select

from executor.core.errors import redact
from executor.stores.database import Database, ToolInvocation

# who makes tool calls; stats report real use (everything but TEST_SOURCES) unless asked for a source
SOURCES = ("chat", "ask", "lookup", "mcp", "studio", "eval", "calibrate")
TEST_SOURCES = ("eval", "calibrate")


@dataclass
class Invocation:
    session_id: str
    tool_name: str
    query: str
    kb: str | None = None
    arguments: dict = field(default_factory=dict)
    relevance_level: str | None = None
    dedup_reason: str | None = None
    blocked: bool = False
    error: str | None = None
    latency_ms: float = 0.0
    retrieval_details: dict | None = None
    source: str | None = None  # None: the log's own source


class InvocationLog:
    """Writes rows tagged with `source`, the surface this process serves (one of SOURCES, or None if unknown)."""

    def __init__(self, db: Database, source: str | None = None):
        if source is not None and source not in SOURCES:
            raise ValueError(f"unknown invocation source {source!r}")
        self.db = db
        self.source = source

    def write(self, entry: Invocation) -> int:
        if entry.error:  # errors from libraries may quote a URL with its password
            entry.error = redact(entry.error)
        with self.db.session() as s:
            top = (entry.retrieval_details or {}).get("l1_top_similarity")
            row = ToolInvocation(**{**entry.__dict__, "source": entry.source or self.source}, top_similarity=top)
            s.add(row)
            s.flush()
            return row.id

    def forget(self, session_id: str) -> None:
        """Delete a session's rows: the MCP server's warm-up calls, which no one made."""
        from sqlalchemy import delete

        with self.db.session() as s:
            s.execute(delete(ToolInvocation).where(ToolInvocation.session_id == session_id))

    def rows(self, session_id: str | None = None, tool_name: str | None = None) -> list[ToolInvocation]:
        stmt = select(ToolInvocation).order_by(ToolInvocation.id)
        if session_id is not None:
            stmt = stmt.where(ToolInvocation.session_id == session_id)
        if tool_name is not None:
            stmt = stmt.where(ToolInvocation.tool_name == tool_name)
        with self.db.session() as s:
            return list(s.scalars(stmt).all())
