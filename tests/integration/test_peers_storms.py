"""The peers benchmark's storms on the real stores (Milvus Lite, USE, SQLite): which of Executor's calls searched
the knowledge base, so that a retrieval call is counted when, and only when, one ran."""

import pytest

from evals import REPO_ROOT, bench_peers
from evals.peers.executor import run_session
from evals.scenarios_model import load_scenarios


@pytest.fixture(scope="module")
def scenarios():
    return {s.id: s for s in load_scenarios([REPO_ROOT / "evals" / "scenarios"])}


@pytest.fixture
def searches(sample_rt, monkeypatch):
    """The queries the vector store was searched with (dense search: every graded lookup runs one)."""
    queries: list[str] = []
    dense = sample_rt.vectors.dense_search_many

    def counted(kb, vectors, limit, *args, **kwargs):
        queries.extend([kb] * len(vectors))
        return dense(kb, vectors, limit, *args, **kwargs)

    monkeypatch.setattr(sample_rt.vectors, "dense_search_many", counted)
    return queries


def test_rephrasings_of_a_miss_are_blocked_before_the_knowledge_base_is_searched(sample_rt, scenarios, searches):
    # turn 1 asks what the KB cannot answer; turn 2 rephrases it three times (cosines 0.57-0.74 to the miss)
    turns = run_session(sample_rt, scenarios["mt-miss-then-rephrasing-storm-en"], "scripted", None, 12)
    assert turns[1].calls == [
        "lookup_knowledge: holiday allowance (not_found_repeated)",
        "lookup_knowledge: annual leave (not_found_repeated)",
        "lookup_knowledge: vacation days (not_found_repeated)",
    ]
    assert turns[1].citations == [] and turns[1].delivered == []  # no search, no retrieved text
    # one search, turn 1's: the rephrasings were judged on their queries and never searched, and none is counted
    assert len(searches) == 1
    assert [t.retrieval_calls for t in turns] == [1, 0]


def test_a_rephrasing_deduplicated_after_its_search_still_counts(sample_rt, scenarios):
    # 慢 SQL 分析 (cosine 0.49 to 慢查询优化, below the overlap threshold) has to search to find that its best page
    # is the one the session has: it sends nothing, and it is a retrieval call
    report = bench_peers.run(sample_rt, [scenarios["storm-slow-query-zh"]], "scripted", None, 12, 4)
    executor = report["per_scenario"][0]["executor"]
    assert executor["calls"] == [["lookup_knowledge: 慢查询优化", "lookup_knowledge: 慢 SQL 分析 (doc_retrieved)"]]
    assert executor["retrieval_calls"] == [2]
    assert report["agents"]["executor"]["deduplicated_calls"] == 1


def test_an_identifier_of_the_held_page_sends_no_page_without_it(sample_rt, scenarios):
    # ERR_CERT_EXPIRED is an identifier only the TLS page uses, the page the session already holds; the timeout
    # page is as similar to the bare code, but does not name it, and was sent as if it answered as well
    turns = run_session(sample_rt, scenarios["storm-tls-zh"], "scripted", None, 12)
    assert turns[0].calls[2] == "lookup_knowledge: ERR_CERT_EXPIRED (doc_retrieved)"
    assert turns[0].retrieval_calls == 3  # it searched to find that: it counts
    assert turns[0].citations == ["security/tls-certificates.md"]
    assert not any("err-timeout" in text for text in turns[0].delivered)


def test_a_target_is_judged_on_the_means_not_on_the_rounded_ratio():
    # the storms' characters after the identifier rule: 4,387 against 2,194.5 a question is 1.9991x, printed 2.0x
    def agent(calls: float, chars: float) -> dict:
        figures = {"retrieval_calls_per_question": {"mean": calls}, "retrieved_chars_per_question": {"mean": chars}}
        return (
            figures
            | {"llm_calls_per_question": {"mean": 2.0}, "citation_recall": 1.0}
            | {
                "resent_documents": 0,
                "limit_endings": 0,
            }
        )

    report = bench_peers.comparison({"executor": agent(2.0, 2194.5), "agentic_rag": agent(6.0, 4387.0)})
    rag = report["agentic_rag"]
    assert rag["retrieved_chars_ratio"] == 2.0  # as printed
    assert not rag["targets"]["retrieved_chars_2x_fewer"]
    assert rag["targets"]["retrieval_calls_3x_fewer"]  # 6.0 against 2.0: exactly 3x is met


def test_retrieved_characters_are_those_of_the_calls_that_searched(sample_rt, scenarios):
    # one message of 20 lookups: the budget lets 3 search; the 17 refusals carry no retrieved text (the peers' figure
    # counts only their retriever's results), and are still reported, as tool text
    turns = run_session(sample_rt, scenarios["storm-disk-full-en-batch"], "scripted", None, 12)
    turn = turns[0]
    assert turn.retrieval_calls == 3 and len(turn.delivered) == 3
    assert not any("budget" in text for text in turn.delivered)
    refusals = turn.extra["tool_text_chars"] - sum(map(len, turn.delivered))
    assert refusals == 17 * len(
        "Blocked: this turn's lookup budget is spent. Answer from what you have and say what is missing."
    )
