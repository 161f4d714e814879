"""The graph in the application database (EXECUTOR_GRAPH_BACKEND=sql), and what users say about answers.

Revision ID: 0005
Revises: 0004
"""

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "graph_entity",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("kb", sa.String(64), nullable=False),
        sa.Column("key", sa.String(512), nullable=False),
        sa.Column("name", sa.Text, nullable=False),
        sa.Column("type", sa.String(64), nullable=True),
        sa.Column("aliases", sa.JSON, nullable=False),
    )
    op.create_index("ix_graph_entity_kb_key", "graph_entity", ["kb", "key"], unique=True)
    op.create_table(
        "graph_document",
        sa.Column("kb", sa.String(64), primary_key=True),
        sa.Column("doc_key", sa.String(512), primary_key=True),
        sa.Column("title", sa.Text, nullable=False),
        sa.Column("domain", sa.String(64), nullable=False),
    )
    op.create_table(
        "graph_mention",
        sa.Column("kb", sa.String(64), primary_key=True),
        sa.Column("doc_key", sa.String(512), primary_key=True),
        sa.Column("entity_id", sa.Integer, primary_key=True),
        sa.Column("count", sa.Integer, nullable=False),
    )
    op.create_index("ix_graph_mention_entity", "graph_mention", ["entity_id"])
    op.create_table(
        "graph_relation",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("kb", sa.String(64), nullable=False),
        sa.Column("type", sa.String(32), nullable=False),
        sa.Column("source_id", sa.Integer, nullable=False),
        sa.Column("target_id", sa.Integer, nullable=False),
        sa.Column("weight", sa.Float, nullable=True),
        sa.Column("sources", sa.JSON, nullable=False),
        sa.Column("created_at", sa.DateTime, nullable=False),
    )
    op.create_index("ix_graph_relation_source", "graph_relation", ["source_id", "type"])
    op.create_index("ix_graph_relation_target", "graph_relation", ["target_id", "type"])
    op.create_index("ix_graph_relation_kb", "graph_relation", ["kb"])
    op.create_table(
        "feedback",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("session_id", sa.String(128), nullable=False),
        sa.Column("turn", sa.Integer, nullable=False),
        sa.Column("verdict", sa.String(8), nullable=False),
        sa.Column("note", sa.Text, nullable=True),
        sa.Column("query", sa.Text, nullable=False),
        sa.Column("kb", sa.String(64), nullable=True),
        sa.Column("levels", sa.JSON, nullable=False),
        sa.Column("documents", sa.JSON, nullable=False),
        sa.Column("cited", sa.JSON, nullable=False),
        sa.Column("created_at", sa.DateTime, nullable=False),
    )
    op.create_index("ix_feedback_session_turn", "feedback", ["session_id", "turn"], unique=True)


def downgrade() -> None:
    op.drop_table("feedback")
    op.drop_table("graph_relation")
    op.drop_table("graph_mention")
    op.drop_table("graph_document")
    op.drop_table("graph_entity")
