"""The offline planner: a chat model that needs no LLM, so the same graph and rules run without one.

On a new question it proposes one call per sub-question: a lookup, or a walk
along the graph's DEPENDS_ON edges for "what does X depend on / X 依赖什么".
A later part that refers back ("it", "它") gets the earlier part's subject.
Once results are back it stops, and the answer node answers extractively.
"""

from __future__ import annotations

import re
import uuid
from typing import Any

from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.outputs import ChatGeneration, ChatResult

from executor.nodes.common import question_of
from executor.retrieval.extractive import subject_matched
from executor.tools.registry import LOOKUP, NAVIGATE

MAX_SUBQUERIES = 3
# sentence ends and explicit conjunctions between questions
SPLIT = re.compile(
    r"[？?！!；;。\n]+|(?:，|,)?\s*(?:以及|并且|另外|还有|同时)\s*|\s+(?:and also|as well as|also)\s+", re.I
)
# a plain "and"/"和" separates two questions only when both sides are questions of their own
AND = re.compile(r"\s+and\s+|和", re.I)


def _substantial(part: str) -> bool:
    cjk = sum(1 for c in part if "\u3400" <= c <= "\u9fff")
    return cjk >= 4 or len(part.split()) >= 3


# a name a later part may refer back to: CamelCase (ComfyUI), codes (ERR_TIMEOUT, HTTP2), Capitalised words
NAME = re.compile(r"[A-Za-z][A-Za-z0-9_.+-]*")
NOT_NAMES = {"i", "how", "what", "why", "when", "where", "which", "who", "does", "do", "is", "are", "can", "and"}
PRONOUN_EN = re.compile(r"\b(?:its|it|their|they|them|this|that)\b", re.I)
PRONOUN_ZH = re.compile(r"它们|它|其|这个|该")
ZH_TOPIC = re.compile(r"^(?P<x>[\u3400-\u9fffA-Za-z0-9_ .-]{2,}?)(?:怎么|如何|是什么|为什么|有哪些|哪些|多少|的)")
# "what does X depend on" / "X 依赖什么": a question for the graph, not for a text search
DEPENDS = [
    re.compile(r"^what\s+(?:does|do)\s+(?P<x>.+?)\s+depends?\s+on\W*$", re.I),
    re.compile(r"^(?:what are|which are)\s+(?:the\s+)?dependencies\s+of\s+(?P<x>.+?)\W*$", re.I),
    re.compile(r"^(?P<x>.+?)\s*(?:依赖于?什么|依赖哪些\S*|的依赖(?:是什么|有哪些))\W*$"),
]
DEPENDS_ON_ITS_OWN = re.compile(
    r"^(?:what\s+(?:does|do)\s+(?:it|they)\s+depends?\s+on|(?:它|它们)?依赖于?什么)\W*$", re.I
)


def subject_of(part: str) -> str | None:
    """The thing a part of a question is about, for a later part that says "it" or "它"."""
    words = NAME.findall(part)
    for i, w in enumerate(words):
        if w.casefold() in NOT_NAMES:
            continue
        inner_upper = any(c.isupper() for c in w[1:])
        if inner_upper or "_" in w or (w[0].isupper() and i > 0):
            return w
    m = ZH_TOPIC.match(part.strip())
    return m.group("x").strip() if m else None


def with_subject(parts: list[str]) -> list[str]:
    """Later parts that refer back ("what does it depend on", "它依赖什么") name the subject of the part before."""
    out: list[str] = []
    subject = None
    for part in parts:
        if out and subject:
            if DEPENDS_ON_ITS_OWN.match(part) and not PRONOUN_EN.search(part) and not PRONOUN_ZH.search(part):
                part = f"{subject} {part}"
            part = PRONOUN_EN.sub(subject, part, count=1)
            part = PRONOUN_ZH.sub(subject, part, count=1)
        subject = subject_of(part) or subject
        out.append(part)
    return out


def dependency_subject(part: str) -> str | None:
    return subject_matched(DEPENDS, part)


def plan(question: str) -> list[dict]:
    """The tool calls for a new question: one per part; dependency questions walk the graph's DEPENDS_ON edges."""
    calls = []
    for part in with_subject(split_question(question)):
        entity = dependency_subject(part)
        if entity:
            calls.append({"name": NAVIGATE, "args": {"entity": entity, "relations": ["DEPENDS_ON"], "outgoing": True}})
        else:
            calls.append({"name": LOOKUP, "args": {"query": part}})
    return calls


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
    parts = [p for p in dict.fromkeys(_with_fragments_joined(parts)) if len(p) >= 2]
    return parts[:MAX_SUBQUERIES] or [question.strip()]


def _fragment(part: str) -> bool:
    """A piece too short to be a question and naming nothing ("thanks", "怎么办"): a line break or a "?" cut it
    off its question, so it is not looked up on its own."""
    return not _substantial(part) and subject_of(part) is None


def _with_fragments_joined(parts: list[str]) -> list[str]:
    """Each fragment joined to the part before it (the first, to the part after it)."""
    out: list[str] = []
    held = ""
    for part in parts:
        if _fragment(part):
            if out:
                out[-1] = f"{out[-1]} {part}"
            else:
                held = f"{held} {part}".strip()
            continue
        out.append(f"{held} {part}".strip())
        held = ""
    return out or ([held] if held else [])


class OfflinePlanner(BaseChatModel):
    @property
    def _llm_type(self) -> str:
        return "executor-offline-planner"

    def bind_tools(self, tools, **kwargs) -> OfflinePlanner:
        return self

    def _generate(self, messages: list[BaseMessage], stop=None, run_manager=None, **kwargs: Any) -> ChatResult:
        last_human = max((i for i, m in enumerate(messages) if isinstance(m, HumanMessage)), default=-1)
        this_turn = messages[last_human + 1 :]
        if last_human < 0 or any(isinstance(m, AIMessage) for m in this_turn):
            reply = AIMessage(content="")  # results are in: hand over to the answer node
        else:
            question = question_of(messages)  # each user message the turn answers (two sent at once: both)
            reply = AIMessage(
                content="",
                tool_calls=[
                    {**call, "id": f"call_{uuid.uuid4().hex[:12]}", "type": "tool_call"} for call in plan(question)
                ],
            )
        return ChatResult(generations=[ChatGeneration(message=reply)])
