"""executor stats, schema migrations that keep rows, and threshold calibration."""

import json
import sqlite3
from datetime import datetime, timedelta

import pytest

from agent.settings import Settings
from conftest import make_runtime, run_cli
from retrieval.calibration import Label, Row, choose, sweep, write_thresholds
from stores.database import SCHEMA_REVISION, Database, schema_revision
from stores.invocation_log import Invocation, InvocationLog
from stores.invocation_stats import invocation_stats

KNOWN_ROWS = [  # session, level, dedup reason, top similarity
    ("s1", "PRECISE", None, 0.62),
    ("s1", "DEDUPED", "doc_retrieved", 0.61),
    ("s1", "DEDUPED", "domain_retrieved", 0.44),
    ("s2", "HIGHLY_RELEVANT", None, 0.57),
    ("s2", "REFERENCE", None, 0.31),
    ("s3", None, None, 0.08),
]


def fill(db: Database) -> None:
    log = InvocationLog(db)
    for session, level, reason, sim in KNOWN_ROWS:
        log.write(Invocation(session_id=session, tool_name="lookup_knowledge", query="q", kb="sample",
                             relevance_level=level, dedup_reason=reason, blocked=reason == "domain_retrieved",
                             retrieval_details={"l1_top_similarity": sim}))
    log.write(Invocation(session_id="s3", tool_name="lookup_knowledge", query="q", error="the query is empty"))
    log.write(Invocation(session_id="s1", tool_name="graph_expand", query="q"))  # not a lookup


def check_known(stats: dict) -> None:
    assert stats["lookups"] == 7 and stats["errors"] == 1
    assert stats["relevance_levels"] == {"DEDUPED": 2, "HIGHLY_RELEVANT": 1, "NONE": 1, "PRECISE": 1, "REFERENCE": 1}
    assert stats["dedup_reasons"] == {"doc_retrieved": 1, "domain_retrieved": 1}
    assert stats["similarity_histogram"]["counts"] == [1, 0, 0, 1, 1, 1, 2, 0, 0, 0]  # 0.08 .31 .44 .57 .61 .62
    assert stats["lookups_per_session"] == {"s1": 3, "s2": 2, "s3": 2}
    assert stats["max_lookups_in_a_session"] == 3


def test_stats_on_a_log_with_known_rows(tmp_path):
    db = Database(f"sqlite:///{tmp_path / 'log.db'}")
    fill(db)
    check_known(invocation_stats(db))
    assert invocation_stats(db, session="s2")["relevance_levels"] == {"HIGHLY_RELEVANT": 1, "REFERENCE": 1}
    assert invocation_stats(db, since=datetime.now() + timedelta(days=1))["lookups"] == 0


def test_stats_command_json_and_plot(tmp_path):
    home = tmp_path / "home"
    fill(make_runtime(home).db)
    page = tmp_path / "stats.png"
    r = run_cli(home, "stats", "--json", "--plot", str(page))
    assert r.returncode == 0, r.stderr
    check_known(json.loads(r.stdout))
    assert page.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and page.stat().st_size > 10_000
    r = run_cli(home, "stats")
    assert "7 lookups in 3 sessions (1 errors)" in r.stdout
    r = run_cli(home, "stats", "--since", "last tuesday")
    assert r.returncode == 2 and "not a date" in r.stderr


# -- migrations --------------------------------------------------------------------
FIRST_RELEASE_DDL = """
CREATE TABLE knowledge_base (name VARCHAR(64) PRIMARY KEY, description TEXT NOT NULL, extract_config JSON NOT NULL,
  embedder VARCHAR(128), dim INTEGER, source_path TEXT, revision INTEGER NOT NULL, created_at DATETIME NOT NULL);
CREATE TABLE document (kb VARCHAR(64), doc_key VARCHAR(512), title TEXT NOT NULL, domain VARCHAR(64) NOT NULL,
  keywords JSON NOT NULL, error_codes JSON NOT NULL, entities JSON NOT NULL, relations JSON NOT NULL,
  content_hash VARCHAR(64) NOT NULL, chunk_count INTEGER NOT NULL, updated_at DATETIME NOT NULL,
  PRIMARY KEY (kb, doc_key));
CREATE TABLE session_document (session_id VARCHAR(128), kb VARCHAR(64), doc_key VARCHAR(512),
  domain VARCHAR(64) NOT NULL, title TEXT NOT NULL, created_at DATETIME NOT NULL, PRIMARY KEY (session_id, kb, doc_key));
CREATE TABLE session_domain (session_id VARCHAR(128), domain VARCHAR(64), last_level VARCHAR(20) NOT NULL,
  lookups INTEGER NOT NULL, updated_at DATETIME NOT NULL, PRIMARY KEY (session_id, domain));
CREATE TABLE tool_invocation (id INTEGER PRIMARY KEY AUTOINCREMENT, session_id VARCHAR(128) NOT NULL,
  tool_name VARCHAR(64) NOT NULL, kb VARCHAR(64), query TEXT NOT NULL, arguments JSON NOT NULL,
  relevance_level VARCHAR(20), dedup_reason VARCHAR(32), blocked BOOLEAN NOT NULL, error TEXT,
  latency_ms FLOAT NOT NULL, retrieval_details JSON, created_at DATETIME NOT NULL);
"""


