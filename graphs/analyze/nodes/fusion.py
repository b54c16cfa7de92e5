"""Fusion: seed 001's FusionState from the four memory controllers (each analyst's today report, the very version
this run's analyst wrote, and its long-term summaries of the session), the paper account (cash, total value,
positions, max drawdown) and the provider (the price and the previous close as of the decision date: for a
pre-open decision, the last close before the open). Also the numbers the judges may quote, for their number
audit, and the memory summaries the analysts' reports made due (written beside the debate, which reads the memory
as it stood before them), whose tokens are set aside from the debates' budget."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from langgraph.runtime import Runtime

from graphs.analyze.deps import AnalyzeDeps
from graphs.analyze.grammar import ANALYSTS
from graphs.analyze.memory import memory_of, summary_tokens
from graphs.analyze.routes import stopped_stage
from graphs.analyze.state import AnalystMemorySummary, AnalyzeState, session_of
from graphs.analyze.usage import tokens_used
from graphs.order.deps import broker_for
from graphs.progress import report_progress
from tools.broker.money import price_of
from tools.broker.reports import account_report
from tools.desk.snapshot import price_bars
from tools.i18n import _

NOT_RUN = AnalystMemorySummary(today_report="(this analyst was not asked)", memory_summary_pre_open="",
                               memory_summary_post_close="")
NO_REPORT = "(this analyst stopped before writing a report)"


def _summary(ctx: AnalyzeDeps, name: str, request: dict[str, Any], runs: dict[str, Any], session: str,
             day: str) -> AnalystMemorySummary:
    """The analyst's memory summary with the report this run wrote; an analyst not asked, one that stopped before
    writing a report, or one that failed to write one (said as missing, with why) has none (never another run's
    report of the day)."""
    if name not in request["analysts"]:
        return NOT_RUN
    run = runs.get(name) or {}
    report_id = run.get("report_id")
    summary = memory_of(ctx, name, request).get_memory_summary(request["ts_code"], day, session, report_id=report_id)
    if report_id:
        return summary
    return AnalystMemorySummary(**{**summary, "today_report": f"(missing: {run['failed']})" if run.get("failed")
                                   else NO_REPORT})


def fusion_node(state: AnalyzeState, runtime: Runtime[AnalyzeDeps]) -> dict[str, Any]:
    ctx, request = runtime.context, state["request"]
    code, date = request["ts_code"], request["trade_date"]
    report_progress(_("fusion"), _("reports, account and prices"))
    runs = state.get("analyst_runs") or {}
    session, day = session_of(request)
    update: dict[str, Any] = {
        f"{name}_analyst_summary": _summary(ctx, name, request, runs, session, day) for name in ANALYSTS}
    update["memory_due"] = _memory_due(ctx, request, runs, session, day)
    if ctx.broker is None:
        return {**update, "stopped": _("stopped at fusion: no paper account is configured for this run")}
    failed = [run["failed"] for run in runs.values() if run.get("failed")]
    if failed and len(failed) == len(request["analysts"]):
        return {**update, "stopped": _("stopped at fusion: no analyst wrote a report ({failures})").format(
            failures="; ".join(failed))}
    update.update(_account(ctx, request, state.get("requester")))
    bars = price_bars(ctx.provider, code, date, 2)
    closes = [price_of(c) for c in bars["close"]]
    update["current_price"] = str(closes[-1])
    update["previous_close"] = str(closes[-2]) if len(closes) > 1 else None
    evidence = [n for run in (state.get("analyst_runs") or {}).values() for n in run.get("evidence") or []]
    evidence += [float(Decimal(v)) for v in (update["account_cash"], update["account_total_value"],
                                             update["current_price"], update["previous_close"]) if v]
    evidence += [float(p["quantity"]) for p in update["portfolio_positions"].values()]
    update["evidence"] = evidence
    update["stopped"] = stopped_stage(state)
    update["budget"] = request["budget"] - tokens_used(state) - sum(update["memory_due"].values())
    update["depth"] = request["depth"]
    return update


def _memory_due(ctx: AnalyzeDeps, request: dict[str, Any], runs: dict[str, Any], session: str,
                day: str) -> dict[str, int]:
    """The analysts whose report made a memory summary due, with the tokens set aside for it (read now, so the
    debates' budget leaves room for the summaries written beside them)."""
    due = {}
    for name, run in runs.items():
        summary = memory_of(ctx, name, request).due_summary(request["ts_code"], day, session) \
            if run.get("report_id") else None
        if summary is not None:
            due[name] = summary_tokens(summary)
    return due


def _account(ctx: AnalyzeDeps, request: dict[str, Any], requester: str | None) -> dict[str, Any]:
    broker = broker_for(ctx, request["account"], requester)
    account = broker.account()
    report = account_report(account, broker.realised(), [equity for *_, equity in broker.marks()])
    positions = {p.ts_code: {"quantity": p.quantity, "sellable": p.sellable, "cost": str(p.cost),
                             "price": str(p.price) if p.price is not None else None} for p in account.positions}
    return {"account_cash": str(account.available), "account_total_value": str(account.equity),
            "portfolio_positions": positions, "max_drawdown": str(report.max_drawdown.quantize(Decimal("0.0001")))}
