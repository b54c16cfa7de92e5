"""Helpers shared by the workflow nodes: reading messages and agent output, describing the workspace."""

from __future__ import annotations

import json
import re
from typing import Any

from langchain_core.messages import AIMessage, AnyMessage, BaseMessage, HumanMessage

from tools.storage.workspace import Workspace

AGENT_STEP_LIMIT = 16  # recursion limit of every ReAct agent run: each loop is bounded


def message_text(message: BaseMessage) -> str:
    content = message.content
    if isinstance(content, str):
        return content
    return "".join(part.get("text", "") if isinstance(part, dict) else str(part) for part in content)


def new_human_text(messages: list[AnyMessage], consumed: int) -> str:
    return "\n".join(message_text(m) for m in messages[consumed:] if isinstance(m, HumanMessage)).strip()


def last_ai_text(messages: list[AnyMessage]) -> str:
    for message in reversed(messages):
        if isinstance(message, AIMessage) and not message.tool_calls:
            return message_text(message)
    return ""


def parse_json_object(text: str) -> dict[str, Any]:
    """The first JSON object in a model's answer (fenced or bare)."""
    fenced = re.search(r"```(?:json)?\s*(\{.*?\})\s*```", text, re.DOTALL)
    candidate = fenced.group(1) if fenced else text[text.find("{") : text.rfind("}") + 1]
    if not candidate:
        raise ValueError("the model's answer holds no JSON object")
    value = json.loads(candidate)
    if not isinstance(value, dict):
        raise ValueError("the model's JSON is not an object")
    return value


def workspace_summary(ws: Workspace) -> str:
    items = ws.list()
    return "\n".join(f"- {item.describe()}" for item in items) if items else "(empty)"


def frame_inputs(ws: Workspace) -> dict[str, Any]:
    """ohlcv/ and indicators/ frames as sandbox inputs named by field (close, vol, pe, ...)."""
    inputs: dict[str, Any] = {}
    for namespace in ("ohlcv", "indicators"):
        for item in ws.list(namespace):
            inputs[item.name.split("/", 1)[1]] = ws.get(item.name)
    return inputs
