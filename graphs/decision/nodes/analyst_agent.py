"""Analyst agent: one model call with the analyst's own tools, or, once the circuit breaker tripped, without tools
and with the instruction to write the report from what it has."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from langchain_core.messages import AIMessage, HumanMessage
from langgraph.runtime import Runtime

from graphs.context import WorkflowContext
from graphs.decision.budget import budget_note, over_budget, tokens_of
from graphs.decision.state import AnalystState
from graphs.decision.toolkit import Toolkit
from graphs.llm import MODEL_FAILURES, describe_model_failure

if TYPE_CHECKING:
    from graphs.decision.analyst import AnalystSpec

WRITE_NOW = ("You have used all {limit} tool calls you may make. Write your report now from the tool results "
             "you have; list anything you could not check under Data gaps.")


def make_agent_node(spec: AnalystSpec) -> Callable[..., dict[str, Any]]:
    def agent_node(state: AnalystState, runtime: Runtime[WorkflowContext]) -> dict[str, Any]:
        ctx, used = runtime.context, state.get("tokens", 0)
        if over_budget(used, state["budget"]):
            return {"stopped": budget_note(f"the {spec.name} analyst", used, state["budget"])}
        messages = list(state["messages"])
        tripped = state.get("tool_calls", 0) >= spec.tool_limit
        if tripped:
            messages.append(HumanMessage(WRITE_NOW.format(limit=spec.tool_limit)))
            model = ctx.llm
        else:
            model = ctx.llm.bind_tools(Toolkit(spec.name, ctx, state["request"]).schemas())
        try:
            answer = model.invoke(messages)
        except MODEL_FAILURES as exc:
            return {"stopped": f"the {spec.name} analyst's model failed: {describe_model_failure(exc)}"}
        if tripped and answer.tool_calls:  # the breaker holds: no tool runs past the limit
            answer = AIMessage(content=answer.content, id=answer.id, usage_metadata=answer.usage_metadata)
        extra = [messages[-1]] if tripped else []
        return {"messages": [*extra, answer], "tokens": used + tokens_of(messages, answer)}

    return agent_node
