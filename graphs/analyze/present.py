"""Views of the desk's results for the adapters: the decision card, the no-LLM indicator reply, the decision list."""

from __future__ import annotations

from typing import Any

from graphs.analyze.state import session_of
from graphs.views import Table, View
from tools.desk.log import Decision
from tools.i18n import _, pgettext


def present_decision(result: dict[str, Any]) -> View:
    if result.get("kind") == "no_llm":
        return _no_llm(result)
    if result.get("kind") == "replay":
        return _replay(result)
    request, risk = result["request"], result.get("risk_summary") or {}
    research = result.get("research_summary") or {}
    code, date = request["ts_code"], when(request)
    name = f"{request['name']} " if request.get("name") else ""
    if risk:
        title = f"{name}{code} · {date}: {risk['rating']}, target {float(risk['target_position']):.0%}"
        summary = result.get("final_trade_decision") or result.get("investment_plan") or risk["rating"]
    else:
        title = f"{name}{code} · {date}: no decision"
        summary = result.get("stopped") or "The desk stopped before a decision."
    facts = [("Rating", str(risk.get("rating") or research.get("rating") or "-")),
             ("Target position", f"{float(risk['target_position']):.0%} of the account" if risk else "-"),
             ("Confidence", f"{float(risk['confidence']):.2f}" if risk else "-"),
             ("Research view", f"{research['rating']} ({float(research['confidence']):.2f})" if research else "-"),
             ("Price", f"{result.get('current_price') or '-'} (prev. close {result.get('previous_close') or '-'})"),
             ("Account", f"{request['account']}: {result.get('account_total_value') or '-'} CNY"),
             ("Tokens", f"{int(result.get('tokens') or 0):,}"), ("Depth", str(request["depth"]))]
    lines = [f"Bull: {p}" for p in research.get("bull_points") or []]
    lines += [f"Bear: {p}" for p in research.get("bear_points") or []]
    lines += [f"Risk: {p}" for p in risk.get("risks") or []]
    record = result.get("execution_record") or {}
    if result.get("trader_investment_plan"):
        lines.append(f"Sizing: {result['trader_investment_plan']}")
    if record:
        facts.append(("Order", str(record.get("message") or record.get("status"))))
        if record.get("decided_by"):
            facts.append(("Decided by", str(record["decided_by"])))
    warnings = [f"{name} data gap: {gap}" for name, run in (result.get("analysts") or {}).items()
                for gap in run.get("gaps") or []]
    warnings += [str(run["failed"]) for run in (result.get("analysts") or {}).values() if run.get("failed")]
    warnings += _audit_flags(result)
    warnings = [w for w in warnings if w not in str(summary)]  # the stop's reason, the summary, is said once
    notes = [f"{name}: {run['tool_calls']} tool call(s), {run['tokens']:,} tokens"
             for name, run in (result.get("analysts") or {}).items()]
    notes += [f"resolved: {r['text']}" for r in result.get("resolutions") or [] if r.get("text")]
    notes += list(request.get("notes") or [])
    if request.get("price_basis") == "forward-adjusted":
        notes.append("prices are forward-adjusted as of the data's last day (levels before later dividends differ "
                     "from the prices traded then)")
    return View(title, str(summary), lines=lines, facts=facts, notes=notes, warnings=warnings,
                users=[str(record["decided_by"])] if record.get("decided_by") else [],
                artifacts=list(result.get("artifacts") or []))


def when(request: dict[str, Any]) -> str:
    """The decision's moment: its date (after the close), or "D pre-open"."""
    session, day = session_of(request)
    return f"{day} pre-open" if session == "pre_open" else str(request["trade_date"])


def _audit_flags(result: dict[str, Any]) -> list[str]:
    """One warning per agent whose text quotes figures no tool returned."""
    audits = [(f"{name} analyst", run.get("audit") or {}) for name, run in (result.get("analysts") or {}).items()]
    audits += [(f"{stage} judge", run.get("audit") or {}) for stage, run in (result.get("stages") or {}).items()]
    return [f"{who}: {audit['note']}" for who, audit in audits if audit.get("note")]


