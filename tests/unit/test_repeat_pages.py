"""The repeat rule's page logic (executor/retrieval/repeats.py): translations are one page, and which new pages are
about as relevant as a held best page, on a KB's own scale."""

from dataclasses import dataclass

from executor.core.relevance import page_key
from executor.core.settings import Thresholds
from executor.retrieval.repeats import as_relevant, one_per_page, weaker_margin

RANKER = Thresholds(highly_relevant_threshold=0.48, reference_threshold=0.30)  # margin 0.09 at half a band


@dataclass
class C:
    doc_key: str
    score: float


def test_a_page_and_its_translation_are_one_page():
    assert page_key("en/intro/install.md") == page_key("zh/intro/install.md") == "intro/install.md"
    assert page_key("docs/zh-cn/faq.md") == page_key("docs/en/faq.md") == "docs/faq.md"
    assert page_key("deployment/helm-charts.md") == "deployment/helm-charts.md"
    assert page_key("api/rate-limit-strategy-zh.md") != page_key("api/rate-limiting.md")  # a file name is kept
    assert page_key("end/x.md") == "end/x.md"  # a folder that only starts like a language code


def test_the_margin_is_half_the_kbs_band_between_reference_and_highly_relevant():
    assert round(weaker_margin(RANKER), 4) == 0.09
    assert round(weaker_margin(Thresholds(highly_relevant_threshold=0.54, reference_threshold=0.28)), 4) == 0.13


def test_a_best_page_the_session_does_not_hold_is_not_the_rule():
    assert as_relevant([C("a.md", 0.9), C("b.md", 0.5)], {"b.md"}, RANKER) is None
    assert as_relevant([], {"a.md"}, RANKER) is None


def test_only_new_pages_about_as_relevant_as_the_held_best_one_count():
    chosen = [C("en/hooks.md", 0.93), C("zh/hooks.md", 0.92), C("tests.md", 0.86), C("glossary.md", 0.40)]
    # the translation is held (the same page); tests.md is within 0.09; the glossary is far below
    assert as_relevant(chosen, {"hooks.md"}, RANKER) == [False, False, True, False]
    assert as_relevant(chosen[:2] + chosen[3:], {"hooks.md"}, RANKER) == [False, False, False]


def test_one_lookup_keeps_the_best_ranked_of_a_page_and_its_translation():
    ranked = [C("en/tips.md", 0.81), C("en/named.md", 0.76), C("zh/tips.md", 0.42), C("zh/named.md", 0.40)]
    assert [c.doc_key for c in one_per_page(ranked)] == ["en/tips.md", "en/named.md"]
