"""Views of the desk's results for the adapters: the decision card, the no-LLM indicator reply, the decision list.
Results keep the desk's English enum values (ratings, sessions); the views say them in the reader's language."""

from __future__ import annotations

from typing import Any

from graphs.analyze.state import session_of
from graphs.analyze.words import analyst_word, field_word, stage_word
from graphs.runs.stability import stability_of, stability_text
from graphs.views import Table, View
from tools.desk.log import Decision, rating_word
from tools.i18n import _, ngettext, pgettext


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
        title = _("{name}{code} · {date}: {rating}, target {target:.0%}").format(
            name=name, code=code, date=date, rating=rating_word(risk["rating"]),
            target=float(risk["target_position"]))
        summary = result.get("final_trade_decision") or result.get("investment_plan") or rating_word(risk["rating"])
    else:
        title = _("{name}{code} · {date}: no decision").format(name=name, code=code, date=date)
        summary = result.get("stopped") or _("The desk stopped before a decision.")
    rating = risk.get("rating") or research.get("rating")
    facts = [(_("Rating"), rating_word(rating) if rating else "-"),
             (_("Target position"), _("{share:.0%} of the account").format(share=float(risk["target_position"]))
              if risk else "-"),
             (_("Confidence"), f"{float(risk['confidence']):.2f}" if risk else "-"),
             (_("Research view"), f"{rating_word(research['rating'])} ({float(research['confidence']):.2f})"
              if research else "-"),
             (_("Price"), _("{price} (prev. close {previous})").format(price=result.get("current_price") or "-",
                                                                       previous=result.get("previous_close") or "-")),
             (_("Account"), _("{account}: {value} CNY").format(account=request["account"],
                                                               value=result.get("account_total_value") or "-")),
             (_("Tokens"), f"{int(result.get('tokens') or 0):,}"), (_("Depth"), str(request["depth"]))]
    if result.get("stability"):  # live re-runs of this decision (`rerun ID live`)
        facts.append((_("Stability"), stability_text(stability_of(result["stability"]))))
    lines = [_("Bull: {point}").format(point=p) for p in research.get("bull_points") or []]
    lines += [_("Bear: {point}").format(point=p) for p in research.get("bear_points") or []]
    lines += [_("Risk: {point}").format(point=p) for p in risk.get("risks") or []]
    record = result.get("execution_record") or {}
    if result.get("trader_investment_plan"):
        lines.append(_("Sizing: {plan}").format(plan=result["trader_investment_plan"]))
    if record:
        facts.append((_("Order"), str(record.get("message") or record.get("status"))))
        if record.get("decided_by"):
            facts.append((_("Decided by"), str(record["decided_by"])))
    warnings = [_("{analyst} data gap: {gap}").format(analyst=analyst_word(name), gap=gap)
                for name, run in (result.get("analysts") or {}).items() for gap in run.get("gaps") or []]
    warnings += [str(run["failed"]) for run in (result.get("analysts") or {}).values() if run.get("failed")]
    warnings += _audit_flags(result)
    warnings = [w for w in warnings if w not in str(summary)]  # the stop's reason, the summary, is said once
    notes = [ngettext("{analyst}: {n} tool call, {tokens:,} tokens", "{analyst}: {n} tool calls, {tokens:,} tokens",
                      run["tool_calls"]).format(analyst=analyst_word(name), n=run["tool_calls"], tokens=run["tokens"])
             for name, run in (result.get("analysts") or {}).items()]
    notes += [_("resolved: {text}").format(text=r["text"]) for r in result.get("resolutions") or [] if r.get("text")]
    notes += list(request.get("notes") or [])
    if request.get("price_basis") == "forward-adjusted":
        notes.append(_("prices are forward-adjusted as of the data's last day (levels before later dividends differ "
                       "from the prices traded then)"))
    return View(title, str(summary), lines=lines, facts=facts, notes=notes, warnings=warnings,
                users=[str(record["decided_by"])] if record.get("decided_by") else [],
                accounts=[str(request["account"])] if request.get("account") else [],
                artifacts=list(result.get("artifacts") or []))


def when(request: dict[str, Any]) -> str:
    """The decision's moment: its date (after the close), or "D pre-open"."""
    session, day = session_of(request)
    return _("{day} pre-open").format(day=day) if session == "pre_open" else str(request["trade_date"])


def _audit_flags(result: dict[str, Any]) -> list[str]:
    """One warning per agent whose text quotes figures no tool returned."""
    audits = [(_("{analyst} analyst").format(analyst=analyst_word(name)), run.get("audit") or {})
              for name, run in (result.get("analysts") or {}).items()]
    audits += [(_("{stage} judge").format(stage=stage_word(stage)), run.get("audit") or {})
               for stage, run in (result.get("stages") or {}).items()]
    return [f"{who}: {audit['note']}" for who, audit in audits if audit.get("note")]


