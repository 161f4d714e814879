"""What an incremental ingest needs to leave an unchanged file alone: the file's state and the parsed text.

`document.file_stat` is the parser version, size, mtime and ctime (ns) the file had
when it was last read (NULL: not trusted, read it again next time); `file_hash` the
SHA-256 of its bytes (with the parser version), the decider when the stat moved;
`body` the document's parsed text, zlib-compressed, which the graph build of the
KB reads instead of the file; `warnings` the file's own warnings, repeated by an
ingest that does not read it. Existing rows get NULLs: their files are read
once more by the next ingest, which fills them in.

Revision ID: 0008
Revises: 0007
"""

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("document") as batch:
        batch.add_column(sa.Column("file_stat", sa.String(128), nullable=True))
        batch.add_column(sa.Column("file_hash", sa.String(64), nullable=True))
        batch.add_column(
            sa.Column("body", sa.LargeBinary(2**32 - 1), nullable=True)
        )  # MySQL: LONGBLOB, not a 64 kB BLOB
        batch.add_column(sa.Column("warnings", sa.JSON, nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("document") as batch:
        for column in ("warnings", "body", "file_hash", "file_stat"):
            batch.drop_column(column)
