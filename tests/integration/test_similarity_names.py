"""The sample KB, graded by the bare similarity: a name only one page's keywords give puts that page first
(hostile16 finding 4). Real components: the sample KB in Milvus Lite with the USE embedder (`sample_rt`)."""

import uuid

import pytest

pytestmark = pytest.mark.timeout(300)


def lookup(rt, query: str):
    return rt.lookup_service.lookup(query, session_id=f"names-{uuid.uuid4().hex[:10]}", kb="sample")


def test_the_one_page_a_named_product_is_a_keyword_of_comes_first_in_a_chinese_question(sample_rt):
    # the Chinese connection-pool page shares 连接池 word for word and scored 0.35 by similarity; the English page
    # whose keyword is PgBouncer 0.29: it was a supplement
    result = lookup(sample_rt, "PgBouncer 的连接池模式")
    assert result.relevance_level is not None
    assert [d.doc_key for d in result.primary] == ["infrastructure/postgres-connection-limits.md"], result.primary


def test_a_plain_words_keyword_of_one_page_does_not_put_it_first(sample_rt):
    # `memory limit` is a specific keyword of the OOMKilled page, but plain words: the Redis page stays first
    result = lookup(sample_rt, "What happens when Redis reaches its memory limit?")
    assert [d.doc_key for d in result.primary][:1] == ["infrastructure/redis-eviction-policy.md"], result.primary