def _no_llm(result: dict[str, Any]) -> View:
    request = result["request"]
    code, date = request["ts_code"], request["trade_date"]
    rows = [[field_word(label), value] for label, value in result["indicators"]]
    facts = [(field_word(label), value) for label, value in result.get("fundamentals") or []]
    notes = [f"{field_word(k)}: {_(v)}" for k, v in (result.get("conventions") or {}).items()]
    notes += [_("units: {units}").format(units=_("{field} in {unit}").format(field=field_word(k),
                                                                            unit=v.removeprefix(f"{k} in ")))
              for k, v in (result.get("fundamentals_units") or {}).items()]  # results before 2026-11 held "k in v"
    notes += list(request.get("notes") or [])
    return View(_("{code} · {date}: indicators (no LLM configured)").format(code=code, date=date),
                _(result["needs_llm"]), facts=facts,
                table=Table([_("indicator"), pgettext("indicator table", "value")], rows), notes=notes,
                warnings=list(result.get("data_gaps") or []))


def _replay(result: dict[str, Any]) -> View:
    request, equity, benchmark = result["request"], result["equity"], result["benchmark"]
    start = float(result["starting_cash"])
    rows = [[s["date"], rating_word(s["rating"]), f"{float(s['target']):.0%}" if s["target"] is not None else "-",
             f"{float(s['equity']):,.2f}", _replay_order(s)] for s in result["steps"]]
    facts = [(_("Dates"), _("{done} of {planned}, every {every} trading days").format(
                done=len(result["steps"]), planned=len(request["replay_dates"]), every=request["every"])),
             (_("Hit rate"), str(result["hit_rate"])), (pgettext("replay", "Fills"), str(result["fills"])),
             (_("Tokens"), f"{int(result['tokens']):,}"),
             (_("Account"), _("{account} (replay only)").format(account=result["account"]))]
    if equity:
        facts.insert(0, (_("Desk P&L"), f"{float(equity[-1][1]) / start - 1:+.2%}"))
    if benchmark:
        facts.insert(1, (_("Buy and hold"), f"{float(benchmark[-1][1]) / start - 1:+.2%}"))
    warnings = [str(result["stopped"])] if result.get("stopped") else []
    if result.get("price_basis") == "forward-adjusted":
        warnings.append(_("the prices are forward-adjusted as of the data's last day: returns are right, but price "
                          "levels before later dividends are not the prices traded then"))
    return View(_("Replay of the desk on {code}: {start}..{end}").format(
                    code=request["ts_code"], start=request["trade_date"], end=request["end_date"]),
                _("Each date decided {how}, in the replay's own memory; orders filled without approval in the "
                  "replay account at the date's close.").format(how=_replay_data(request)),
                facts=facts, table=Table([_("date"), _("rating"), _("target"), _("equity"), _("order")], rows),
                warnings=warnings, artifacts=list(result.get("artifacts") or []))


def _replay_order(step: dict[str, Any]) -> str:
    """The date's order text, whole; on the date the replay stopped at, a pointer to the warning that says why."""
    return _("stopped (see the warning)") if step.get("stopped") else str(step["order"])


def _replay_data(request: dict[str, Any]) -> str:
    if request.get("session") == "pre_open":
        return _("before its open with data up to the previous trading day's close only")
    return _("with data up to its close only")


def present_decisions(decisions: list[Decision], scope: str) -> View:
    if not decisions:
        return View(_("Decisions"), _("No decisions yet ({scope}). Ask for one with `analyze CODE`.").format(
            scope=scope))
    rows = [[str(d.id), d.ts_code, d.trade_date, rating_word(d.rating), f"{float(d.target_position):.0%}",
             f"{d.confidence:.2f}", _outcome(d)] for d in decisions]
    return View(_("Decisions"), ngettext("{n} decision ({scope})", "{n} decisions ({scope})",
                                         len(decisions)).format(n=len(decisions), scope=scope),
                table=Table([_("id"), _("code"), _("date"), _("rating"), _("target"), _("conf."), _("outcome")],
                            rows))


def _outcome(decision: Decision) -> str:
    if not decision.resolutions:
        return pgettext("decision outcome", "open")
    last = decision.resolutions[-1]
    benchmark = (_(" vs {benchmark:+.2%}").format(benchmark=float(last.benchmark_return))
                 if last.benchmark_return is not None else "")
    verdict = {True: _("hit"), False: _("miss"), None: _("n/a")}[last.hit]
    return _("{realised:+.2%}{benchmark} after {days}d ({verdict})").format(
        realised=float(last.realised_return), benchmark=benchmark, days=last.horizon, verdict=verdict)
