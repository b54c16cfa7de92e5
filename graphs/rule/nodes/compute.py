"""Compute: a rule written in the rule language runs with no LLM: its bars are fetched, every term, comparison
and clause is computed in code, and each is logged as a step in the same format as the agent's. An A-share
rule decides on its stock's whole traded history (tools.rules.backtest.rule_history), exactly what a backtest of
the rule decides on, so a run's decision equals the backtest's decision on the same day; crypto rules (no
backtest) read the latest warm-up + EXTRA_BARS klines. A-share bars end at the run's as-of session (load.py)."""

from __future__ import annotations

from typing import Any

import pandas as pd
from langchain_core.runnables import RunnableConfig
from langgraph.runtime import Runtime

from graphs.context import workspace
from graphs.progress import report_progress
from graphs.rule.deps import RuleDeps
from graphs.rule.logbook import log_step
from graphs.rule.nodes.act import as_of_date, bars_name
from graphs.rule.state import RuleRunState
from tools.data.klines import MAX_LIMIT, KlineError, symbol_kind
from tools.data.schema import DataError
from tools.i18n import N_, _
from tools.rules.backtest import rule_bars, rule_history
from tools.rules.explanation import explain
from tools.rules.parser import parse_rule
from tools.rules.syntax import Rule, RuleSyntaxError

PRICE_BASES = {"unadjusted": N_("unadjusted"), "forward-adjusted": N_("forward-adjusted"),
               "unknown": N_("of unknown basis")}  # the data's price basis, as the fetch step's note says it
EXTRA_BARS = 250  # crypto: beyond the warm-up, so recursive indicators (EMA, RSI, MACD) have mostly converged


def compute_node(state: RuleRunState, runtime: Runtime[RuleDeps], config: RunnableConfig,
                  ) -> dict[str, Any]:
    ctx, rule = runtime.context, state["rule"]
    history: list[dict[str, Any]] = []
    try:
        parsed = parse_rule(rule["requirements"])
        bars, params, notes = _bars(ctx, rule["symbol"], parsed, as_of_date(state))
    except (RuleSyntaxError, KlineError, DataError) as exc:
        return _failed(ctx, state, str(exc))
    needs = _("the rule needs {n} bars before its first decision").format(n=parsed.warmup)
    fetch = {"type": "tool_call", "step": 1, "reasoning": needs, "next_step": "evaluate the rule",
             "action": {"tool_name": "get_kline_data", "params": params}}
    workspace(ctx, config).put(bars_name(state["execution_id"]), bars)
    result = {"bars": len(bars), "first": str(bars.index[0]), "last": str(bars.index[-1]), "notes": notes}
    log_step(ctx, state, fetch, result)
    history.append({**fetch, "result": result})
    steps = explain(parsed, bars)
    for raw in steps[:-1]:
        step = {"type": "calculation", "step": raw["step"] + 1, "reasoning": raw["reasoning"],
                "action": raw["action"], "next_step": "", "intermediate_result": raw["intermediate_result"]}
        log_step(ctx, state, step, raw["intermediate_result"])
        history.append({**step, "result": raw["intermediate_result"]})
        report_progress(_("step {n}").format(n=step["step"]), raw["reasoning"])
    last = steps[-1]
    decision = {"action": last["action"], "reason": last["reason"], "confidence": float(last["confidence"])}
    history.append({"type": "decision", "step": last["step"] + 1, "reasoning": last["reasoning"],
                    "action": decision, "next_step": "stop", "result": None})
    return {"history": history, "decision": decision}


def _bars(ctx: RuleDeps, symbol: str, rule: Rule, as_of: str | None,
          ) -> tuple[pd.DataFrame, dict[str, Any], list[str]]:
    """The bars the rule decides on (A-shares: up to and including the session `as_of`), the fetch's parameters
    for the log, and notes on the data."""
    if symbol_kind(symbol) == "a-share":
        end = as_of or ctx.provider.last_date()
        history = rule_history(ctx.provider, symbol, end) if end else pd.DataFrame()
        if history.empty:
            raise KlineError(_("no daily bars of {symbol} from the {provider} provider").format(
                symbol=symbol, provider=ctx.provider.label()))
        notes = [_("the whole traded history, as a backtest of the rule reads it; prices are {basis} ({provider} "
                   "provider)").format(basis=_(PRICE_BASES[ctx.provider.price_basis]), provider=ctx.provider.label())]
        return rule_bars(history), {"symbol": symbol, "timeframe": "1d", "start": str(history["trade_date"].iloc[0]),
                                    "end": end}, notes
    if ctx.klines is None:
        raise KlineError(_("no market data is configured for rules"))
    limit = min(MAX_LIMIT, rule.warmup + EXTRA_BARS)
    bars = ctx.klines(symbol).klines(symbol, "1d", limit=limit)
    return bars.frame, {"symbol": symbol, "timeframe": "1d", "limit": limit}, list(bars.notes)


def _failed(ctx: RuleDeps, state: RuleRunState, why: str) -> dict[str, Any]:
    action = {"type": "decision", "step": 1, "reasoning": why,
              "action": {"action": "hold", "reason": why, "confidence": 0.0}, "next_step": "stop"}
    return {"history": [{**action, "result": {"failure": why}}],
            "decision": {"action": "hold", "reason": why, "confidence": 0.0, "failure": True}}
