"""What `executor llm serve` accepts as a tool's parameters: the reply is decoded to them, so a schema the grammar
cannot finish in reasonable time is bad input (400), named by its tool."""

import json

import pytest
from langchain_core.utils.function_calling import convert_to_openai_tool

from executor.local_llm.protocol import RequestError, parse_request
from executor.tools.registry import list_knowledge_bases, lookup_knowledge, navigate_graph, query_knowledge_graph


def request_with(*tools: dict) -> bytes:
    return json.dumps({"messages": [{"role": "user", "content": "hi"}], "tools": list(tools)}).encode()


def tool(name: str, parameters: dict) -> dict:
    return {"type": "function", "function": {"name": name, "parameters": parameters}}


def nested(levels: int) -> dict:
    schema: dict = {"type": "string"}
    for _ in range(levels):
        schema = {"type": "object", "properties": {"x": schema}, "required": ["x"]}
    return schema


def flat(count: int) -> dict:
    names = [f"p{i}" for i in range(count)]
    return {"type": "object", "properties": {n: {"type": "string"} for n in names}, "required": names}


def test_our_own_tools_and_a_rich_real_world_schema_are_accepted():
    ours = [convert_to_openai_tool(t) for t in (lookup_knowledge, navigate_graph, query_knowledge_graph)]
    ours.append(convert_to_openai_tool(list_knowledge_bases))
    # a GitHub-style "create issue" tool: a dozen fields, lists of objects, a nested options object
    issue = flat(12)
    issue["properties"]["labels"] = {"type": "array", "items": {"type": "string"}}
    issue["properties"]["assignees"] = {"type": "array", "items": flat(3)}
    issue["properties"]["options"] = nested(4)
    request = parse_request(request_with(*ours, tool("create_issue", issue)))
    assert [t.name for t in request.active_tools()] == [
        "lookup_knowledge",
        "navigate_graph",
        "query_knowledge_graph",
        "list_knowledge_bases",
        "create_issue",
    ]


@pytest.mark.parametrize(
    ("parameters", "figures"),
    [
        (nested(200), "nested 201 levels"),  # held the engine ~100 s
        (flat(300), "300 properties"),  # 58 s
        ({"type": "object", "properties": {"a": {"anyOf": [nested(30), {"type": "null"}]}}}, "nested 32 levels"),
    ],
)
def test_a_tool_schema_too_large_for_the_grammar_is_refused_naming_the_tool(parameters, figures):
    with pytest.raises(RequestError) as refused:
        parse_request(request_with(tool("lookup_knowledge", flat(2)), tool("huge", parameters)))
    message = str(refused.value)
    assert message.startswith("tool 'huge': its parameters are too large") and figures in message, message


def test_a_large_tool_the_request_does_not_offer_is_not_held_against_it():
    """tool_choice "none" or a named tool: only the tools the reply may call become the grammar."""
    body = json.loads(request_with(tool("small", flat(2)), tool("huge", flat(300))))
    body["tool_choice"] = {"type": "function", "function": {"name": "small"}}
    assert [t.name for t in parse_request(json.dumps(body).encode()).active_tools()] == ["small"]
