"""`executor llm serve`: the bound on what a request's tools may ask the grammar for (issue 30, round seventeen,
findings 7 and 10). The reply is decoded to the tools' schemas on the one engine every client waits for: each
schema below held it 36 s to over 240 s before it was bounded, or asked for more than a reply can hold and was
answered with an empty reply, finish_reason "length". Each is now a 400 before any work, naming the tool and what
is too large; real tools, and schemas that ask a little above the grammar's own caps, are still served."""

from __future__ import annotations

import json

import pytest
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import BaseModel, Field

from executor.local_llm.prompt import reply_schema
from executor.local_llm.protocol import RequestError, parse_request
from executor.tools.registry import list_knowledge_bases, lookup_knowledge, navigate_graph, query_knowledge_graph


def tool(name: str, parameters: dict) -> dict:
    return {"type": "function", "function": {"name": name, "parameters": parameters}}


def body(*tools: dict, **extra) -> bytes:
    return json.dumps(
        {"messages": [{"role": "user", "content": "call the tool"}], "tools": list(tools), **extra}
    ).encode()


def one(schema: dict, required: bool = True) -> dict:
    """Parameters with the one property `a`."""
    return {"type": "object", "properties": {"a": schema}, **({"required": ["a"]} if required else {})}


def flat(count: int) -> dict:
    names = [f"p{i}" for i in range(count)]
    return {"type": "object", "properties": {n: {"type": "string"} for n in names}, "required": names}


def chain(levels: int, wrap) -> dict:
    schema: dict = {"type": "string"}
    for _ in range(levels):
        schema = wrap(schema)
    return schema


# each: the hostile request's tools, and what its 400 must name
HOSTILE = {
    # finding 10: what the size bound did not count
    "40 tools of 60 properties": ([tool(f"t{i}", flat(60)) for i in range(40)], "properties together"),
    "a 100 kB property name": (
        [tool("t", {"type": "object", "properties": {"n" * 100_000: {"type": "string"}}})],
        "characters (at most 128)",
    ),
    "an enum of 50,000 values": (
        [tool("t", one({"enum": [f"v{i}" for i in range(50_000)]}))],
        "enum at parameters.a has 50000 values",
    ),
    "anyOf of 3,000 consts": (
        [tool("t", one({"anyOf": [{"const": i} for i in range(3000)]}))],
        "anyOf at parameters.a has 3000 schemas",
    ),
    "items as a list, 40 deep": (
        [tool("t", one(chain(40, lambda s: {"type": "array", "items": [s]})))],
        "nested 42 levels",
    ),
    "prefixItems 40 deep": (
        [tool("t", one(chain(40, lambda s: {"type": "array", "prefixItems": [s]})))],
        "nested 42 levels",
    ),
    "patternProperties 40 deep": (
        [tool("t", one(chain(40, lambda s: {"type": "object", "patternProperties": {"^x": s}})))],
        "nested 42 levels",
    ),
    "additionalProperties 40 deep": (
        [tool("t", one(chain(40, lambda s: {"type": "object", "additionalProperties": s})))],
        "nested 42 levels",
    ),
    '$ref "#" as a required property': (
        [tool("t", one({"$ref": "#"}))],
        "$ref '#' at parameters.a refers to a schema it is inside of",
    ),
    "$refs in a cycle through $defs": (
        [
            tool(
                "t",
                {
                    **one({"$ref": "#/$defs/x"}),
                    "$defs": {
                        "x": {"type": "object", "properties": {"y": {"$ref": "#/$defs/y"}}},
                        "y": {"anyOf": [{"$ref": "#/$defs/x"}, {"type": "null"}]},
                    },
                },
            )
        ],
        "$ref '#/$defs/x' at parameters.a ($ref #/$defs/x).y ($ref #/$defs/y).anyOf[0] refers to a schema it is "
        "inside of",
    ),
    "a remote $ref": (
        [tool("t", one({"$ref": "https://example.com/s.json"}))],
        "only references inside the parameters",
    ),
    "a dangling $ref": ([tool("t", one({"$ref": "#/$defs/missing"}))], "points to nothing in the parameters"),
    "an integer between -1e300 and 1e300": (
        [tool("t", one({"type": "integer", "minimum": -1e300, "maximum": 1e300}))],
        "minimum at parameters.a is -1e+300",
    ),
    "600 schemas over 10 tools": (
        [tool(f"t{i}", one({"anyOf": [{"type": "null"}] * 60})) for i in range(10)],
        "more than 512 schemas",
    ),
    "a 20 kB description": (
        [tool("t", one({"type": "string", "description": "d" * 20_000}))],
        "characters of JSON, more than",
    ),
    "JSON nested 300 levels under an unknown keyword": (
        [tool("t", one({"type": "string", "x-note": chain(150, lambda s: [s])}))],
        "nest 15",
    ),
    "a pattern repeating a character 10,000 times": (
        [tool("t", one({"type": "string", "pattern": "^a{10000}$"}))],
        "repeats 10000 times",
    ),
    # finding 7: more than a reply can hold, or than the grammar's own caps allow
    "minItems 100,000": (
        [tool("t", one({"type": "array", "items": {"type": "string"}, "minItems": 100_000}))],
        "minItems 100000 at parameters.a",
    ),
    "minLength 1,000,000": (
        [tool("t", one({"type": "string", "minLength": 1_000_000}))],
        "minLength 1000000 at parameters.a",
    ),
    "minItems 32 of minLength 10": (
        [tool("t", one({"type": "array", "items": {"type": "string", "minLength": 10}, "minItems": 32}))],
        "minItems 32",
    ),
    "a 1 MB const": ([tool("t", one({"const": "x" * 1_000_000}))], "const at parameters.a is 1000002 characters"),
    "an enum value of 1 kB": ([tool("t", one({"enum": ["a", "b" * 1000]}))], "an enum value at parameters.a"),
    "minProperties above the declared properties": (
        [tool("t", one({"type": "object", "properties": {"x": {"type": "string"}}, "minProperties": 3}))],
        "minProperties 3",
    ),
    "minLength above maxLength": (
        [tool("t", one({"type": "string", "minLength": 10, "maxLength": 5}))],
        "minLength 10 is above maxLength 5",
    ),
    "a multipleOf of 0": ([tool("t", one({"type": "number", "multipleOf": 0}))], "multipleOf at parameters.a is 0"),
    "a minItems that is not a count": (
        [tool("t", one({"type": "array", "minItems": "9"}))],
        "minItems at parameters.a is '9', not a count",
    ),
}


