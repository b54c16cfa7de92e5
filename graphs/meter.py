"""Counts what the models of one run cost: calls, failed calls, input and output tokens per model, and the
seconds spent waiting for answers. A LangChain callback: graphs pass it on to every model call inside them."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Any
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import AIMessage
from langchain_core.outputs import ChatGeneration, LLMResult


@dataclass
class ModelUsage:
    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0


class Meter(BaseCallbackHandler):
    def __init__(self) -> None:
        super().__init__()
        self.usage: dict[str, ModelUsage] = {}  # by the model name the endpoint answered with
        self.errors = 0
        self.model_seconds = 0.0
        self._started: dict[UUID, float] = {}
        self._lock = threading.Lock()

    @property
    def calls(self) -> int:
        return sum(u.calls for u in self.usage.values())

    @property
    def input_tokens(self) -> int:
        return sum(u.input_tokens for u in self.usage.values())

    @property
    def output_tokens(self) -> int:
        return sum(u.output_tokens for u in self.usage.values())

    def on_chat_model_start(self, serialized: dict[str, Any], messages: list[list[Any]], *, run_id: UUID,
                            **kwargs: Any) -> None:
        with self._lock:
            self._started[run_id] = time.monotonic()

    def on_llm_end(self, response: LLMResult, *, run_id: UUID, **kwargs: Any) -> None:
        generation = response.generations[0][0] if response.generations and response.generations[0] else None
        message = generation.message if isinstance(generation, ChatGeneration) else None
        meta = message.usage_metadata if isinstance(message, AIMessage) else None
        name = model_name(response, message)
        with self._lock:
            self._stop(run_id)
            used = self.usage.setdefault(name, ModelUsage())
            used.calls += 1
            used.input_tokens += int(meta.get("input_tokens", 0)) if meta else 0
            used.output_tokens += int(meta.get("output_tokens", 0)) if meta else 0

    def on_llm_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        with self._lock:
            self._stop(run_id)
            self.errors += 1

    def _stop(self, run_id: UUID) -> None:
        started = self._started.pop(run_id, None)
        if started is not None:
            self.model_seconds += time.monotonic() - started


def model_name(response: LLMResult, message: Any) -> str:
    metadata = getattr(message, "response_metadata", None) or {}
    return str(metadata.get("model_name") or (response.llm_output or {}).get("model_name") or "unknown")
