"""A scripted chat model: replays prepared AI messages (with real tool calls) and records prompts.

One `script` replays in call order; `scripts` keyed by a marker of each agent's system prompt give every agent
its own queue, so parallel branches get deterministic answers. `bind_tools` binds as a real chat model does (the
tools' names travel with each call made through the binding, and `bound` records them); a scripted tool call
naming a tool the call did not offer is refused. Running out, a prompt no key matches, or such a call raises a
`ScriptError`, a BaseException that no `except Exception` in the product can swallow; it is also recorded, and
`ScriptedModels.check()` (a fixture's teardown) fails the test when any model ran out, refused a call or left
answers unused."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Sequence
from itertools import count
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, BaseMessage, SystemMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import Field, PrivateAttr

_ids = count(1)


class ScriptError(BaseException):
    """A scripted model cannot answer as its script says: always a test failure."""


class ScriptExhausted(ScriptError):  # noqa: N818 - named for what happened, like StopIteration
    """A scripted model was asked for an answer its script does not have."""


class UnboundToolCall(ScriptError):  # noqa: N818 - named for what happened
    """A scripted answer calls a tool the call did not bind."""


def tool_call(name: str, /, **args: Any) -> AIMessage:
    """An AI turn that calls one tool (its arguments may include one called `name`)."""
    return AIMessage(content="", tool_calls=[{"name": name, "args": args, "id": f"call_{next(_ids)}",
                                              "type": "tool_call"}])


def answer(text: str) -> AIMessage:
    return AIMessage(content=text)


def decision(next_action: str, ts_code: str | None = None, start: str | None = None, end: str | None = None,
             strategy: str = "", question: str | None = None) -> AIMessage:
    """A reflection answer in the prompt's JSON format."""
    body = {
        "analysis": f"plan: {next_action}",
        "task_type": "mixed",
        "next_action": next_action,
        "user_intent": {"type": "mixed", "needs_clarification": next_action == "clarify",
                        "params": {"ts_code": ts_code, "start_date": start, "end_date": end,
                                   "strategy_desc": strategy, "required_indicators": []}},
        "clarification_question": question,
        "reasoning": "scripted",
    }
    return AIMessage(content=f"```json\n{json.dumps(body)}\n```")


def _system_text(messages: list[BaseMessage]) -> str:
    return "\n".join(str(m.content) for m in messages if isinstance(m, SystemMessage))


class ScriptedChatModel(BaseChatModel):
    """Replays `script` one message per call, or, with `scripts`, the queue whose key occurs in the system
    prompt (exactly one key must). `prompts` holds every call's messages in order."""

    script: list[AIMessage] = Field(default_factory=list)
    scripts: dict[str, list[AIMessage]] = Field(default_factory=dict)
    prompts: list[list[BaseMessage]] = Field(default_factory=list)
    bound: list[list[str]] = Field(default_factory=list)  # the tool names of every bind_tools, in order
    failures: list[str] = Field(default_factory=list)
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def bind_tools(self, tools: Sequence[dict[str, Any] | type | Callable[..., Any] | BaseTool], *,
                   tool_choice: str | None = None, **kwargs: Any) -> Runnable[LanguageModelInput, AIMessage]:
        """This model with `tools` bound: every call through the binding offers their names (`_generate`'s
        `tools`), as a real model sends their schemas. `tool_choice` and the rest are accepted and not enforced."""
        names = [str(convert_to_openai_tool(t)["function"]["name"]) for t in tools]
        with self._lock:
            self.bound.append(names)
        return self.bind(tools=names, tool_choice=tool_choice, **kwargs)

    def prompts_for(self, key: str) -> list[list[BaseMessage]]:
        """The prompts of the calls answered from `scripts[key]`."""
        return [p for p in self.prompts if key in _system_text(p)]

    def leftovers(self) -> dict[str, int]:
        """Unused answers per queue ("" is `script`)."""
        queues = {"": self.script, **self.scripts}
        return {key: len(queue) for key, queue in queues.items() if queue}

    def _generate(self, messages: list[BaseMessage], stop: list[str] | None = None,
                  run_manager: CallbackManagerForLLMRun | None = None, **kwargs: Any) -> ChatResult:
        with self._lock:
            self.prompts.append(list(messages))
            queue, problem = self._queue(messages)
            if queue is not None and not queue:
                problem = "the scripted model ran out of answers" + (f" for {self._key(messages)!r}"
                                                                     if self.scripts else "")
            if queue is None or not queue:
                problem = problem or "the scripted model ran out of answers"
                self.failures.append(problem)
                raise ScriptExhausted(problem)
            message = queue.pop(0)
            offered = list(kwargs.get("tools") or [])
            unbound = [c["name"] for c in message.tool_calls if c["name"] not in offered]
            if unbound:
                problem = (f"the scripted answer calls {', '.join(unbound)}, which this call did not bind "
                           f"(it offered {offered or 'no tools'})")
                self.failures.append(problem)
                raise UnboundToolCall(problem)
        return ChatResult(generations=[ChatGeneration(message=message)])

    def _key(self, messages: list[BaseMessage]) -> str | None:
        system = _system_text(messages)
        keys = [k for k in self.scripts if k in system]
        return keys[0] if len(keys) == 1 else None

    def _queue(self, messages: list[BaseMessage]) -> tuple[list[AIMessage] | None, str | None]:
        if not self.scripts:
            return self.script, None
        key = self._key(messages)
        if key is None:
            start = _system_text(messages)[:60].replace("\n", " ")
            return None, f"no single script key (of {list(self.scripts)}) matches the system prompt {start!r}"
        return self.scripts[key], None


class ScriptedModels:
    """Hands out scripted models (`models(script=[...])` or `models(scripts={...})`) and checks them all:
    `check()`, run at a fixture's teardown, fails when any model ran out or left answers unused."""

    def __init__(self) -> None:
        self.made: list[ScriptedChatModel] = []

    def __call__(self, script: list[AIMessage] | None = None,
                 scripts: dict[str, list[AIMessage]] | None = None) -> ScriptedChatModel:
        model = ScriptedChatModel(script=script or [], scripts=scripts or {})
        self.made.append(model)
        return model

    def check(self) -> None:
        problems = [p for model in self.made for p in model.failures]
        problems += [f"{n} scripted answer(s) for {key or 'the script'!r} were never asked for"
                     for model in self.made for key, n in model.leftovers().items()]
        if problems:
            raise AssertionError("scripted models: " + "; ".join(problems))
