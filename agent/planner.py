"""The offline planner: a chat model that needs no LLM, so the same graph and rules run without one.

On a new question it proposes one lookup per sub-question; once results are
back it stops, and the answer node answers extractively.
"""

from __future__ import annotations

import re
import uuid
from typing import Any

from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.outputs import ChatGeneration, ChatResult

from agent.tools import LOOKUP

MAX_SUBQUERIES = 3
# sentence ends and explicit conjunctions between questions
SPLIT = re.compile(r"[？?！!；;。\n]+|(?:，|,)?\s*(?:以及|并且|另外|还有|同时)\s*|\s+(?:and also|as well as|also)\s+", re.I)
# a plain "and"/"和" separates two questions only when both sides are questions of their own
AND = re.compile(r"\s+and\s+|和", re.I)


def _substantial(part: str) -> bool:
    cjk = sum(1 for c in part if "\u3400" <= c <= "\u9fff")
    return cjk >= 4 or len(part.split()) >= 3


def split_question(question: str) -> list[str]:
    parts: list[str] = []
    for chunk in SPLIT.split(question):
        chunk = chunk.strip(" ，,、：:")
        if not chunk:
            continue
        pieces = [p.strip(" ，,") for p in AND.split(chunk)]
        if len(pieces) > 1 and all(_substantial(p) for p in pieces):
            parts += pieces
        else:
            parts.append(chunk)
    parts = [p for p in dict.fromkeys(parts) if len(p) >= 2]
    return parts[:MAX_SUBQUERIES] or [question.strip()]


class OfflinePlanner(BaseChatModel):
    @property
    def _llm_type(self) -> str:
        return "executor-offline-planner"

    def bind_tools(self, tools, **kwargs) -> "OfflinePlanner":
        return self

    def _generate(self, messages: list[BaseMessage], stop=None, run_manager=None, **kwargs: Any) -> ChatResult:
        last_human = max((i for i, m in enumerate(messages) if isinstance(m, HumanMessage)), default=-1)
        this_turn = messages[last_human + 1 :]
        if last_human < 0 or any(isinstance(m, AIMessage) for m in this_turn):
            reply = AIMessage(content="")  # results are in: hand over to the answer node
        else:
            question = str(messages[last_human].content)
            reply = AIMessage(
                content="",
                tool_calls=[
                    {"name": LOOKUP, "args": {"query": q}, "id": f"call_{uuid.uuid4().hex[:12]}", "type": "tool_call"}
                    for q in split_question(question)
                ],
            )
        return ChatResult(generations=[ChatGeneration(message=reply)])
