"""Analyst start: the private state from the request, and the analyst's memory (its summaries and the reflections
on earlier decisions whose outcome was knowable by the decision date) in its system prompt."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from langchain_core.messages import HumanMessage, SystemMessage
from langgraph.runtime import Runtime

from graphs.context import WorkflowContext
from graphs.decision.memory import memory_of, reflections
from graphs.decision.state import AnalystState

if TYPE_CHECKING:
    from graphs.decision.analyst import AnalystSpec


def make_start_node(spec: AnalystSpec) -> Callable[..., dict[str, Any]]:
    def start_node(state: AnalystState, runtime: Runtime[WorkflowContext]) -> dict[str, Any]:
        ctx, request = runtime.context, state["request"]
        code, date = request["ts_code"], request["trade_date"]
        summary = memory_of(ctx, spec.name, request).get_memory_summary(code, date, request["session"])
        memory = "\n".join(f"- {label}: {text}" for label, text in (
            ("earlier today", summary["today_report"]), ("pre-open summary", summary["memory_summary_pre_open"]),
            ("post-close summary", summary["memory_summary_post_close"])) if text) or "- none yet"
        lessons = "\n".join(f"- {text}" for text in reflections(ctx, request)) or "- none yet"
        system = spec.prompt.format(code=code, name=request.get("name") or code, date=date, memory=memory,
                                    reflections=lessons, tool_limit=spec.tool_limit)
        task = f"Write your {spec.name} report on {code} as of {date} (after the close)."
        return {"company_of_interest": code, "trade_date": date, "trade_timestamp": request.get("as_of"),
                "messages": [SystemMessage(system), HumanMessage(task)], "tool_calls": 0, "tokens": 0,
                "evidence": [], "gaps": [], "stopped": None}

    return start_node
