"""A page the query names by its own keyword is found whatever the dense similarity of a few words says (issue 27,
item 2: "nothing found" only when nothing answers). On the bundled sample KB, graded by similarity as it ships:
`leakDetectionThreshold`, a front-matter keyword of the HikariCP parameters page, was "nothing found" (the page 3rd
at similarity 0.15 behind the secrets page at 0.23), and "What does leakDetectionThreshold do?" a REFERENCE on the
secrets page; "what is PgBouncer for", PgBouncer a keyword of one page only, "nothing found". Real Milvus Lite and
the shipped embedder (`sample_rt`)."""

import uuid

import pytest

from executor.core.relevance import Level
from executor.retrieval.alignment import unshouted


def lookup(rt, query: str):
    return rt.lookup_service.lookup(query, session_id=f"kw-{uuid.uuid4().hex[:10]}", kb="sample")


@pytest.mark.parametrize(
    ("query", "page"),
    [
        ("leakDetectionThreshold", "infrastructure/hikaricp-parameters.md"),
        ("What does leakDetectionThreshold do?", "infrastructure/hikaricp-parameters.md"),
        ("什么是 leakDetectionThreshold", "infrastructure/hikaricp-parameters.md"),
        ("what is PgBouncer for", "infrastructure/postgres-connection-limits.md"),
    ],
)
def test_a_few_words_around_one_pages_keyword_find_that_page(sample_rt, query, page):
    result = lookup(sample_rt, query)
    assert result.relevance_level is not None, result.completeness_hint
    assert result.primary[0].doc_key == page, [d.doc_key for d in result.primary]


def test_a_config_key_in_camel_case_that_one_page_uses_is_that_pages_answer(sample_rt):
    """`maximumPoolSize` is written by three pages, the MySQL pool page's keyword: that page first (it was the
    troubleshooting page, by similarity), and with its keyword and the agreement of the similarity, PRECISE."""
    result = lookup(sample_rt, "maximumPoolSize")
    assert result.primary[0].doc_key == "infrastructure/mysql-connection-pool.md"
    assert result.relevance_level == Level.PRECISE


def test_words_around_a_keyword_that_ask_for_more_than_the_page_spells_stay_unanswered(sample_rt):
    """The rule reads a few words around a page's keyword only when the page spells every one of them: a question
    on installing PgBouncer on Windows (the page says nothing of either) is still "nothing found"."""
    result = lookup(sample_rt, "How do I install PgBouncer on Windows?")
    assert result.relevance_level is None


def test_a_question_in_capitals_typed_on_a_turkish_keyboard_is_read_as_the_same_words():
    """`İ` lowers to `i` and a combining dot (hostile17 finding 16): `ROLLİNG` was a word no page writes."""
    assert unshouted("ROLLİNG UPDATE İN KUBERNETES") == "rolling update in kubernetes"
    assert unshouted("REDIS EVICTION POLICY please") == "redis eviction policy please"
    # as many words written in lower case as half the words in capitals: written so on purpose
    assert unshouted("TLS for PgBouncer") == "TLS for PgBouncer"
    assert unshouted("the HTTP and TLS settings") == "the HTTP and TLS settings"


@pytest.mark.parametrize("query", ["redis-eviction-policy", "REDIS-EVICTION-POLICY"])
def test_a_pages_file_name_asked_as_the_question_finds_that_page(sample_rt, query):
    """A slug the KB never writes is read as its words (hostile17 finding 12: "nothing found", the slug one unknown
    word of coverage 0)."""
    result = lookup(sample_rt, query)
    assert result.relevance_level is not None, result.completeness_hint
    assert result.primary[0].doc_key == "infrastructure/redis-eviction-policy.md"
