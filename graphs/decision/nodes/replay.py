"""Replay: walk the desk over past dates (`analyze CODE START..END every=5d`). Each date is a full decision with
point-in-time data, in the replay's own memory namespace (empty at its start, so nothing written later can leak
into an earlier date; reflections appear only once their horizon has passed) and its own replay account, where
orders fill without approval at that date's close. The replay stops cleanly when its token budget is spent, and
reports the paper P&L against buy-and-hold and the hit rate of the ratings, with an equity chart."""

from __future__ import annotations

import dataclasses
from decimal import Decimal
from typing import Any

from langchain_core.messages import HumanMessage
from langchain_core.runnables import RunnableConfig
from langgraph.runtime import Runtime

from graphs.context import WorkflowContext, thread_id
from graphs.decision.memory import HORIZON_DAYS
from graphs.decision.nodes.prepare import REPLAY_PREFIX
from graphs.decision.state import DecisionState
from graphs.progress import report_progress
from tools.broker.boards import OrderRuleError
from tools.broker.clock import day
from tools.broker.fees import fill_fees
from tools.broker.money import price_of
from tools.broker.replay import ReplayBroker, ReplayLedger
from tools.broker.rules import lot_rule
from tools.broker.sizing import FEE_MARGIN
from tools.charts import account_equity
from tools.decision_log import resolve_due
from tools.market_snapshot import price_bars


def replay_node(state: DecisionState, runtime: Runtime[WorkflowContext], config: RunnableConfig) -> dict[str, Any]:
    from graphs.decision.graph import build_decision_graph  # the desk runs inside its own replay node

    ctx, request = runtime.context, state["request"]
    code, dates, run = request["ts_code"], request["replay_dates"], state["run_id"]
    namespace, account = f"{REPLAY_PREFIX}{run}", f"replay-{run[:12]}"
    ledger = ReplayLedger(ctx.paper.starting_cash, ctx.paper.rates)
    desk = build_decision_graph(replay=True)
    steps: list[dict[str, Any]] = []
    closes: dict[str, Decimal] = {}  # the stock's close on each date decided
    spent, stopped = 0, None
    for number, date in enumerate(dates, 1):
        left = ctx.replay_token_budget - spent
        if left <= 0:
            stopped = f"stopped before {date}: the replay's token budget of {ctx.replay_token_budget:,} is spent"
            break
        close = closes[date] = price_of(price_bars(ctx.provider, code, date, 1)["close"].iloc[-1])
        broker = ReplayBroker(ledger, account, date, {code: close})
        inner = dataclasses.replace(ctx, desk_namespace=namespace, broker=lambda name, by, b=broker: b,
                                    decision_token_budget=min(ctx.decision_token_budget, left))
        ask = f"analyze {code} {date} depth={request['depth']} analysts={','.join(request['analysts'])}"
        out = desk.invoke({"messages": [HumanMessage(ask)], "requester": state.get("requester")},
                          {"configurable": {"thread_id": f"{thread_id(config)}:{run}:{date}", "account": account}},
                          context=inner)
        result = out.get("result") or {}
        spent += int(result.get("tokens") or 0)
        ledger.marks.append((date, ledger.equity({code: close})))
        steps.append(_step(date, result, ledger.marks[-1][1], out.get("final_reply")))
        report_progress("replay", f"{number}/{len(dates)} {date}: {steps[-1]['rating']}")
        if result.get("stopped") or out.get("final_reply"):
            stopped = f"stopped at {date}: {result.get('stopped') or out.get('final_reply')}"
            break
    resolved = resolve_due(ctx.engine, ctx.provider, namespace=namespace, as_of_date=str(ctx.provider.last_date()),
                           horizon=HORIZON_DAYS)
    hits = [r.hit for r in resolved if r.hit is not None]
    benchmark = _buy_and_hold(ctx, code, closes)
    result = {"kind": "replay", "request": request, "namespace": namespace, "account": account, "steps": steps,
              "equity": [(d, str(e)) for d, e in ledger.marks], "benchmark": [(d, str(v)) for d, v in benchmark],
              "starting_cash": str(ledger.starting_cash), "fills": len(ledger.fills), "tokens": spent,
              "hit_rate": f"{sum(hits)}/{len(hits)}" if hits else "n/a (no rating resolved yet)",
              "stopped": stopped, "price_basis": ctx.provider.price_basis}
    if ledger.marks:
        chart = account_equity([d for d, _ in ledger.marks], [float(e) for _, e in ledger.marks],
                               float(ledger.starting_cash), f"Replay of the desk on {code}: equity")
        result["artifacts"] = [ctx.artifacts.put(thread_id(config), run, "chart", f"replay_{code}.png",
                                                 f"replay of {code}", "image/png", chart)]
    return {"result": result}


def _step(date: str, result: dict[str, Any], equity: Decimal, reply: str | None) -> dict[str, Any]:
    risk = result.get("risk_summary") or {}
    record = result.get("execution_record") or {}
    return {"date": date, "rating": risk.get("rating") or "-", "target": risk.get("target_position"),
            "order": record.get("message") or reply or result.get("stopped") or "-", "equity": str(equity),
            "tokens": int(result.get("tokens") or 0)}


def _buy_and_hold(ctx: WorkflowContext, code: str, closes: dict[str, Decimal]) -> list[tuple[str, Decimal]]:
    """Buying as many whole lots as the starting cash allows at the first date's close (fees paid), then holding,
    marked at the `closes` of the dates decided."""
    if not closes:
        return []
    dates, cash = list(closes), ctx.paper.starting_cash
    try:
        lot = lot_rule(code, day(dates[0]))
    except OrderRuleError:
        return []
    shares = lot.round_down(int(cash * (1 - FEE_MARGIN) / closes[dates[0]]))
    value = closes[dates[0]] * shares
    left = cash - value - (fill_fees(code, "buy", value, day(dates[0]), ctx.paper.rates).total if shares else 0)
    return [(d, left + closes[d] * shares) for d in dates]
