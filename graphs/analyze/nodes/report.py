"""Report: the decision as a result (rating, target, points, risks, data gaps, audit flags, the order), with a
price chart of the indicators used and every analyst report and debate transcript in one Markdown file. A desk
that stopped early reports what it has and says where it stopped."""

from __future__ import annotations

from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.runtime import Runtime

from graphs.analyze.deps import AnalyzeDeps
from graphs.analyze.routes import stopped_stage
from graphs.analyze.state import AnalyzeState, session_of
from graphs.analyze.usage import tokens_used
from graphs.analyze.words import analyst_word, stage_word
from graphs.context import thread_id
from tools.desk.snapshot import indicator_lines, price_bars
from tools.i18n import _, ngettext
from tools.storage.artifacts import ArtifactRef

CHART_DAYS = 120
FUSION_KEYS = ("account_cash", "account_total_value", "current_price", "previous_close", "max_drawdown",
               "portfolio_positions")


def report_node(state: AnalyzeState, runtime: Runtime[AnalyzeDeps], config: RunnableConfig) -> dict[str, Any]:
    ctx, request = runtime.context, state["request"]
    runs, memory = state.get("analyst_runs") or {}, state.get("memory_runs") or {}
    result = {
        "kind": "decision", "request": request, "stopped": state.get("stopped") or stopped_stage(state),
        "analysts": {name: _analyst(run, memory.get(name) or {}) for name, run in runs.items()},
        "stages": state.get("stage_runs") or {}, "research_summary": state.get("research_summary"),
        "investment_plan": state.get("investment_plan"), "risk_summary": state.get("risk_summary"),
        "final_trade_decision": state.get("final_trade_decision"),
        "trader_investment_plan": state.get("trader_investment_plan"),
        "execution_record": state.get("execution_record"), "order_outcome": state.get("order_outcome") or {},
        "resolutions": state.get("resolutions") or [], "tokens": tokens_used(state),
        **{key: state.get(key) for key in FUSION_KEYS},
    }
    result["artifacts"] = [] if request.get("replay") else _artifacts(ctx, config, state, result)
    return {"result": result}


def _analyst(run: dict[str, Any], memory: dict[str, Any]) -> dict[str, Any]:
    """An analyst's record in the result: its run, its tokens with its memory summary's."""
    return {**{k: v for k, v in run.items() if k != "evidence"},
            "tokens": int(run.get("tokens") or 0) + int(memory.get("tokens") or 0)}


def _artifacts(ctx: AnalyzeDeps, config: RunnableConfig, state: AnalyzeState,
               result: dict[str, Any]) -> list[ArtifactRef]:
    from tools.research.charts import price_with_indicators  # matplotlib on first draw: not at the start

    request, thread, key = state["request"], thread_id(config), state["run_id"]
    code, date = request["ts_code"], request["trade_date"]
    bars = price_bars(ctx.provider, code, date, CHART_DAYS)
    lines = indicator_lines(bars).tail(CHART_DAYS)
    title = _("{code} as of {date}: close, MA, BOLL, MACD").format(code=code, date=date)
    chart = ctx.artifacts.put(thread, key, "chart", f"decision_{code}_{date}.png",
                              _("{code} as of {date}").format(code=code, date=date), "image/png",
                              price_with_indicators(lines, title))
    text = markdown(ctx, state, result)
    notes = ctx.artifacts.put(thread, key, "reports", f"decision_{code}_{date}.md",
                              _("{code} {date}: the desk's reports").format(code=code, date=date), "text/markdown",
                              text.encode())
    return [chart, notes]


def markdown(ctx: AnalyzeDeps, state: AnalyzeState, result: dict[str, Any]) -> str:
    """Every analyst report, both debates' transcripts and the decisions, as one document."""
    request = state["request"]
    session, day = session_of(request)
    title = (_("Decision desk: {code} before the open of {day} (depth {depth})") if session == "pre_open" else
             _("Decision desk: {code} as of {date} (depth {depth})"))
    parts = ["# " + title.format(code=request["ts_code"], day=day, date=request["trade_date"], depth=request["depth"])]
    for name, run in (state.get("analyst_runs") or {}).items():
        head = ngettext("{analyst} analyst ({n} tool call, {tokens} tokens)",
                        "{analyst} analyst ({n} tool calls, {tokens} tokens)", run["tool_calls"]).format(
            analyst=analyst_word(name).capitalize(), n=run["tool_calls"], tokens=f"{run['tokens']:,}")
        parts.append(f"## {head}\n\n{run['report']}")
    for stage, run in (state.get("stage_runs") or {}).items():
        stored = ctx.artifacts.get(run["transcript"]) if run.get("transcript") else None
        body = stored.data.decode() if stored else _("(no transcript)")
        head = ngettext("{stage} debate ({n} turn)", "{stage} debate ({n} turns)", run["turns"]).format(
            stage=stage_word(stage).capitalize(), n=run["turns"])
        parts.append(f"## {head}\n\n{body}")
    for title, key in ((_("Investment plan"), "investment_plan"), (_("Final trade decision"), "final_trade_decision"),
                       (_("Trader"), "trader_investment_plan")):
        if result.get(key):
            parts.append(f"## {title}\n\n{result[key]}")
    if result.get("stopped"):
        parts.append(f"## {_('Stopped early')}\n\n{result['stopped']}")
    return "\n\n".join(parts) + "\n"
