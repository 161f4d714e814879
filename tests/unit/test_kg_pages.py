"""query_knowledge_graph's session rules count a page and its translations once (executor/retrieval/kg_query.py)."""

from executor.core.results import KGHit
from executor.retrieval.kg_query import _first_per_page


def hit(kb: str, doc_key: str, score: float) -> KGHit:
    return KGHit(
        chunk_id=f"{doc_key}#0",
        doc_key=doc_key,
        title=doc_key,
        domain="d",
        knowledge_bases=[kb],
        relevance_level="REFERENCE",
        score=score,
    )


def test_a_page_and_its_translation_are_one_hit_the_best_ranked():
    hits = [hit("helm", "zh/topics/chart_tests.md", 0.9), hit("helm", "en/topics/chart_tests.md", 0.74)]
    hits += [hit("helm", "zh/faq/index.md", 0.3), hit("docs", "en/topics/chart_tests.md", 0.2)]
    kept = [(h.knowledge_bases[0], h.doc_key) for h in _first_per_page(hits)]
    # the same path in another knowledge base is another page
    assert kept == [
        ("helm", "zh/topics/chart_tests.md"),
        ("helm", "zh/faq/index.md"),
        ("docs", "en/topics/chart_tests.md"),
    ]
