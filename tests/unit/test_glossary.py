"""The bundled English-Chinese glossary (executor/retrieval/glossary.tsv) and what reads it: self-calibration's
generated questions (an English heading asked in Chinese is asked in Chinese words, as a Chinese user would ask
it, with its names kept) and a Chinese question's words counted on an English page."""

import contextlib
import fnmatch
import random
import tomllib
from collections import Counter
from importlib import resources
from pathlib import Path

import pytest

from evals.build_glossary_words import main as count_words
from executor.retrieval.glossary import ENGLISH, GLOSSARY, GLOSSARY_FILE, _load, equivalents, to_chinese
from executor.retrieval.self_calibration import SUBJECT_EN, SUBJECT_ZH, _ask
from executor.retrieval.vocabulary import STOPWORDS, Vocabulary, cjk_words, query_terms

REPO = Path(__file__).resolve().parents[2]


def test_an_english_heading_asked_in_chinese_has_its_common_words_in_chinese_and_its_names_kept():
    assert to_chinese("Creating a New Translation") == "创建新建翻译"  # 新 alone is no segmenter word
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


def _rows() -> list[tuple[str, str]]:
    text = resources.files("executor.retrieval").joinpath(GLOSSARY_FILE).read_text(encoding="utf-8")
    rows = [line.split("\t") for line in text.splitlines() if line.strip() and not line.startswith("#")]
    assert all(len(row) == 2 for row in rows)
    return [(en, zh) for en, zh in rows]


def test_every_chinese_word_of_the_glossary_is_one_word_to_the_segmenter():
    """A question's Chinese is matched by jieba's words of two characters or more: an entry jieba splits (变更日志 ->
    变更 + 日志) or drops (表, 值) never matches a question's word, and `to_chinese` writes words no question has."""
    split = {en: (zh, cjk_words(zh)) for en, zh in GLOSSARY.items() if cjk_words(zh) != [zh]}
    assert split == {}


def test_the_glossary_file_loads_each_english_word_once_and_is_the_glossary():
    rows = _rows()
    twice = [en for en, n in Counter(en for en, _ in rows).items() if n > 1]
    assert twice == []
    assert dict(rows) == GLOSSARY
    assert len(GLOSSARY) >= 1500  # the words of real questions, not only of headings
    assert not STOPWORDS & {en for en in GLOSSARY if en not in ("use", "using")}  # `using`: kept from the first list
    assert all(en == en.lower() and en.isascii() and " " not in en for en in GLOSSARY)


def test_a_malformed_or_repeated_glossary_line_is_an_error_naming_its_line():
    assert _load("# a comment\n\ndisk\t磁盘\n") == {"disk": "磁盘"}
    with pytest.raises(ValueError, match=r"glossary.tsv:2: 'disk' is given twice"):
        _load("disk\t磁盘\ndisk\t硬盘\n")
    with pytest.raises(ValueError, match=r"glossary.tsv:1: expected 'english<TAB>chinese'"):
        _load("disk 磁盘\n")


def test_the_glossary_file_is_package_data_of_the_wheel():
    """Read with importlib.resources at import: a wheel without it fails at `import executor.retrieval.glossary`."""
    data = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]["package-data"]
    assert any(fnmatch.fnmatch(GLOSSARY_FILE, pattern) for pattern in data.get("executor.retrieval", []))


def test_spot_checks_both_ways():
    assert "disk" in equivalents("磁盘", "en")
    assert {"certificate", "cert"} <= ENGLISH["证书"]
    assert {"rollback", "rollbacks"} <= equivalents("回滚", "en")
    assert GLOSSARY["deployment"] == "部署" and GLOSSARY["timeout"] == "超时" and GLOSSARY["replica"] == "副本"
    # a Chinese engineer's question: each of its words a page in English writes (the page: rollback, migration,
    # database, failed, log)
    asked = "回滚之后数据库迁移失败，日志里有什么？"
    page = {"rollback", "migration", "database", "fail", "failed", "log"}
    vocabulary = Vocabulary.build([("zh.md", "回滚 迁移 数据库 失败 日志 " * 5), ("en.md", " ".join(page))])
    words = set(query_terms(asked, vocabulary).weights)
    assert {"回滚", "数据库", "迁移", "失败", "日志"} <= words
    assert all(equivalents(w, "en") & page for w in {"回滚", "数据库", "迁移", "失败", "日志"})
    assert to_chinese("Configuring the database backup schedule") == "配置数据库备份计划"
    assert to_chinese("Rotating TLS certificates") == "轮换 TLS 证书"


def test_the_word_count_chooses_words_many_packages_write(tmp_path: Path):
    """`evals/build_glossary_words.py`: a word counts once per package that writes it (one long manual does not
    crown its own words), licence files are skipped, and plurals fold into the base form."""
    for package, text in (("a", "Restart the daemons. Restart again."), ("b", "restart daemon"), ("c", "zebra " * 50)):
        (tmp_path / package).mkdir()
        (tmp_path / package / "README.md").write_text(text, encoding="utf-8")
    (tmp_path / "c" / "copyright").write_text("restart " * 99, encoding="utf-8")
    out = tmp_path / "words.tsv"
    with out.open("w") as f, contextlib.redirect_stdout(f):
        assert count_words([str(tmp_path), "--top", "3"]) == 0
    rows = [line.split("\t") for line in out.read_text().splitlines()]
    assert rows[:2] == [["restart", "2", "3"], ["daemon", "2", "2"]]
    assert rows[2][0] == "zebra"
    assert count_words([str(tmp_path / "missing")]) == 2
