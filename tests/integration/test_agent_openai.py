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


def test_a_turn_stopped_after_its_tool_call_leaves_the_thread_answering(sample_rt):
    """A chat UI's Stop (or a run cancelled or interrupted on LangGraph's server) right after the model asked for a
    lookup leaves the thread's checkpoint with a tool call and no result. The endpoint refuses every later request
    of that thread as OpenAI does (the fake answers 400 like the real API): the next turn must still answer."""
    from langchain_core.messages import HumanMessage

    with FakeOpenAI(
        [
            {"tool_calls": [("lookup_knowledge", {"query": "ERR_TIMEOUT"})]},  # the stopped turn
            {"content": "Use a pool of 20 connections. [infrastructure/mysql-connection-pool.md]"},
        ]
    ) as server:
        settings = Settings(
            home=sample_rt.settings.home, openai_base_url=server.base_url, openai_api_key="test-key", model="fake-model"
        )
        model, mode = make_chat_model(settings)
        app = sample_rt.app(model, mode, checkpointer=InMemorySaver())
        session = f"oa-stop-{uuid.uuid4().hex[:8]}"
        config = {"configurable": {"thread_id": session}}
        app.invoke(
            {"messages": [HumanMessage("What is ERR_TIMEOUT?")]}, config, context=Context(), interrupt_before=["guard"]
        )
        assert app.get_state(config).next == ("guard",)  # stopped where a Stop after the model's reply leaves it

        result = run_turn(app, "How big should the connection pool be?", session, Context(), mode)
    assert result.answer.startswith("Use a pool of 20 connections"), result.answer
    sent = server.requests[1]["messages"]
    stopped = next(i for i, m in enumerate(sent) if m.get("tool_calls"))
    assert sent[stopped + 1]["role"] == "tool"
    assert sent[stopped + 1]["tool_call_id"] == sent[stopped]["tool_calls"][0]["id"]
    assert "not run" in sent[stopped + 1]["content"]
    assert sent[-1] == {"role": "user", "content": "How big should the connection pool be?"}
