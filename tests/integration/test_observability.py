"""executor stats, schema migrations that keep rows, and threshold calibration."""

import json
import sqlite3
from datetime import datetime, timedelta

import pytest
from conftest import REPO, make_runtime, run_cli

from executor.core.settings import Ranker, Settings, Thresholds
from executor.retrieval.calibration import Label, choose_thresholds, folds_of, write_thresholds
from executor.retrieval.ranking import FEATURES
from executor.stores.database import SCHEMA_REVISION, Database, schema_revision
from executor.stores.invocation_log import Invocation, InvocationLog
from executor.stores.invocation_stats import invocation_stats

KNOWN_ROWS = [  # session, level, dedup reason, top similarity
    ("s1", "PRECISE", None, 0.62),
    ("s1", "DEDUPED", "doc_retrieved", 0.61),
    ("s1", "DEDUPED", "query_repeated", 0.44),
    ("s2", "HIGHLY_RELEVANT", None, 0.57),
    ("s2", "REFERENCE", None, 0.31),
    ("s3", None, None, 0.08),
]


def fill(db: Database) -> None:
    log = InvocationLog(db)
    for session, level, reason, sim in KNOWN_ROWS:
        log.write(
            Invocation(
                session_id=session,
                tool_name="lookup_knowledge",
                query="q",
                kb="sample",
                relevance_level=level,
                dedup_reason=reason,
                blocked=reason == "query_repeated",
                retrieval_details={"l1_top_similarity": sim},
            )
        )
    log.write(Invocation(session_id="s3", tool_name="lookup_knowledge", query="q", error="the query is empty"))
    log.write(Invocation(session_id="s1", tool_name="graph_expand", query="q"))  # not a lookup


def check_known(stats: dict) -> None:
    assert stats["lookups"] == 7 and stats["errors"] == 1
    assert stats["relevance_levels"] == {"DEDUPED": 2, "HIGHLY_RELEVANT": 1, "NONE": 1, "PRECISE": 1, "REFERENCE": 1}
    assert stats["dedup_reasons"] == {"doc_retrieved": 1, "query_repeated": 1}
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
    assert "7 lookups in 3 sessions (1 error; real use" in r.stdout
    r = run_cli(home, "stats", "--since", "last tuesday")
    assert r.returncode == 2 and "not a date" in r.stderr


def test_stats_report_the_traversal_cache_hit_rate(tmp_path):
    home = tmp_path / "home"
    log = InvocationLog(make_runtime(home).db)
    for tool, tally in [
        ("graph_expand", {"hits": 0, "misses": 3}),
        ("graph_expand", {"hits": 3, "misses": 0}),
        ("query_knowledge_graph", {"hits": 2, "misses": 2}),
        ("navigate_graph", {"hits": 1, "misses": 1}),
    ]:
        log.write(Invocation(session_id="s1", tool_name=tool, query="q", retrieval_details={"traversal_cache": tally}))
    r = run_cli(home, "stats", "--json")
    assert json.loads(r.stdout)["traversal_cache"] == {"hits": 6, "misses": 6, "hit_rate": 0.5}
    assert "graph traversal cache: 6 hits, 6 misses, hit rate 50%" in run_cli(home, "stats").stdout
    empty = run_cli(tmp_path / "empty", "stats", "--json")
    assert json.loads(empty.stdout)["traversal_cache"] == {"hits": 0, "misses": 0, "hit_rate": None}


