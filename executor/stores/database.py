"""The application database (SQLite file by default, any SQLAlchemy URL in production).

It holds the knowledge-base catalog, the documents of each KB (the L0 keyword
index is built from them), the per-session action memory and the
`tool_invocation` log.
"""

from __future__ import annotations

import sqlite3
from contextlib import contextmanager
from datetime import UTC, datetime
from functools import lru_cache
from pathlib import Path

from sqlalchemy import (
    JSON,
    Boolean,
    DateTime,
    Float,
    Integer,
    LargeBinary,
    String,
    Text,
    create_engine,
    event,
    inspect,
    text,
)
from sqlalchemy.engine import Engine
from sqlalchemy.exc import DBAPIError, OperationalError
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column, sessionmaker

from executor.core.errors import BackendError, redact
from executor.core.fs import private_dir, private_file
from executor.stores.integrity import disk_full, milvus_lite_collections, sqlite_damage


def utcnow() -> datetime:
    return datetime.now(UTC).replace(tzinfo=None)


class Base(DeclarativeBase):
    pass


class KnowledgeBase(Base):
    __tablename__ = "knowledge_base"

    name: Mapped[str] = mapped_column(String(64), primary_key=True)
    description: Mapped[str] = mapped_column(Text, default="")
    # {"entity_types": [...], "relation_types": [...]}; empty lists mean "no graph"
    extract_config: Mapped[dict] = mapped_column(JSON, default=dict)
    embedder: Mapped[str | None] = mapped_column(String(128), nullable=True)
    dim: Mapped[int | None] = mapped_column(Integer, nullable=True)
    source_path: Mapped[str | None] = mapped_column(Text, nullable=True)
    # bumped by every ingest, so long-lived readers know to reload their caches
    revision: Mapped[int] = mapped_column(Integer, default=0)
    # "similarity" or "ranker"; NULL follows the settings' default (core.settings.DEFAULT_GRADING)
    grading: Mapped[str | None] = mapped_column(String(16), nullable=True)
    # this KB's own ranker and thresholds (core.settings.KbModel as JSON), written by `executor calibrate
    # --write`; NULL: the embedder's shared preset
    grading_model: Mapped[dict | None] = mapped_column(JSON, nullable=True)
    # what the graph held when an ingest last built it ({"entities": n, ...}; migration 0009), NULL: never built:
    # a graph found empty that held entities was lost (`retrieval.graph_build.graph_failure`)
    graph_counts: Mapped[dict | None] = mapped_column(JSON, nullable=True)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)


class DocumentRow(Base):
    __tablename__ = "document"

    kb: Mapped[str] = mapped_column(String(64), primary_key=True)
    doc_key: Mapped[str] = mapped_column(String(512), primary_key=True)
    title: Mapped[str] = mapped_column(Text)
    domain: Mapped[str] = mapped_column(String(64), index=True)
    keywords: Mapped[list] = mapped_column(JSON, default=list)
    error_codes: Mapped[list] = mapped_column(JSON, default=list)
    entities: Mapped[list] = mapped_column(JSON, default=list)
    relations: Mapped[list] = mapped_column(JSON, default=list)
    content_hash: Mapped[str] = mapped_column(String(64))
    chunk_count: Mapped[int] = mapped_column(Integer)
    updated_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    # what an incremental ingest compares (migration 0008): the file as last read, its hash, its parsed text
    # (zlib; deferred: only an ingest's graph build reads it) and its warnings
    file_stat: Mapped[str | None] = mapped_column(String(128), nullable=True)
    file_hash: Mapped[str | None] = mapped_column(String(64), nullable=True)
    body: Mapped[bytes | None] = mapped_column(LargeBinary(2**32 - 1), nullable=True, deferred=True)  # MySQL: LONGBLOB
    warnings: Mapped[list | None] = mapped_column(JSON, nullable=True)


