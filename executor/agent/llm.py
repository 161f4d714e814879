"""The chat model: ChatOpenAI on any OpenAI-compatible endpoint, or the offline planner; and the endpoint of the
local model (EXECUTOR_LOCAL_MODEL), served for the length of a command."""

from __future__ import annotations

from contextlib import ExitStack

from langchain_core.language_models.chat_models import BaseChatModel

from executor.core.settings import Settings

LLM, OFFLINE = "llm", "offline"


def make_chat_model(settings: Settings) -> tuple[BaseChatModel, str]:
    """(model, mode). Mode "offline" means no LLM is configured and answers are extractive."""
    if not settings.llm_configured:
        from executor.agent.planner import OfflinePlanner

        return OfflinePlanner(), OFFLINE
    from langchain_openai import ChatOpenAI
    from pydantic import SecretStr

    return (
        ChatOpenAI(
            model=settings.model,
            # a local OpenAI-compatible server needs no key, but the client insists on one
            api_key=SecretStr(settings.openai_api_key or "not-needed"),
            base_url=settings.openai_base_url,
            temperature=0,
            timeout=settings.llm_timeout_s,
            max_retries=1,
            streaming=True,
        ),
        LLM,
    )


def serve_local_model(settings: Settings, stack: ExitStack) -> Settings:
    """With EXECUTOR_LOCAL_MODEL set, serve that model on a free loopback port until `stack` closes, and return the
    settings pointed at it (no API key goes to it); else `settings` as they are."""
    if not settings.local_model:
        return settings
    from executor.local_llm.serve import LocalEndpoint, engine_options

    endpoint = stack.enter_context(LocalEndpoint(engine_options(settings, settings.local_model)))
    return settings.model_copy(
        update={
            "openai_base_url": endpoint.base_url,
            "openai_api_key": None,
            "model": endpoint.options.alias,
            # the endpoint's own per-request timeout answers first, with a line that says so
            "llm_timeout_s": max(settings.llm_timeout_s, settings.local_model_timeout_s + 5),
        }
    )
