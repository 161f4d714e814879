"""Self-calibration's generated questions: an English heading asked in Chinese is asked in Chinese words, as a
Chinese user would ask it, with its names kept."""

import random

from executor.retrieval.glossary import to_chinese
from executor.retrieval.self_calibration import SUBJECT_EN, SUBJECT_ZH, _ask


def test_an_english_heading_asked_in_chinese_has_its_common_words_in_chinese_and_its_names_kept():
    assert to_chinese("Creating a New Translation") == "创建新翻译"
    assert to_chinese("Debugging util-linux programs") == "调试 util-linux 程序"
    assert to_chinese("Forest covertypes") is None  # no glossary word: asked as it was
    question = _ask("Release schedule", SUBJECT_EN, SUBJECT_ZH, "en", True, random.Random(1))
    assert "发布计划" in question and "Release" not in question
