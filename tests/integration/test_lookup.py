"""lookup_knowledge against the ingested sample KB on real Milvus Lite and the real USE embedder."""

import json
import re
import uuid

import pytest

from executor.core.errors import InputError
from executor.prompts.results import lookup_text
from executor.stores.database import SessionDocument
from executor.tools.call import ToolCall
from executor.tools.registry import LOOKUP


def new_session() -> str:
    return f"t-{uuid.uuid4().hex[:10]}"


def tool_lookup(rt, query: str, session: str, kb: str = "sample"):
    """The lookup as the agent, MCP and the CLI run it: through the tool wrapper, which writes the log row."""
    return rt.tools.invoke(LOOKUP, ToolCall(session, kb), {"query": query})


def test_unique_error_code_is_precise(sample_rt):
    r = sample_rt.lookup_service.lookup("ERR_TIMEOUT 是什么？", new_session())
    assert r.relevance_level == "PRECISE"
    assert r.primary[0].doc_key == "troubleshooting/err-timeout.md"
    assert "ERR_TIMEOUT" in r.primary[0].content
    assert r.completeness_hint.startswith("知识库中不存在")  # hint in the query's language


@pytest.mark.parametrize(
    ("query", "page"),
    [
        ("pagination", "api/pagination.md"),
        ("eviction", "infrastructure/redis-eviction-policy.md"),
        ("tracing", "observability/distributed-tracing.md"),
        ("rollback", "deployment/rollback.md"),
        ("disk full", "troubleshooting/err-disk-full.md"),  # its page spells them in ERR_DISK_FULL
    ],
)
def test_a_one_word_lookup_a_page_spells_out_sends_that_page(sample_rt, query, page):
    # a bare word's embedding is far from every page (0.19-0.28 here, below REFERENCE): it was "nothing found"
    r = sample_rt.lookup_service.lookup(query, new_session())
    assert r.relevance_level is not None, r.completeness_hint
    assert r.primary[0].doc_key == page


@pytest.mark.parametrize(
    "query",
    ["how do i pick a redis eviction policy?", "how do i roll back a deployment?", "pgbouncer pool size"],
)
def test_a_question_typed_in_capitals_finds_what_it_finds_in_lower_case(sample_rt, query):
    """Round sixteen, finding 1 (severity 3): the sentence encoder is case-sensitive, and a question typed in
    capitals embedded far from every page: "nothing found", where the same words in lower case find the page."""
    quiet = sample_rt.lookup_service.lookup(query, new_session())
    shouted = sample_rt.lookup_service.lookup(query.upper(), new_session())
    assert quiet.relevance_level is not None, quiet.completeness_hint
    assert (shouted.relevance_level, [d.doc_key for d in shouted.primary]) == (
        quiet.relevance_level,
        [d.doc_key for d in quiet.primary],
    )


@pytest.mark.parametrize("query", ["lasagna", "photosynthesis", "菜谱"])
def test_a_one_word_lookup_no_page_uses_finds_nothing(sample_rt, query):
    r = sample_rt.lookup_service.lookup(query, new_session())
    assert r.relevance_level is None
    assert r.primary == []


def test_pool_question_lands_in_infrastructure_and_repeat_is_deduped(sample_rt):
    s = new_session()
    first = tool_lookup(sample_rt, "数据库连接池怎么配置？", s).result
    assert first.relevance_level in ("HIGHLY_RELEVANT", "PRECISE")
    assert first.primary[0].domain == "infrastructure"
    # the landing domain first, then the domains of the supplement documents (the issue: they were left out)
    assert first.retrieved_domains_this_session == list(dict.fromkeys(d.domain for d in first.documents))
    assert len(first.retrieved_domains_this_session) > 1
    assert first.primary[0].content

    again = tool_lookup(sample_rt, "数据库连接池怎么配置？", s).result
    assert again.relevance_level == "DEDUPED"
    assert again.dedup_reason == "doc_retrieved"
    assert all(d.already_returned and d.content == "" for d in again.documents)
    assert "已返回" in lookup_text(again)
    # the log and the trace agree: a DEDUPED lookup is blocked, doc_retrieved included
    assert [r.blocked for r in sample_rt.log.rows(session_id=s)] == [False, True]
    assert first.message.startswith(("精确命中：《", "高度相关：《")) and "infrastructure" in first.message
    assert again.message == f"找到的 {len(again.documents)} 篇文档本会话都已返回过。"

    other = sample_rt.lookup_service.lookup("数据库连接池怎么配置？", new_session())
    assert other.relevance_level == first.relevance_level
    assert [d.doc_key for d in other.documents] == [d.doc_key for d in first.documents]
    assert all(d.content for d in other.documents)


def test_a_different_question_in_an_answered_domain_runs(sample_rt):
    """The issue's report: after a MySQL pool question, a Redis expiry question was blocked by domain."""
    s = new_session()
    first = sample_rt.lookup_service.lookup("MySQL 连接池怎么配置？", s)
    assert first.relevance_level in ("PRECISE", "HIGHLY_RELEVANT") and first.primary[0].domain == "infrastructure"
    second = sample_rt.lookup_service.lookup("Redis 缓存的过期时间怎么设置？", s)
    assert second.dedup_reason is None and second.relevance_level != "DEDUPED"
    assert second.primary[0].doc_key == "infrastructure/redis-cache-expiry.md" and second.primary[0].content
    # the domains of every document sent, supplements included
    sent_domains = {d.domain for d in first.documents + second.documents}
    assert set(second.retrieved_domains_this_session) == sent_domains


