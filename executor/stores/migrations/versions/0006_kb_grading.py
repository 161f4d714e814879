"""How each knowledge base is graded: `knowledge_base.grading` ("similarity" or "ranker", NULL = the default).

The default grading became the calibrated ranker, which holds on uncurated
documents. The bundled sample KB keeps the similarity thresholds calibrated on
it (its questions are deliberately vague and the ranker grades too many of
them "nothing found"), so its existing row is backfilled; every other existing
KB follows the new default.

Revision ID: 0006
Revises: 0005
"""

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None

SAMPLE_DESCRIPTION = "bundled sample knowledge base"  # what `executor ingest` with no path has always written


def upgrade() -> None:
    with op.batch_alter_table("knowledge_base") as batch:
        batch.add_column(sa.Column("grading", sa.String(16), nullable=True))
    kbs = sa.table("knowledge_base", sa.column("description", sa.Text), sa.column("grading", sa.String))
    op.get_bind().execute(kbs.update().where(kbs.c.description == SAMPLE_DESCRIPTION).values(grading="similarity"))


def downgrade() -> None:
    with op.batch_alter_table("knowledge_base") as batch:
        batch.drop_column("grading")
