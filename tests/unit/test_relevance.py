import pytest

from executor.core.relevance import Level, answer_features, grade, language_of, similarity, weak
from executor.core.settings import Answerability, Ranker, Thresholds

T = Thresholds(max_l2_distance=2.0, highly_relevant_threshold=0.75, reference_threshold=0.5)


@pytest.mark.parametrize(
    "d, expected",
    [(0.0, 1.0), (0.383, 0.8085), (0.5, 0.75), (1.0, 0.5), (2.0, 0.0), (3.7, 0.0), (-1e-7, 1.0)],
)
def test_similarity_table_of_the_source_design(d, expected):
    assert similarity(d, 2.0) == pytest.approx(expected, abs=1e-4)


def _candidates(*rows):
    """(score, specific) per candidate, best first."""
    from executor.retrieval.ranking import Candidate

    out = []
    for i, (score, specific) in enumerate(rows):
        c = Candidate(f"d{i}.md", f"D{i}", "x", specific=specific)
        c.score = c.similarity = score
        out.append(c)
    return out


@pytest.mark.parametrize(
    "rows, expected",
    [
        ([(0.60, True)], Level.PRECISE),  # one specific keyword, ranked first: PRECISE
        ([(0.50, True)], Level.PRECISE),  # at the reference threshold
        ([(0.4999, True)], None),  # a keyword alone is not enough: the scores must agree it is relevant
        ([(0.80, False), (0.60, True)], Level.HIGHLY_RELEVANT),  # the keyword page is not first: no PRECISE
        ([(0.60, True), (0.55, True)], Level.REFERENCE),  # two specific matches: nothing is PRECISE
        ([(0.75, True), (0.55, True)], Level.HIGHLY_RELEVANT),
        ([(0.75, False)], Level.HIGHLY_RELEVANT),  # at the threshold
        ([(0.7499, False)], Level.REFERENCE),
        ([(0.5, False)], Level.REFERENCE),
        ([(0.4999, False)], None),  # below the reference threshold: no valid result
        ([], None),
    ],
)
def test_level_decision_table_at_its_boundaries(rows, expected):
    assert grade(_candidates(*rows), T) == expected


def _named(*rows):
    """(score, named) per candidate, best first: the query names the page alone (`Candidate.named`)."""
    out = _candidates(*((score, False) for score, _ in rows))
    for c, (_, named) in zip(out, rows):
        c.named = named
    return out


@pytest.mark.parametrize(
    "rows, expected",
    [
        ([(0.50, True), (0.45, False)], Level.PRECISE),  # the query names the first page alone, scores agree
        ([(0.4999, True)], None),  # named, but the scores do not agree it is relevant at all
        ([(0.80, False), (0.60, True)], Level.HIGHLY_RELEVANT),  # the named page is not first
        ([(0.60, True), (0.55, True)], Level.REFERENCE),  # two pages named: neither is the one answer
    ],
)
def test_a_page_the_query_names_alone_is_precise_when_ranked_first(rows, expected):
    ranked = T.model_copy(update={"ranker": Ranker(bias=0.0, weights={})})  # the rule needs a calibrated score
    assert grade(_named(*rows), ranked) == expected


def test_a_named_page_is_not_precise_on_a_bare_similarity():
    assert grade(_named((0.60, True), (0.45, False)), T) == Level.REFERENCE  # too weak an agreement


def test_thresholds_must_be_ordered():
    with pytest.raises(ValueError):
        Thresholds(highly_relevant_threshold=0.3, reference_threshold=0.5)


def test_language_detection():
    assert language_of("数据库连接池怎么配置？") == "zh"
    assert language_of("ERR_TIMEOUT 是什么") == "zh"
    assert language_of("How do I roll back?") == "en"


# An answerability model that passes a query when its best document's score is at least 0.2 (probability 0.5 at
# best_score 0.2, threshold 0.5): "nothing found" is its decision, the levels stay the scores'.
GATE = Answerability(bias=-2.0, weights={"best_score": 10.0}, threshold=0.5)
T_GATED = Thresholds(
    max_l2_distance=2.0,
    highly_relevant_threshold=0.75,
    reference_threshold=0.5,
    ranker=Ranker(bias=0.0, weights={}),
    answerability=GATE,
)


@pytest.mark.parametrize(
    "rows, expected",
    [
        ([(0.30, False)], Level.REFERENCE),  # below REFERENCE, but the KB answers: the best is sent as REFERENCE
        ([(0.19, False)], None),  # the model says the KB does not answer
        ([(0.80, False)], Level.HIGHLY_RELEVANT),
        ([(0.7499, False)], Level.REFERENCE),
        ([(0.60, True)], Level.PRECISE),  # a specific keyword the scores agree with is decided before the gate
        ([], None),
    ],
)
def test_an_answerability_model_decides_nothing_found_and_the_scores_the_level(rows, expected):
    assert grade(_candidates(*rows), T_GATED) == expected


