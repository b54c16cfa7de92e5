"""Evaluate: a rule written in the rule language runs with no LLM: its bars are fetched, every term, comparison
and clause is computed in code, and each is logged as a step in the same format as the agent's."""

from __future__ import annotations

from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.runtime import Runtime

from graphs.context import WorkflowContext, workspace
from graphs.execution.logbook import log_step
from graphs.execution.nodes.act import bars_name
from graphs.execution.state import ExecutionState
from graphs.progress import report_progress
from tools.klines import KlineError
from tools.rule_language import RuleSyntaxError, explain, parse_rule

EXTRA_BARS = 250  # beyond the warm-up, so recursive indicators (EMA, RSI, MACD) have converged as in a backtest


def evaluate_node(state: ExecutionState, runtime: Runtime[WorkflowContext], config: RunnableConfig,
                  ) -> dict[str, Any]:
    ctx, rule = runtime.context, state["rule"]
    history: list[dict[str, Any]] = []
    try:
        parsed = parse_rule(rule["requirements"])
        if ctx.klines is None:
            raise KlineError("no market data is configured for rules")
        limit = min(1000, parsed.warmup + EXTRA_BARS)
        bars = ctx.klines(rule["symbol"]).klines(rule["symbol"], "1d", limit=limit)
    except (RuleSyntaxError, KlineError) as exc:
        return _failed(ctx, state, str(exc))
    fetch = {"type": "tool_call", "step": 1, "reasoning": f"the rule needs {parsed.warmup} bars before its first "
                                                          "decision", "next_step": "evaluate the rule",
             "action": {"tool_name": "get_kline_data", "params": {"symbol": rule["symbol"], "timeframe": "1d",
                                                                  "limit": limit}}}
    workspace(ctx, config).put(bars_name(state["execution_id"]), bars.frame)
    result = {"bars": len(bars.frame), "first": str(bars.frame.index[0]), "last": str(bars.frame.index[-1]),
              "notes": list(bars.notes)}
    log_step(ctx, state, fetch, result)
    history.append({**fetch, "result": result})
    steps = explain(parsed, bars.frame)
    for raw in steps[:-1]:
        step = {"type": "calculation", "step": raw["step"] + 1, "reasoning": raw["reasoning"],
                "action": raw["action"], "next_step": "", "intermediate_result": raw["intermediate_result"]}
        log_step(ctx, state, step, raw["intermediate_result"])
        history.append({**step, "result": raw["intermediate_result"]})
        report_progress(f"step {step['step']}", raw["reasoning"])
    last = steps[-1]
    decision = {"action": last["action"], "reason": last["reason"], "confidence": float(last["confidence"])}
    history.append({"type": "decision", "step": last["step"] + 1, "reasoning": last["reasoning"],
                    "action": decision, "next_step": "stop", "result": None})
    return {"history": history, "decision": decision}


def _failed(ctx: WorkflowContext, state: ExecutionState, why: str) -> dict[str, Any]:
    action = {"type": "decision", "step": 1, "reasoning": why,
              "action": {"action": "hold", "reason": why, "confidence": 0.0}, "next_step": "stop"}
    return {"history": [{**action, "result": {"failure": why}}],
            "decision": {"action": "hold", "reason": why, "confidence": 0.0, "failure": True}}
