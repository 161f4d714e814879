"""The repeat rule's page logic (executor/retrieval/repeats.py): translations are one page, and which new pages are
about as relevant as a held best page, on a KB's own scale."""

from dataclasses import dataclass

import numpy as np

from executor.core.relevance import page_key
from executor.core.settings import Thresholds
from executor.retrieval.repeats import (
    answer_pages,
    answered_pages,
    as_relevant,
    band_position,
    one_per_page,
    weaker_margin,
)
from executor.stores.memory import EarlierLookup

RANKER = Thresholds(highly_relevant_threshold=0.78, reference_threshold=0.28)  # margin 0.025 at a twentieth of a band


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


def test_the_margin_is_a_twentieth_of_the_kbs_band_between_reference_and_highly_relevant():
    assert round(weaker_margin(RANKER), 4) == 0.025
    assert round(weaker_margin(Thresholds(highly_relevant_threshold=0.54, reference_threshold=0.28)), 4) == 0.013


def test_a_best_page_the_session_does_not_hold_is_not_the_rule():
    assert as_relevant([C("a.md", 0.9), C("b.md", 0.5)], {"b.md"}, weaker_margin(RANKER)) is None
    assert as_relevant([], {"a.md"}, weaker_margin(RANKER)) is None


def test_only_new_pages_about_as_relevant_as_the_held_best_one_count():
    chosen = [C("en/hooks.md", 0.93), C("zh/hooks.md", 0.92), C("tests.md", 0.91), C("glossary.md", 0.89)]
    # the translation is held (the same page); tests.md is within 0.025; the glossary, 0.04 below, is weaker
    assert as_relevant(chosen, {"hooks.md"}, weaker_margin(RANKER)) == [False, False, True, False]
    assert as_relevant(chosen[:2] + chosen[3:], {"hooks.md"}, weaker_margin(RANKER)) == [False, False, False]


def test_pages_of_knowledge_bases_graded_differently_compare_on_their_own_bands():
    similarity = Thresholds(highly_relevant_threshold=0.54, reference_threshold=0.28)
    assert band_position(0.78, RANKER) == band_position(0.54, similarity) == 1.0
    assert band_position(0.28, RANKER) == band_position(0.28, similarity) == 0.0
    # 0.60 is past HIGHLY_RELEVANT on the similarity scale, barely above REFERENCE on the ranker's
    held_best, new = C("a/x.md", band_position(0.60, similarity)), C("b/y.md", band_position(0.60, RANKER))
    assert as_relevant([held_best, new], {"a/x.md"}, 0.1) == [False, False]


def test_a_lookup_is_answered_by_its_best_page_those_about_as_relevant_and_the_highly_relevant_ones():
    chosen = [C("en/hooks.md", 0.95), C("tests.md", 0.91), C("charts.md", 0.80), C("glossary.md", 0.60)]
    assert answer_pages(chosen, RANKER) == ["en/hooks.md", "tests.md", "charts.md"]  # the glossary: a supplement
    weak = [C("en/hooks.md", 0.40), C("tests.md", 0.38), C("glossary.md", 0.36)]
    assert answer_pages(weak, RANKER) == ["en/hooks.md", "tests.md"]
    assert answer_pages([], RANKER) == []


def test_pages_of_a_sibling_in_the_same_message_do_not_answer_it():
    v = np.ones(2) / np.sqrt(2)
    earlier = [
        EarlierLookup("q1", v, "HIGHLY_RELEVANT", doc_keys=["en/a.md"], batch="m1"),
        EarlierLookup("q2", v, "REFERENCE", doc_keys=["b.md"], batch="m2", kb="other"),
    ]
    assert answered_pages(earlier, "m2") == {"a.md"}
    assert answered_pages(earlier, None) == {"a.md", "b.md"}
    assert answered_pages(earlier, "m3", qualified=True) == {"sample/a.md", "other/b.md"}


def test_one_lookup_keeps_the_best_ranked_of_a_page_and_its_translation():
    ranked = [C("en/tips.md", 0.81), C("en/named.md", 0.76), C("zh/tips.md", 0.42), C("zh/named.md", 0.40)]
    assert [c.doc_key for c in one_per_page(ranked)] == ["en/tips.md", "en/named.md"]
