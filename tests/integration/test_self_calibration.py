"""A KB nobody labelled grades itself: `executor ingest` fits its own model on questions generated from its pages
and the bundled off-topic pool (executor/retrieval/self_calibration.py), stores it, `kb show` says so, and its lookups
use it: a Chinese paraphrase of an English page's subject is found, a near-domain off-topic question finds nothing, a
unique error code is PRECISE. Real Milvus Lite and the shipped embedder, through the command line."""

import json

import pytest
from conftest import run_cli
from doc_fixtures import write_kb
from sqlalchemy import create_engine, text

PAGES = {
    "db/postgres-replication-lag.md": (
        "# Postgres replication lag\n\nWhen a standby falls behind the primary, compare `pg_last_wal_replay_lsn()` "
        "on the standby with `pg_current_wal_lsn()` on the primary. Long transactions on the primary and a slow "
        "disk on the standby are the usual causes.\n\n## Reducing the lag\n\nMove heavy reports to a separate "
        "replica, raise `max_wal_senders` only when slots are exhausted, and check the network between the two "
        "hosts.\n"
    ),
    "db/backup-restore.md": (
        "# Backups and restore\n\nA nightly base backup is taken with pg_basebackup and WAL is archived every "
        "five minutes. To restore, unpack the base backup and replay WAL up to the target time.\n\n## Testing "
        "restores\n\nEvery month a restore is rehearsed on a scratch host; a backup nobody restored is not a "
        "backup.\n"
    ),
    "queue/worker-queue-full.md": (
        "---\ntitle: Worker queue full\nkeywords: [ERR_QUEUE_FULL, queue full, backpressure]\n---\n# Worker "
        "queue full\n\nThe API answers `ERR_QUEUE_FULL` when the job queue holds more than 10000 waiting jobs. "
        "Scale the workers out, or shed load at the gateway until the backlog drains.\n\n## Why jobs pile up\n\n"
        "A slow downstream service makes every worker wait; look at the workers' p99 latency first.\n"
    ),
    "queue/retries.md": (
        "# Retry policy\n\nFailed jobs are retried three times with exponential backoff starting at 2 seconds. "
        "After the last attempt the job moves to the dead-letter list for a person to look at.\n\n## Idempotent "
        "jobs\n\nA job that may run twice must check whether its work is already done.\n"
    ),
    "ops/deploy.md": (
        "# Deploying a release\n\nReleases go out through the pipeline: build, test, canary on 5% of traffic for "
        "30 minutes, then everyone. Watch the error rate dashboard during the canary.\n\n## Rolling back\n\n"
        "Run the rollback job with the previous version number; it takes about two minutes.\n"
    ),
    "ops/on-call.md": (
        "# On-call handbook\n\nThe on-call engineer acknowledges a page within 5 minutes, opens an incident "
        "channel and posts updates every 30 minutes until the incident is resolved.\n\n## Handover\n\nAt the "
        "end of a shift, write down open incidents and anything that may page overnight.\n"
    ),
    "ops/disk-space.md": (
        "# Running out of disk space\n\nWhen a host's disk is over 90% full, find the largest directories with "
        "du, rotate or delete old logs, and clean the container image cache.\n\n## Prevention\n\nAlert at 80% "
        "and keep logs on a separate volume.\n"
    ),
    "security/tokens.md": (
        "# API tokens\n\nTokens are issued per service, expire after 90 days and are stored in the secrets "
        "vault, never in the repository. Revoke a leaked token at once and rotate it.\n"
    ),
}


def ingest_team(tmp_path_factory, pages: dict[str, str]):
    """A fresh home with `pages` ingested as the KB `team` through the command line; its ingest report (JSON) is
    kept as `report.json` beside the home's data."""
    root = write_kb(tmp_path_factory.mktemp("docs"), pages)
    home = tmp_path_factory.mktemp("home")
    r = run_cli(home, "ingest", str(root), "--kb", "team", "--json")
    assert r.returncode == 0, r.stderr
    home.joinpath("report.json").write_text(r.stdout)
    return home


def team_lookup(home, query: str) -> dict:
    r = run_cli(home, "lookup", query, "--kb", "team", "--no-graph", "--json")
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


