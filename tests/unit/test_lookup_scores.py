"""The figures graph expansion reads of a lookup: typed, taken from the grader's details, never serialised."""

from executor.core.relevance import Level
from executor.core.results import LookupResult, LookupScores


def test_the_grader_figures_are_read_by_name_and_the_rest_of_the_details_is_left_out():
    details = {"relevant_docs": 2, "top_score": 0.61, "l1_top_similarity": 0.8, "background_similarity": 0.2}
    scores = LookupScores.model_validate(details | {"l1_scores": [0.4, 0.5], "landing_domain": "ops"})
    assert scores == LookupScores(relevant_docs=2, top_score=0.61, l1_top_similarity=0.8, background_similarity=0.2)


def test_the_scores_never_reach_what_a_caller_prints():
    result = LookupResult(
        found=True,
        relevance_level=Level.REFERENCE,
        completeness_hint="",
        query="q",
        retrieved_domains_this_session=[],
        session="s",
        kb="sample",
        scores=LookupScores(relevant_docs=1, top_score=0.5),
    )
    assert "scores" not in result.model_dump() and "scores" not in result.model_dump_json()
