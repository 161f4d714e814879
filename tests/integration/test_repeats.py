"""Repeat detection by meaning (executor/retrieval/repeats.py): the rule, its memory, its calibration, and the
multi-turn sessions of issue 12 on the real stores (Milvus Lite, USE, SQLite)."""

import uuid

import numpy as np
import pytest
import sqlalchemy as sa
import yaml
from conftest import run_cli
from langgraph.checkpoint.memory import InMemorySaver

from evals import REPO_ROOT
from evals.runner import run_suite
from evals.scenarios_model import Scenario
from executor.agent.planner import OfflinePlanner
from executor.agent.session import run_turn
from executor.core.errors import InputError
from executor.core.settings import RepeatThresholds, Settings
from executor.nodes.state import Context
from executor.retrieval.repeat_calibration import (
    BANDS,
    FOLDS,
    PairScore,
    calibrate_repeats,
    folds,
    load_repeat_labels,
    write_repeat_thresholds,
)
from executor.retrieval.repeats import DedupReason, find_repeat, repeat_hint
from executor.stores.database import Database
from executor.stores.memory import ActionMemory, EarlierLookup

LABELS = REPO_ROOT / "evals" / "labels" / "repeats.yaml"
T = RepeatThresholds(overlap_threshold=0.8, miss_overlap_threshold=0.6)


def unit(*xs) -> np.ndarray:
    v = np.array(xs, dtype=np.float32)
    return v / np.linalg.norm(v)


def earlier(query, vector, level="HIGHLY_RELEVANT", docs=("a.md",), batch="m1") -> EarlierLookup:
    return EarlierLookup(query=query, vector=vector, level=level, doc_keys=list(docs), batch=batch)


# -- the rule, on vectors with known cosines -------------------------------------------------
def test_a_close_query_whose_best_document_the_session_has_is_a_repeat():
    e = earlier("pool config", unit(1, 0, 0))
    close = unit(0.9, 0.3, 0)  # cosine 0.95
    repeat = find_repeat(close, "a.md", [e], T, batch="m2")
    assert repeat is not None and repeat.reason == DedupReason.QUERY_REPEATED and repeat.earlier is e
    assert repeat.similarity == pytest.approx(0.9487, abs=1e-3)
    # the same words but another best document: another need, it runs
    assert find_repeat(close, "b.md", [e], T, batch="m2") is None
    # finding nothing brings nothing new: the queries alone decide
    assert find_repeat(close, None, [e], T, batch="m2").reason == DedupReason.QUERY_REPEATED


def test_a_distant_query_is_not_a_repeat_even_on_the_same_document():
    far = unit(0.5, 0.85, 0)  # cosine ~0.5
    assert find_repeat(far, "a.md", [earlier("pool config", unit(1, 0, 0))], T, batch="m2") is None


def test_siblings_in_one_message_are_never_repeats_of_each_other():
    e = earlier("pool config", unit(1, 0, 0), batch="m1")
    assert find_repeat(unit(1, 0, 0), "a.md", [e], T, batch="m1") is None
    assert find_repeat(unit(1, 0, 0), "a.md", [e], T, batch="m2") is not None


def test_a_rephrased_miss_is_blocked_at_its_own_threshold():
    miss = earlier("vacation days", unit(1, 0, 0), level=None, docs=())
    cos_07 = unit(0.7, 0.714, 0)
    repeat = find_repeat(cos_07, "some-off-topic.md", [miss], T, batch="m2")
    assert repeat.reason == DedupReason.NOT_FOUND_REPEATED
    assert find_repeat(unit(0.5, 0.866, 0), None, [miss], T, batch="m2") is None  # cosine 0.5 < 0.6


def test_after_reference_a_named_missing_dimension_is_a_supplement_not_a_repeat():
    ref = earlier("service restarting", unit(1, 0, 0), level="REFERENCE")
    assert find_repeat(unit(1, 0, 0), "a.md", [ref], T, "m2", missing_dimension="log analysis") is None
    assert find_repeat(unit(1, 0, 0), "a.md", [ref], T, "m2").reason == DedupReason.QUERY_REPEATED
    # a missing dimension does not make a miss findable
    miss = earlier("vacation", unit(1, 0, 0), level=None, docs=())
    assert find_repeat(unit(1, 0, 0), None, [miss], T, "m2", missing_dimension="PTO").reason == "not_found_repeated"


