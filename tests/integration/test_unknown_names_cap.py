"""A question naming what the KB never uses is no confident answer (issue 30, hostile16 finding 11). A KB of two
Chinese pages (too small to fit its own model: the shared preset, which has no answerability model, grades it)
put "ERR_TIMEOUT" and "Redis maxmemory-policy allkeys-lru", neither of them in the KB, HIGHLY_RELEVANT on its
connection-pool page. Real Milvus Lite and the shipped embedder, through the command line."""

import json

import pytest
from conftest import run_cli, write_pages

from executor.core.settings import SAMPLE_KB_PATH

PAGES = {
    "connection-pool.md": SAMPLE_KB_PATH / "troubleshooting" / "connection-pool-exhaustion.md",
    "rate-limit.md": SAMPLE_KB_PATH / "api" / "rate-limit-strategy-zh.md",
}


@pytest.fixture(scope="module")
def home(tmp_path_factory):
    docs = write_pages(
        tmp_path_factory.mktemp("tiny"), {name: path.read_text(encoding="utf-8") for name, path in PAGES.items()}
    )
    home = tmp_path_factory.mktemp("home")
    r = run_cli(home, "ingest", str(docs), "--kb", "tiny", "--json")
    assert r.returncode == 0, r.stderr
    assert not json.loads(r.stdout)["calibration"]["stored"]  # two pages: the shared preset grades it
    return home


def _lookup(home, query: str) -> dict:
    r = run_cli(home, "lookup", query, "--kb", "tiny", "--no-graph", "--json")
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


@pytest.mark.parametrize(
    ("query", "name"), [("ERR_TIMEOUT", "ERR_TIMEOUT"), ("Redis maxmemory-policy allkeys-lru", "maxmemory-policy")]
)
def test_a_question_that_is_only_a_name_the_kb_never_uses_finds_nothing(home, query, name):
    result = _lookup(home, query)
    # it was HIGHLY_RELEVANT on the connection-pool page
    assert not result["found"], result
    assert result["relevance_level"] == "NONE"
    assert name in result["completeness_hint"]  # "... never mentions ERR_TIMEOUT"


def test_a_name_the_kb_never_uses_with_words_it_knows_is_a_weak_reference_at_most(home):
    result = _lookup(home, "ERR_TIMEOUT 连接池")
    assert result["relevance_level"] == "REFERENCE", result  # it was HIGHLY_RELEVANT
    assert result["primary"][0]["doc_key"] == "connection-pool.md"
    assert "err_timeout" in result["completeness_hint"].lower()  # the hint names what the page lacks


@pytest.mark.parametrize(
    ("query", "page"),
    [
        ("ERR_POOL_EXHAUSTED", "connection-pool.md"),
        ("连接池耗尽怎么办", "connection-pool.md"),
        ("令牌桶", "rate-limit.md"),
    ],
)
def test_names_the_kb_uses_keep_their_level(home, query, page):
    result = _lookup(home, query)
    assert result["relevance_level"] == "PRECISE", result
    assert result["primary"][0]["doc_key"] == page
