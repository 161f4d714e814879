"""The glossary across languages: a Chinese word a bilingual KB writes only in English is a word it knows, and
self-calibration can ask about a Chinese page in English."""

from executor.retrieval.glossary import equivalents, to_english
from executor.retrieval.vocabulary import Vocabulary, query_terms


def test_a_chinese_word_written_in_english_by_a_bilingual_kb_is_known():
    chinese = (
        "数据库连接池的大小按实例数和并发量估算，高峰期观察等待线程数量，"
        "超时时间设置为三十秒，慢查询单独排查处理，告警规则写在仓库里统一评审。"
    )
    kb = Vocabulary.build([("disk.md", "When the disk is full, remove old files"), ("pool.md", chinese)])
    assert kb.chinese  # a KB writing both languages
    plain = query_terms("磁盘满了怎么清理", kb)
    english = query_terms("磁盘满了怎么清理", kb, lambda term: equivalents(term, "en"))
    assert "磁盘" in plain.weights
    assert english.coverage > plain.coverage


def test_an_english_word_is_not_stretched_by_the_glossary():
    kb = Vocabulary.build([("disk.md", "磁盘满了"), ("pool.md", "connection pool")])
    # only a Chinese word gets English spellings: an English word the KB lacks stays unknown
    english = query_terms("disk full", kb, lambda term: equivalents(term, "en"))
    assert english.coverage == query_terms("disk full", kb).coverage == 0.0


def test_a_chinese_heading_asked_in_english_keeps_its_names_and_drops_untranslated_words():
    asked = to_english("Docker Compose 本地开发环境")
    assert asked is not None and asked.startswith("Docker Compose ") and asked.isascii()
    assert len(asked.split()) >= 4  # 本地, 开发, 环境 each put into English
    assert to_english("常见问题") is None  # no glossary word: not asked in English
    assert to_english("配置") is None  # one English word is no subject


def test_a_chinese_question_word_is_a_stop_word_as_its_english_one_is():
    from executor.retrieval.vocabulary import terms

    assert terms("机器磁盘满了怎么清理？") == {"机器", "磁盘", "清理"}
    assert terms("从库延迟太大怎么办？") == {"从库", "延迟"}
    assert terms("How do I clean a full disk?") == {"clean", "full", "disk"}
