"""Where each tool call came from (`chat`, `ask`, `lookup`, `mcp`, `studio`, `eval`, `calibrate`).

`executor stats` reports real use by default; without this column every eval
storm counted as a user's session. Rows written before it are backfilled from
the session-id prefix each command gives its sessions (`eval-`, `chat-`,
`ask-`, `cli-`/`kg-` for lookup and kg); anything else stays NULL (unknown)
and counts as real use.

Revision ID: 0004
Revises: 0003
"""

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None

PREFIXES = {"eval-": "eval", "chat-": "chat", "ask-": "ask", "cli-": "lookup", "kg-": "lookup"}


def upgrade() -> None:
    with op.batch_alter_table("tool_invocation") as batch:
        batch.add_column(sa.Column("source", sa.String(16), nullable=True))
        batch.create_index("ix_tool_invocation_source", ["source"])
    invocations = sa.table("tool_invocation", sa.column("session_id", sa.String), sa.column("source", sa.String))
    for prefix, source in PREFIXES.items():
        op.get_bind().execute(
            invocations.update().where(invocations.c.session_id.like(prefix + "%")).values(source=source)
        )


def downgrade() -> None:
    with op.batch_alter_table("tool_invocation") as batch:
        batch.drop_index("ix_tool_invocation_source")
        batch.drop_column("source")
