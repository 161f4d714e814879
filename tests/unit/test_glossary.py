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


def test_a_chinese_question_covers_an_english_page_through_the_glossary():
    """`coverage_other_language`: a Chinese question's words count on an English page that writes their glossary
    English; an English question's words are not put into Chinese (that made a Chinese page outrank its English
    original), and a page in the question's own language gets 0 (its overlap is `coverage_same_language`)."""
    from executor.retrieval.glossary import equivalents
    from executor.retrieval.ranking import Candidate, features
    from executor.retrieval.vocabulary import Vocabulary, query_terms
    from executor.stores.vector_hits import ChunkHit

    assert {"configuration", "configure", "config"} <= equivalents("配置", "en")
    assert equivalents("upgrade", "zh") == {"upgrade"}
    # a bilingual KB (`Vocabulary.chinese`: 20 Chinese terms or more); on an English-only one the feature is 0
    chinese_words = "，".join(
        "升级 配置 保留 发布 内容 版本 仓库 模板 依赖 钩子 测试 插件 安装 卸载 回滚 调试 命令 参数 变量 目录".split()
    )
    vocabulary = Vocabulary.build([("en.md", "Upgrade configuration"), ("zh.md", chinese_words)])
    english_only = Vocabulary.build([("en.md", "Upgrade configuration"), ("x.md", "Other things")])

    def page(key: str, text: str) -> Candidate:
        c = Candidate(key, key, "docs")
        c.add(ChunkHit(f"{key}#0", key, 0, "docs", key, text, 0.8, 0))
        c.similarity = 0.6
        return c

    english = page("en.md", "Upgrade: keep the configuration of the release.")
    asked = query_terms("升级的时候配置会保留吗？", vocabulary)
    across = features(english, 0.6, 0.3, 1.0, asked)
    assert across["coverage"] == 0.0 < across["coverage_other_language"]  # 升级 and 配置, not 时候 or 保留
    chinese = features(page("zh.md", "升级时会保留发布的配置。"), 0.6, 0.3, 1.0, asked)
    assert chinese["coverage_other_language"] == 0.0
    alone = query_terms("升级的时候配置会保留吗？", english_only)
    assert features(english, 0.6, 0.3, 1.0, alone)["coverage_other_language"] == 0.0
