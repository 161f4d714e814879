"""Small helpers the nodes share."""

from __future__ import annotations

from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.runnables import RunnableConfig

from core.errors import BackendError, first_line
from nodes.state import ExecutorState
from core.relevance import language_of


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


# the exceptions an LLM client raises when the endpoint is down, times out or refuses the request
_LLM_TRANSPORT_MODULES = ("openai", "httpx", "httpcore")


def invoke_llm(model, messages):
    """`model.invoke(messages)`; a transport or API failure becomes a one-line BackendError that ends the turn."""
    try:
        return model.invoke(messages)
    except Exception as exc:
        if not any(c.__module__.split(".")[0] in _LLM_TRANSPORT_MODULES for c in type(exc).__mro__):
            raise
        raise BackendError(f"the LLM is unavailable: {exc.__class__.__name__}: {first_line(exc)}") from exc
