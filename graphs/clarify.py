"""Clarify, shared by the workflows: pause with a clarify interrupt; the answer joins the conversation.

The question is composed before this node (by the planning node), so nothing here has a side effect or an
LLM call before `interrupt()`: the node re-runs from its start on resume and must ask the same question."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from langchain_core.messages import HumanMessage
from langgraph.types import interrupt

from graphs.interrupts import answer_text, clarify_request


def clarify_node(state: Mapping[str, Any]) -> dict[str, Any]:
    question = state.get("clarification_needed") or "Could you say more about what you need?"
    answer = interrupt(clarify_request(question, state.get("clarify_choices") or []))
    return {
        "messages": [HumanMessage(answer_text(answer) or "(no answer)")],
        "clarification_count": state.get("clarification_count", 0) + 1,
        "clarification_needed": None,
        "clarify_choices": [],
    }
