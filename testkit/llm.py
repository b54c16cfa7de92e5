"""The real model client's settings against the loopback fake OpenAI-compatible server: the two model names a
test scripts answers for, and a request no grammar reads (so it goes to the model)."""

from __future__ import annotations

from testkit.fakes.openai_server import API_KEY, OpenAIServer
from tools.settings import Settings

MAIN, LIGHT = "main-model", "light-model"
FREE_TEXT = "which of my trading ideas would have worked best last year?"


def settings_for(server: OpenAIServer, timeout: float = 10.0, key: str = API_KEY) -> Settings:
    return Settings(_env_file=None, OPENAI_BASE_URL=server.url, OPENAI_API_KEY=key, QUANTDESK_MODEL=MAIN,
                    QUANTDESK_LIGHT_MODEL=LIGHT, QUANTDESK_LLM_TIMEOUT=timeout)