def test_the_most_similar_earlier_lookup_is_the_one_reported_and_other_embedders_are_skipped():
    a, b = earlier("a", unit(1, 0.2, 0)), earlier("b", unit(1, 0, 0))
    other = EarlierLookup(
        query="other embedder", vector=np.ones(4, dtype=np.float32) / 2, level="PRECISE", doc_keys=["a.md"]
    )
    assert find_repeat(unit(1, 0, 0), "a.md", [a, other, b], T, batch="m2").earlier is b


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_hints_say_what_actually_happened(lang):
    found = find_repeat(unit(1, 0, 0), "a.md", [earlier("连接池配置", unit(1, 0, 0), level="PRECISE")], T, "m2")
    ref = find_repeat(unit(1, 0, 0), "a.md", [earlier("系统变慢", unit(1, 0, 0), level="REFERENCE")], T, "m2")
    miss = find_repeat(unit(1, 0, 0), None, [earlier("假期", unit(1, 0, 0), level=None, docs=())], T, "m2")
    for repeat in (found, ref, miss):
        text = repeat_hint(repeat, lang)
        assert repeat.earlier.query in text
        assert "足够相关" not in text and "good enough" not in text and "relevant enough" not in text
    assert "PRECISE" in repeat_hint(found, lang) and "missing_dimension" not in repeat_hint(found, lang)
    assert "REFERENCE" in repeat_hint(ref, lang) and "missing_dimension" in repeat_hint(ref, lang)
    assert ("知识库中没有" if lang == "zh" else "has nothing") in repeat_hint(miss, lang)


# -- memory: in the app database, so it holds across processes and checkpointers ----------------------
def test_a_lookup_is_remembered_in_the_database_with_the_embedding_it_computed(sample_rt, monkeypatch):
    calls = []
    real = sample_rt.embedder.embed_query
    monkeypatch.setattr(sample_rt.embedder, "embed_query", lambda text: calls.append(text) or real(text))
    s = f"t-{uuid.uuid4().hex[:8]}"
    sample_rt.lookup_service.lookup("Redis 缓存的过期时间怎么设置？", s, batch="m1")
    sample_rt.lookup_service.lookup("Redis 缓存 TTL 设置多少合适？", s, batch="m2")
    assert len(calls) == 2  # one embedding per lookup, the repeat rule included

    fresh = ActionMemory(Database(sample_rt.settings.db_url))  # what another process would read
    rows = fresh.lookups(s)
    assert rows[0].query == "Redis 缓存的过期时间怎么设置？" and rows[0].batch == "m1"
    assert rows[0].doc_keys[0] == "infrastructure/redis-cache-expiry.md" and rows[0].level in (
        "PRECISE",
        "HIGHLY_RELEVANT",
    )
    assert np.allclose(rows[0].vector, real("Redis 缓存的过期时间怎么设置？"), atol=1e-6)
    fresh.clear(s)
    assert fresh.lookups(s) == []


def test_a_0002_database_gains_the_session_lookup_table(tmp_path):
    from alembic import command
    from alembic.config import Config
    from alembic.script import ScriptDirectory

    from executor.stores.database import MIGRATIONS, schema_revision

    url = f"sqlite:///{tmp_path / 'old.db'}"
    engine = sa.create_engine(url)
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    with engine.begin() as conn:
        config.attributes["connection"] = conn
        command.upgrade(config, "0002")
    assert "session_lookup" not in sa.inspect(engine).get_table_names()
    db = Database(url)
    assert "session_lookup" in sa.inspect(db.engine).get_table_names()
    assert schema_revision(db.engine) == ScriptDirectory.from_config(config).get_current_head()


# -- the sessions, through the real graph ------------------------------------------------
def scenario(sid: str, *turns) -> Scenario:
    return Scenario.model_validate(
        {
            "id": sid,
            "lang": "zh",
            "turns": [
                {"question": q, "proposals": [{"lookup_knowledge": {"query": p}} for p in ps]} for q, ps in turns
            ],
        }
    )