# a hang (a grammar built for a schema it cannot serve) fails the test; how fast a refusal is, is no assert's business:
# a 1 s bound failed on a loaded machine (1.04 s)
@pytest.mark.timeout(60)
@pytest.mark.parametrize("case", list(HOSTILE))
def test_a_schema_the_grammar_cannot_serve_is_refused_before_any_work_naming_the_tool_and_what(case):
    tools, named = HOSTILE[case]
    raw = body(*tools)
    with pytest.raises(RequestError) as refused:
        parse_request(raw)
    message = str(refused.value)
    assert named in message, message
    assert message.startswith("tool 't") or "together" in message, message
    assert "\n" not in message and len(message) < 400, message


def test_what_is_refused_in_a_tool_the_reply_may_not_call_is_not_held_against_the_request():
    raw = body(
        tool("small", flat(2)),
        tool("huge", one({"$ref": "#"})),
        tool_choice={"type": "function", "function": {"name": "small"}},
    )
    assert [t.name for t in parse_request(raw).active_tools()] == ["small"]


class Address(BaseModel):
    street: str
    city: str
    country: str = Field(description="ISO code", min_length=2, max_length=2)


class Order(BaseModel):
    """Place an order."""

    items: list[str] = Field(min_length=1, max_length=20)
    ship_to: Address
    bill_to: Address | None = None
    priority: int = Field(default=1, ge=1, le=5)


def test_real_tools_are_accepted_ours_langchains_and_an_mcp_servers_with_refs():
    ours = [
        convert_to_openai_tool(t)
        for t in (lookup_knowledge, navigate_graph, query_knowledge_graph, list_knowledge_bases)
    ]
    # what an MCP server built on pydantic publishes: $defs and $refs, nullable branches, bounded numbers
    order = tool("place_order", Order.model_json_schema())
    assert "$defs" in order["function"]["parameters"]
    weather = tool(
        "get_weather",
        {
            "type": "object",
            "properties": {
                "location": {"type": "string", "description": "City and country, e.g. Bogotá, Colombia"},
                "unit": {"type": ["string", "null"], "enum": ["celsius", "fahrenheit", None]},
                "days": {"type": "integer", "minimum": 1, "maximum": 14},
                "hours": {"type": "number", "minimum": 0, "exclusiveMaximum": True, "maximum": 24},  # draft 4's
            },
            "required": ["location", "unit", "days"],
            "additionalProperties": False,
        },
    )
    # a dozen tools of a dozen properties each: a large but real agent
    many = [tool(f"tool_{i}", flat(10)) for i in range(12)]
    request = parse_request(body(*ours, order, weather, *many))
    assert len(request.active_tools()) == 4 + 2 + 12


@pytest.mark.parametrize(
    ("schema", "low", "high", "wanted"),
    [
        ({"type": "array", "items": {"type": "string"}, "minItems": 9}, "minItems", "maxItems", 9),
        ({"type": "string", "minLength": 100}, "minLength", "maxLength", 100),
        ({"type": ["string", "null"], "minLength": 90, "maxLength": 95}, "minLength", "maxLength", 90),
        ({"type": "array", "items": {"type": "integer"}, "minItems": 2}, "minItems", "maxItems", 8),
        ({"type": "string"}, "minLength", "maxLength", 80),
    ],
)
def test_the_grammars_caps_give_way_to_a_schemas_own_minimum_that_fits_a_reply(schema, low, high, wanted):
    """A schema asking a little more than the caps (8 items, 80 characters) is served as asked: the grammar's
    bound is raised to the schema's minimum, never left below it (it could not be finished)."""
    request = parse_request(body(tool("t", one(schema)), tool_choice="required"))
    grammar = reply_schema(request.active_tools(), request.must_call_tool)
    assert grammar is not None
    a = grammar["properties"]["tool_call"]["properties"]["arguments"]["properties"]["a"]
    assert a.get(low, 0) <= a[high] == wanted, a