# -- migrations --------------------------------------------------------------------
FIRST_RELEASE_DDL = """
CREATE TABLE knowledge_base (name VARCHAR(64) PRIMARY KEY, description TEXT NOT NULL, extract_config JSON NOT NULL,
  embedder VARCHAR(128), dim INTEGER, source_path TEXT, revision INTEGER NOT NULL, created_at DATETIME NOT NULL);
CREATE TABLE document (kb VARCHAR(64), doc_key VARCHAR(512), title TEXT NOT NULL, domain VARCHAR(64) NOT NULL,
  keywords JSON NOT NULL, error_codes JSON NOT NULL, entities JSON NOT NULL, relations JSON NOT NULL,
  content_hash VARCHAR(64) NOT NULL, chunk_count INTEGER NOT NULL, updated_at DATETIME NOT NULL,
  PRIMARY KEY (kb, doc_key));
CREATE TABLE session_document (session_id VARCHAR(128), kb VARCHAR(64), doc_key VARCHAR(512),
  domain VARCHAR(64) NOT NULL, title TEXT NOT NULL, created_at DATETIME NOT NULL,
  PRIMARY KEY (session_id, kb, doc_key));
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
            conn.execute(
                "INSERT INTO tool_invocation (session_id, tool_name, kb, query, arguments, relevance_level, "
                "blocked, latency_ms, retrieval_details, created_at) VALUES (?, 'lookup_knowledge', 'sample', "
                "?, '{}', 'REFERENCE', 0, 1.0, ?, '2026-11-01 10:00:00')",
                (f"s{i}", f"q{i}", details),
            )
    db = Database(f"sqlite:///{path}")
    assert schema_revision(db.engine) == SCHEMA_REVISION
    with sqlite3.connect(path) as conn:
        rows = conn.execute("SELECT query, top_similarity FROM tool_invocation ORDER BY id").fetchall()
        assert rows == [("q0", 0.61), ("q1", 0.33), ("q2", None)]  # kept, and backfilled from the JSON
        assert conn.execute("SELECT count(*) FROM session_document").fetchone() == (1,)
        assert conn.execute("SELECT count(*) FROM llm_extraction").fetchone() == (0,)
    from executor.stores.memory import ActionMemory

    assert ActionMemory(db).by_domain("s1") == {"ops": ["a.md"]}
    Database(f"sqlite:///{path}")  # opening it again is a no-op


def test_the_source_column_is_backfilled_from_session_prefixes_and_eval_rows_leave_real_use(tmp_path):
    path = tmp_path / "old.db"
    with sqlite3.connect(path) as conn:
        conn.executescript(FIRST_RELEASE_DDL)
        for session in ("eval-storm-1-abc123", "chat-1a2b", "ask-9f", "cli-77", "kg-5", "studio-thread"):
            conn.execute(
                "INSERT INTO tool_invocation (session_id, tool_name, kb, query, arguments, relevance_level, "
                "blocked, latency_ms, created_at) VALUES (?, 'lookup_knowledge', 'sample', 'q', '{}', "
                "'REFERENCE', 0, 1.0, '2026-11-01 10:00:00')",
                (session,),
            )
    db = Database(f"sqlite:///{path}")
    with sqlite3.connect(path) as conn:
        sources = dict(conn.execute("SELECT session_id, source FROM tool_invocation").fetchall())
    assert sources == {
        "eval-storm-1-abc123": "eval",
        "chat-1a2b": "chat",
        "ask-9f": "ask",
        "cli-77": "lookup",
        "kg-5": "lookup",
        "studio-thread": None,
    }
    real = invocation_stats(db)
    assert real["lookups"] == 5 and real["by_source"] == {"ask": 1, "chat": 1, "lookup": 2, "unknown": 1}
    assert invocation_stats(db, sources=["eval"])["lookups"] == 1
    assert invocation_stats(db, sources=["unknown"])["lookups"] == 1
    InvocationLog(db, "calibrate").write(Invocation(session_id="c1", tool_name="lookup_knowledge", query="q"))
    assert invocation_stats(db)["lookups"] == 5 and invocation_stats(db, sources=["all"])["lookups"] == 7


def test_schema_revision_is_the_newest_migration():
    from alembic.config import Config
    from alembic.script import ScriptDirectory

    from executor.stores.database import MIGRATIONS

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    assert ScriptDirectory.from_config(config).get_current_head() == SCHEMA_REVISION


# -- calibration ---------------------------------------------------------------------
def _observed(kb: str, rows):
    """Labelled questions whose candidates score exactly as given: [(relevant, [(doc, score), ...]), ...]."""
    import math

    from executor.retrieval.calibration import Observed
    from executor.retrieval.grading import Graded
    from executor.retrieval.ranking import Candidate
    from executor.retrieval.vocabulary import QueryTerms

    out = []
    for n, (relevant, scored) in enumerate(rows):
        cands = []
        for doc, score in scored:
            c = Candidate(doc, doc, "d")
            c.features = {"similarity": math.log(score / (1 - score))}  # logit: the unit ranker gives back `score`
            cands.append(c)
        out.append(Observed(Label(query=f"q{n}", relevant=relevant), kb, Graded(cands, QueryTerms({}, 1.0, []))))
    return out


UNIT = Ranker(bias=0.0, weights={"similarity": 1.0})


def test_threshold_rules_on_a_hand_built_case():
    observed = _observed(
        "k",
        [
            (["a"], [("a", 0.9), ("x", 0.2)]),
            (["b"], [("b", 0.7)]),
            (["c"], [("x", 0.605), ("c", 0.5)]),  # wrong document first at 0.605
            (["d"], [("d", 0.4)]),
            ([], [("x", 0.305)]),  # off-topic, best at 0.305
            ([], [("y", 0.1)]),
        ],
    )
    hr, hr_other, ref, supplement = choose_thresholds(observed, UNIT, 2.0)
    assert hr_other is None  # no best page in another language than its question
    # best documents at >= t: 0.9 right, 0.7 right, 0.605 wrong: 2/3 at 0.60, 1.0 from 0.61 on
    assert hr == 0.61
    # off-topic bests 0.305 and 0.1: at most 5% may get a document, so both must fall below REFERENCE
    assert ref == 0.31
    # documents after the first of an answered question: x 0.2 wrong, c 0.5 right: 1 in 2 at any cut
    assert supplement == 0.02


def test_the_supplements_bar_keeps_40_percent_of_the_documents_sent_after_the_first_relevant():
    observed = _observed(
        "k",
        [
            (["a"], [("a", 0.9), ("x", 0.2)]),
            (["b"], [("b", 0.7), ("w", 0.15), ("z", 0.1)]),
            (["c", "c2"], [("c", 0.6), ("c2", 0.5)]),
            ([], [("x", 0.305)]),
        ],
    )
    hr, hr_other, ref, supplement = choose_thresholds(observed, UNIT, 2.0)
    assert hr_other is None  # no best page in another language than its question
    assert ref == 0.31
    # after the first: 0.5 right, 0.2, 0.15, 0.1 wrong: 1/4 from 0.02, 1/3 from 0.11, 1/2 from 0.16 on
    assert supplement == 0.16
    # an off-topic question's best (0.305) is never HIGHLY_RELEVANT, whatever the precision says
    assert hr > 0.305


def test_without_off_topic_labels_reference_keeps_documents_relevant():
    observed = _observed("k", [(["a"], [("a", 0.9), ("x", 0.5)]), (["b"], [("b", 0.8), ("y", 0.35)])])
    hr, hr_other, ref, supplement = choose_thresholds(observed, UNIT, 2.0)
    assert hr_other is None  # no best page in another language than its question
    assert hr == 0.02  # every best document is relevant
    assert ref == 0.02  # 2 of 4 sent documents relevant at any cut >= 0.4 of them: the lowest threshold
    assert supplement == ref  # no document after the first is relevant: the bar stays at REFERENCE


def test_folds_spread_every_label_file():
    observed = _observed("a", [(["a"], [("a", 0.9)])] * 10) + _observed("b", [(["b"], [("b", 0.9)])] * 5)
    folds = folds_of(observed, 5)
    assert sorted(folds[:10]) == [0, 0, 1, 1, 2, 2, 3, 3, 4, 4]
    assert sorted(folds[10:]) == [0, 1, 2, 3, 4]


def test_calibrate_command_writes_the_model_and_reports_held_out_figures(sample_rt, tmp_path):
    import yaml as _yaml

    rows = _yaml.safe_load((REPO / "evals" / "labels" / "sample.yaml").read_text(encoding="utf-8"))
    labels = tmp_path / "labels.yaml"
    labels.write_text(
        _yaml.safe_dump(rows[:24] + [r for r in rows if not r["relevant"]], allow_unicode=True), encoding="utf-8"
    )
    config = tmp_path / "config.yaml"
    config.write_text("top_k: 12\n", encoding="utf-8")
    home = tmp_path / "cal-home"
    assert run_cli(home, "ingest").returncode == 0
    # every label on one KB would fit that KB's own model; --shared fits the embedder's preset in config.yaml
    r = run_cli(
        home, "calibrate", "--labels", str(labels), "--shared", "--write", "--json", EXECUTOR_CONFIG=str(config)
    )
    assert r.returncode == 0, r.stderr
    result = json.loads(r.stdout)
    hr, ref = result["highly_relevant_threshold"], result["reference_threshold"]
    assert ref <= hr
    assert result["held_out"]["overall"]["questions"] == 30 and result["folds"] == 5
    assert set(result["ranker"]["weights"]) == set(FEATURES)
    import os

    os.environ["EXECUTOR_CONFIG"] = str(config)
    try:
        t = Settings().thresholds(result["embedder"])
    finally:
        del os.environ["EXECUTOR_CONFIG"]
    assert (t.highly_relevant_threshold, t.reference_threshold) == (hr, ref)
    assert t.supplement == result["supplement_threshold"]
    assert t.ranker.weights == result["ranker"]["weights"]  # the written model is the one in force
    assert "top_k: 12" in config.read_text()  # the rest of the file is kept
    run_cli(home, "graph", "stop")
    r = run_cli(home, "calibrate", "--labels", str(tmp_path / "nope.yaml"))
    assert r.returncode == 2 and "no such file" in r.stderr


def test_write_thresholds_refuses_a_broken_config(tmp_path):
    from executor.core.errors import InputError

    config = tmp_path / "config.yaml"
    config.write_text("- just a list\n")
    with pytest.raises(InputError, match="mapping"):
        write_thresholds(
            config, "use-multilingual-v3", Thresholds(highly_relevant_threshold=0.5, reference_threshold=0.3)
        )
