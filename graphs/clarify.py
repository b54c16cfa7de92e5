"""Clarify, shared by the workflows: pause with a clarify interrupt; the answer joins the conversation.

The question is composed before this node (by the planning node), so nothing here has a side effect or an
LLM call before `interrupt()`: the node re-runs from its start on resume and must ask the same question."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from langchain_core.messages import HumanMessage
from langgraph.graph import END
from langgraph.types import interrupt

from graphs.grammar import english, normalize
from graphs.interrupts import answer_text, clarify_request
from graphs.progress import report_progress
from tools.i18n import N_, _

MAX_CLARIFICATIONS = 3  # questions a request may ask before it stops and asks for a complete request


def ask(state: Mapping[str, Any], question: str, restart_hint: str,
        choices: list[str] | None = None) -> dict[str, Any]:
    """The update that asks `question` (for the clarify node), or ends the request once the cap is reached."""
    if state.get("clarification_count", 0) >= MAX_CLARIFICATIONS:
        return {"clarification_needed": None, "clarify_choices": [],
                "final_reply": _("Stopping after {n} questions without what I need: {question}\nStart again with a "
                                 "complete request: {hint}").format(n=MAX_CLARIFICATIONS, question=question,
                                                                    hint=restart_hint)}
    return {"clarification_needed": question, "clarify_choices": list(choices or [])}


CANCEL_WORDS = frozenset({"cancel", "stop", "abort"})  # and every Chinese word read as one of them (取消, 撤单)
CANCEL_ANSWER = "cancel"  # the answer a surface gives for a person who moved on (one of CANCEL_WORDS)
CANCELLED = N_("Cancelled; nothing was run.")  # kept as is in the state (routes compare it); shown translated


def is_cancel(text: str) -> bool:
    return english(normalize(text).strip()).lower() in CANCEL_WORDS


def chosen(answer: str, choices: list[str]) -> str:
    """The choice an answer picks: its number (`1`), or yes (`是`, `对`, `y`) when one choice was offered (`did you
    mean 600519.SH?`); any other answer as it is."""
    from graphs import syntax  # the grammar is built from the registry, which imports this module

    read = syntax.answer(answer)
    if isinstance(read, int) and 1 <= read <= len(choices):
        return choices[read - 1]
    return choices[0] if len(choices) == 1 and read == "yes" else answer


def clarify_node(state: Mapping[str, Any]) -> dict[str, Any]:
    question = state.get("clarification_needed") or _("Could you say more about what you need?")
    report_progress(_("question"))
    choices = state.get("clarify_choices") or []
    answer = chosen(answer_text(interrupt(clarify_request(question, choices))), choices)
    if is_cancel(answer):  # ends the request in every workflow; the word never joins the conversation
        return {"final_reply": CANCELLED, "clarification_needed": None, "clarify_choices": [],
                "clarification_count": 0, "result": None}
    return {
        "messages": [HumanMessage(answer or "(no answer)")],
        "clarification_count": state.get("clarification_count", 0) + 1,
        "clarification_needed": None,
        "clarify_choices": [],
    }


def after_clarify(next_node: str) -> Callable[[Mapping[str, Any]], str]:
    """The edge out of the clarify node: back to `next_node` with the answer, or the end when cancelled."""

    def route(state: Mapping[str, Any]) -> str:
        return END if state.get("final_reply") == CANCELLED else next_node

    return route
