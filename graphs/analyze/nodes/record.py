"""Record: the decision goes to the decision log with its inputs (the ids of the very report versions it read,
price, as-of, session, universe), for the deferred reflection; the execution record of the FusionState says what
became of the order."""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.runtime import Runtime

from graphs.analyze.deps import AnalyzeDeps
from graphs.analyze.state import AnalyzeState, session_of
from graphs.context import thread_id
from tools.desk.log import record_decision


def record_node(state: AnalyzeState, runtime: Runtime[AnalyzeDeps], config: RunnableConfig) -> dict[str, Any]:
    ctx, request, risk = runtime.context, state["request"], state["risk_summary"] or {}
    known = ctx.provider.known_codes()
    universe = sorted(known) if known else []  # no universe (tushare): resolved without a benchmark, unscored
    decision_id = record_decision(
        ctx.engine, namespace=request["namespace"], ts_code=request["ts_code"], trade_date=request["trade_date"],
        as_of=datetime.fromisoformat(request["as_of"]), rating=risk["rating"],
        target_position=Decimal(str(risk["target_position"])), confidence=float(risk["confidence"]),
        price=Decimal(state["current_price"]),
        report_ids={name: run["report_id"] for name, run in (state.get("analyst_runs") or {}).items()
                    if run.get("report_id")},
        universe=universe, thread_id=thread_id(config),
        summary={"research": state.get("research_summary"), "risk": risk, "session": session_of(request)[0],
                 "session_date": session_of(request)[1]}, decision_id=state["run_id"])
    outcome = state.get("order_outcome") or {}
    record = {"decision_id": decision_id, "sizing": state.get("trader_investment_plan"),
              "order_intent": state.get("order_intent") or None, "status": outcome.get("status") or "no order",
              "message": outcome.get("message") or state.get("trader_investment_plan"),
              "order": outcome.get("order"), "decided_by": outcome.get("decided_by")}
    return {"execution_record": record}
