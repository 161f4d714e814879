"""The scripted policy: a chat model that replays a scenario's proposals, then stops so the graph answers."""

from __future__ import annotations

import uuid
from typing import Any

from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage
from langchain_core.outputs import ChatGeneration, ChatResult


class ScriptedPolicy(BaseChatModel):
    batches: list[list[dict]]  # [{"tool": name, "args": {...}}, ...] per message
    position: int = 0

    @property
    def _llm_type(self) -> str:
        return "executor-scripted-policy"

    def bind_tools(self, tools, **kwargs) -> ScriptedPolicy:
        return self

    def _generate(self, messages, stop=None, run_manager=None, **kwargs: Any) -> ChatResult:
        if self.position >= len(self.batches):
            return ChatResult(generations=[ChatGeneration(message=AIMessage(content=""))])  # spent: answer
        batch = self.batches[self.position]
        self.position += 1
        calls = [
            {"name": c["tool"], "args": dict(c["args"]), "id": f"call_{uuid.uuid4().hex[:12]}", "type": "tool_call"}
            for c in batch
        ]
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content="", tool_calls=calls))])
