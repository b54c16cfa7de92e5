"""Views of rules, their runs, logs and backtests for the adapters, and what the schedule gate says of a rule."""

from __future__ import annotations

import json
import math
from typing import Any

from graphs.backtest_view import (
    TRADES_SHOWN,
    Base,
    comparison_facts,
    comparison_summary,
    cut_note,
    side_by_side,
    split_facts,
)
from graphs.order.present import present_order
from graphs.rule.honesty import Judged
from graphs.views import Table, View
from tools.broker.proposal_claims import ProposalClaim
from tools.i18n import N_, _
from tools.research.holdout import MIN_HOLDOUT_SESSIONS
from tools.research.overfitting import PBO_MIN_TRIALS
from tools.rules.backtest import RuleBacktest
from tools.rules.store import Execution, Override, Rule, Step
from tools.storage.artifacts import ArtifactRef

ACTIONS = {"buy": N_("BUY"), "sell": N_("SELL"), "hold": N_("HOLD")}  # a run's decision, as its title says it
SCOPES = {"channel": N_("channel"), "mine": N_("mine"), "all": N_("all")}  # `rule list [channel|mine|all]`
STEP_KINDS = {"tool_call": N_("tool_call"), "calculation": N_("calculation"), "decision": N_("decision")}


def _size(rule: Rule) -> str:
    if rule.size:
        return _("{n} shares").format(n=f"{rule.size:,}")
    return _("{amount} CNY").format(amount=f"{rule.value_cny:,.2f}") if rule.value_cny else _("not set (no orders)")


def present_rule(rule: Rule, summary: str, executions: list[Execution] | None = None,
                 proposal: ProposalClaim | None = None, overrides: list[Override] | None = None) -> View:
    """A rule: its settings, the schedule gate's verdict, every schedule set over the gate (who, when, why) and
    its latest runs."""
    facts = [(_("Symbol"), rule.symbol),
             (_("Kind"), _("rule language") if rule.source == "language" else _("words (LLM)")),
             (_("Schedule"), f"{rule.schedule} ({rule.timezone})" if rule.schedule else _("none")),
             (_("State"), _("enabled") if rule.enabled else _("paused: {why}").format(
                 why=rule.paused_reason or _("by its owner"))),
             (_("Order size"), _size(rule)), (_("Threshold"), f"{rule.threshold:.2f}"),
             (_("Account"), rule.account or _("the channel's")),
             (_("Position"), str((rule.runtime_status or {}).get("position", 0))),
             (_("Schedule gate"), gate_text(rule))]
    if proposal is not None:
        facts.append((_("Order proposal"), _("waiting for a trader's approval (execution {execution}; no new order "
                                             "until it is decided or {time} UTC)").format(
            execution=proposal.holder, time=f"{proposal.expires_at:%Y-%m-%d %H:%M}")))
    lines = [_("Requirements: {requirements}").format(requirements=rule.requirements)]
    lines += [_("Scheduled over the gate by {user} at {time} UTC (`{schedule}` {zone}): {reason}").format(
        user=o.by, time=f"{o.at:%Y-%m-%d %H:%M}", schedule=o.schedule, zone=o.timezone, reason=o.reason)
        for o in overrides or []]
    lines += [_("run {execution} at {time} UTC: {n} steps, {decision}").format(
        execution=e.execution_id, time=f"{e.started_at:%Y-%m-%d %H:%M}", n=e.steps, decision=_decided(e.decision))
        for e in executions or []]
    return View(_("Rule {id}").format(id=rule.id), summary, lines=lines, facts=facts,
                users=list(dict.fromkeys([rule.owner, *(o.by for o in overrides or [])])))


