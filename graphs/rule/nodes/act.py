"""Act: carry out the model's tool call or calculation in code and log the step with its result. The bars a tool
call fetched are kept in the thread's workspace and injected into calculations: the model never passes data. A-share
bars end at the run's as-of session (load.py)."""

from __future__ import annotations

from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.runtime import Runtime

from graphs.context import workspace
from graphs.progress import report_progress
from graphs.rule.deps import RuleDeps
from graphs.rule.logbook import log_step
from graphs.rule.state import RuleRunState
from tools.data.klines import KlineError, symbol_kind
from tools.i18n import _
from tools.rules.calculations import CalculationError, calculate
from tools.storage.workspace import WorkspaceError

TOOLS = ("get_kline_data",)


def as_of_date(state: RuleRunState) -> str | None:
    """The session date a run decides as of (A-share bars end there); None: the data's last bar."""
    return (state.get("as_of") or {}).get("date")


def bars_name(execution_id: str) -> str:
    """Where a run keeps the bars it fetched: the thread's workspace, one frame per execution."""
    return f"ohlcv/bars-{execution_id}"


def act_node(state: RuleRunState, runtime: Runtime[RuleDeps], config: RunnableConfig) -> dict[str, Any]:
    ctx, action = runtime.context, dict(state["action"] or {})
    try:
        result = _tool(ctx, state, config, action) if action["type"] == "tool_call" else \
            _calculation(ctx, state, config, action)
    except (KlineError, CalculationError, WorkspaceError) as exc:
        result = {"error": str(exc)}
    log_step(ctx, state, action, result)
    report_progress(_("step {n}").format(n=action["step"]), _summary(action, result))
    return {"history": [*(state.get("history") or []), {**action, "result": result}], "action": None}


def _tool(ctx: RuleDeps, state: RuleRunState, config: RunnableConfig, action: dict[str, Any],
          ) -> dict[str, Any]:
    body = action["action"]
    name = body.get("tool_name")
    if name not in TOOLS:
        return {"error": f"unknown tool {name!r}; tools: {', '.join(TOOLS)}"}
    params = body.get("params") or {}
    if not isinstance(params, dict):
        return {"error": "params must be an object like {\"symbol\": \"600519.SH\", \"limit\": 100}"}
    symbol = str(params.get("symbol") or state["rule"]["symbol"])
    if ctx.klines is None:
        return {"error": "no market data is configured for rules"}
    limit = params.get("limit") or 100
    if isinstance(limit, bool) or not str(limit).isdigit():
        return {"error": f"limit must be a whole number of bars, not {limit!r}"}
    end = as_of_date(state) if symbol_kind(symbol) == "a-share" else None
    bars = ctx.klines(symbol).klines(symbol, str(params.get("timeframe") or "1d"), limit=int(limit), end=end)
    workspace(ctx, config).put(bars_name(state["execution_id"]), bars.frame)
    last = bars.frame.iloc[-1]
    return {"symbol": bars.symbol, "timeframe": bars.timeframe, "source": bars.source, "bars": len(bars.frame),
            "first": str(bars.frame.index[0]), "last": str(bars.frame.index[-1]),
            "last_bar": {k: round(float(last[k]), 6) for k in ("open", "high", "low", "close", "volume")},
            "notes": list(bars.notes)}


def _calculation(ctx: RuleDeps, state: RuleRunState, config: RunnableConfig, action: dict[str, Any],
                 ) -> dict[str, Any]:
    body = action["action"]
    name = bars_name(state["execution_id"])
    ws = workspace(ctx, config)
    if name not in ws:
        raise CalculationError("no bars were fetched yet: call get_kline_data first")
    params = body.get("params") or {}
    if not isinstance(params, dict):
        raise CalculationError("params must be an object like {\"period\": 30}")
    return calculate(ws.get(name), str(body.get("calculation_type") or ""), params)


def _summary(action: dict[str, Any], result: dict[str, Any]) -> str:
    if "error" in result:
        return _("error: {error}").format(error=result["error"])
    if action["type"] == "tool_call":
        return _("{n} bars of {symbol}").format(n=result["bars"], symbol=result["symbol"])
    values = {k: v for k, v in result.items() if k not in ("indicator", "bar", "warmup_bars", "bars", "ready")}
    return f"{result['indicator']}: " + ", ".join(f"{k} {v}" for k, v in values.items())