class LlmExtraction(Base):
    """An LLM's entities and relations for one version of a document (keyed by content, model and types)."""

    __tablename__ = "llm_extraction"

    kb: Mapped[str] = mapped_column(String(64), primary_key=True)
    doc_key: Mapped[str] = mapped_column(String(512), primary_key=True)
    cache_key: Mapped[str] = mapped_column(String(64), primary_key=True)
    result: Mapped[dict] = mapped_column(JSON)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)


class SessionDocument(Base):
    """Action memory: a document already sent to the LLM in this session."""

    __tablename__ = "session_document"

    session_id: Mapped[str] = mapped_column(String(128), primary_key=True)
    kb: Mapped[str] = mapped_column(String(64), primary_key=True)
    doc_key: Mapped[str] = mapped_column(String(512), primary_key=True)
    domain: Mapped[str] = mapped_column(String(64))
    title: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)


class SessionDomain(Base):
    """Action memory: the level the last lookup landing in this domain was graded."""

    __tablename__ = "session_domain"

    session_id: Mapped[str] = mapped_column(String(128), primary_key=True)
    domain: Mapped[str] = mapped_column(String(64), primary_key=True)
    last_level: Mapped[str] = mapped_column(String(20))
    lookups: Mapped[int] = mapped_column(Integer, default=0)
    updated_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)


class SessionLookup(Base):
    """Action memory: a lookup that ran in this session, for the repeat rule (executor/retrieval/repeats.py).

    The query's embedding is kept (float32 bytes, with the embedder's name) so that a later lookup,
    in any turn or process, is compared with it without embedding it again. `level` is None when the
    lookup found nothing; `doc_keys` are the documents it returned; `batch` is the LLM message that
    proposed it (its siblings in that message are never repeats of it).
    """

    __tablename__ = "session_lookup"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    session_id: Mapped[str] = mapped_column(String(128), index=True)
    kb: Mapped[str] = mapped_column(String(64))
    query: Mapped[str] = mapped_column(Text)
    embedder: Mapped[str] = mapped_column(String(128))
    embedding: Mapped[bytes] = mapped_column(LargeBinary)
    level: Mapped[str | None] = mapped_column(String(20), nullable=True)
    domain: Mapped[str | None] = mapped_column(String(64), nullable=True)
    doc_keys: Mapped[list] = mapped_column(JSON, default=list)
    batch: Mapped[str | None] = mapped_column(String(128), nullable=True)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)


class ToolInvocation(Base):
    __tablename__ = "tool_invocation"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    session_id: Mapped[str] = mapped_column(String(128), index=True)
    tool_name: Mapped[str] = mapped_column(String(64), index=True)
    kb: Mapped[str | None] = mapped_column(String(64), nullable=True)
    query: Mapped[str] = mapped_column(Text)
    arguments: Mapped[dict] = mapped_column(JSON, default=dict)
    relevance_level: Mapped[str | None] = mapped_column(String(20), nullable=True)
    dedup_reason: Mapped[str | None] = mapped_column(String(32), nullable=True)
    blocked: Mapped[bool] = mapped_column(Boolean, default=False)
    error: Mapped[str | None] = mapped_column(Text, nullable=True)
    latency_ms: Mapped[float] = mapped_column(Float, default=0.0)
    retrieval_details: Mapped[dict | None] = mapped_column(JSON, nullable=True)
    # the lookup's best similarity, also inside retrieval_details; a column so stats need no JSON SQL
    top_similarity: Mapped[float | None] = mapped_column(Float, nullable=True)
    # who called: chat, ask, lookup, mcp, studio, eval, calibrate (executor/stores/invocation_log.py SOURCES);
    # NULL unknown
    source: Mapped[str | None] = mapped_column(String(16), nullable=True, index=True)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow, index=True)


