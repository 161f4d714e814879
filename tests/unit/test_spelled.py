"""A query is searched with its words spelt as the KB writes them, without noise (executor/retrieval/alignment.py:
`as_searched`; hostile pass sixteen, findings 2, 3 and 5)."""

import pytest

from executor.retrieval.alignment import as_searched
from executor.retrieval.keywords import normalize
from executor.retrieval.vocabulary import Vocabulary

PAGES = [
    ("err-timeout.md", "# ERR_TIMEOUT\nThe upstream did not answer in time: ERR_TIMEOUT."),
    ("pool.md", "# PgBouncer\nPgBouncer pools connections. Keep max_connections low.\nUPDATE pg_settings SET x = 1"),
    ("proxy.md", "# Nginx\nproxy_read_timeout sets the timeout. Keep an eye on it; the pool is local."),
]
ZALGO = "\u0301\u0300\u0302\u0303\u0308"


@pytest.fixture(scope="module")
def vocabulary():
    return Vocabulary.build(PAGES)


@pytest.mark.parametrize(
    ("typed", "searched"),
    [
        # an identifier in another case, width or script of letters: the KB's own spelling
        ("err_timeout", "ERR_TIMEOUT"),
        ("Err_Timeout 怎么排查？", "ERR_TIMEOUT 怎么排查?"),
        ("ｅｒｒ＿ｔｉｍｅｏｕｔ", "ERR_TIMEOUT"),
        ("ⓔⓡⓡ_ⓣⓘⓜⓔⓞⓤⓣ", "ERR_TIMEOUT"),
        ("pgbouncer settings", "PgBouncer settings"),
        ("PGBOUNCER", "PgBouncer"),  # unshouted, then spelt
        ("MAX_CONNECTIONS for pgbouncer", "max_connections for PgBouncer"),
        # a name cut in two, in any case or width: joined as the KB writes it
        ("Pg Bouncer", "PgBouncer"),
        ("how to tune pg bouncer", "how to tune PgBouncer"),
        ("Ｐｇ　Ｂｏｕｎｃｅｒ", "PgBouncer"),
        # noise: stacked marks, a word said over and over, a word longer than any the KB writes
        ("ERR_TIMEOUT" + ZALGO * 10, "ERR_TIMEOUT"),
        ("".join(c + ZALGO for c in "ERR_TIMEOUT"), "ERR_TIMEOUT"),
        ("ERR_TIMEOUT 是什么" + " 的" * 600, "ERR_TIMEOUT 是什么 的"),
        ("ERR_TIMEOUT " + "a" * 200, "ERR_TIMEOUT"),
    ],
)
def test_a_query_is_searched_as_the_kb_writes_its_words(vocabulary, typed, searched):
    assert as_searched(typed, vocabulary) == searched


@pytest.mark.parametrize(
    "typed",
    [
        "ERR_TIMEOUT",
        "how do we keep the pool local?",  # the KB writes `Keep` and `UPDATE`: a heading's capital is no name
        "how do we update the pool",
        "proxy read timeout",  # three words the KB writes, not a name cut in two
        "time out",  # the KB writes `timeout`, but `out` is a function word: no name cut in two
        "cafe\u0301 ERR_TIMEOUT",  # a mark or two on a letter are an accent, not noise
        "ERR_TIMEOUT aaaaaaaaaaaaaaaaaaaa",  # a word shorter than a keyword may be
        "ERR_TIMEOUT at https://example.org/" + "x" * 60 + "/proxy_read_timeout",  # long, but naming a KB term
        "a" * 300,  # nothing but noise: searched as it is (it finds nothing either way)
        "很好 很好",
        "连接池怎么配置",
        "",
    ],
)
def test_a_query_the_kb_writes_as_typed_is_searched_as_typed(vocabulary, typed):
    assert as_searched(typed, vocabulary) == typed


def test_a_word_the_kb_also_writes_as_typed_stays():
    both = Vocabulary.build([("a.md", "PgBouncer, or pgbouncer in its config"), ("b.md", "PgBouncer pools")])
    assert as_searched("pgbouncer", both) == "pgbouncer"
    assert as_searched("Pgbouncer", both) == "PgBouncer"  # the spelling the KB writes most


def test_the_spellings_are_kept_with_the_vocabulary(vocabulary, tmp_path):
    path = tmp_path / "vocabulary.json"
    vocabulary.save(path, "v1")
    loaded = Vocabulary.load(path, "v1")
    assert loaded is not None and loaded.spellings == vocabulary.spellings
    assert loaded.spellings["err_timeout"] == ("ERR_TIMEOUT",)


def test_stacked_combining_marks_are_no_part_of_a_keyword():
    assert normalize("".join(c + ZALGO for c in "ERR_TIMEOUT")) == "err_timeout"
    assert normalize("Tiếng Việt") == "tiếng việt"  # two marks on a letter are a language's


@pytest.mark.parametrize(
    ("typed", "searched"),
    [
        ("PgBouncer 是什么？ 3", "PgBouncer 是什么？"),  # a chat's turn number after the question mark
        ("PgBouncer 是什么？ #1", "PgBouncer 是什么？"),
        ("PgBouncer 是什么 (ticket #3)", "PgBouncer 是什么"),
        ("PgBouncer #3", "PgBouncer"),
        ("What is PgBouncer? 12 #4", "What is PgBouncer?"),
    ],
)
def test_a_number_tagged_on_after_the_question_is_not_searched(vocabulary, typed, searched):
    assert as_searched(typed, vocabulary) == searched


@pytest.mark.parametrize("typed", ["install Python 3", "Python 3.11", "#3", "what is 3?", "step 3 of 5"])
def test_a_number_in_the_question_is_searched(vocabulary, typed):
    assert as_searched(typed, vocabulary) == typed
