"""Views of rules, their runs, logs and backtests for the adapters."""

from __future__ import annotations

import json
from typing import Any

from graphs.backtest_view import TRADES_SHOWN, Base, comparison_facts, comparison_summary, cut_note
from graphs.order.present import present_order
from graphs.views import Table, View
from tools.broker.proposal_claims import ProposalClaim
from tools.rules.backtest import RuleBacktest
from tools.rules.store import Execution, Rule, Step
from tools.storage.artifacts import ArtifactRef


def _size(rule: Rule) -> str:
    if rule.size:
        return f"{rule.size:,} shares"
    return f"{rule.value_cny:,.2f} CNY" if rule.value_cny else "not set (no orders)"


def present_rule(rule: Rule, summary: str, executions: list[Execution] | None = None,
                 proposal: ProposalClaim | None = None) -> View:
    facts = [("Symbol", rule.symbol), ("Kind", "rule language" if rule.source == "language" else "words (LLM)"),
             ("Schedule", f"{rule.schedule} ({rule.timezone})" if rule.schedule else "none"),
             ("State", "enabled" if rule.enabled else f"paused: {rule.paused_reason or 'by its owner'}"),
             ("Order size", _size(rule)), ("Threshold", f"{rule.threshold:.2f}"),
             ("Account", rule.account or "the channel's"), ("Position", str((rule.runtime_status or {}).get(
                 "position", 0)))]
    if proposal is not None:
        facts.append(("Order proposal", f"waiting for a trader's approval (execution {proposal.holder}; no "
                                        f"new order until it is decided or {proposal.expires_at:%Y-%m-%d %H:%M} UTC)"))
    lines = [f"Requirements: {rule.requirements}"]
    lines += [f"run {e.execution_id} at {e.started_at:%Y-%m-%d %H:%M} UTC: {e.steps} steps, "
              f"{_decided(e.decision)}" for e in executions or []]
    return View(f"Rule {rule.id}", summary, lines=lines, facts=facts, users=[rule.owner])


def _decided(action: dict | None) -> str:
    """The decision of a logged decision step's action (`{"action": {"action": "buy", ...}}`), as a word."""
    body = (action or {}).get("action")
    return str(body.get("action") if isinstance(body, dict) else body or "no decision")


def present_rules(rules: list[Rule], scope: str) -> View:
    if not rules:
        return View("Rules", f"No rules ({scope}). Save one with `rule add SYMBOL \"REQUIREMENTS\"`.")
    rows = [[str(r.id), r.symbol, "language" if r.source == "language" else "words", r.schedule or "-",
             "on" if r.enabled else "paused", r.owner, r.requirements[:60]] for r in rules]
    return View("Rules", f"{len(rules)} rule(s) ({scope})",
                table=Table(["id", "symbol", "kind", "schedule", "state", "owner", "requirements"], rows))


def step_text(step: int, kind: str, action: dict[str, Any], result: Any) -> str:
    """One step of a run as a line of the timeline."""
    reasoning = action.get("reasoning") or ""
    body = action.get("action")
    if kind == "decision":
        decided = body if isinstance(body, dict) else {}
        return (f"{step}. decision: {str(decided.get('action', '?')).upper()} (confidence "
                f"{float(decided.get('confidence') or 0):.2f}) — {decided.get('reason') or reasoning}")
    shown = json.dumps(result, ensure_ascii=False, default=str)
    return f"{step}. {kind}: {reasoning} → {shown[:300]}"


def present_log(rule: Rule, execution: str, steps: list[Step]) -> View:
    lines = [step_text(s.step, s.action_type, s.action_data, s.result_data) for s in steps]
    when = f" ({steps[0].timestamp:%Y-%m-%d %H:%M:%S} UTC)" if steps else ""
    return View(f"Rule {rule.id} · {execution}", f"{len(steps)} step(s){when}", lines=lines)


def present_rule_run(result: dict[str, Any]) -> View:
    rule, decision = result["rule"], result["decision"]
    lines = [step_text(s["step"], s["type"], s, s.get("result") if s["type"] != "calculation"
                       else s.get("result", s.get("intermediate_result"))) for s in result.get("steps", [])]
    warnings: list[str] = []  # stale data is said once, by the summary (the decision's reason), not as a warning
    if result.get("paused"):
        warnings.append(f"Rule {rule['id']} is paused after repeated failures; its owner {result['owner']} can "
                        f"`rule resume {rule['id']}` once it is fixed.")
    facts = [("Execution", result["execution_id"]), ("Position", f"{int(result.get('position') or 0):,}")]
    if as_of := result.get("as_of"):
        facts.insert(0, ("As of", f"{as_of['date']} (the simulated session; `clock` shows and moves it)"
                         if as_of["simulated"] else f"{as_of['date']} (the data's last bar)"))
    order = result.get("order") or {}
    if order.get("status"):
        facts.append(("Order", str(order.get("message") or order["status"])))
    view = View(title=f"Rule {rule['id']} ({rule['symbol']}): {str(decision.get('action', 'hold')).upper()}",
                summary=f"{decision.get('reason', '')} · {decision.get('note', '')}".strip(" ·"),
                lines=lines, facts=facts, warnings=warnings,
                notes=[f"`rule log {rule['id']} {result['execution_id']}` shows this trace again"],
                users=[result["owner"]] if result.get("paused") else [])
    if order.get("status"):
        view.notes.extend(present_order(order).notes)
    return view


def present_backtest(rule: Rule, result: RuleBacktest, trades_csv: ArtifactRef | None = None) -> View:
    """The rule beside buy-and-hold in the report shape both backtests share; `trades_csv` holds every trade."""
    s, b = result.strategy, result.benchmark
    cash = f"{s.starting_cash:,.2f} CNY"
    sized = (f"{rule.size:,} shares" if rule.size else f"{rule.value_cny:,.2f} CNY" if rule.value_cny else
             "as many whole lots as the cash pays for")
    base = Base(f"the {cash} account", f"returns are on the whole account, position-sized: each buy is {sized}, fees "
                "included (not the signal backtest's equal weight); buy-and-hold buys the same way once")
    strategy, benchmark = s.figures, b.figures
    facts = comparison_facts(strategy, benchmark, base, (f"{s.fees_paid:,.2f} CNY", f"{b.fees_paid:,.2f} CNY"))
    facts.append(("Final equity (buy-and-hold)", f"{s.final_equity:,.2f} ({b.final_equity:,.2f}) CNY"))
    lines = [f"{t.trade_date} {t.side} {t.quantity:,} at {t.price} (fees {t.fees.total})"
             for t in s.trades[:TRADES_SHOWN]]
    cut = cut_note(len(lines), s.trade_count, "trades")
    return View(f"Rule {rule.id} backtest: {rule.symbol} {result.start}–{result.end}",
                comparison_summary(f"Rule {rule.id}", strategy, benchmark, base),
                lines=[*lines, cut] if cut else lines, facts=facts,
                notes=[*([result.span] if result.span else []),
                       f"decisions on a bar's close fill at the next bar's open; {result.warmup} warm-up bar(s) "
                       f"({result.warmup_bars} read before the start); costs as the paper account (commission "
                       "minimum, stamp duty, transfer fee, lots); Sharpe = mean/std of daily returns x sqrt(252), "
                       "rf = 0; exposure = mean share of equity in the stock", *s.notes],
                artifacts=[trades_csv] if trades_csv else [])
