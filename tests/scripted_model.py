"""A scripted chat model for tests: it replays the tool calls an LLM would make, in order.

Bound with tools (the executor node) it returns the next scripted message and
fails loudly once the script is spent; unbound (the answer node) it returns
the scripted answer.
"""

from __future__ import annotations

import itertools
from typing import Any

from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage
from langchain_core.outputs import ChatGeneration, ChatResult

_ids = itertools.count()


def raw_call(name: str, args) -> dict:
    return {"name": name, "args": args, "id": f"call_{next(_ids)}", "type": "tool_call"}


def lookup_call(query: str, missing_dimension: str | None = None) -> dict:
    args = {"query": query}
    if missing_dimension:
        args["missing_dimension"] = missing_dimension
    return raw_call("lookup_knowledge", args)


def tool_message(*calls: dict) -> AIMessage:
    return AIMessage(content="", tool_calls=list(calls))


class ScriptedChatModel(FakeMessagesListChatModel):
    answer: str = "scripted answer"
    tools_bound: bool = False
    calls: list = []  # what the executor was sent each time, for assertions

    def bind_tools(self, tools, **kwargs) -> ScriptedChatModel:
        bound = self.model_copy(update={"tools_bound": True})
        bound.__dict__["_parent"] = self
        return bound

    def _generate(self, messages, stop=None, run_manager=None, **kwargs: Any) -> ChatResult:
        if not self.tools_bound:
            return ChatResult(generations=[ChatGeneration(message=AIMessage(self.answer))])
        parent = self.__dict__.get("_parent", self)
        parent.calls.append(list(messages))
        if parent.i >= len(parent.responses):
            raise AssertionError(f"the script ran out after {parent.i} responses: the graph asked the LLM once more")
        reply = parent.responses[parent.i]
        parent.i += 1
        return ChatResult(generations=[ChatGeneration(message=reply)])


class EndlessLookups(ScriptedChatModel):
    """An LLM that never stops asking: every call proposes another rephrasing."""

    def _generate(self, messages, stop=None, run_manager=None, **kwargs: Any) -> ChatResult:
        if not self.tools_bound:
            return ChatResult(generations=[ChatGeneration(message=AIMessage(self.answer))])
        parent = self.__dict__.get("_parent", self)
        parent.i += 1
        reply = tool_message(lookup_call(f"数据库连接池配置 第 {parent.i} 种说法"))
        return ChatResult(generations=[ChatGeneration(message=reply)])
