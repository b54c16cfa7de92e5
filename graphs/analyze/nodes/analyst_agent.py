"""Analyst agent: one model call with the analyst's own tools, or, once the circuit breaker tripped, without tools
and with the instruction to write the report from what it has."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from langchain_core.messages import AIMessage, HumanMessage
from langgraph.runtime import Runtime

from graphs.analyze.budget import answer_allowance, budget_note, cut_at_budget, prompt_tokens, tokens_of
from graphs.analyze.deps import AnalyzeDeps
from graphs.analyze.models import MODELS
from graphs.analyze.state import AnalystSpec, AnalystState
from graphs.analyze.toolkit import Toolkit
from graphs.analyze.words import analyst_stage
from graphs.context import model_required
from graphs.llm import MODEL_FAILURES, describe_model_failure
from tools.i18n import _

WRITE_NOW = ("You have used all {limit} tool calls you may make. Write your report now from the tool results "
             "you have; list anything you could not check under Data gaps.")


def make_agent_node(spec: AnalystSpec) -> Callable[..., dict[str, Any]]:
    def agent_node(state: AnalystState, runtime: Runtime[AnalyzeDeps]) -> dict[str, Any]:
        ctx, used, budget = runtime.context, state.get("tokens", 0), state["budget"]
        messages = list(state["messages"])
        tripped = state.get("tool_calls", 0) >= spec.tool_limit
        if tripped:
            messages.append(HumanMessage(WRITE_NOW.format(limit=spec.tool_limit)))
        tools = [] if tripped else Toolkit(spec.name, ctx, state["request"]).schemas()
        cap = answer_allowance(prompt_tokens(messages, tools), used, budget, ctx.max_answer_tokens)
        if cap is None:
            return {"stopped": budget_note(analyst_stage(spec.name), used, budget)}
        llm = model_required(ctx, MODELS["analyst"])
        model = llm.bind_tools(tools) if tools else llm
        try:
            answer = model.bind(max_tokens=cap).invoke(messages)
        except MODEL_FAILURES as exc:
            return {"stopped": _("{analyst}'s model failed: {failure}").format(
                analyst=analyst_stage(spec.name), failure=describe_model_failure(exc))}
        spent = used + tokens_of(messages, answer)
        if cut_at_budget(answer):
            return {"stopped": budget_note(analyst_stage(spec.name), spent, budget, cut=True), "tokens": spent}
        if tripped and answer.tool_calls:  # the breaker holds: no tool runs past the limit
            answer = AIMessage(content=answer.content, id=answer.id, usage_metadata=answer.usage_metadata)
        extra = [messages[-1]] if tripped else []
        return {"messages": [*extra, answer], "tokens": spent}

    return agent_node
