"""Adding a tool is one table entry plus its handler: it is then bound, prompted, guarded, dispatched and logged."""

import dataclasses
import uuid

import anyio
import pytest
from conftest import make_runtime
from langchain_core.messages import AIMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from mcp.shared.memory import create_connected_server_and_client_session
from pydantic import BaseModel, Field
from scripted_model import ScriptedChatModel, raw_call, tool_message

from evals.scenarios_model import Scenario
from executor.agent.mcp_server import ExecutorMCP
from executor.agent.session import run_turn
from executor.nodes.state import Context
from executor.tools.call import ToolOutput
from executor.tools.registry import Tool, ToolTable, tool_map


class shout(BaseModel):  # noqa: N801 - the tool name
    """Repeat a word in capitals."""

    word: str = Field(description="the word", min_length=1, max_length=20)


def shout_handler(call, args) -> ToolOutput:
    return ToolOutput(text=args.word.upper(), trace={"relevance_level": "NONE"})


SHOUT = Tool(
    shout,
    shout_handler,
    prompt={"zh": "shout(word)：大写重复", "en": "shout(word): repeat a word in capitals"},
    query_field="word",
)


@pytest.fixture(scope="module")
def rt(tmp_path_factory):
    rt = make_runtime(tmp_path_factory.mktemp("registry-home"))  # SQLite only: no vectors, no graph
    yield rt
    rt.close()


@pytest.fixture
def shout_tools(rt) -> ToolTable:
    """The runtime's table with one more agent tool: a table of this test's own, nothing registered globally."""
    return dataclasses.replace(rt.tools, agent=tool_map([*rt.tools.agent.values(), SHOUT]))


def test_a_tool_in_the_table_is_bound_prompted_dispatched_and_logged(shout_tools, rt):
    model = ScriptedChatModel(
        responses=[
            tool_message(raw_call("shout", {"word": "hello"}), raw_call("shout", {"word": ""})),
            AIMessage("done"),
        ]
    )
    app = rt.app(model, "llm", checkpointer=InMemorySaver(), tools=shout_tools)
    sid = f"reg-{uuid.uuid4().hex[:8]}"
    turn = run_turn(app, "shout hello", sid, Context(), "llm")

    assert turn.answer == "done"
    ran, refused = turn.trace
    assert ran["tool"] == "shout" and ran["query"] == "hello" and not ran["blocked"] and ran["error"] is None
    assert refused["blocked"] and refused["dedup_reason"] == "invalid_arguments"
    messages = app.get_state({"configurable": {"thread_id": sid}}).values["messages"]
    tool_texts = [m.content for m in messages if isinstance(m, ToolMessage)]
    assert "HELLO" in tool_texts
    system_prompt = model.calls[0][0].content
    assert "- shout(word): repeat a word in capitals" in system_prompt
    assert [(r.tool_name, r.query, r.blocked) for r in rt.log.rows(session_id=sid)] == [
        ("shout", "", True),
        ("shout", "hello", False),  # the guard logs the refused call before the node runs
    ]
    assert turn.executed_lookups == 0  # not a retrieval tool: the lookup budget is untouched


def test_a_tool_in_the_table_is_listed_by_the_mcp_server_and_accepted_by_scenarios(shout_tools, rt):
    async def main():
        async with create_connected_server_and_client_session(ExecutorMCP(rt, tools=shout_tools).server) as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            return tools, await client.call_tool("shout", {"word": "mcp"})

    tools, result = anyio.run(main)
    assert tools["shout"].description == "Repeat a word in capitals."
    assert tools["shout"].inputSchema["required"] == ["word"]
    assert not result.isError and result.content[0].text == "MCP"
    proposing = {"id": "s", "lang": "en", "question": "q", "proposals": [{"shout": {"word": "x"}}]}
    scenario = Scenario.model_validate(proposing, context={"tools": shout_tools.agent})
    assert scenario.flat_proposals[0][1].tool == "shout"


def test_a_tool_outside_the_table_is_unknown_everywhere(rt):
    """Another table's tool is not this one's: the runtime's graph refuses it, its MCP server does not list it,
    and a scenario may not propose it."""
    assert "shout" not in rt.tools.all
    model = ScriptedChatModel(responses=[tool_message(raw_call("shout", {"word": "hello"})), AIMessage("done")])
    turn = run_turn(
        rt.app(model, "llm", checkpointer=InMemorySaver()), "shout", f"reg-{uuid.uuid4().hex[:8]}", Context(), "llm"
    )
    assert turn.trace[0]["blocked"] and turn.trace[0]["dedup_reason"] == "unknown_tool"
    with pytest.raises(ValueError, match="unknown tool 'shout'"):
        Scenario.model_validate({"id": "s", "lang": "en", "question": "q", "proposals": [{"shout": {"word": "x"}}]})


def test_the_agent_discovers_knowledge_bases_and_navigates_with_relations_and_hops(sample_rt):
    model = ScriptedChatModel(
        responses=[
            tool_message(
                raw_call("list_knowledge_bases", {}),
                raw_call("navigate_graph", {"entity": "ComfyUI", "relations": ["DEPENDS_ON"], "hops": 1}),
                raw_call("navigate_graph", {"entity": "ComfyUI", "relations": ["LIKES"]}),
            ),
            AIMessage("done"),
        ]
    )
    app = sample_rt.app(model, "llm", checkpointer=InMemorySaver())
    sid = f"kbs-{uuid.uuid4().hex[:8]}"
    turn = run_turn(app, "What knowledge bases are there?", sid, Context(), "llm")
    assert "- sample: 42 documents, knowledge graph" in model.calls[0][0].content  # the prompt names this run's KBs
    messages = app.get_state({"configurable": {"thread_id": sid}}).values["messages"]
    kbs, paths = [m.content for m in messages if isinstance(m, ToolMessage)][-2:]
    assert "- sample: 42 documents, knowledge graph" in kbs.splitlines()  # other tests add KBs to the shared home
    lines = paths.splitlines()  # "paths:", the fence, the paths, its end: entity names are document data
    assert lines[0] == "paths:" and lines[1].startswith("<<<quoted ") and lines[-1].startswith("<<<end ")
    assert lines[2:-1] and all(line.startswith("ComfyUI -DEPENDS_ON-> ") for line in lines[2:-1])
    assert (
        turn.trace[2]["dedup_reason"] == "invalid_arguments"
        and "unknown relation type 'LIKES'" in turn.trace[2]["error"]
    )
