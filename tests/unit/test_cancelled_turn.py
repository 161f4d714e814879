"""A chat turn cancelled with Ctrl-C is closed so that the conversation stays one an OpenAI-style endpoint accepts:
every call of the assistant's last message answered right after it, and no result that answers no call."""

from __future__ import annotations

from types import SimpleNamespace

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from executor.agent.session import CANCELLED, close_cancelled_turn
from executor.nodes.common import open_tool_calls, paired_tool_calls


def _call(call_id: str) -> dict:
    return {"id": call_id, "name": "lookup_knowledge", "args": {"query": "q"}, "type": "tool_call"}


class _Thread:
    """The two methods of a compiled graph that `close_cancelled_turn` uses, over one thread's messages."""

    def __init__(self, messages, next_nodes=()):
        self.messages = list(messages)
        self.next = tuple(next_nodes)

    def get_state(self, config):
        return SimpleNamespace(values={"messages": self.messages}, next=self.next)

    def update_state(self, config, values, as_node):
        assert as_node == "answer"
        self.messages.extend(values["messages"])


def _shape(messages):
    return [(m.type, getattr(m, "tool_call_id", None)) for m in messages]


def _earlier_turn():
    # endpoints (and the tests' fake) number calls per response, so the same id comes back in every turn
    return [
        HumanMessage("first"),
        AIMessage("", tool_calls=[_call("call_0"), _call("call_1")]),
        ToolMessage("r0", tool_call_id="call_0"),
        ToolMessage("r1", tool_call_id="call_1"),
        AIMessage("answer one"),
    ]


def test_a_turn_cancelled_during_its_lookup_gets_its_call_answered_even_when_the_id_was_used_before():
    thread = _Thread([*_earlier_turn(), HumanMessage("second"), AIMessage("", tool_calls=[_call("call_0")])], ["tools"])
    close_cancelled_turn(thread, "s")
    assert thread.messages[-2].type == "tool" and thread.messages[-2].tool_call_id == "call_0"
    assert thread.messages[-1].content == CANCELLED
    assert _shape(paired_tool_calls(thread.messages)) == _shape(thread.messages)


def test_a_call_an_earlier_turn_left_open_gets_no_result_after_a_later_message():
    earlier = [HumanMessage("first"), AIMessage("", tool_calls=[_call("call_7")]), AIMessage("stopped")]
    thread = _Thread([*earlier, HumanMessage("second")], ["executor"])
    close_cancelled_turn(thread, "s")
    assert [m.type for m in thread.messages[len(earlier) + 1 :]] == ["ai"]  # only the closing answer


def test_open_tool_calls_are_those_of_the_last_assistant_message_only():
    assert open_tool_calls(_earlier_turn()) == []
    partly = [*_earlier_turn(), HumanMessage("2"), AIMessage("", tool_calls=[_call("call_0"), _call("call_1")])]
    assert open_tool_calls([*partly, ToolMessage("r", tool_call_id="call_1")]) == [("call_0", "lookup_knowledge")]
    assert open_tool_calls([*partly, HumanMessage("3")]) == []