def test_blue_green_after_a_comfyui_deployment_runs(sample_rt):
    [r] = run_suite(
        sample_rt,
        [
            scenario(
                "bg",
                ("ComfyUI 怎么部署？", ["ComfyUI 怎么部署？"]),
                ("How does blue-green deployment work?", ["How does blue-green deployment work?"]),
            )
        ],
        guards=True,
        progress=False,
    )
    second = [t for t in r.trace if t["turn"] == 2]
    assert r.executed_by_turn == [1, 1]
    assert second[0]["relevance_level"] == "PRECISE" and second[0]["sent"][0] == "deployment/blue-green-deploy.md"
    assert "deployment/blue-green-deploy.md" in r.citations


def test_redis_expiry_after_a_mysql_pool_question_runs(sample_rt):
    [r] = run_suite(
        sample_rt,
        [
            scenario(
                "redis",
                ("MySQL 连接池怎么配置？", ["MySQL 连接池怎么配置？"]),
                ("Redis 缓存的过期时间怎么设置？", ["Redis 缓存的过期时间怎么设置？"]),
            )
        ],
        guards=True,
        progress=False,
    )
    assert r.executed_by_turn == [1, 1] and not r.blocked_by_reason
    assert "infrastructure/redis-cache-expiry.md" in r.citations


def test_the_two_part_zh_question_keeps_both_parts(sample_rt):
    """The offline planner splits it into two lookups in one message; they land in one domain and both run."""
    app = sample_rt.app(OfflinePlanner(), "offline", checkpointer=InMemorySaver())
    result = run_turn(
        app,
        "Redis 缓存过期怎么配置？另外 MySQL 主从复制延迟怎么处理？",
        f"t-{uuid.uuid4().hex[:8]}",
        Context(),
        "offline",
    )
    assert [t["blocked"] for t in result.trace] == [False, False]
    assert result.trace[0]["domain"] == result.trace[1]["domain"] == "infrastructure"
    assert "infrastructure/redis-cache-expiry.md" in result.trace[0]["sent"]
    assert "infrastructure/mysql-replication.md" in result.trace[1]["sent"]


def test_a_miss_then_three_rephrasings_runs_one_search(sample_rt):
    [r] = run_suite(
        sample_rt,
        [
            scenario(
                "miss",
                ("How many vacation days do new employees get?", ["vacation days new employees"]),
                ("And the holiday allowance?", ["holiday allowance", "annual leave", "vacation days"]),
            )
        ],
        guards=True,
        progress=False,
    )
    assert r.executed_lookups == 1 and r.executed_by_turn == [1, 0]
    assert r.blocked_by_reason == {"not_found_repeated": 3}
    assert r.citations == []
    assert r.trace[0]["relevance_level"] == "NONE"
    # every block is logged with its reason, like the search that ran
    rows = [
        row
        for row in sample_rt.log.rows(tool_name="lookup_knowledge")
        if row.query in ("holiday allowance", "annual leave", "vacation days")
    ][-3:]
    assert [row.dedup_reason for row in rows] == ["not_found_repeated"] * 3 and all(row.blocked for row in rows)


def test_a_miss_followed_by_a_real_question_runs_it(sample_rt):
    [r] = run_suite(
        sample_rt,
        [
            scenario(
                "real",
                ("What is a good recipe for sourdough bread?", ["sourdough bread recipe"]),
                ("How are webhook signatures verified?", ["How are webhook signatures verified?"]),
            )
        ],
        guards=True,
        progress=False,
    )
    assert r.executed_by_turn == [1, 1] and "api/webhooks.md" in r.citations


def test_a_rephrasing_in_a_later_turn_is_answered_from_the_session(sample_rt):
    [r] = run_suite(
        sample_rt,
        [
            scenario(
                "again",
                ("How do I roll back a Helm release?", ["helm rollback"]),
                ("Sorry, how do I roll back a helm release again?", ["roll back a helm release"]),
            )
        ],
        guards=True,
        progress=False,
    )
    assert r.executed_by_turn == [1, 0] and r.duplicate_docs_sent == 0
    assert "deployment/helm-charts.md" in r.citations  # quoted from what turn 1 sent


# -- calibration -----------------------------------------------------------------------------------
def test_the_label_set_has_the_promised_shape():
    labels = load_repeat_labels(LABELS)
    assert len(labels) >= 120
    cjk = [lb for lb in labels if any("\u4e00" <= c <= "\u9fff" for c in lb.earlier + lb.later)]
    assert 0.3 < len(cjk) / len(labels) < 0.7
    assert {lb.label for lb in labels} == {"repeat", "distinct"}
    assert len({(lb.earlier, lb.later) for lb in labels}) == len(labels)


