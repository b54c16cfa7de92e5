"""Every model call of a run as it happens: the request's hash, the answer, tokens in and out, latency. It is the
eval meter (graphs/meter.py) with each call kept; a guard it calls before each call may stop the run there (a
budget reached)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from typing import Any
from uuid import UUID

from langchain_core.messages import AIMessage, BaseMessage, message_to_dict
from langchain_core.outputs import ChatGeneration, LLMResult

from graphs.meter import Meter, model_name
from tools.runs.hashing import digest
from tools.runs.store import Call
from tools.storage.models import utcnow


def request_hash(messages: Sequence[BaseMessage], tools: Iterable[Any]) -> str:
    """What a model was asked, as a hash: each message's kind, text, tool calls and the tool answered, and the
    names of the tools offered (ids, which differ between runs, are left out)."""
    return digest({"messages": [_message(m) for m in messages], "tools": sorted(_tool_name(t) for t in tools)})


def _message(message: BaseMessage) -> dict[str, Any]:
    calls = [[c["name"], c["args"]] for c in getattr(message, "tool_calls", None) or []]
    return {"type": message.type, "content": message.content, "tool_calls": calls,
            "tool_call_id": getattr(message, "tool_call_id", None)}


def _tool_name(tool: Any) -> str:
    if isinstance(tool, dict):
        return str((tool.get("function") or tool).get("name"))
    return str(getattr(tool, "name", tool))


class Recorder(Meter):
    """The meter, keeping each call (`records`); `guard(recorder)` runs before each call and may raise to stop the
    run there. Its errors propagate (`raise_error`): a guard's stop must reach the runner."""

    raise_error = True

    def __init__(self, day: Callable[[], str], guard: Callable[[Recorder], None] | None = None,
                 first_seq: int = 0, clock: Callable[[], datetime] = utcnow) -> None:
        super().__init__()
        self.records: list[Call] = []
        self.guard = guard
        self._day, self._clock, self._seq = day, clock, first_seq
        self._requests: dict[UUID, str] = {}
        self._begun: dict[UUID, float] = {}

    @property
    def tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    def on_chat_model_start(self, serialized: dict[str, Any], messages: list[list[Any]], *, run_id: UUID,
                            **kwargs: Any) -> None:
        if self.guard is not None:
            self.guard(self)
        params = kwargs.get("invocation_params") or {}
        with self._lock:
            self._requests[run_id] = request_hash(messages[0] if messages else [], params.get("tools") or [])
            self._begun[run_id] = time.monotonic()
        super().on_chat_model_start(serialized, messages, run_id=run_id, **kwargs)

    def on_llm_end(self, response: LLMResult, *, run_id: UUID, **kwargs: Any) -> None:
        super().on_llm_end(response, run_id=run_id, **kwargs)
        generation = response.generations[0][0] if response.generations and response.generations[0] else None
        message = generation.message if isinstance(generation, ChatGeneration) else None
        meta = message.usage_metadata if isinstance(message, AIMessage) else None
        with self._lock:
            begun = self._begun.pop(run_id, time.monotonic())
            self.records.append(Call(
                seq=self._seq + len(self.records), model=model_name(response, message),
                request_hash=self._requests.pop(run_id, ""),
                answer=message_to_dict(message) if message is not None else {},
                input_tokens=int(meta.get("input_tokens", 0)) if meta else 0,
                output_tokens=int(meta.get("output_tokens", 0)) if meta else 0,
                latency_ms=int((time.monotonic() - begun) * 1000), at=self._clock(), day=self._day()))

    def on_llm_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        super().on_llm_error(error, run_id=run_id, **kwargs)
        with self._lock:
            self._requests.pop(run_id, None)
            self._begun.pop(run_id, None)