def test_a_database_from_the_first_release_is_upgraded_with_its_rows(tmp_path):
    path = tmp_path / "old.db"
    with sqlite3.connect(path) as conn:  # what the first release's create_all made: no alembic_version
        conn.executescript(FIRST_RELEASE_DDL)
        conn.execute("INSERT INTO session_document VALUES ('s1', 'sample', 'a.md', 'ops', 'A', '2026-11-01 10:00:00')")
        for i, sim in enumerate([0.61, 0.33, None]):
            details = json.dumps({"l1_top_similarity": sim}) if sim is not None else None
            conn.execute("INSERT INTO tool_invocation (session_id, tool_name, kb, query, arguments, relevance_level, "
                         "blocked, latency_ms, retrieval_details, created_at) VALUES (?, 'lookup_knowledge', 'sample', "
                         "?, '{}', 'REFERENCE', 0, 1.0, ?, '2026-11-01 10:00:00')", (f"s{i}", f"q{i}", details))
    db = Database(f"sqlite:///{path}")
    assert schema_revision(db.engine) == SCHEMA_REVISION
    with sqlite3.connect(path) as conn:
        rows = conn.execute("SELECT query, top_similarity FROM tool_invocation ORDER BY id").fetchall()
        assert rows == [("q0", 0.61), ("q1", 0.33), ("q2", None)]  # kept, and backfilled from the JSON
        assert conn.execute("SELECT count(*) FROM session_document").fetchone() == (1,)
        assert conn.execute("SELECT count(*) FROM llm_extraction").fetchone() == (0,)
    from stores.memory import ActionMemory

    assert ActionMemory(db).by_domain("s1") == {"ops": ["a.md"]}
    Database(f"sqlite:///{path}")  # opening it again is a no-op


def test_schema_revision_is_the_newest_migration():
    from alembic.config import Config
    from alembic.script import ScriptDirectory

    from stores.database import MIGRATIONS

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    assert ScriptDirectory.from_config(config).get_current_head() == SCHEMA_REVISION


# -- calibration ---------------------------------------------------------------------
def test_sweep_and_the_choice_rule():
    labels = [Label(query="a", relevant=["x"]), Label(query="b", relevant=["y", "z"]), Label(query="c", relevant=[])]
    sims = [{"x": 0.8, "w": 0.5}, {"y": 0.6, "z": 0.35, "v": 0.3}, {"u": 0.45}]
    rows = {r.threshold: r for r in sweep(labels, sims, grid=[0.3, 0.35, 0.45, 0.5, 0.6, 0.8, 0.9])}
    assert (rows[0.6].precision, rows[0.6].recall) == (1.0, round(2 / 3, 4))
    assert (rows[0.35].precision, rows[0.35].recall) == (0.6, 1.0)
    assert rows[0.9].predicted == 0
    table = list(rows.values())
    assert choose(table, 0.9).threshold == 0.6  # highest recall with precision >= 0.9
    assert choose(table, 0.5).threshold == 0.35
    capped = choose(table, 0.7, ceiling=0.35)  # nothing at or below 0.35 reaches 0.7: best precision instead
    assert (capped.threshold, capped.met_rule) == (0.35, False)


def test_choice_falls_back_to_the_best_precision():
    rows = [Row(threshold=t, precision=p, recall=r, predicted=5, true_positives=1)
            for t, p, r in [(0.3, 0.2, 0.9), (0.5, 0.4, 0.5), (0.7, 0.3, 0.1)]]
    picked = choose(rows, 0.9)
    assert (picked.threshold, picked.met_rule) == (0.5, False)


def test_calibrate_command_writes_the_config(sample_rt, tmp_path):
    labels = tmp_path / "labels.yaml"
    labels.write_text(
        "- {query: 'What does ERR_TIMEOUT mean?', relevant: [troubleshooting/err-timeout.md]}\n"
        "- {query: '列表接口怎么分页', relevant: [api/pagination.md]}\n"
        "- {query: 'sourdough bread recipe', relevant: []}\n",
        encoding="utf-8",
    )
    config = tmp_path / "config.yaml"
    config.write_text("top_k: 12\n", encoding="utf-8")
    home = tmp_path / "cal-home"
    assert run_cli(home, "ingest").returncode == 0
    r = run_cli(home, "calibrate", "--labels", str(labels), "--write", "--json", EXECUTOR_CONFIG=str(config))
    assert r.returncode == 0, r.stderr
    result = json.loads(r.stdout)
    hr, ref = result["highly_relevant"]["threshold"], result["reference"]["threshold"]
    assert ref <= hr and result["rule"].startswith("HIGHLY_RELEVANT: highest recall with precision >= 0.9")
    import os

    os.environ["EXECUTOR_CONFIG"] = str(config)
    try:
        t = Settings().thresholds(result["embedder"])
    finally:
        del os.environ["EXECUTOR_CONFIG"]
    assert (t.highly_relevant_threshold, t.reference_threshold) == (hr, ref)
    assert "top_k: 12" in config.read_text()  # the rest of the file is kept
    run_cli(home, "graph", "stop")
    r = run_cli(home, "calibrate", "--labels", str(tmp_path / "nope.yaml"))
    assert r.returncode == 2 and "no such file" in r.stderr


def test_write_thresholds_refuses_a_broken_config(tmp_path):
    from agent.errors import InputError

    config = tmp_path / "config.yaml"
    config.write_text("- just a list\n")
    with pytest.raises(InputError, match="mapping"):
        write_thresholds(config, "use-multilingual-v3", 0.5, 0.3)