class Database:
    def __init__(self, url: str):
        self.url = url
        path = url[len("sqlite:///") :] if url.startswith("sqlite:///") else ""
        if path and path != ":memory:":
            _check_whole(Path(path))
            private_dir(Path(path).parent)  # a folder it creates is 0700, as the home is (it was the umask's)
            private_file(Path(path))  # session memory and the log: 0600 (SQLite gives its -wal/-shm the same)
        self.engine = _engine(url)
        self._sessions = sessionmaker(self.engine, expire_on_commit=False)
        try:
            migrate(self.engine)
        except OperationalError as exc:
            raise BackendError(f"cannot open the database {_safe(url)}: {self._why(exc)}") from exc
        except DBAPIError as exc:  # what the server said of the schema, rights or search_path (a ProgrammingError)
            raise BackendError(f"cannot open the database {_safe(url)}: {_denial(exc)}") from exc

    def _why(self, exc: OperationalError) -> str:
        """What SQLite said, or, when its "disk I/O error" comes from a full disk, that the disk is full."""
        said = str(exc.orig)
        path = self.url[len("sqlite:///") :] if self.url.startswith("sqlite:///") else ""
        return (disk_full(Path(path).parent, said) if path else None) or said

    @contextmanager
    def session(self):
        """A unit of work: committed whole, or rolled back whole."""
        s: Session = self._sessions()
        try:
            yield s
            s.commit()
        except OperationalError as exc:
            s.rollback()
            raise BackendError(f"database {_safe(self.url)} failed: {self._why(exc)}") from exc
        except DBAPIError as exc:
            s.rollback()
            if not _denied(exc):
                raise
            raise BackendError(f"database {_safe(self.url)} failed: {_denial(exc)}") from exc
        except BaseException:
            s.rollback()
            raise
        finally:
            s.close()


def _denied(exc: DBAPIError) -> bool:
    """PostgreSQL refused the user a right (SQLSTATE 42501), or its search_path names no schema it may use (3F000).
    psycopg raises both as a ProgrammingError, which reached the user as "error: ProgrammingError:
    (psycopg.errors.InsufficientPrivilege) ...", naming neither the database nor what to do; MySQL's refusals
    (1142, 1044) are OperationalErrors."""
    return getattr(exc.orig, "sqlstate", None) in ("42501", "3F000")


def _denial(exc: DBAPIError) -> str:
    said = str(exc.orig).strip()
    said = said.splitlines()[0] if said else exc.orig.__class__.__name__
    if not _denied(exc):
        return said
    return (
        f"{said}; the user of EXECUTOR_DATABASE_URL needs a schema it may use, and to create and change its tables "
        "(its owner, or GRANT ALL ON SCHEMA and its tables)"
    )


def _check_whole(path: Path) -> None:
    """A damaged database file is an error naming it, never a fresh database or "unknown knowledge base".
    An empty file beside a Milvus Lite file that holds data is damaged too (a new home has neither)."""
    damage = sqlite_damage(path)
    vectors = path.with_name("milvus.db")
    if damage is None and path.is_file() and path.stat().st_size == 0:
        if vectors.is_file() and vectors.stat().st_size > 0:
            damage = "it is empty (0 bytes) but the home holds vectors"
    if damage is None and not path.exists() and milvus_lite_collections(vectors):
        # a new home has neither file; vectors without their catalog mean the database was deleted or lost
        raise BackendError(
            f"the database {path} is missing, but {vectors} holds knowledge bases: the catalog of this home is "
            f"lost; restore {path.name} from a backup, or move {vectors.name} away and run `executor ingest` again"
        )
    if damage is not None:
        raise BackendError(
            f"the database {path} is damaged ({damage}): restore it from a backup, or move it "
            "away and run `executor ingest` again"
        )
    foreign = _foreign_tables(path) if path.is_file() else []
    if foreign:
        shown = ", ".join(foreign[:5]) + (f" and {len(foreign) - 5} more" if len(foreign) > 5 else "")
        raise BackendError(
            f"the database {path} is not an Executor database (it holds other tables: {shown}); it was left as it "
            "is: restore executor's own database there from a backup, or name another file in EXECUTOR_DATABASE_URL"
        )