def gate_text(rule: Rule) -> str:
    """What the schedule gate says of a rule: it cannot judge words, has no backtest, or its latest verdict."""
    if rule.source != "language":
        return _("no verdict: a rule in words cannot be backtested, so a schedule needs `anyway REASON`")
    verdict = rule.verdict
    if verdict is None:
        return _("no backtest yet: `rule backtest {id} START END`").format(id=rule.id)
    when = _("the backtest {start}–{end} by {user} ({time} UTC)").format(
        start=verdict["start"], end=verdict["end"], user=verdict.get("by") or "?",
        time=verdict["at"][:16].replace("T", " "))
    if verdict["passed"]:
        return _("passed on {backtest}: the holdout's Sharpe ratio {holdout} has the in-sample sign ({in_sample}) and "
                 "the deflated Sharpe probability {p} reaches {threshold}").format(
            backtest=when, holdout=_num(verdict["holdout"]["holdout"], ".2f"),
            in_sample=_num(verdict["holdout"]["in_sample"], ".2f"), p=_num(verdict["dsr"]["probability"], ".3f"),
            threshold=f"{verdict['dsr']['threshold']:.2f}")
    return _("refused on {backtest}: {failed}").format(backtest=when, failed="; ".join(gate_failures(verdict)))


def gate_failures(verdict: dict[str, Any]) -> list[str]:
    """Each test a rule's verdict failed, with its numbers."""
    lines = []
    held = verdict["holdout"]
    if not held["ok"]:
        if held["holdout"] is None:
            lines.append(_("holdout: none ({n} sessions would be held out, fewer than {minimum}), so nothing out of "
                           "sample confirms the in-sample Sharpe ratio {sr}; backtest a longer period").format(
                n=verdict["holdout_sessions"], minimum=MIN_HOLDOUT_SESSIONS, sr=_num(held["in_sample"], ".2f")))
        else:
            lines.append(_("holdout: its Sharpe ratio {holdout} does not have the sign of the in-sample {sr}").format(
                holdout=_num(held["holdout"], ".2f"), sr=_num(held["in_sample"], ".2f")))
    dsr = verdict["dsr"]
    if not dsr["ok"]:
        lines.append(_("deflated Sharpe: probability {p} is below the threshold {threshold}").format(
            p=_num(dsr["probability"], ".3f"), threshold=f"{dsr['threshold']:.2f}"))
    return lines


def gate_refusal(rule: Rule, cron: str) -> str:
    """Why the gate refuses to schedule `rule` at `cron`, and the ways forward."""
    if rule.source != "language":
        return _("Rule {id} is written in words, so it cannot be backtested and the gate has no verdict on it: it is "
                 "scheduled only with the reason it should run, kept with the rule and audited: `rule schedule {id} "
                 "\"{cron}\" anyway REASON`").format(id=rule.id, cron=cron)
    if rule.verdict is None:
        return _("Rule {id} has no backtest yet, so the gate has no verdict on it. Backtest it first, `rule backtest "
                 "{id} START END`, then `rule schedule {id} \"{cron}\"`; or give the reason it should run without "
                 "one, kept with the rule and audited: `rule schedule {id} \"{cron}\" anyway REASON`").format(
            id=rule.id, cron=cron)
    return _("The gate refuses to schedule rule {id}: its latest backtest ({start}–{end}) failed: {failed}. Backtest "
             "it again (`rule backtest {id} START END`; each backtest counts as a trial), or give the reason it should "
             "run anyway, kept with the rule and audited: `rule schedule {id} \"{cron}\" anyway REASON`").format(
        id=rule.id, start=rule.verdict["start"], end=rule.verdict["end"],
        failed="; ".join(gate_failures(rule.verdict)), cron=cron)


def _num(value: float | None, spec: str) -> str:
    return _("n/a") if value is None or not math.isfinite(value) else format(value, spec)


def _decided(action: dict | None) -> str:
    """The decision of a logged decision step's action (`{"action": {"action": "buy", ...}}`), as a word."""
    body = (action or {}).get("action")
    word = str(body.get("action") if isinstance(body, dict) else body or "")
    return _(ACTIONS[word]) if word in ACTIONS else word or _("no decision")


def present_rules(rules: list[Rule], scope: str) -> View:
    shown_scope = _(SCOPES[scope]) if scope in SCOPES else scope
    if not rules:
        return View(_("Rules"), _("No rules ({scope}). Save one with `rule add SYMBOL \"REQUIREMENTS\"`.").format(
            scope=shown_scope))
    rows = [[str(r.id), r.symbol, _("language") if r.source == "language" else _("words"), r.schedule or "-",
             _("on") if r.enabled else _("paused"), r.owner, r.requirements[:60]] for r in rules]
    return View(_("Rules"), _("{n} rule(s) ({scope})").format(n=len(rules), scope=shown_scope),
                table=Table([_("id"), _("symbol"), _("kind"), _("schedule"), _("state"), _("owner"),
                             _("requirements")], rows))


