"""Each knowledge base may carry its own grading model: `knowledge_base.grading_model` (JSON, NULL = shared preset).

`executor calibrate --labels FILE --kb K --write` fits the ranker and its thresholds on K's own labelled
questions and stores them here. The model lives in the catalog row, not in a file under EXECUTOR_HOME,
because it belongs to the KB: it goes when the KB is dropped or re-created, it travels with the catalog
when that is a shared Postgres, and the row is read once per tool call anyway.

Revision ID: 0007
Revises: 0006
"""

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("knowledge_base") as batch:
        batch.add_column(sa.Column("grading_model", sa.JSON, nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("knowledge_base") as batch:
        batch.drop_column("grading_model")
