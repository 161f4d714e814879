"""A tool's arguments as hosts and LLMs send them: what a tool does not take is refused by name."""

import pytest

from executor.tools.registry import (
    list_knowledge_bases,
    lookup_knowledge,
    navigate_graph,
    parse_arguments,
    query_knowledge_graph,
)


@pytest.mark.parametrize(
    "schema, args, bad",
    [
        (lookup_knowledge, {"query": "ERR_TIMEOUT", "missing_dimesion": "cause"}, "missing_dimesion"),
        (query_knowledge_graph, {"knowledge_base_ids": ["sample"], "query": "Docker", "top_k": 3}, "top_k"),
        (navigate_graph, {"entity": "ComfyUI", "depth": 2}, "depth"),
        (list_knowledge_bases, {"verbose": True}, "verbose"),
    ],
)
def test_an_unknown_argument_is_refused_by_name(schema, args, bad):
    name = schema.__name__
    with pytest.raises(ValueError, match=rf"^{bad}: not an argument of {name} \(it takes "):
        parse_arguments(schema, args)


def test_the_arguments_a_tool_takes_still_parse():
    parsed = parse_arguments(lookup_knowledge, {"query": "ERR_TIMEOUT", "missing_dimension": "cause"})
    assert (parsed.query, parsed.missing_dimension) == ("ERR_TIMEOUT", "cause")
    assert parse_arguments(list_knowledge_bases, {}).model_dump() == {}


@pytest.mark.parametrize("bad", [None, 7, ["sample"]])
def test_a_knowledge_base_id_that_is_no_string_is_refused_by_its_value(bad):
    """An MCP host sending `[null]` was told "unknown knowledge base 'None'" (hostile23 finding 8): the id it sent
    is no name, and the refusal says so."""
    with pytest.raises(ValueError, match="knowledge_base_ids.0: Input should be a valid string"):
        parse_arguments(query_knowledge_graph, {"knowledge_base_ids": [bad], "query": "Docker"})


def test_knowledge_base_ids_are_folded_and_trimmed():
    args = parse_arguments(
        query_knowledge_graph, {"knowledge_base_ids": ["sample", " sample ", "", "team"], "query": "x"}
    )
    assert args.knowledge_base_ids == ["sample", "team"]
