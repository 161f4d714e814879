"""ChatOpenAI, streaming, against a fake OpenAI-compatible server on loopback, through the real graph and stores."""

import uuid

from fake_openai import FakeOpenAI
from langgraph.checkpoint.memory import InMemorySaver

from executor.agent.llm import make_chat_model
from executor.agent.session import run_turn
from executor.core.settings import Settings
from executor.nodes.state import Context


def run(sample_rt, server, question):
    settings = Settings(
        home=sample_rt.settings.home, openai_base_url=server.base_url, openai_api_key="test-key", model="fake-model"
    )
    model, mode = make_chat_model(settings)
    assert mode == "llm"
    app = sample_rt.app(model, mode, checkpointer=InMemorySaver())
    tokens: list[str] = []
    result = run_turn(app, question, f"oa-{uuid.uuid4().hex[:8]}", Context(), mode, on_token=tokens.append)
    return result, tokens


def test_precise_lookup_then_a_streamed_answer(sample_rt):
    answer = "ERR_TIMEOUT 表示服务在规定时间内没有完成请求 [troubleshooting/err-timeout.md]"
    with FakeOpenAI(
        [{"tool_calls": [("lookup_knowledge", {"query": "ERR_TIMEOUT 是什么"})]}, {"content": answer}]
    ) as server:
        result, tokens = run(sample_rt, server, "ERR_TIMEOUT 是什么？")
    assert result.mode == "llm" and result.answer == answer
    assert len(tokens) > 1 and "".join(tokens) == answer  # it streamed
    first, second = server.requests
    assert first["model"] == "fake-model" and first["stream"] is True
    tools = {t["function"]["name"]: t["function"] for t in first["tools"]}
    assert set(tools) == {"lookup_knowledge", "query_knowledge_graph", "navigate_graph", "list_knowledge_bases"}
    assert {"relations", "hops"} <= set(tools["navigate_graph"]["parameters"]["properties"])
    system = first["messages"][0]
    assert system["role"] == "system" and "PRECISE" in system["content"]
    assert "- sample: 42 documents, knowledge graph" in system["content"]  # the KBs of this run
    # PRECISE sent the turn to the answer node: the second call has no tools and carries the evidence
    assert "tools" not in second
    assert "troubleshooting/err-timeout.md" in second["messages"][-1]["content"]
    assert [t["relevance_level"] for t in result.trace] == ["PRECISE"]
    assert result.citations == [
        {
            "doc_key": "troubleshooting/err-timeout.md",
            "title": result.citations[0]["title"],
            "domain": "troubleshooting",
        }
    ]


def test_the_llm_answers_after_reading_tool_results(sample_rt):
    with FakeOpenAI(
        [
            {"tool_calls": [("lookup_knowledge", {"query": "how should we store passwords"})]},
            {"content": "Hash them with a slow hash. [security/password-storage.md]"},
        ]
    ) as server:
        result, tokens = run(sample_rt, server, "How should we store passwords?")
    assert result.answer.startswith("Hash them") and "".join(tokens) == result.answer
    tool_messages = [m for m in server.requests[1]["messages"] if m["role"] == "tool"]
    assert len(tool_messages) == 1
    text = tool_messages[0]["content"]
    assert "relevance_level:" in text and "completeness_hint:" in text
    assert "similarity" not in text and "distance" not in text
    assert server.requests[1]["messages"][-2]["tool_calls"][0]["function"]["name"] == "lookup_knowledge"