# what the first release made, with no alembic_version (`migrate` stamps such a database as revision 0001)
FIRST_RELEASE_TABLES = frozenset(
    {"knowledge_base", "document", "session_document", "session_domain", "tool_invocation"}
)


def _foreign_tables(path: Path) -> list[str]:
    """The tables executor never made in the SQLite file at `path`, when it records no schema revision: another
    program's database (a wrong backup restored, EXECUTOR_DATABASE_URL naming the wrong file). Migrating it wrote
    executor's tables into that program's file, and the lookup then said "unknown knowledge base ... run `executor
    ingest`" (hostile22 finding 7). Read-only, before the engine opens it: its WAL pragma would rewrite the header.
    A server database is not checked: it is commonly shared (LangGraph's checkpoint tables beside ours)."""
    try:
        conn = sqlite3.connect(f"{path.absolute().as_uri()}?mode=ro", uri=True, timeout=15)
        try:
            rows = conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite~_%' ESCAPE '~'"
            )
            tables = {name for (name,) in rows}
        finally:
            conn.close()
    except sqlite3.OperationalError:  # locked, busy, not openable: not this check's to say; the real open says it
        return []
    if "alembic_version" in tables:
        return []
    return sorted(tables - FIRST_RELEASE_TABLES)


SCHEMA_REVISION = "0010"  # the newest migration in executor/stores/migrations/versions
MIGRATIONS = Path(__file__).with_name("migrations")


def schema_revision(engine: Engine) -> str | None:
    with engine.connect() as conn:
        if "alembic_version" not in inspect(conn).get_table_names():
            return None
        return conn.execute(text("SELECT version_num FROM alembic_version")).scalar()


def migrate(engine: Engine) -> None:
    """Bring the schema to SCHEMA_REVISION with Alembic, keeping every row.

    A database made before migrations existed (tables, no alembic_version) is
    stamped as the first revision, then upgraded. The check is one query, so
    opening an up-to-date database does not import Alembic.
    """
    found = schema_revision(engine)
    if found == SCHEMA_REVISION:
        return
    if found is not None and found not in {p.name.split("_", 1)[0] for p in (MIGRATIONS / "versions").glob("*_*.py")}:
        _refuse_another_programs(engine, found)
        # a revision no migration here names: a newer executor wrote this database (Alembic said only
        # "CommandError: Can't locate revision identified by ..."), and this one cannot read or migrate it
        raise BackendError(
            f"the database {engine.url.render_as_string(hide_password=True)} has schema revision {found!r}, which "
            f"this executor (up to {SCHEMA_REVISION}) does not know: a newer executor wrote it; upgrade executor, "
            "or use another EXECUTOR_HOME"
        )
    from alembic import command
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    try:
        with engine.connect() as conn, _ddl_transaction(conn):
            config.attributes["connection"] = conn
            tables = inspect(conn).get_table_names()  # on this connection: another one would not see its transaction
            if "tool_invocation" in tables and "alembic_version" not in tables:
                command.stamp(config, "0001")
            command.upgrade(config, "head")
    except DBAPIError as exc:
        if schema_revision(engine) == SCHEMA_REVISION:  # just another process migrating first
            return
        said = str(exc.orig)
        if not any(words in said.lower() for words in _ALREADY_THERE):
            raise
        # the revision was set back by hand (or an older executor's migration stopped half-way): a later
        # migration's column or table is already there; migrating again cannot fix that, and guessing the
        # revision the tables are at could lose rows
        raise BackendError(
            f"the database {engine.url.render_as_string(hide_password=True)}: schema revision {found!r} is "
            f"recorded, but its tables already hold what a later migration adds ({said}); restore it from a "
            "backup, or move it away and run `executor ingest` again"
        ) from exc