def step_text(step: int, kind: str, action: dict[str, Any], result: Any) -> str:
    """One step of a run as a line of the timeline."""
    reasoning = action.get("reasoning") or ""
    body = action.get("action")
    if kind == "decision":
        decided = body if isinstance(body, dict) else {}
        word = str(decided.get("action", "?"))
        return _("{step}. decision: {action} (confidence {confidence}) — {reason}").format(
            step=step, action=_(ACTIONS[word]) if word in ACTIONS else word.upper(),
            confidence=f"{float(decided.get('confidence') or 0):.2f}", reason=decided.get("reason") or reasoning)
    shown = json.dumps(result, ensure_ascii=False, default=str)
    return f"{step}. {_(STEP_KINDS[kind]) if kind in STEP_KINDS else kind}: {reasoning} → {shown[:300]}"


def present_log(rule: Rule, execution: str, steps: list[Step]) -> View:
    lines = [step_text(s.step, s.action_type, s.action_data, s.result_data) for s in steps]
    count = _("{n} step(s)").format(n=len(steps))
    when = _(" ({time} UTC)").format(time=f"{steps[0].timestamp:%Y-%m-%d %H:%M:%S}") if steps else ""
    return View(_("Rule {id} · {execution}").format(id=rule.id, execution=execution), f"{count}{when}", lines=lines)


def present_rule_run(result: dict[str, Any]) -> View:
    rule, decision = result["rule"], result["decision"]
    lines = [step_text(s["step"], s["type"], s, s.get("result") if s["type"] != "calculation"
                       else s.get("result", s.get("intermediate_result"))) for s in result.get("steps", [])]
    warnings: list[str] = []  # stale data is said once, by the summary (the decision's reason), not as a warning
    if result.get("paused"):
        warnings.append(_("Rule {id} is paused after repeated failures; its owner {owner} can `rule resume {id}` once "
                          "it is fixed.").format(id=rule["id"], owner=result["owner"]))
    facts = [(_("Execution"), result["execution_id"]), (_("Position"), f"{int(result.get('position') or 0):,}")]
    if as_of := result.get("as_of"):
        facts.insert(0, (_("As of"), _("{day} (the simulated session; `clock` shows and moves it)").format(
            day=as_of["date"]) if as_of["simulated"] else _("{day} (the data's last bar)").format(day=as_of["date"])))
    order = result.get("order") or {}
    if order.get("status"):
        facts.append((_("Order"), str(order.get("message") or order["status"])))
    action = str(decision.get("action", "hold"))
    view = View(title=_("Rule {id} ({symbol}): {action}").format(id=rule["id"], symbol=rule["symbol"],
                                                                 action=_(ACTIONS.get(action, action.upper()))),
                summary=f"{decision.get('reason', '')} · {decision.get('note', '')}".strip(" ·"),
                lines=lines, facts=facts, warnings=warnings,
                notes=[_("`rule log {id} {execution}` shows this trace again").format(
                    id=rule["id"], execution=result["execution_id"])],
                users=[result["owner"]] if result.get("paused") else [])
    if order.get("status"):
        view.notes.extend(present_order(order).notes)
    return view


