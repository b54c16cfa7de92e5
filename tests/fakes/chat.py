"""A scripted chat model: replays prepared AI messages (with real tool calls) in order, and records prompts."""

from __future__ import annotations

import json
from itertools import count
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult

_ids = count(1)


def tool_call(name: str, **args: Any) -> AIMessage:
    """An AI turn that calls one tool."""
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


class ScriptedChatModel(BaseChatModel):
    """Replays `script` one message per model call; running out is a test failure, not a silent loop."""

    script: list[AIMessage]
    prompts: list[list[BaseMessage]] = []

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def bind_tools(self, tools: Any, **kwargs: Any) -> ScriptedChatModel:
        return self

    def _generate(self, messages: list[BaseMessage], stop: list[str] | None = None,
                  run_manager: CallbackManagerForLLMRun | None = None, **kwargs: Any) -> ChatResult:
        self.prompts.append(list(messages))
        if not self.script:
            raise AssertionError("the scripted model ran out of answers")
        return ChatResult(generations=[ChatGeneration(message=self.script.pop(0))])
