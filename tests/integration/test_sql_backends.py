"""Action memory and the invocation log on the production databases (Postgres, and MySQL as the source design used).

Each test gets its own schema/database and drops it afterwards; it skips, saying why, where no server answers (and
fails under EXECUTOR_REQUIRE_SERVICES=1).
"""

import uuid

import pytest
from conftest import service_missing
from sqlalchemy import create_engine, text

from executor.stores.database import Database
from executor.stores.invocation_log import Invocation, InvocationLog
from executor.stores.memory import ActionMemory, SentDocument


def test_memory_and_log_round_trip(db_url):
    db = Database(db_url)
    memory, log = ActionMemory(db), InvocationLog(db)
    memory.record(
        "s1",
        "infrastructure",
        "HIGHLY_RELEVANT",
        [SentDocument("sample", "infrastructure/mysql-connection-pool.md", "infrastructure", "MySQL 数据库连接池配置")],
    )
    memory.record(
        "s1",
        "troubleshooting",
        "REFERENCE",
        [SentDocument("sample", "troubleshooting/slow-query.md", "troubleshooting", "慢查询分析与优化")],
    )
    assert memory.domain_levels("s1") == {"infrastructure": "HIGHLY_RELEVANT", "troubleshooting": "REFERENCE"}
    assert ("sample", "infrastructure/mysql-connection-pool.md") in memory.sent_documents("s1")
    assert memory.sent_documents("other") == {}

    details = {"l0_titles": ["MySQL 数据库连接池配置"], "l1_scores": [0.383, 0.45], "l1_top_similarity": 0.8085}
    log.write(
        Invocation(
            session_id="s1",
            tool_name="lookup_knowledge",
            query="数据库连接池怎么配置？",
            relevance_level="HIGHLY_RELEVANT",
            latency_ms=12.5,
            retrieval_details=details,
        )
    )
    (row,) = log.rows(session_id="s1")
    assert row.retrieval_details == details and row.query == "数据库连接池怎么配置？"

    assert memory.clear("s1") == 2
    assert memory.domain_levels("s1") == {}
    db.engine.dispose()


def test_a_session_resumes_from_a_postgres_checkpointer(sample_rt):
    """Two graph instances (two processes' worth) share one session through Postgres checkpoints."""
    import psycopg

    from executor.agent.checkpoints import open_checkpointer
    from executor.agent.planner import OfflinePlanner
    from executor.agent.session import run_turn
    from executor.core.settings import Settings
    from executor.nodes.state import Context

    url = "postgresql://postgres@127.0.0.1:5432/test"
    try:
        psycopg.connect(url, connect_timeout=3).close()
    except psycopg.Error as exc:
        service_missing(f"postgres at {url} is not reachable: {exc.__class__.__name__}")
    settings = Settings(home=sample_rt.settings.home, checkpoint_url=url)
    session = f"pg-{uuid.uuid4().hex[:8]}"
    with open_checkpointer(settings) as saver:
        app = sample_rt.app(OfflinePlanner(), "offline", checkpointer=saver)
        first = run_turn(app, "数据库连接池怎么配置？", session, Context(), "offline")
    with open_checkpointer(settings) as saver:
        app = sample_rt.app(OfflinePlanner(), "offline", checkpointer=saver)
        state = app.get_state({"configurable": {"thread_id": session}}).values
        assert state["session_evidence"] and len(state["messages"]) >= 3
        again = run_turn(app, "数据库连接池怎么配置？", session, Context(), "offline")
    assert first.executed_lookups == 1 and again.executed_lookups == 0
    assert again.citations[0]["doc_key"] == first.citations[0]["doc_key"]


def test_a_bad_checkpoint_url_is_a_clear_error(tmp_path):
    from executor.agent.checkpoints import open_checkpointer
    from executor.core.errors import BackendError, ConfigError
    from executor.core.settings import Settings

    with pytest.raises(ConfigError, match="postgresql://"):  # a setting to change: exit 2
        with open_checkpointer(Settings(home=tmp_path, checkpoint_url="mysql://x")):
            pass
    with pytest.raises(BackendError, match="checkpoint database unavailable"):
        with open_checkpointer(Settings(home=tmp_path, checkpoint_url="postgresql://nobody@127.0.0.1:1/none")):
            pass


