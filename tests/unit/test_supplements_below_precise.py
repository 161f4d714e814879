"""Pages sent after the best one below PRECISE (`grading.Graded.relevant`): a weak REFERENCE's near ties
(`NEAR_TIE`), and the page the dense vectors put first when the ranker put another first.

On the dev set (linux-docs) Chinese questions on English pages are graded a weak REFERENCE with the page that
answers 2nd or 3rd at nearly the best's score (0.069 against 0.070), far below the supplements' bar: only the best
page was sent. The candidates here are graded through `Graded.regrade` with a real ranker and answerability
model, so whether the result is weak is `core.relevance.weak`'s call, not the test's. On the sample KB, graded by
its own label-free model, the page that answers a question worded far from it was often the one with the highest
dense similarity, ranked 2nd-5th below the bar behind a page sharing a common word with the question.
"""

from executor.core.relevance import Level
from executor.core.settings import Answerability, Ranker, Thresholds
from executor.retrieval.grading import NEAR_TIE, Graded
from executor.retrieval.ranking import Candidate
from executor.retrieval.vocabulary import QueryTerms

# the ranker's probability follows the similarity; the gate (whether the KB answers at all) the query's KB
# coverage, so that the two can be set apart
RANKER = Ranker(bias=-4.0, weights={"similarity": 6.0})
GATE = Answerability(bias=-6.0, weights={"kb_coverage": 10.0}, threshold=0.5, weak_threshold=0.1)
THRESHOLDS = Thresholds(
    highly_relevant_threshold=0.7, reference_threshold=0.4, supplement_threshold=0.3, ranker=RANKER, answerability=GATE
)
SIMILARITIES = {"best.md": 0.45, "tie.md": 0.44, "close.md": 0.42, "far.md": 0.2}


def _graded(similarities: dict[str, float], coverage: float, t: Thresholds = THRESHOLDS) -> Graded:
    candidates = [
        Candidate(k, k, "d", similarity=s, features={"similarity": s, "kb_coverage": coverage})
        for k, s in similarities.items()
    ]
    return Graded(candidates=candidates, query_terms=QueryTerms({}, 1.0, [])).regrade(t)


def _sent(g: Graded, t: Thresholds = THRESHOLDS) -> list[str]:
    return [c.doc_key for c in g.relevant(t)]


def test_a_weak_reference_sends_the_pages_that_score_nearly_as_well_as_its_best():
    g = _graded(SIMILARITIES, coverage=0.45)  # the gate says 0.18: in the weak band (0.1-0.5)
    assert g.level == Level.REFERENCE and g.weak
    scores = {c.doc_key: c.score for c in g.candidates}
    # every runner-up is far below the supplements' bar; two are near ties, one is not
    assert max(scores["tie.md"], scores["close.md"]) < THRESHOLDS.supplement
    assert min(scores["tie.md"], scores["close.md"]) >= NEAR_TIE * scores["best.md"] > scores["far.md"]
    assert _sent(g) == ["best.md", "tie.md", "close.md"]


def test_a_result_the_gate_passes_keeps_the_supplements_bar_alone():
    g = _graded(SIMILARITIES, coverage=0.8)  # the gate says 0.88: found, not weak
    assert g.level == Level.REFERENCE and not g.weak
    assert _sent(g) == ["best.md"]


def test_nothing_found_sends_nothing_and_bare_similarity_grading_has_no_near_ties():
    assert _sent(_graded(SIMILARITIES, coverage=0.2)) == []  # the gate says 0.02, below the band
    # a KB graded by similarity (no ranker, no gate): its scores are cosines that always sit close together,
    # and only the bar decides
    plain = Thresholds(highly_relevant_threshold=0.7, reference_threshold=0.4, supplement_threshold=0.35)
    g = _graded({"a.md": 0.45, "b.md": 0.40, "c.md": 0.30}, coverage=0.45, t=plain)
    assert g.level == Level.REFERENCE
    assert _sent(g, plain) == ["a.md", "b.md"]


# the ranker weighs the lexical layer's best page heavily, so it can rank first a page the dense vectors put lower
LEXICAL = Ranker(bias=-4.0, weights={"similarity": 6.0, "lexical": 4.0})
LEXICAL_THRESHOLDS = THRESHOLDS.model_copy(update={"ranker": LEXICAL, "highly_relevant_threshold": 0.9})


def _disagreeing(specific: bool = False) -> Graded:
    rows = [("words.md", 0.3, 1.0), ("meaning.md", 0.5, 0.0), ("other.md", 0.2, 0.0)]
    candidates = [
        Candidate(
            k,
            k,
            "d",
            similarity=s,
            specific=specific and k == "words.md",
            features={"similarity": s, "lexical": lex, "kb_coverage": 0.8},  # the gate passes: not weak
        )
        for k, s, lex in rows
    ]
    return Graded(candidates=candidates, query_terms=QueryTerms({}, 1.0, [])).regrade(LEXICAL_THRESHOLDS)


def test_the_page_the_dense_vectors_put_first_is_sent_when_the_ranker_put_another_first():
    g = _disagreeing()
    assert g.level == Level.REFERENCE and not g.weak
    assert [c.doc_key for c in g.candidates] == ["words.md", "meaning.md", "other.md"]
    meaning = g.candidates[1]
    # below the supplements' bar and no near tie (0.27 against 0.86): sent only as the dense layer's first
    assert meaning.score < LEXICAL_THRESHOLDS.supplement and meaning.score < NEAR_TIE * g.candidates[0].score
    assert _sent(g, LEXICAL_THRESHOLDS) == ["words.md", "meaning.md"]


def test_a_precise_result_sends_its_one_page():
    g = _disagreeing(specific=True)
    assert g.level == Level.PRECISE
    assert _sent(g, LEXICAL_THRESHOLDS) == ["words.md"]