def _refuse_another_programs(engine: Engine, found: str) -> None:
    """A revision no migration here names, in a database without executor's catalog, is another program's
    Alembic revision (many programs keep one in `alembic_version`), not a newer executor's."""
    with engine.connect() as conn:
        if "knowledge_base" in inspect(conn).get_table_names():
            return
    raise BackendError(
        f"the database {engine.url.render_as_string(hide_password=True)} is not an Executor database (its "
        f"alembic_version {found!r} is another program's, and it has no knowledge_base table); it was left as it "
        "is: name executor's own database in EXECUTOR_DATABASE_URL, or use another EXECUTOR_HOME"
    )


# what SQLite, PostgreSQL and MySQL say when a migration adds a column, table or index that is already there
_ALREADY_THERE = ("duplicate column", "already exists", "duplicate key name")


@contextmanager
def _ddl_transaction(conn):
    """All the migrations in one transaction, committed whole or rolled back whole.

    Python's sqlite3 (before 3.12's `autocommit`) opens a transaction only before INSERT, UPDATE and DELETE, so
    each ALTER TABLE of a migration was committed as it ran, and a migration that failed half-way left the file
    half-migrated. SQLite's DDL is transactional once BEGIN is sent, so it is sent here (IMMEDIATE: a second
    process migrating waits for the first). PostgreSQL's DDL is transactional as it is; MySQL's never is.
    """
    raw = conn.connection.driver_connection if conn.dialect.name == "sqlite" else None
    if raw is None:
        with conn.begin():
            yield
        return
    legacy = raw.isolation_level
    raw.isolation_level = None  # the driver's own transaction handling off: no transaction is open yet
    try:
        conn.exec_driver_sql("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            conn.rollback()
            raise
        conn.commit()
    finally:
        raw.isolation_level = legacy


def _safe(url: str) -> str:
    from sqlalchemy.engine import make_url

    # redacted here too, before the message puts a colon after it: a `?password=` at the URL's end was masked
    # with that colon ("...db?password=*** connection failed", hostile19 finding 10)
    return redact(make_url(url).render_as_string(hide_password=True))


@lru_cache(maxsize=8)
def _engine(url: str) -> Engine:
    if url.startswith("sqlite"):
        engine = create_engine(url, connect_args={"timeout": 15})

        @event.listens_for(engine, "connect")
        def _wal(dbapi_conn, _):  # readers never block the writer of another process
            dbapi_conn.execute("PRAGMA journal_mode=WAL")
            dbapi_conn.execute("PRAGMA busy_timeout=15000")
            # WAL with NORMAL sync: a commit no longer waits for an fsync (the WAL is synced at checkpoints); the
            # database cannot be corrupted, and only the last commits can be lost, on power loss alone (SQLite docs)
            dbapi_conn.execute("PRAGMA synchronous=NORMAL")

        return engine
    return create_engine(url, pool_pre_ping=True, connect_args=_server_timeouts(url))


# A server that accepts a connection and never answers (stopped with SIGSTOP, a firewall dropping its replies, a hung
# proxy) held every command without limit: psycopg waits for ever unless told, PyMySQL bounds the TCP connect alone
# and reads the handshake and every reply with no timeout (hostile18b finding 1). No statement of ours takes a
# minute: a read that long is a server that stopped answering.
CONNECT_TIMEOUT_S = 10
READ_TIMEOUT_S = 60


def _server_timeouts(url: str) -> dict:
    from sqlalchemy.engine import make_url

    parsed = make_url(url)
    if parsed.get_backend_name() == "postgresql":
        # libpq's (and psycopg 3's) connect_timeout bounds the whole connection, its start-up exchange included
        return {"connect_timeout": CONNECT_TIMEOUT_S}
    if parsed.get_backend_name() == "mysql" and parsed.get_driver_name() in ("pymysql", "mysqldb"):
        return {"connect_timeout": CONNECT_TIMEOUT_S, "read_timeout": READ_TIMEOUT_S, "write_timeout": READ_TIMEOUT_S}
    return {}