def test_stats_are_the_same_on_every_database(db_url):
    from test_observability import check_known, fill

    from executor.stores.invocation_stats import invocation_stats

    db = Database(db_url)
    fill(db)
    check_known(invocation_stats(db))


def test_migrations_keep_rows_on_every_database(db_url):
    """Upgrade a database at the first revision, with rows in it, to the newest schema."""
    from alembic import command
    from alembic.config import Config

    from executor.stores.database import MIGRATIONS, SCHEMA_REVISION, schema_revision

    engine = create_engine(db_url)
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    with engine.begin() as conn:
        config.attributes["connection"] = conn
        command.upgrade(config, "0001")
        conn.execute(
            text(
                "INSERT INTO tool_invocation (session_id, tool_name, kb, query, arguments, blocked, latency_ms, "
                "retrieval_details, created_at) VALUES ('old', 'lookup_knowledge', 'sample', 'q', '{}', false, 1.0, "
                "'{\"l1_top_similarity\": 0.42}', '2026-11-01 10:00:00')"
            )
        )
    db = Database(db_url)
    assert schema_revision(db.engine) == SCHEMA_REVISION
    row = InvocationLog(db).rows(session_id="old")[0]
    assert (row.query, row.top_similarity, row.retrieval_details["l1_top_similarity"]) == ("q", 0.42, 0.42)
    engine.dispose()


def test_feedback_round_trip(db_url):
    from executor.stores.feedback import FeedbackStore, TurnRecord

    store = FeedbackStore(Database(db_url))
    turn = TurnRecord(
        session_id="s1",
        turn=1,
        query="数据库连接池怎么配置？",
        kb="sample",
        levels=[{"tool": "lookup_knowledge", "relevance_level": "PRECISE"}],
        documents=["infrastructure/mysql-connection-pool.md"],
        cited=["infrastructure/mysql-connection-pool.md"],
    )
    store.record(turn, "good")
    store.record(turn, "bad", "the pool size was wrong")  # replaces the first verdict
    (row,) = store.rows(kb="sample")
    assert (row.verdict, row.note, row.query, row.levels[0]["relevance_level"]) == (
        "bad",
        "the pool size was wrong",
        "数据库连接池怎么配置？",
        "PRECISE",
    )


def test_a_session_keeps_holding_a_page_renamed_by_a_reingest_on_every_database(db_url):
    """Hostile18 finding 11 at the store: a re-ingest that removes a page whose text stays under another name (its
    copy, or the page renamed) moves the sessions' record of it to that name, in the ingest's transaction; a session
    that held both names keeps one record. The statements differ per database (MySQL refuses a DELETE that reads
    its own table in a subquery)."""
    from executor.stores.catalog import Catalog, DocumentChange

    db = Database(db_url)
    catalog, memory = Catalog(db), ActionMemory(db)

    def page(key: str, text_hash: str) -> DocumentChange:
        return DocumentChange(key, f"title of {key}", key.split("/")[0], [], [], [], [], text_hash, 1)

    new = {"description": "", "extract_config": {}, "grading": None}
    catalog.apply_ingest(
        "k", [page("a/x.md", "h1"), page("b/x.md", "h1"), page("c/y.md", "h2")], [], "e", 4, "/", new=new
    )
    memory.record("one", "a", "PRECISE", [SentDocument("k", "a/x.md", "a", "title of a/x.md")])
    memory.record("both", "a", "PRECISE", [SentDocument("k", k, k[0], "t") for k in ("a/x.md", "b/x.md")])
    memory.record("other", "c", "PRECISE", [SentDocument("k", "c/y.md", "c", "title of c/y.md")])
    catalog.apply_ingest("k", [page("d/z.md", "h2")], ["a/x.md", "c/y.md"], "e", 4, "/")
    assert set(memory.sent_documents("one")) == {("k", "b/x.md")}
    assert memory.sent_documents("one")[("k", "b/x.md")].title == "title of b/x.md"
    assert set(memory.sent_documents("both")) == {("k", "b/x.md")}
    assert set(memory.sent_documents("other")) == {("k", "d/z.md")}  # renamed: the new name came in this ingest
    db.engine.dispose()


def test_a_session_keeps_holding_a_renamed_page_on_sqlite(tmp_path):
    test_a_session_keeps_holding_a_page_renamed_by_a_reingest_on_every_database(f"sqlite:///{tmp_path / 'e.db'}")
