"""Action memory and the invocation log on the production databases (Postgres, and MySQL as the source design used).

Each test gets its own schema/database and drops it afterwards; it skips, saying why, where no server answers.
"""

import uuid

import pytest
from sqlalchemy import create_engine, text

from stores.database import Database
from stores.invocation_log import Invocation, InvocationLog
from stores.memory import ActionMemory, SentDocument

SERVERS = {
    "postgres": "postgresql+psycopg://postgres@127.0.0.1:5432/test",
    "mysql": "mysql+pymysql://root@127.0.0.1:3306/test",
}


@pytest.fixture(params=sorted(SERVERS))
def db_url(request):
    admin_url = SERVERS[request.param]
    name = f"executor_t_{uuid.uuid4().hex[:8]}"
    try:
        admin = create_engine(admin_url, connect_args={"connect_timeout": 3})
        with admin.connect() as c:
            c.execute(text(f"CREATE SCHEMA {name}" if request.param == "postgres" else f"CREATE DATABASE {name}"))
            c.commit()
    except Exception as exc:  # no server on this machine
        pytest.skip(f"{request.param} at {admin_url} is not reachable: {exc.__class__.__name__}")
    if request.param == "postgres":
        url = f"{admin_url}?options=-csearch_path%3D{name}"
    else:
        url = admin_url.rsplit("/", 1)[0] + f"/{name}?charset=utf8mb4"
    yield url
    with admin.connect() as c:
        c.execute(text(f"DROP SCHEMA {name} CASCADE" if request.param == "postgres" else f"DROP DATABASE {name}"))
        c.commit()
    admin.dispose()


def test_memory_and_log_round_trip(db_url):
    db = Database(db_url)
    memory, log = ActionMemory(db), InvocationLog(db)
    memory.record("s1", "infrastructure", "HIGHLY_RELEVANT",
                  [SentDocument("sample", "infrastructure/mysql-connection-pool.md", "infrastructure", "MySQL 数据库连接池配置")])
    memory.record("s1", "troubleshooting", "REFERENCE",
                  [SentDocument("sample", "troubleshooting/slow-query.md", "troubleshooting", "慢查询分析与优化")])
    assert memory.domain_levels("s1") == {"infrastructure": "HIGHLY_RELEVANT", "troubleshooting": "REFERENCE"}
    assert ("sample", "infrastructure/mysql-connection-pool.md") in memory.sent_documents("s1")
    assert memory.sent_documents("other") == {}

    details = {"l0_titles": ["MySQL 数据库连接池配置"], "l1_scores": [0.383, 0.45], "l1_top_similarity": 0.8085}
    log.write(Invocation(session_id="s1", tool_name="lookup_knowledge", query="数据库连接池怎么配置？",
                         relevance_level="HIGHLY_RELEVANT", latency_ms=12.5, retrieval_details=details))
    (row,) = log.rows(session_id="s1")
    assert row.retrieval_details == details and row.query == "数据库连接池怎么配置？"

    assert memory.clear("s1") == 2
    assert memory.domain_levels("s1") == {}
    db.engine.dispose()