def test_a_keyword_lookup_found_on_its_words_alone_is_a_weak_reference():
    """The floor of `grade`: a keyword lookup the best page spells out is never "nothing found", but where the
    scores (or the answerability model) say the KB does not answer, it is a hedged REFERENCE, not a plain one."""
    for t, score in ((T_GATED, 0.19), (T, 0.4999)):
        rows = _candidates((score, False))
        assert grade(rows, t) is None and not weak(rows, t)
        rows[0].spelled = True
        assert grade(rows, t) == Level.REFERENCE and weak(rows, t)
    passing = _candidates((0.30, False))  # the model passes it: a plain REFERENCE, spelled or not
    passing[0].spelled = True
    assert grade(passing, T_GATED) == Level.REFERENCE and not weak(passing, T_GATED)


def test_the_answerability_model_sees_the_whole_result():
    rows = _candidates((0.4, False), (0.3, False))
    rows[1].similarity = 0.9
    for c in rows:
        c.features = {"kb_coverage": 0.5, "unknown_names": 2.0, "passing_names": 2.0, "unknown_products": 1.0}
    assert answer_features(rows) == {
        "best_score": 0.4,
        "best_similarity": 0.9,
        "kb_coverage": 0.5,
        "unknown_names": 2.0,
        "passing_names": 2.0,
        "unknown_products": 1.0,
    }


def test_an_answerability_model_needs_its_ranker_and_known_features():
    with pytest.raises(ValueError, match="needs the ranker"):
        Thresholds(answerability=GATE)
    with pytest.raises(ValueError, match="unknown answerability features"):
        Answerability(bias=0.0, weights={"similarity": 1.0}, threshold=0.5)


def test_a_best_page_in_another_language_needs_its_own_highly_relevant_threshold():
    t = Thresholds(
        highly_relevant_threshold=0.75, reference_threshold=0.5, highly_relevant_other_language_threshold=0.9
    )
    same, other = _candidates((0.8, False)), _candidates((0.8, False))
    other[0].features = {"other_language": 1.0}
    assert grade(same, t) == Level.HIGHLY_RELEVANT
    assert grade(other, t) == Level.REFERENCE  # 0.8 is not enough across languages
    other[0].score = 0.9
    assert grade(other, t) == Level.HIGHLY_RELEVANT
    assert grade(other, T) == Level.HIGHLY_RELEVANT  # unset: one threshold for both
    with pytest.raises(ValueError, match="other-language"):
        Thresholds(
            highly_relevant_threshold=0.75, reference_threshold=0.5, highly_relevant_other_language_threshold=0.4
        )


def test_a_unique_identifier_is_precise_even_when_the_similarity_prefers_another_page():
    """ERR_POOL_EXHAUSTED: named by one page only, while a bare code string's dense similarity picks another."""
    from executor.retrieval.grading import decisive_first

    other, exact = _candidates((0.45, False), (0.30, True))
    exact.decisive = True
    ranked = decisive_first([other, exact])
    assert ranked[0] is exact
    assert grade(ranked, T) == Level.PRECISE
    # the same match as a plain word (not decisive) needs the scores to agree: not first, so no PRECISE
    exact.decisive = False
    assert decisive_first([other, exact])[0] is other
    assert grade([other, exact], T) is None


def test_a_page_and_its_translation_count_as_one_page_for_precise():
    from executor.retrieval.ranking import Candidate

    en, zh = Candidate("en/x.md", "X", "x", specific=True), Candidate("zh/x.md", "X", "x", specific=True)
    en.score = zh.score = 0.6
    assert grade([en, zh], T) == Level.PRECISE


def test_the_translation_in_the_questions_language_is_sent_first_unless_it_lacks_the_original():
    from executor.retrieval.grading import own_language_first
    from executor.retrieval.ranking import Candidate

    zh, other, en = (Candidate(k, "X", "x") for k in ("zh/x.md", "en/y.md", "en/x.md"))
    for c, score, language in ((zh, 0.9, 1.0), (other, 0.7, 0.0), (en, 0.6, 0.0)):
        c.score, c.features = score, {"other_language": language}
    candidates = [zh, other, en]
    assert grade(candidates, T) == Level.HIGHLY_RELEVANT  # graded on the better scored page
    assert own_language_first([zh, other], candidates) == [en, zh, other]
    # the best page in the question's language, or no translation among the candidates: the order stands
    assert own_language_first([other, zh], candidates) == [other, zh]
    assert own_language_first([zh, other], [zh, other]) == [zh, other]
    # a translation scoring under half its original's lacks what it says (an outdated one)
    en.score = 0.4
    assert own_language_first([zh, other], candidates) == [zh, other]
