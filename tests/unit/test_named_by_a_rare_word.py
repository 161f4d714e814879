"""A question names a page when it holds a rare identifier only that page writes (`ranking.features`), never a
plain English word written with a dashed prefix, which a page writes as prose."""

import pytest

from executor.retrieval.ranking import Candidate, features
from executor.retrieval.vocabulary import QueryTerms, terms
from executor.stores.vector_hits import ChunkHit


def _named(text: str, question: str) -> bool:
    page = Candidate("twisted.md", "Twisted", "")
    page.add(ChunkHit("twisted.md#0", "twisted.md", 0, "", "Twisted", text, 0.9, 0))
    asked = terms(question)
    # every term of the question that the page writes is one only this page uses
    rare = frozenset(asked & terms(text))
    features(page, 0.6, 0.2, 1.0, QueryTerms({t: 1.0 for t in asked}, 1.0, []), rare=rare)
    return page.named


@pytest.mark.parametrize(
    ("text", "question"),
    [
        # structlog: its Twisted page was PRECISE for a question on rendering exceptions as JSON
        (
            "Twisted will format your exceptions as multi-line log entries.",
            "How do I render an exception as JSON instead of a multi-line string?",
        ),
        ("Run it non-interactively in CI.", "How do I run it non-interactively?"),
    ],
)
def test_a_dashed_english_word_names_no_page(text, question):
    assert not _named(text, question)


@pytest.mark.parametrize(
    ("text", "question"),
    [
        ("Set maxmemory-policy to allkeys-lru.", "What does maxmemory-policy do?"),
        ("ERR_POOL_EXHAUSTED means every connection is in use.", "What is ERR_POOL_EXHAUSTED?"),
        ("Helm 3.2 added the lookup function.", "Which release added lookup, 3.2?"),
    ],
)
def test_a_rare_identifier_names_its_page(text, question):
    assert _named(text, question)
