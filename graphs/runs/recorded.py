"""The model a re-run from the record answers with: each request gets the answer recorded for the same request
(by its hash, in the order they were given); a request the run never made is a `NotInRecord`."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, BaseMessage, messages_from_dict
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import PrivateAttr

from graphs.runs.recorder import request_hash
from tools.runs.store import Call


class NotInRecord(Exception):  # noqa: N818 - named for what happened
    """A re-run asked the model something the run never asked: the run went another way before this call."""


class RecordedChatModel(BaseChatModel):
    """Answers from a run's recorded calls."""

    _answers: dict[str, list[dict[str, Any]]] = PrivateAttr(default_factory=dict)
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)

    @classmethod
    def of(cls, calls: Sequence[Call]) -> RecordedChatModel:
        model = cls()
        for call in calls:
            model._answers.setdefault(call.request_hash, []).append(call.answer)
        return model

    @property
    def _llm_type(self) -> str:
        return "recorded"

    def bind_tools(self, tools: Sequence[dict[str, Any] | type | Callable[..., Any] | BaseTool],
                   *, tool_choice: str | None = None, **kwargs: Any) -> Runnable[LanguageModelInput, AIMessage]:
        formatted = [convert_to_openai_tool(tool) for tool in tools]
        return self.bind(tools=formatted, tool_choice=tool_choice, **kwargs)

    def _generate(self, messages: list[BaseMessage], stop: list[str] | None = None,
                  run_manager: CallbackManagerForLLMRun | None = None, **kwargs: Any) -> ChatResult:
        key = request_hash(messages, kwargs.get("tools") or [])
        with self._lock:
            queue = self._answers.get(key)
            if not queue:
                raise NotInRecord(f"no recorded answer for request {key[:12]}")
            answer = queue.pop(0)
        message = messages_from_dict([answer])[0]
        return ChatResult(generations=[ChatGeneration(message=message)])