def _no_llm(result: dict[str, Any]) -> View:
    request = result["request"]
    code, date = request["ts_code"], request["trade_date"]
    rows = [[label, value] for label, value in result["indicators"]]
    facts = [(label, value) for label, value in result.get("fundamentals") or []]
    notes = [f"{k}: {v}" for k, v in (result.get("conventions") or {}).items()]
    notes += [_("units: {units}").format(units=v) for v in (result.get("fundamentals_units") or {}).values()]
    notes += list(request.get("notes") or [])
    return View(_("{code} · {date}: indicators (no LLM configured)").format(code=code, date=date),
                _(result["needs_llm"]), facts=facts,
                table=Table([_("indicator"), pgettext("indicator table", "value")], rows), notes=notes,
                warnings=list(result.get("data_gaps") or []))


def _replay(result: dict[str, Any]) -> View:
    request, equity, benchmark = result["request"], result["equity"], result["benchmark"]
    start = float(result["starting_cash"])
    rows = [[s["date"], s["rating"], f"{float(s['target']):.0%}" if s["target"] is not None else "-",
             f"{float(s['equity']):,.2f}", _replay_order(s, result.get("stopped"))] for s in result["steps"]]
    facts = [("Dates", f"{len(result['steps'])} of {len(request['replay_dates'])}, every {request['every']} "
                       "trading days"),
             ("Hit rate", str(result["hit_rate"])), ("Fills", str(result["fills"])),
             ("Tokens", f"{int(result['tokens']):,}"), ("Account", f"{result['account']} (replay only)")]
    if equity:
        facts.insert(0, ("Desk P&L", f"{float(equity[-1][1]) / start - 1:+.2%}"))
    if benchmark:
        facts.insert(1, ("Buy and hold", f"{float(benchmark[-1][1]) / start - 1:+.2%}"))
    warnings = [str(result["stopped"])] if result.get("stopped") else []
    if result.get("price_basis") == "forward-adjusted":
        warnings.append("the prices are forward-adjusted as of the data's last day: returns are right, but price "
                        "levels before later dividends are not the prices traded then")
    return View(f"Replay of the desk on {request['ts_code']}: {request['trade_date']}..{request['end_date']}",
                f"Each date decided {_replay_data(request)}, in the replay's own memory; orders filled without "
                "approval in the replay account at the date's close.",
                facts=facts, table=Table(["date", "rating", "target", "equity", "order"], rows), warnings=warnings,
                artifacts=list(result.get("artifacts") or []))


def _replay_order(step: dict[str, Any], stopped: str | None) -> str:
    """The date's order text, whole; on the date the replay stopped at, a pointer to the warning that says why."""
    order = str(step["order"])
    return "stopped (see the warning)" if stopped == f"stopped at {step['date']}: {order}" else order


def _replay_data(request: dict[str, Any]) -> str:
    if request.get("session") == "pre_open":
        return "before its open with data up to the previous trading day's close only"
    return "with data up to its close only"


def present_decisions(decisions: list[Decision], scope: str) -> View:
    if not decisions:
        return View("Decisions", f"No decisions yet ({scope}). Ask for one with `analyze CODE`.")
    rows = [[str(d.id), d.ts_code, d.trade_date, d.rating, f"{float(d.target_position):.0%}",
             f"{d.confidence:.2f}", _outcome(d)] for d in decisions]
    return View("Decisions", f"{len(decisions)} decision(s) ({scope})",
                table=Table(["id", "code", "date", "rating", "target", "conf.", "outcome"], rows))


def _outcome(decision: Decision) -> str:
    if not decision.resolutions:
        return "open"
    last = decision.resolutions[-1]
    benchmark = f" vs {float(last.benchmark_return):+.2%}" if last.benchmark_return is not None else ""
    verdict = {True: "hit", False: "miss", None: "n/a"}[last.hit]
    return f"{float(last.realised_return):+.2%}{benchmark} after {last.horizon}d ({verdict})"
