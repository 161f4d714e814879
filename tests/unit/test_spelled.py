"""A query is searched with its words spelt as the KB writes them (executor/retrieval/alignment.py: `as_searched`;
hostile pass sixteen, findings 2 and 3)."""

import pytest

from executor.retrieval.alignment import as_searched
from executor.retrieval.vocabulary import Vocabulary

PAGES = [
    ("err-timeout.md", "# ERR_TIMEOUT\nThe upstream did not answer in time: ERR_TIMEOUT."),
    ("pool.md", "# PgBouncer\nPgBouncer pools connections. Keep max_connections low.\nUPDATE pg_settings SET x = 1"),
    ("proxy.md", "# Nginx\nproxy_read_timeout sets the timeout. Keep an eye on it; the pool is local."),
]


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
