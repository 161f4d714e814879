"""query_knowledge_graph on the real stores: a KB with a graph, one without, one broken, one unknown."""

import pytest
from doc_fixtures import write_kb

from executor.core.errors import InputError
from executor.prompts.results import kg_text
from executor.retrieval.ingest import ingest

PLAIN_DOCS = {
    "ops/docker-notes.md": "# Docker notes\nWe build every service image with Docker multi-stage builds.",
    "ops/oncall.md": "# On-call\nThe on-call engineer owns incidents for a week.",
}


@pytest.fixture(scope="module")
def kbs(sample_rt, tmp_path_factory):
    """sample (graph config), plain (none), broken (its collection dropped behind the catalog's back)."""
    folder = write_kb(tmp_path_factory.mktemp("plain-kb"), PLAIN_DOCS)
    for name in ("plain", "broken"):
        if sample_rt.catalog.get(name) is None:
            ingest(sample_rt, folder, name, progress=False)
    sample_rt.vectors.drop("broken")
    return sample_rt


def test_one_failing_kb_never_fails_the_others(kbs):
    result = kbs.kg.query(["sample", "plain", "broken", "nope", "sample", "plain"], "Docker 镜像怎么构建", "kg-1")
    assert list(result.kb_counts) == ["sample", "plain"]  # duplicates folded, order kept
    assert result.knowledge_base_ids == ["sample", "plain", "broken", "nope"]
    assert result.has_graph_config is True  # seed 002: one flag for the call; the per-KB answer beside it
    assert result.graph_config_by_kb == {"sample": True, "plain": False, "broken": False}
    assert kbs.kg.query(["plain"], "Docker 镜像怎么构建", "kg-1b").has_graph_config is False
    assert {"knowledge_base_id": "plain", "message": "no graph config: hybrid search only"} in result.warnings
    assert [e["knowledge_base_id"] for e in result.errors] == ["broken", "nope"]
    assert "unknown knowledge base 'nope'" in result.errors[1]["error"]
    assert all("\n" not in e["error"] for e in result.errors)
    assert result.count == len(result.results) > 0
    assert {kb for r in result.results for kb in r.knowledge_bases} == {"sample", "plain"}
    assert [r.relevance_level for r in result.results] and all(
        r.relevance_level in ("HIGHLY_RELEVANT", "REFERENCE") for r in result.results
    )


def test_edges_are_real_when_the_graph_connects_the_entities(kbs):
    result = kbs.kg.query(["sample"], "ComfyUI 依赖 Docker 吗", "kg-2")
    edges = {(e["source"], e["type"], e["target"]) for e in result.graph_data["edges"]}
    assert ("ComfyUI", "DEPENDS_ON", "Docker") in edges
    names = {n["name"] for n in result.graph_data["nodes"]}
    assert {"ComfyUI", "Docker"} <= names and all(
        e["source"] in names and e["target"] in names for e in result.graph_data["edges"]
    )
    assert result.display_type == "graph_query_results"
    text = kg_text(result)
    assert "ComfyUI -DEPENDS_ON-> Docker" in text and "score" not in text
    assert {n["name"] for n in result.graph_data["nodes"] if n["in_query"]} == {"ComfyUI", "Docker"}


def test_an_off_topic_query_has_no_results_and_no_graph(kbs):
    result = kbs.kg.query(["sample"], "weather forecast for the weekend picnic", "kg-off-topic")
    assert result.count == 0 and result.results == []
    assert result.graph_data == {"nodes": [], "edges": []} and result.display_type == "graph_query_results"


def test_results_merge_by_chunk_id_across_kbs(kbs, tmp_path):
    folder = write_kb(tmp_path / "copy", PLAIN_DOCS)
    if kbs.catalog.get("plain_copy") is None:
        ingest(kbs, folder, "plain_copy", progress=False)
    result = kbs.kg.query(["plain", "plain_copy"], "Docker multi-stage builds", "kg-3")
    merged = [r for r in result.results if r.doc_key == "ops/docker-notes.md"]
    assert len(merged) == 1 and merged[0].knowledge_bases == ["plain", "plain_copy"]


