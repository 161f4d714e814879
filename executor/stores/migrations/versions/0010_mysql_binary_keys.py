"""Text compared byte for byte on MySQL and MariaDB, as on SQLite and PostgreSQL.

A MySQL or MariaDB database made with the server's default collation (`utf8mb4_general_ci`, or `*_0900_ai_ci`)
compares text ignoring case and accents: the sessions "Alice" and "alice" shared one action memory (the second was
told DEDUPED, "already returned in this session", for documents its host never got), the pages `A.md` and `a.md`,
or `cafe.md` and `café.md`, were one catalog row while the vector store held both, and two entities whose names
differ only in accents were one key of the SQL graph. Every table of the application is converted to the binary
collation; on the other databases this migration does nothing.

Revision ID: 0010
Revises: 0009
"""

from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None

TABLES = (
    "knowledge_base",
    "document",
    "llm_extraction",
    "session_document",
    "session_domain",
    "session_lookup",
    "tool_invocation",
    "feedback",
    "graph_entity",
    "graph_document",
    "graph_mention",
    "graph_relation",
)


def upgrade() -> None:
    bind = op.get_bind()
    if bind.dialect.name not in ("mysql", "mariadb"):
        return
    for table in TABLES:  # the same set of rows under a stricter comparison: no key can collide
        op.execute(f"ALTER TABLE {table} CONVERT TO CHARACTER SET utf8mb4 COLLATE utf8mb4_bin")


def downgrade() -> None:  # the server's default comparison again
    bind = op.get_bind()
    if bind.dialect.name not in ("mysql", "mariadb"):
        return
    for table in TABLES:
        op.execute(f"ALTER TABLE {table} CONVERT TO CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci")