def test_folds_keep_pairs_of_one_earlier_query_together():
    scores = [
        PairScore(
            earlier=f"q{i % 7}",
            later=f"l{i}",
            label="repeat",
            similarity=0.5,
            earlier_found=True,
            same_documents=True,
            all_documents_sent=False,
        )
        for i in range(40)
    ]
    groups = folds(scores)
    assert len(groups) == FOLDS and sorted(i for g in groups for i in g) == list(range(40))
    for g in groups:
        others = {scores[i].earlier for h in groups if h is not g for i in h}
        assert not {scores[i].earlier for i in g} & others


def test_calibration_on_the_labels_is_held_out_and_written_per_embedder(sample_rt, tmp_path):
    result = calibrate_repeats(sample_rt, [("sample", load_repeat_labels(LABELS))])
    assert result.pairs >= 120 and result.embedder == "use-multilingual-v3"
    # the fitted thresholds meet the rule on the pairs they were fitted on
    assert result.overlap.met_rule and result.overlap.precision >= 0.95
    assert result.miss_overlap.met_rule and result.miss_overlap.precision >= 0.95
    # the held-out figures are counted once per pair, over folds fitted on the other pairs
    h = result.held_out
    assert h.true_positives + h.false_negatives == result.repeats and len(h.fold_thresholds) == FOLDS
    assert h.precision >= 0.8 and h.recall > 0.05
    # with the session's pages (best page held, nothing new as relevant), most rephrasings are caught: the rule
    # that runs in a session, reported at each width of "about as relevant"
    assert h.with_session_pages["recall"] > max(h.recall, h.with_doc_retrieved["recall"]) + 0.1
    assert [b["bands"] for b in h.by_band] == list(BANDS)
    assert all(a["recall"] >= b["recall"] for a, b in zip(h.by_band, h.by_band[1:]))  # wider: fewer blocked
    # the shipped defaults are the calibrated ones
    shipped = Settings().repeat_thresholds("use-multilingual-v3")
    assert (shipped.overlap_threshold, shipped.miss_overlap_threshold) == (
        result.overlap.threshold,
        result.miss_overlap.threshold,
    )

    config = tmp_path / "config.yaml"
    config.write_text("retrieval:\n  normalization:\n    max-l2-distance: 2.0\n", encoding="utf-8")
    write_repeat_thresholds(config, result.embedder, 0.7, 0.45)
    settings = Settings(retrieval=yaml.safe_load(config.read_text())["retrieval"])
    assert settings.repeat_thresholds("use-multilingual-v3") == RepeatThresholds(
        overlap_threshold=0.7, miss_overlap_threshold=0.45
    )
    assert settings.thresholds("use-multilingual-v3").max_l2_distance == 2.0  # the rest of the file is kept


def test_bad_label_files_are_one_line_errors(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("- {earlier: a, later: b, label: maybe}\n", encoding="utf-8")
    with pytest.raises(InputError, match="label"):
        load_repeat_labels(bad)
    r = run_cli(tmp_path / "home", "calibrate-repeats", "--labels", str(tmp_path / "missing.yaml"))
    assert r.returncode == 2 and r.stderr.strip().count("\n") == 0 and "no such file" in r.stderr


def test_lookup_memory_round_trips_on_postgres_and_mysql(db_url):
    """The repeat rule's memory on the production databases (skips where no server answers)."""
    memory = ActionMemory(Database(db_url))
    vector = unit(*range(1, 513))
    memory.record_lookup(
        "s1",
        EarlierLookup(
            query="数据库连接池怎么配置？",
            vector=vector,
            level="PRECISE",
            domain="infrastructure",
            doc_keys=["infrastructure/mysql-connection-pool.md"],
            batch="run-1",
            embedder="use-multilingual-v3",
        ),
    )
    memory.record_lookup("s1", EarlierLookup(query="vacation days", vector=vector, level=None, embedder="other"))
    [row] = memory.lookups("s1", kb="sample", embedder="use-multilingual-v3")
    assert row.query == "数据库连接池怎么配置？" and row.doc_keys == ["infrastructure/mysql-connection-pool.md"]
    assert np.array_equal(row.vector, vector) and row.batch == "run-1"
    assert [e.level for e in memory.lookups("s1")] == ["PRECISE", None]
    memory.clear("s1")
    assert memory.lookups("s1") == []