def present_backtest(rule: Rule, result: RuleBacktest, artifacts: list[ArtifactRef], judged: Judged) -> View:
    """The rule beside buy-and-hold in the report shape both backtests share, with its in-sample part and holdout,
    the trials behind it and the gate's verdict (`judged`); `artifacts`: its chart and the CSV of every trade."""
    s, b = result.strategy, result.benchmark
    cash = _("{amount} CNY").format(amount=f"{s.starting_cash:,.2f}")
    sized = (_("{n} shares").format(n=f"{rule.size:,}") if rule.size else
             _("{amount} CNY").format(amount=f"{rule.value_cny:,.2f}") if rule.value_cny else
             _("as many whole lots as the cash pays for"))
    base = Base(_("the {cash} account").format(cash=cash),
                _("returns are on the whole account, position-sized: each buy is {sized}, fees included (not the "
                  "signal backtest's equal weight); buy-and-hold buys the same way once").format(sized=sized))
    strategy, benchmark = s.figures, b.figures
    facts = comparison_facts(strategy, benchmark, base, (_("{amount} CNY").format(amount=f"{s.fees_paid:,.2f}"),
                                                         _("{amount} CNY").format(amount=f"{b.fees_paid:,.2f}")))
    facts.append((_("Final equity"), side_by_side(_("{amount} CNY").format(amount=f"{s.final_equity:,.2f}"),
                                                  _("{amount} CNY").format(amount=f"{b.final_equity:,.2f}"))))
    facts += [*split_facts(judged.split), *_honesty_facts(judged.honesty, rule.id, judged.verdict["by"]),
              (_("Schedule gate"), _backtest_gate(rule.id, judged.verdict))]
    sides = {"buy": _("buy"), "sell": _("sell")}
    lines = [_("{day} {side} {n} at {price} (fees {fees})").format(
        day=t.trade_date, side=sides.get(t.side, t.side), n=f"{t.quantity:,}", price=t.price, fees=t.fees.total)
        for t in s.trades[:TRADES_SHOWN]]
    cut = cut_note(len(lines), s.trade_count, _("trades"))
    return View(_("Rule {id} backtest: {symbol} {start}–{end}").format(id=rule.id, symbol=rule.symbol,
                                                                        start=result.start, end=result.end),
                comparison_summary(_("Rule {id}").format(id=rule.id), strategy, benchmark, base),
                lines=[*lines, cut] if cut else lines, facts=facts,
                notes=[*([result.span] if result.span else []),
                       _("decisions on a bar's close fill at the next bar's open; {warmup} warm-up bar(s) ({read} read "
                         "before the start); costs as the paper account (commission minimum, stamp duty, transfer "
                         "fee, lots); Sharpe = mean/std of daily returns x sqrt(252), rf = 0; exposure = mean share "
                         "of equity in the stock").format(warmup=result.warmup, read=result.warmup_bars), *s.notes],
                artifacts=artifacts, users=[judged.verdict["by"]] if judged.verdict["by"] else [])


def _honesty_facts(honesty: dict[str, Any] | None, rule_id: int, person: str | None) -> list[tuple[str, str]]:
    """The backtests behind this one, and what the DSR and the PBO say of them (one line each)."""
    if not honesty:
        return []
    pbo = (_("{p}: how often the in-sample best of this rule's backtests ranks in the bottom half out of sample "
             "(CSCV)").format(p=f"{honesty['pbo']:.2f}") if honesty.get("pbo") is not None
           else _("not computed: it needs {minimum} backtests of this rule over shared dates").format(
               minimum=PBO_MIN_TRIALS))
    return [(_("Trials"), _("{n} backtest(s) of rule {id} (each period a trial), {mine} by {user} in all").format(
                n=honesty["trials"], id=rule_id, mine=honesty["person_trials"], user=person or "?")),
            (_("Deflated Sharpe ratio"), _("{p}: the probability that the in-sample Sharpe ratio ({sr} a day) beats "
                                           "{sr0}, the best {n} backtest(s) without skill would reach by luck").format(
                p=f"{honesty['dsr']:.3f}", sr=f"{honesty['sharpe']:.3f}", sr0=f"{honesty['benchmark']:.3f}",
                n=honesty["trials"])),
            (_("Probability of backtest overfitting"), pbo)]


def _backtest_gate(rule_id: int, verdict: dict[str, Any]) -> str:
    """The gate's verdict on this backtest, and what it lets the rule's owner do."""
    if verdict["passed"]:
        return _("passed: the holdout's Sharpe ratio has the in-sample sign and the deflated Sharpe probability "
                 "reaches {threshold}; `rule schedule {id} \"CRON\"` can schedule it").format(
            threshold=f"{verdict['dsr']['threshold']:.2f}", id=rule_id)
    return _("refused: {failed}. `rule schedule {id} \"CRON\"` is refused until a backtest passes; to schedule it "
             "anyway, give the reason: `rule schedule {id} \"CRON\" anyway REASON`").format(
        failed="; ".join(gate_failures(verdict)), id=rule_id)
