"""Analyst tools: run the tool calls of the agent's last answer from the analyst's own toolkit (seed 004's
filtering tool node: a call to anything else is answered with an error, never run), counting each call against
the circuit breaker. Calls past the limit are answered with "limit reached", not run."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from langchain_core.messages import AIMessage, ToolMessage
from langgraph.runtime import Runtime

from graphs.analyze.deps import AnalyzeDeps
from graphs.analyze.state import AnalystSpec, AnalystState
from graphs.analyze.toolkit import Toolkit

LIMIT_REACHED = '{"error": "tool-call limit reached; write your report from what you have"}'


def make_tools_node(spec: AnalystSpec) -> Callable[..., dict[str, Any]]:
    def tools_node(state: AnalystState, runtime: Runtime[AnalyzeDeps]) -> dict[str, Any]:
        last = state["messages"][-1]
        assert isinstance(last, AIMessage)
        toolkit = Toolkit(spec.name, runtime.context, state["request"])
        count, evidence, gaps = state.get("tool_calls", 0), list(state.get("evidence") or []), \
            list(state.get("gaps") or [])
        replies = []
        for call in last.tool_calls:
            if count >= spec.tool_limit:
                replies.append(ToolMessage(LIMIT_REACHED, tool_call_id=call["id"], name=call["name"]))
                continue
            count += 1
            run = toolkit.run(call["name"], call.get("args") or {})
            if run.output is not None:
                evidence.append(run.output)
            if run.gap and run.gap not in gaps:
                gaps.append(run.gap)
            replies.append(ToolMessage(run.text, tool_call_id=call["id"], name=call["name"]))
        return {"messages": replies, "tool_calls": count, "evidence": evidence, "gaps": gaps}

    return tools_node