@pytest.fixture(scope="module")
def home(tmp_path_factory):
    return ingest_team(tmp_path_factory, PAGES)


def test_ingest_self_calibrates_stores_the_model_and_kb_show_says_so(home):
    report = json.loads(home.joinpath("report.json").read_text())
    calibration = report["calibration"]
    assert calibration["stored"] and calibration["generated"] >= 10 and calibration["off_topic"] >= 10
    with create_engine(f"sqlite:///{home / 'executor.db'}").connect() as conn:
        raw = conn.execute(text("select grading_model from knowledge_base where name = 'team'")).scalar()
    model = json.loads(raw)
    assert model["calibrated_by"] == "self"
    assert model["thresholds"]["answerability"] is not None
    shown = run_cli(home, "kb", "show", "team", COLUMNS="300")
    assert shown.returncode == 0, shown.stderr
    flat = " ".join(shown.stdout.split())
    assert (
        f"self-calibrated: {calibration['generated']} generated questions, {calibration['off_topic']} off-topic"
    ) in flat
    assert json.loads(run_cli(home, "kb", "show", "team", "--json").stdout)["grading_model"]["calibrated_by"] == "self"


def test_a_chinese_paraphrase_of_an_english_pages_subject_is_found(home):
    result = team_lookup(home, "主库和从库之间复制延迟很高怎么办？")
    assert result["relevance_level"] != "NONE", result["completeness_hint"]
    assert result["primary"][0]["doc_key"] == "db/postgres-replication-lag.md"


def test_a_near_domain_off_topic_question_finds_nothing(home):
    result = team_lookup(home, "How do I add a shard to a MongoDB cluster without downtime?")
    assert result["relevance_level"] == "NONE"
    assert result["primary"] == []


def test_a_one_word_lookup_a_page_spells_out_is_found_and_one_no_page_uses_is_not(home):
    for query, page in (("rollback", "ops/deploy.md"), ("handover", "ops/on-call.md"), ("backoff", "queue/retries.md")):
        result = team_lookup(home, query)
        assert result["relevance_level"] != "NONE", (query, result["completeness_hint"])
        assert result["primary"][0]["doc_key"] == page, query
    assert team_lookup(home, "lasagna")["relevance_level"] == "NONE"


def test_a_unique_error_code_is_precise_on_its_page(home):
    for query in ("ERR_QUEUE_FULL", "ERR_QUEUE_FULL 怎么排查"):
        result = team_lookup(home, query)
        assert result["relevance_level"] == "PRECISE", query
        assert result["primary"][0]["doc_key"] == "queue/worker-queue-full.md", query


# A product every page names: BM25 on a Chinese question's one Latin word favours the page richest in it
GATEWAY = {
    "acme/overview.md": (
        "# Acme overview\n\nAcme is the team's gateway. Acme routes requests, Acme terminates connections and Acme "
        "keeps a log of every request. Acme runs on three hosts; the Acme dashboard shows Acme's traffic.\n\n## Acme "
        "components\n\nThe Acme router, the Acme admin API and the Acme log shipper make up Acme.\n"
    ),
    "acme/plugins.md": (
        "# Acme plugins\n\nAcme loads plugins at start-up. An Acme plugin is a shared library in the Acme plugin "
        "folder; Acme lists the loaded plugins in its admin API.\n\n## Writing an Acme plugin\n\nStart from the Acme "
        "plugin template and rebuild Acme.\n"
    ),
    "acme/certificates.md": (
        "# Rotating TLS certificates\n\nCertificates expire after one year. Thirty days before expiry, request a new "
        "certificate from the internal CA, place the key and chain in the secrets vault and reload the gateway; the "
        "old certificate stays valid until the reload. The gateway is Acme.\n"
    ),
    "acme/rate-limits.md": (
        "# Rate limits\n\nEach client may send 100 requests per second; above that the gateway answers 429 Too Many "
        "Requests. Raise a client's limit in the limits table and wait one minute for it to apply. The gateway "
        "is Acme.\n"
    ),
    "ops/deploy.md": PAGES["ops/deploy.md"],
    "ops/on-call.md": (
        "# On-call handbook\n\nThe on-call engineer acknowledges a page within 5 minutes, opens an incident channel "
        "and posts updates every 30 minutes until the incident is resolved.\n"
    ),
    "ops/disk-space.md": (
        "# Running out of disk space\n\nWhen a host's disk is over 90% full, find the largest directories with du, "
        "rotate or delete old logs, and clean the container image cache.\n"
    ),
    "db/backup-restore.md": (
        "# Backups and restore\n\nA nightly base backup is taken and WAL is archived every five minutes. To "
        "restore, unpack the base backup and replay WAL up to the target time.\n"
    ),
}


