"""What each knowledge base's graph held when an ingest last built it: `knowledge_base.graph_counts` (JSON, NULL =
never built, or built before this column). A graph whose entities came from the rule-based extractor alone (no
document names one in its front matter) that is later found empty was built and then lost: damaged, not "never
built", which only this record can tell.

Revision ID: 0009
Revises: 0008
"""

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("knowledge_base") as batch:
        batch.add_column(sa.Column("graph_counts", sa.JSON, nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("knowledge_base") as batch:
        batch.drop_column("graph_counts")
