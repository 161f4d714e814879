import pytest

from core.settings import Thresholds
from core.relevance import Level, grade, language_of, similarity

T = Thresholds(max_l2_distance=2.0, highly_relevant_threshold=0.75, reference_threshold=0.5)


@pytest.mark.parametrize(
    "d, expected",
    [(0.0, 1.0), (0.383, 0.8085), (0.5, 0.75), (1.0, 0.5), (2.0, 0.0), (3.7, 0.0), (-1e-7, 1.0)],
)
def test_similarity_table_of_the_source_design(d, expected):
    assert similarity(d, 2.0) == pytest.approx(expected, abs=1e-4)


def _candidates(*rows):
    """(score, specific) per candidate, best first."""
    from retrieval.ranking import Candidate

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


def test_thresholds_must_be_ordered():
    with pytest.raises(ValueError):
        Thresholds(highly_relevant_threshold=0.3, reference_threshold=0.5)


def test_language_detection():
    assert language_of("数据库连接池怎么配置？") == "zh"
    assert language_of("ERR_TIMEOUT 是什么") == "zh"
    assert language_of("How do I roll back?") == "en"
