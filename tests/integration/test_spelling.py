"""Round sixteen of the hostile pass, findings 2, 3 and 5 (`evals/review/hostile16-findings.md`): an identifier typed
in another case (`err_timeout`) had the nginx page first, a name cut in two (`Pg Bouncer`) found nothing, and a
question padded with noise (200 letters, 600 × ` 的`, Zalgo accents) found nothing, on the sample KB; each is now
searched as the KB writes its words (`alignment.as_searched`). Real Milvus Lite and the USE embedder."""

import json
import uuid

import pytest
from conftest import ingested_home, run_cli

ERR_TIMEOUT = "troubleshooting/err-timeout.md"
ZALGO = "\u0301\u0300\u0302\u0303\u0308"


def _lookup(rt, query: str):
    r = rt.lookup_service.lookup(query, f"sp-{uuid.uuid4().hex[:10]}")
    return r.relevance_level, [d.doc_key for d in r.primary]


@pytest.mark.parametrize(
    ("typed", "as_the_kb_writes_it"),
    [
        ("err_timeout", "ERR_TIMEOUT"),
        ("Err_Timeout", "ERR_TIMEOUT"),
        ("ｅｒｒ＿ｔｉｍｅｏｕｔ", "ERR_TIMEOUT"),
        ("ⓔⓡⓡ_ⓣⓘⓜⓔⓞⓤⓣ", "ERR_TIMEOUT"),
        ("Err_Timeout 怎么排查", "ERR_TIMEOUT 怎么排查"),
    ],
)
def test_an_identifier_typed_in_another_case_finds_what_its_own_spelling_finds(sample_rt, typed, as_the_kb_writes_it):
    # it was REFERENCE with infrastructure/nginx-reverse-proxy.md first: the encoder is case-sensitive
    expected = _lookup(sample_rt, as_the_kb_writes_it)
    assert expected[1] == [ERR_TIMEOUT]
    assert _lookup(sample_rt, typed) == expected


def test_the_log_keeps_what_a_query_was_searched_as(sample_rt):
    r = sample_rt.lookup_service.lookup("Err_Timeout", f"sp-{uuid.uuid4().hex[:10]}")
    assert r.details["searched_as"] == "ERR_TIMEOUT"
    r = sample_rt.lookup_service.lookup("ERR_TIMEOUT", f"sp-{uuid.uuid4().hex[:10]}")
    assert "searched_as" not in r.details  # searched as typed


@pytest.mark.parametrize(
    ("typed", "joined"),
    [
        ("Pg Bouncer", "PgBouncer"),
        ("pg bouncer", "PgBouncer"),
        ("Ｐｇ Ｂｏｕｎｃｅｒ", "PgBouncer"),
        ("Pg Bouncer pool mode", "PgBouncer pool mode"),
    ],
)
def test_a_name_cut_in_two_finds_the_page_the_name_finds(sample_rt, typed, joined):
    # it was "nothing found": `Pg` and `Bouncer` are two names the KB never writes
    expected = _lookup(sample_rt, joined)
    assert expected[1] == ["infrastructure/postgres-connection-limits.md"]
    assert _lookup(sample_rt, typed) == expected


@pytest.mark.parametrize(
    ("padded", "question"),
    [
        ("ERR_TIMEOUT " + "a" * 200, "ERR_TIMEOUT"),
        ("ERR_TIMEOUT 是什么" + " 的" * 600, "ERR_TIMEOUT 是什么"),
        ("ERR_TIMEOUT 是什么" + " x" * 900, "ERR_TIMEOUT 是什么"),
        ("连接池耗尽 " + "x" * 1980, "连接池耗尽"),
        ("ERR_TIMEOUT" + "\u0301" * 50, "ERR_TIMEOUT"),
        ("".join(c + ZALGO for c in "ERR_TIMEOUT"), "ERR_TIMEOUT"),
    ],
)
def test_a_question_padded_with_noise_finds_what_the_question_finds(sample_rt, padded, question):
    # each was "nothing found": the dense vector of a query mostly noise overruled L0's match of ERR_TIMEOUT, or
    # (accents on every letter) no keyword matched at all
    expected = _lookup(sample_rt, question)
    assert expected[0] is not None
    assert _lookup(sample_rt, padded) == expected


def test_executor_lookup_of_an_identifier_in_lower_case_sends_its_page(tmp_path_factory):
    home = ingested_home(tmp_path_factory, "spelling-cli")
    try:
        r = run_cli(home, "lookup", "err_timeout", "--json")
    finally:
        run_cli(home, "graph", "stop")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert (out["relevance_level"], out["primary"][0]["doc_key"]) == ("PRECISE", ERR_TIMEOUT)
