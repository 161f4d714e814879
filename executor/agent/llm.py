"""The chat model: ChatOpenAI on any OpenAI-compatible endpoint, or the offline planner."""

from __future__ import annotations

from langchain_core.language_models.chat_models import BaseChatModel

from executor.core.settings import Settings

LLM, OFFLINE = "llm", "offline"


def make_chat_model(settings: Settings) -> tuple[BaseChatModel, str]:
    """(model, mode). Mode "offline" means no LLM is configured and answers are extractive."""
    if not settings.llm_configured:
        from executor.agent.planner import OfflinePlanner

        return OfflinePlanner(), OFFLINE
    from langchain_openai import ChatOpenAI

    return (
        ChatOpenAI(
            model=settings.model,
            # a local OpenAI-compatible server needs no key, but the client insists on one
            api_key=settings.openai_api_key or "not-needed",
            base_url=settings.openai_base_url,
            temperature=0,
            timeout=settings.llm_timeout_s,
            max_retries=1,
            streaming=True,
        ),
        LLM,
    )
