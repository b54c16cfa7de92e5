"""The seeds' get_llm / get_light_llm: OpenAI-compatible chat models from settings, or None without one."""

from __future__ import annotations

from langchain_core.language_models import BaseChatModel

from tools.settings import Settings


def _chat(settings: Settings, model: str) -> BaseChatModel | None:
    if not settings.llm_configured:
        return None
    from langchain_openai import ChatOpenAI

    key = settings.openai_api_key.get_secret_value() if settings.openai_api_key else "not-needed"
    return ChatOpenAI(model=model, api_key=key, base_url=settings.openai_base_url, temperature=0, timeout=120,
                      max_retries=2)


def get_llm(settings: Settings) -> BaseChatModel | None:
    """The main model (reasoning, code)."""
    return _chat(settings, settings.model)


def get_light_llm(settings: Settings) -> BaseChatModel | None:
    """The light model (data fetching, routing)."""
    return _chat(settings, settings.light_model)
