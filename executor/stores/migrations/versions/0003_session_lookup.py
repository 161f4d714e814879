"""The lookups each session ran (query, embedding, level, documents), for repeat detection by meaning.

Revision ID: 0003
Revises: 0002
"""

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "session_lookup",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("session_id", sa.String(128), nullable=False),
        sa.Column("kb", sa.String(64), nullable=False),
        sa.Column("query", sa.Text, nullable=False),
        sa.Column("embedder", sa.String(128), nullable=False),
        sa.Column("embedding", sa.LargeBinary, nullable=False),
        sa.Column("level", sa.String(20), nullable=True),
        sa.Column("domain", sa.String(64), nullable=True),
        sa.Column("doc_keys", sa.JSON, nullable=False),
        sa.Column("batch", sa.String(128), nullable=True),
        sa.Column("created_at", sa.DateTime, nullable=False),
    )
    op.create_index("ix_session_lookup_session_id", "session_lookup", ["session_id"])


def downgrade() -> None:
    op.drop_index("ix_session_lookup_session_id", "session_lookup")
    op.drop_table("session_lookup")
