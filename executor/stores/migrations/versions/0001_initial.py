"""The schema as the first release created it (catalog, documents, action memory, invocation log).

Revision ID: 0001
"""

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "knowledge_base",
        sa.Column("name", sa.String(64), primary_key=True),
        sa.Column("description", sa.Text, nullable=False),
        sa.Column("extract_config", sa.JSON, nullable=False),
        sa.Column("embedder", sa.String(128), nullable=True),
        sa.Column("dim", sa.Integer, nullable=True),
        sa.Column("source_path", sa.Text, nullable=True),
        sa.Column("revision", sa.Integer, nullable=False),
        sa.Column("created_at", sa.DateTime, nullable=False),
    )
    op.create_table(
        "document",
        sa.Column("kb", sa.String(64), primary_key=True),
        sa.Column("doc_key", sa.String(512), primary_key=True),
        sa.Column("title", sa.Text, nullable=False),
        sa.Column("domain", sa.String(64), nullable=False, index=True),
        sa.Column("keywords", sa.JSON, nullable=False),
        sa.Column("error_codes", sa.JSON, nullable=False),
        sa.Column("entities", sa.JSON, nullable=False),
        sa.Column("relations", sa.JSON, nullable=False),
        sa.Column("content_hash", sa.String(64), nullable=False),
        sa.Column("chunk_count", sa.Integer, nullable=False),
        sa.Column("updated_at", sa.DateTime, nullable=False),
    )
    op.create_table(
        "session_document",
        sa.Column("session_id", sa.String(128), primary_key=True),
        sa.Column("kb", sa.String(64), primary_key=True),
        sa.Column("doc_key", sa.String(512), primary_key=True),
        sa.Column("domain", sa.String(64), nullable=False),
        sa.Column("title", sa.Text, nullable=False),
        sa.Column("created_at", sa.DateTime, nullable=False),
    )
    op.create_table(
        "session_domain",
        sa.Column("session_id", sa.String(128), primary_key=True),
        sa.Column("domain", sa.String(64), primary_key=True),
        sa.Column("last_level", sa.String(20), nullable=False),
        sa.Column("lookups", sa.Integer, nullable=False),
        sa.Column("updated_at", sa.DateTime, nullable=False),
    )
    op.create_table(
        "tool_invocation",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("session_id", sa.String(128), nullable=False, index=True),
        sa.Column("tool_name", sa.String(64), nullable=False, index=True),
        sa.Column("kb", sa.String(64), nullable=True),
        sa.Column("query", sa.Text, nullable=False),
        sa.Column("arguments", sa.JSON, nullable=False),
        sa.Column("relevance_level", sa.String(20), nullable=True),
        sa.Column("dedup_reason", sa.String(32), nullable=True),
        sa.Column("blocked", sa.Boolean, nullable=False),
        sa.Column("error", sa.Text, nullable=True),
        sa.Column("latency_ms", sa.Float, nullable=False),
        sa.Column("retrieval_details", sa.JSON, nullable=True),
        sa.Column("created_at", sa.DateTime, nullable=False, index=True),
    )


def downgrade() -> None:
    for table in ("tool_invocation", "session_domain", "session_document", "document", "knowledge_base"):
        op.drop_table(table)
