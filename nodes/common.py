"""Small helpers the nodes share."""

from __future__ import annotations

from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.runnables import RunnableConfig

from agent.state import ExecutorState
from retrieval.relevance import language_of


def session_of(config: RunnableConfig) -> str:
    """The session is the checkpointer's thread; a run without one (a bare invoke) is its own session."""
    return str((config.get("configurable") or {}).get("thread_id") or "default")


def text_of(message) -> str:
    content = getattr(message, "content", "")
    if isinstance(content, list):  # content blocks
        return "".join(b.get("text", "") if isinstance(b, dict) else str(b) for b in content)
    return str(content or "")


def last_question(state: ExecutorState) -> str:
    for message in reversed(state.get("messages", [])):
        if isinstance(message, HumanMessage):
            return text_of(message)
    return ""


def lang_of(state: ExecutorState) -> str:
    return language_of(state.get("question") or last_question(state))


def last_ai(state: ExecutorState) -> AIMessage | None:
    messages = state.get("messages") or []
    return messages[-1] if messages and isinstance(messages[-1], AIMessage) else None
