"""A query typed in capitals is searched in lower case, its identifiers as typed (executor/retrieval/alignment.py)."""

import pytest

from executor.retrieval.alignment import unshouted


@pytest.mark.parametrize(
    ("typed", "searched"),
    [
        ("REDIS EVICTION POLICY", "redis eviction policy"),
        ("PGBOUNCER 是什么？", "pgbouncer 是什么？"),
        ("WHAT DOES ERR_TIMEOUT MEAN", "what does ERR_TIMEOUT mean"),  # an identifier is spelt so on its page
        ("UPGRADE TO HTTP2", "upgrade to HTTP2"),
        ("ＰＧＢＯＵＮＣＥＲ", "ｐｇｂｏｕｎｃｅｒ"),  # full-width capitals are capitals too
        ("TLS for PgBouncer", "TLS for PgBouncer"),  # any lower-case letter: written as meant
        ("ERR_TIMEOUT", "ERR_TIMEOUT"),
        ("连接池怎么配置", "连接池怎么配置"),
        ("", ""),
    ],
)
def test_a_shouted_query_is_searched_in_lower_case(typed, searched):
    assert unshouted(typed) == searched