def test_documents_are_not_sent_twice_in_a_session(kbs):
    first = kbs.kg.query(["plain"], "on-call engineer", "kg-4")
    again = kbs.kg.query(["plain"], "on-call engineer", "kg-4")
    assert any(r.content for r in first.results)
    assert all(r.already_returned and not r.content for r in again.results)


@pytest.mark.parametrize(
    "ids, query, message",
    [
        ([f"kb{i}" for i in range(11)], "x", "at most 10"),
        (["sample"], "   ", "the query is empty"),
        ([], "x", "at least one"),
        ("not-a-list", "x", None),
    ],
)
def test_bad_calls_are_rejected_clearly(kbs, ids, query, message):
    if message is None:  # a string is read as a comma-separated list, not rejected
        assert kbs.kg.query(ids, "Docker", "kg-5").errors[0]["knowledge_base_id"] == "not-a-list"
        return
    with pytest.raises(InputError, match=message):
        kbs.kg.query(ids, query, "kg-5")


def test_every_call_is_logged(kbs):
    from executor.tools.call import ToolCall
    from executor.tools.registry import KG_QUERY

    out = kbs.tools.invoke(
        KG_QUERY, ToolCall("kg-6"), {"knowledge_base_ids": ["sample", "nope"], "query": "Helm rollback"}
    )
    assert out.error is None and "nope" in out.text  # one unknown knowledge base does not fail the call
    (row,) = kbs.log.rows(session_id="kg-6", tool_name="query_knowledge_graph")
    assert row.arguments["knowledge_base_ids"] == ["sample", "nope"] and "nope" in row.error
    assert row.kb == "sample,nope" and row.latency_ms > 0
    assert row.retrieval_details["kb_counts"]["sample"] > 0 and row.retrieval_details["scores"]
    # each knowledge base that answered, with its worker's wall and CPU time (what bench_kg's breakdown reads)
    assert list(row.retrieval_details["kb_timings"]) == ["sample"]
    assert set(row.retrieval_details["kb_timings"]["sample"]) == {"ms", "cpu_ms"}


def test_the_executor_can_call_it(kbs):
    from langchain_core.messages import AIMessage
    from langgraph.checkpoint.memory import InMemorySaver
    from scripted_model import ScriptedChatModel, raw_call, tool_message

    from executor.agent.session import run_turn
    from executor.nodes.state import Context

    model = ScriptedChatModel(
        responses=[
            tool_message(
                raw_call("query_knowledge_graph", {"knowledge_base_ids": ["sample", "plain"], "query": "Docker"})
            ),
            AIMessage("Docker builds images. [deployment/docker-basics.md]"),
        ]
    )
    app = kbs.app(model, "llm", checkpointer=InMemorySaver())
    result = run_turn(app, "What do we use Docker for?", "kg-7", Context(), "llm")
    assert result.trace[0]["tool"] == "query_knowledge_graph" and result.trace[0]["sent"]
    assert result.executed_lookups == 1


def test_a_slow_kb_times_out_alone(kbs, monkeypatch):
    import time as clock

    original = kbs.kg._one

    def slow_for_plain(kb, *args):
        if kb == "plain":
            clock.sleep(5)
        return original(kb, *args)

    monkeypatch.setattr(kbs.kg, "_one", slow_for_plain)
    started = clock.monotonic()
    result = kbs.kg.query(["sample", "plain"], "Helm rollback", "kg-8", timeout_s=1.5)
    assert clock.monotonic() - started < 4.5  # the call does not wait for the slow one (5 s)
    assert result.errors == [{"knowledge_base_id": "plain", "error": "timed out after 1.5 s"}]
    assert result.kb_counts["sample"] > 0


def test_a_failing_kb_is_not_remembered_as_nothing_found(kbs):
    """The repeat rules remember every call per knowledge base that answered; a broken one's silence is not a
    miss, so a later lookup there is not blocked as `not_found_repeated`."""
    kbs.kg.query(["sample", "broken"], "Docker 镜像怎么构建", "kg-remember", batch="m1")
    assert {e.kb for e in kbs.memory.lookups("kg-remember")} == {"sample"}
    again = kbs.kg.query(["sample"], "Docker 镜像怎么构建？", "kg-remember", batch="m2")
    assert again.dedup_reason is not None and all(not h.content for h in again.results)