def test_a_chinese_question_naming_a_product_every_page_names_finds_the_page_that_answers(tmp_path):
    root = write_kb(tmp_path / "docs", GATEWAY)
    home = tmp_path / "home"
    r = run_cli(home, "ingest", str(root), "--kb", "team", "--json")
    assert r.returncode == 0, r.stderr
    for query, page in (
        ("Acme 的请求太多被限流了怎么办？", "acme/rate-limits.md"),
        ("Acme 的数据库怎么恢复到某个时间点？", "db/backup-restore.md"),
    ):
        result = team_lookup(home, query)
        assert result["relevance_level"] != "NONE", query
        assert result["primary"][0]["doc_key"] == page, query


def test_a_one_word_lookup_a_page_only_mentions_is_no_confident_answer(tmp_path):
    """The bundled sample, self-calibrated (`--grading ranker`): its pool, slow-query and log pages are in Chinese
    or far from a bare English word, and "pool" put the rolling-update page (a node pool, named once; similarity
    0.09, under the query's background) first as HIGHLY_RELEVANT: "you have what you need" on a page that answers
    nothing of it. Found on its words alone, such a page is a reference; a page the meaning agrees with stays
    HIGHLY_RELEVANT."""
    home = tmp_path / "home"
    r = run_cli(home, "ingest", "--grading", "ranker", "--json")
    assert r.returncode == 0, r.stderr

    def lookup(query: str) -> dict:
        done = run_cli(home, "lookup", query, "--no-graph", "--json")
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)

    for query in ("pool", "slow queries", "logs", "incident"):
        result = lookup(query)
        assert result["relevance_level"] == "REFERENCE", (query, result["primary"][0]["doc_key"])
    rollback = lookup("rollback")
    assert rollback["relevance_level"] == "HIGHLY_RELEVANT"
    assert rollback["primary"][0]["doc_key"] == "deployment/rollback.md"


def test_a_question_on_another_product_is_no_confident_answer_on_a_page_sharing_a_keyword(home):
    """The queue page has "backpressure" as its own keyword (an L0 match, one page): a question about it in a
    product the KB never writes is that product's question, a reference at most; without the product, the page
    answers it (structlog's docs: "OpenTelemetry Collector 怎么配置才能把 trace 导出到 Jaeger？" was PRECISE on the page
    naming OpenTelemetry in one line)."""
    for query in ("How do I configure backpressure in RabbitMQ?", "RabbitMQ 的 backpressure 怎么配置？"):
        result = team_lookup(home, query)
        assert result["relevance_level"] not in ("PRECISE", "HIGHLY_RELEVANT"), (query, result["relevance_level"])
    result = team_lookup(home, "backpressure")
    assert result["relevance_level"] == "PRECISE"
    assert result["primary"][0]["doc_key"] == "queue/worker-queue-full.md"


def test_a_question_on_what_a_keywords_page_never_writes_is_a_reference(home):
    """The queue page has "backpressure" as its own keyword (L0); a question asking it for TLS, which the KB never
    writes, is answered by that page only in part: a REFERENCE on it (the hint names what it lacks), not PRECISE,
    which would end the turn on it (structlog's docs: "Graylog 的 GELF 输入怎么开启 TLS？", an off-topic question,
    was PRECISE on the page holding a Graylog section)."""
    for query in ("How do I turn on TLS for backpressure?", "backpressure 的 TLS 怎么开启？"):
        result = team_lookup(home, query)
        assert result["relevance_level"] == "REFERENCE", (query, result["relevance_level"])
        assert result["primary"][0]["doc_key"] == "queue/worker-queue-full.md"