def test_reference_then_targeted_supplement(sample_rt):
    """Scenario 4 of the source design: a REFERENCE result, then a lookup naming the missing dimension."""
    targeted = "慢查询 EXPLAIN 执行计划分析"
    s, control = new_session(), new_session()
    for session in (s, control):
        first = sample_rt.lookup_service.lookup("系统变慢了怎么办", session)
        assert first.relevance_level == "REFERENCE"
        assert first.primary[0].domain == "troubleshooting"

    rephrased = sample_rt.lookup_service.lookup("系统很慢如何处理", s)
    assert rephrased.relevance_level == "DEDUPED"

    # without the dimension named, its best page is the one the session has and the rest is clearly weaker
    # (issue 28): answered from the session, nothing sent
    blind = sample_rt.lookup_service.lookup(targeted, control)
    assert blind.dedup_reason == "doc_retrieved" and blind.details["answered_from_session"]
    assert [d.doc_key for d in blind.documents] == [first.primary[0].doc_key]
    assert not any(d.content for d in blind.documents)

    supplement = sample_rt.lookup_service.lookup(targeted, s, missing_dimension="执行计划分析")
    assert supplement.dedup_reason is None
    new = [d for d in supplement.documents if not d.already_returned]
    assert new and all(d.content for d in new)
    assert first.primary[0].doc_key not in {d.doc_key for d in new}  # never re-sent


def test_nothing_found_says_so(sample_rt):
    r = sample_rt.lookup_service.lookup("how to bake sourdough bread", new_session())
    assert r.found is False and r.relevance_level is None
    assert r.primary == [] and "nothing relevant" in r.completeness_hint
    assert r.message == "Nothing relevant in the knowledge base."
    helm = sample_rt.lookup_service.lookup("How do I roll back a Helm release?", new_session())
    names = {"PRECISE": "Precise match", "HIGHLY_RELEVANT": "Highly relevant", "REFERENCE": "Related references"}
    assert helm.message.startswith(
        f'{names[helm.relevance_level]}: "{helm.primary[0].title}" ({helm.primary[0].domain})'
    )


def test_scores_never_reach_the_llm_but_reach_the_log(sample_rt):
    s = new_session()
    out = tool_lookup(sample_rt, "How do I roll back a Helm release?", s)
    r = out.result
    assert out.text == lookup_text(r)
    text, payload = lookup_text(r), json.dumps(r.model_dump(mode="json"), ensure_ascii=False)
    for leak in ("distance", "similarity", "l1_", "score"):
        assert leak not in text and leak not in payload
    assert not re.search(r"0\.\d{3,}", text)
    (row,) = sample_rt.log.rows(session_id=s)
    d = row.retrieval_details
    assert row.tool_name == "lookup_knowledge" and row.relevance_level == r.relevance_level
    for key in (
        "l0_titles",
        "l1_scores",
        "l1_top_score",
        "l1_top_similarity",
        "relevance_level",
        "completeness_hint",
        "retrieved_domains",
    ):
        assert key in d
    assert 0.0 <= d["l1_top_similarity"] <= 1.0 and d["l1_top_score"] == min(d["l1_scores"])
    assert row.latency_ms > 0


def test_every_lookup_is_logged_including_errors(sample_rt):
    s = new_session()
    out = tool_lookup(sample_rt, "anything", s, kb="nope")
    assert "unknown knowledge base 'nope'" in out.failure
    blank = tool_lookup(sample_rt, "\x00", s)
    assert blank.error == "the query contains control characters"
    assert [row.error for row in sample_rt.log.rows(session_id=s)] == [out.failure, blank.error]


def test_the_service_itself_writes_no_row(sample_rt):
    """One wrapper writes every tool_invocation row: a service called on its own (calibration does) logs nothing."""
    s = new_session()
    assert sample_rt.lookup_service.lookup("ERR_TIMEOUT 是什么？", s).relevance_level == "PRECISE"
    with pytest.raises(InputError, match="unknown knowledge base 'nope'"):
        sample_rt.lookup_service.lookup("anything", s, kb="nope")
    assert sample_rt.log.rows(session_id=s) == []


@pytest.mark.parametrize(
    "query, message",
    [
        ("", "empty"),
        ("   \n\t ", "empty"),
        ("x" * 100_000, "100,000 characters"),
        ("ERR\x00_TIMEOUT", "control characters"),
    ],
)
def test_bad_queries_are_refused_and_leave_no_memory(sample_rt, query, message):
    s = new_session()
    with pytest.raises(InputError, match=message):
        sample_rt.lookup_service.lookup(query, s)
    with sample_rt.db.session() as db:
        assert db.query(SessionDocument).filter_by(session_id=s).count() == 0


def test_clearing_a_session_forgets_it(sample_rt):
    s = new_session()
    sample_rt.lookup_service.lookup("ERR_TIMEOUT", s)
    assert list(sample_rt.memory.domain_levels(s)) == ["troubleshooting"]
    assert sample_rt.memory.clear(s) >= 1
    assert sample_rt.memory.domain_levels(s) == {}
    assert sample_rt.lookup_service.lookup("ERR_TIMEOUT", s).relevance_level == "PRECISE"
