"""Analyst start: the private state from the request, and the analyst's memory (its summaries and the reflections
on earlier decisions whose outcome was knowable by the decision date) in its system prompt.

Before a pre-open session is read, two summaries may be due (the light model writes them; their tokens count as the
analyst's): the post-close summary of the previous trading day (its close is past, and reports since the last one,
such as that day's own pre-open report, may wait for it), then this open's brief from the newest post-close one.
So a desk that decides only before the open still builds its long-term memory day by day."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from langchain_core.messages import HumanMessage, SystemMessage
from langgraph.runtime import Runtime

from graphs.analyze.deps import AnalyzeDeps
from graphs.analyze.memory import memory_of, reflections
from graphs.analyze.state import AnalystSpec, AnalystState, session_of
from graphs.llm import MODEL_FAILURES, describe_model_failure, language_instruction

log = logging.getLogger(__name__)


def moment(request: dict[str, Any]) -> str:
    """When the analyst writes, in words: after a close, or before an open on the previous close's data."""
    session, day = session_of(request)
    if session == "pre_open":
        return (f"before the open of {day} (data up to the close of {request['trade_date']}; nothing of {day} is "
                "known yet)")
    return f"as of the close of {request['trade_date']}"


def make_start_node(spec: AnalystSpec) -> Callable[..., dict[str, Any]]:
    def start_node(state: AnalystState, runtime: Runtime[AnalyzeDeps]) -> dict[str, Any]:
        ctx, request = runtime.context, state["request"]
        code, (session, date) = request["ts_code"], session_of(request)
        spent: list[int] = []  # the light model's tokens for a pre-open summary
        memory = memory_of(ctx, spec.name, request, spent)
        if session == "pre_open":
            try:
                memory.refresh_summaries(code, request["trade_date"], "post_close")
                memory.refresh_summaries(code, date, session)
            except MODEL_FAILURES as exc:  # not stored: a later refresh writes it
                log.warning("the %s analyst's memory summary was not written: %s", spec.name,
                            describe_model_failure(exc))
        summary = memory.get_memory_summary(code, date, session)
        remembered = "\n".join(f"- {label}: {text}" for label, text in (
            ("earlier today", summary["today_report"]), ("pre-open summary", summary["memory_summary_pre_open"]),
            ("post-close summary", summary["memory_summary_post_close"])) if text) or "- none yet"
        lessons = "\n".join(f"- {text}" for text in reflections(ctx, request)) or "- none yet"
        system = spec.prompt.format(code=code, name=request.get("name") or code, moment=moment(request),
                                    date=request["trade_date"], memory=remembered, reflections=lessons,
                                    tool_limit=spec.tool_limit)
        task = f"Write your {spec.name} report on {code} {moment(request)}."
        return {"company_of_interest": code, "trade_date": request["trade_date"],
                "trade_timestamp": request.get("as_of"),
                "messages": [SystemMessage(system + language_instruction()), HumanMessage(task)],
                "tool_calls": 0, "tokens": sum(spent), "evidence": [], "gaps": [], "stopped": None}

    return start_node
