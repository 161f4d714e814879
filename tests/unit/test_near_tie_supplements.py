"""Self-calibration's supplements: a page scoring nearly as high as the best is sent with it, at the share of the
best score chosen on the KB's own questions; and an English heading asked in Chinese is asked in Chinese words."""

import random

from executor.core.relevance import Level
from executor.core.settings import Thresholds
from executor.retrieval.calibration import Label, Observed, choose_share
from executor.retrieval.glossary import to_chinese
from executor.retrieval.grading import Graded
from executor.retrieval.ranking import Candidate
from executor.retrieval.self_calibration import SUBJECT_EN, SUBJECT_ZH, _ask
from executor.retrieval.vocabulary import QueryTerms

T = Thresholds(highly_relevant_threshold=0.6, reference_threshold=0.3, supplement_threshold=0.3, supplement_share=0.8)


def _graded(*scores: float) -> Graded:
    candidates = [Candidate(f"d{i}.md", f"D{i}", "x", score=s) for i, s in enumerate(scores)]
    return Graded(candidates=candidates, query_terms=QueryTerms({}, 1.0, []), level=None)


def test_a_near_tie_is_sent_and_a_distant_page_is_not():
    g = _graded(0.2, 0.17, 0.1)
    g.level = Level.REFERENCE  # a found result
    assert [c.doc_key for c in g.relevant(T)] == ["d0.md", "d1.md"]  # 0.17 >= 0.8 x 0.2; 0.1 is not
    without = T.model_copy(update={"supplement_share": None})
    assert [c.doc_key for c in g.relevant(without)] == ["d0.md"]


def _observed(i: int, scores: tuple[float, ...], relevant: int) -> Observed:
    return Observed(Label(query=f"q{i}", relevant=[f"d{relevant}.md"]), "kb", _graded(*scores))


def test_the_share_is_the_lowest_at_which_the_pages_it_adds_are_relevant_often_enough():
    # the right page 2nd at 0.9 of the best on five questions; two wrong pages at 0.5 of the best on five more
    near = [_observed(i, (0.2, 0.18, 0.01), relevant=1) for i in range(5)]
    far = [_observed(10 + i, (0.2, 0.1, 0.1), relevant=0) for i in range(5)]
    assert choose_share(near + far, supplement=0.3) == 0.55  # above 0.5 only the near ties are added
    assert choose_share(far, supplement=0.3) is None  # nothing worth adding: no near-tie rule


def test_an_english_heading_asked_in_chinese_has_its_common_words_in_chinese_and_its_names_kept():
    assert to_chinese("Creating a New Translation") == "创建新翻译"
    assert to_chinese("Debugging util-linux programs") == "调试 util-linux 程序"
    assert to_chinese("Forest covertypes") is None  # no glossary word: asked as it was
    question = _ask("Release schedule", SUBJECT_EN, SUBJECT_ZH, "en", True, random.Random(1))
    assert "发布计划" in question and "Release" not in question
