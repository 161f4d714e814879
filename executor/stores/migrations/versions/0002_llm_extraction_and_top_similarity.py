"""The LLM extraction cache, and the top similarity of each lookup as a column (backfilled from the JSON).

`executor stats` histograms similarities; a real column lets any database
filter and aggregate them without dialect-specific JSON functions.

Revision ID: 0002
Revises: 0001
"""

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # builds of main between the two releases created llm_extraction without a migration: tolerate it
    existing = sa.inspect(op.get_bind()).get_table_names()
    if "llm_extraction" in existing:
        return _add_top_similarity()
    op.create_table(
        "llm_extraction",
        sa.Column("kb", sa.String(64), primary_key=True),
        sa.Column("doc_key", sa.String(512), primary_key=True),
        sa.Column("cache_key", sa.String(64), primary_key=True),
        sa.Column("result", sa.JSON, nullable=False),
        sa.Column("created_at", sa.DateTime, nullable=False),
    )
    _add_top_similarity()


def _add_top_similarity() -> None:
    with op.batch_alter_table("tool_invocation") as batch:
        batch.add_column(sa.Column("top_similarity", sa.Float, nullable=True))
    invocations = sa.table(
        "tool_invocation",
        sa.column("id", sa.Integer),
        sa.column("retrieval_details", sa.JSON),
        sa.column("top_similarity", sa.Float),
    )
    conn = op.get_bind()
    rows = conn.execute(sa.select(invocations.c.id, invocations.c.retrieval_details)).all()
    for row_id, details in rows:
        value = (details or {}).get("l1_top_similarity") if isinstance(details, dict) else None
        if value is not None:
            conn.execute(invocations.update().where(invocations.c.id == row_id).values(top_similarity=float(value)))


def downgrade() -> None:
    with op.batch_alter_table("tool_invocation") as batch:
        batch.drop_column("top_similarity")
    op.drop_table("llm_extraction")
