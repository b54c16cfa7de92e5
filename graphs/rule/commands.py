"""The rule commands that need no run: add, list, show, log, schedule, pause, resume, delete, backtest. `rule run
ID` is the workflow's run. Only a rule's owner or an admin (`roles`) may change or delete it.

The gate (issue 42, item 4): a backtest stores its verdict on the rule (graphs/rule/honesty.py); `rule schedule`
sets a schedule only when that verdict passed, or with `anyway REASON` (kept with the rule and audited: the store
does both in one transaction); a rule is saved unscheduled."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from decimal import Decimal, InvalidOperation

import pandas as pd

from graphs.grammar import argument, did_you_mean, normalize
from graphs.rule.grammar import ADD_USAGE, ANYWAY_USAGE, SCHEDULE_USAGE, SUBCOMMANDS
from graphs.rule.honesty import judge_backtest
from graphs.rule.present import gate_refusal, present_backtest, present_log, present_rule, present_rules
from graphs.views import View
from graphs.workflow import CommandCall, CommandError
from tools.broker.boards import OrderRuleError
from tools.broker.clock import day
from tools.broker.config import TradingConfig
from tools.broker.proposal_claims import live_claims
from tools.broker.rules import buy_quantity_problem
from tools.data.klines import symbol_kind
from tools.data.schema import DataError, check_range
from tools.i18n import _, current
from tools.research.charts import trades_and_equity
from tools.research.trials import TrialStore
from tools.rules.backtest import RuleBacktest, backtest_rule
from tools.rules.parser import parse_rule
from tools.rules.store import GateRefused, Rule, RuleError, RuleStore, Source, order_tag
from tools.rules.syntax import RuleSyntaxError
from tools.storage.artifacts import ArtifactRef


def _store(call: CommandCall) -> RuleStore:
    if call.context.rules is None:
        raise CommandError(_("saved rules are not configured in this process"))
    return call.context.rules


def _rule(call: CommandCall, words: list[str], usage: str) -> Rule:
    if not words or not words[0].isdigit():
        raise CommandError(_("usage: {usage}").format(usage=usage))
    rule = _store(call).get(int(words[0]))
    if rule is None:
        raise CommandError(_("there is no rule {id}; `rule list` shows the saved rules").format(id=words[0]))
    return rule


def _user(call: CommandCall) -> str:
    if not call.user:
        raise CommandError(_("this command needs to know who you are"))
    return call.user


def _options(words: list[str], allowed: set[str]) -> tuple[list[str], dict[str, str]]:
    """Positional words as typed (a rule's text keeps its characters) and name=value options, read normalised
    (`size＝100` is size=100)."""
    positional, options = [], {}
    for word in words:
        name, sep, value = normalize(word).partition("=")
        if sep and name.lower() in allowed:
            options[name.lower()] = value
        elif sep and name.isidentifier():
            raise CommandError(_("unknown option {name}={hint}; options: {options}").format(
                name=name, hint=did_you_mean(name, allowed), options=", ".join(sorted(allowed))))
        else:
            positional.append(word)
    return positional, options


def add_command(call: CommandCall) -> View:
    words, opts = _options(call.args, {"every", "tz", "size", "value", "threshold", "account", "kind"})
    if len(words) != 2:
        raise CommandError(_("usage: {usage} (quote the requirements)").format(usage=ADD_USAGE))
    if "every" in opts:
        raise CommandError(_("a new rule is saved without a schedule: the gate schedules a rule once a backtest "
                             "has passed it. Save it without every=, then `rule backtest ID START END` and `rule "
                             "schedule ID \"{cron}\"` (or, with the reason it should run without passing, `rule "
                             "schedule ID \"{cron}\" anyway REASON`).").format(cron=opts["every"]))
    symbol, requirements = words
    kind = opts.get("kind", "").lower()
    if kind not in ("", "words", "language"):
        raise CommandError(_("kind= is words (for the model) or language (the rule language)"))
    source: Source = "llm" if kind == "words" else "language"
    if kind != "words":
        try:
            parse_rule(requirements)
        except RuleSyntaxError as exc:
            meant = kind == "language" or requirements.strip().lower().startswith(("buy when", "sell when"))
            if meant:
                raise CommandError(_("the rule does not parse:\n```\n{error}\n```\nTo save it as words for the model "
                                     "instead, add kind=words.").format(error=exc)) from None
            source = "llm"
    _check_symbol(call, symbol, _int(opts.get("size"), "size"))
    try:
        rule = _store(call).add(
            _user(call), call.account, symbol, requirements, source=source,
            timezone=opts.get("tz") or "Asia/Shanghai",
            size=_int(opts.get("size"), "size"), value_cny=_decimal(opts.get("value"), "value"),
            threshold=float(_decimal(opts.get("threshold"), "threshold") or Decimal("0.6")),
            account=opts.get("account"))
    except RuleError as exc:
        raise CommandError(str(exc)) from None
    saved = (_("Rule {id} saved, in the rule language: it runs and backtests without an LLM. `rule run {id}` checks "
               "it now.") if source == "language" else
             _("Rule {id} saved, in words: each run asks the model, step by step (needs an LLM). `rule run {id}` "
               "checks it now."))
    return present_rule(rule, saved.format(id=rule.id))


def _check_symbol(call: CommandCall, symbol: str, size: int | None) -> None:
    """An A-share code the provider knows, and a size in the board's buy lots."""
    if symbol_kind(symbol) != "a-share":
        return
    code = symbol.strip().upper()
    known = call.context.provider.known_codes()
    if known is not None and code not in known:
        raise CommandError(_("the {provider} provider has no {code}; `codes` lists what it has").format(
            provider=call.context.provider.label(), code=code))
    last = call.context.provider.last_date()
    if size is not None and last:
        try:
            problem = buy_quantity_problem(code, size, day(last))
        except OrderRuleError as exc:
            problem = str(exc)
        if problem:
            raise CommandError(f"size={size}: {problem}")


def list_command(call: CommandCall) -> View:
    scope = call.args[0].lower() if call.args else "channel"
    if scope not in ("channel", "mine", "all"):
        raise CommandError(_("usage: {usage}").format(usage="rule list [channel|mine|all]"))
    store = _store(call)
    rules = store.list(channel=call.account) if scope == "channel" else \
        store.list(owner=call.user) if scope == "mine" else store.list()
    return present_rules(rules, scope)


def show_command(call: CommandCall) -> View:
    rule = _rule(call, call.args, "rule show ID")
    store = _store(call)
    claims = live_claims(call.context.engine, order_tag(rule.id), store.clock())
    return present_rule(rule, _("Rule {id}, owned by {owner}.").format(id=rule.id, owner=rule.owner),
                        store.executions(rule.id, limit=5), claims[0] if claims else None, store.overrides(rule.id))


def log_command(call: CommandCall) -> View:
    rule = _rule(call, call.args, "rule log ID [EXECUTION]")
    store = _store(call)
    executions = store.executions(rule.id, limit=1)
    execution = call.args[1] if len(call.args) > 1 else (executions[0].execution_id if executions else None)
    if execution is None:
        return View(_("Rule {id} log").format(id=rule.id),
                    _("Rule {id} has not run yet; `rule run {id}` runs it.").format(id=rule.id))
    steps = store.steps(rule.id, execution)
    if not steps:
        raise CommandError(_("rule {id} has no run {execution}; `rule show {id}` lists its latest runs").format(
            id=rule.id, execution=execution))
    return present_log(rule, execution, steps)


def schedule_command(call: CommandCall) -> View:
    typed, reason = _anyway(call.args)
    words, opts = _options(typed, {"tz"})
    if len(words) != 2:
        raise CommandError(_('usage: {usage}, e.g. {example}').format(usage=SCHEDULE_USAGE,
                                                                      example='rule schedule 3 "30 14 * * 1-5"'))
    rule, user = _rule(call, words, "rule schedule ID CRON|off"), _user(call)
    cron = None if words[1].lower() == "off" else words[1]
    if reason is not None and (cron is None or not reason):
        raise CommandError(_("usage: {usage}: the reason is required (it is kept with the rule and audited); "
                             "`rule schedule ID off` needs none").format(usage=ANYWAY_USAGE))
    try:
        updated = _store(call).update_schedule(rule.id, user, cron, opts.get("tz"), anyway=reason)
    except GateRefused as refused:
        raise CommandError(gate_refusal(refused.rule, cron or "")) from None
    except RuleError as exc:
        raise CommandError(str(exc)) from None
    return _scheduled(updated, user, reason)


def _scheduled(rule: Rule, user: str, reason: str | None) -> View:
    """What a schedule command did: taken off, scheduled over the gate with the reason, or through it."""
    title = _("Rule {id} schedule").format(id=rule.id)
    if rule.schedule is None:
        return View(title, _("Rule {id} has no schedule now; `rule run {id}` still runs it.").format(id=rule.id))
    runs = _("Rule {id} runs at `{cron}` ({zone}) on trading days.").format(id=rule.id, cron=rule.schedule,
                                                                            zone=rule.timezone)
    if not rule.gate_passed:
        return View(title, _("{runs} Scheduled over the gate by {user}: {reason}").format(runs=runs, user=user,
                                                                                        reason=reason),
                    lines=[_("`rule show {id}` shows this reason from now on; it is on the audit trail.").format(
                        id=rule.id)], users=[user])
    return View(title, _("{runs} Its latest backtest passed the gate.").format(runs=runs),
                lines=[_("The gate passed, so the reason was not needed and is not recorded.")] if reason else [])


def _anyway(args: list[str]) -> tuple[list[str], str | None]:
    """The words before `anyway` (强制, 仍然) and the reason after it, as typed; None: no `anyway`."""
    at = next((i for i, word in enumerate(args) if argument(word).lower() == "anyway"), None)
    if at is None:
        return args, None
    return args[:at], " ".join(args[at + 1:]).strip()


def _change(call: CommandCall, usage: str, change: Callable[[RuleStore, int, str], object]) -> Rule:
    """Apply an owner's (or an admin's) change to the rule the first word names."""
    rule = _rule(call, call.args, usage)
    try:
        change(_store(call), rule.id, _user(call))
    except RuleError as exc:
        raise CommandError(str(exc)) from None
    return rule


def pause_command(call: CommandCall) -> View:
    reason = " ".join(call.args[1:]) or None
    rule = _change(call, "rule pause ID [REASON]", lambda store, rid, user: store.pause(rid, user, reason))
    return View(_("Rule {id} paused").format(id=rule.id),
                _("Rule {id} is paused: its schedule does not run until `rule resume {id}`.").format(id=rule.id))


def resume_command(call: CommandCall) -> View:
    rule = _change(call, "rule resume ID", lambda store, rid, user: store.resume(rid, user))
    return View(_("Rule {id} resumed").format(id=rule.id),
                _("Rule {id} runs on its schedule again (missed ticks do not run).").format(id=rule.id))


def delete_command(call: CommandCall) -> View:
    rule = _change(call, "rule delete ID", lambda store, rid, user: store.delete(rid, user))
    return View(_("Rule {id} deleted").format(id=rule.id), _("Rule {id} and its logs are deleted.").format(id=rule.id))


def backtest_command(call: CommandCall) -> View:
    if len(call.args) != 3:
        raise CommandError(_("usage: {usage}, e.g. {example}").format(usage="rule backtest ID START END",
                                                                      example="rule backtest 3 20190101 20200601"))
    rule = _rule(call, call.args, "rule backtest ID START END")
    if rule.source != "language":
        raise CommandError(_("rule {id} is written in words; only rules in the rule language backtest (e.g. `buy "
                             "when close > ma(30) and rsi(14) < 70; sell when close < ma(30)`)").format(id=rule.id))
    try:
        start, end = check_range(call.args[1], call.args[2])
    except DataError as exc:
        raise CommandError(str(exc)) from None
    result = _backtest(call, rule, start, end)
    ctx, store = call.context, _store(call)
    judged = judge_backtest(TrialStore(ctx.engine), rule, result,
                            lambda first, last: _backtest(call, rule, first, last), ctx.holdout_fraction,
                            ctx.dsr_threshold, call.user, store.clock())
    store.set_verdict(rule.id, judged.verdict)
    return present_backtest(rule, result, [_store_chart(call, rule, result), _store_trades(call, rule, result)],
                            judged)


def _backtest(call: CommandCall, rule: Rule, start: str, end: str) -> RuleBacktest:
    """The rule over START..END with the paper account's cash and costs."""
    paper = call.context.paper
    cash = paper.starting_cash if isinstance(paper, TradingConfig) else Decimal("1000000")
    try:
        return backtest_rule(rule.requirements, rule.symbol, start, end, call.context.provider,
                             cash=cash, size=rule.size, value=rule.value_cny,
                             **({"rates": paper.rates} if isinstance(paper, TradingConfig) else {}))
    except (DataError, ValueError) as exc:
        raise CommandError(str(exc)) from None


def _store_chart(call: CommandCall, rule: Rule, result: RuleBacktest) -> ArtifactRef:
    """The close with the rule's fills, and its equity beside buy-and-hold's, in the reader's language."""
    s, b = result.strategy, result.benchmark
    closes = pd.Series([float(m.close) for m in s.marks], index=[m.trade_date for m in s.marks])
    equity = pd.Series([float(m.equity) for m in s.marks], index=closes.index)
    held = pd.Series([float(m.equity) for m in b.marks], index=[m.trade_date for m in b.marks])
    title = _("Rule {id} backtest: {symbol} {start}–{end}").format(id=rule.id, symbol=rule.symbol, start=result.start,
                                                                    end=result.end)
    data = trades_and_equity(closes, [t.trade_date for t in s.trades if t.side == "buy"],
                             [t.trade_date for t in s.trades if t.side == "sell"], equity, held,
                             float(s.starting_cash), title)
    key = f"backtest-chart:{hashlib.sha256(data).hexdigest()[:32]}:{current()}"
    return call.context.artifacts.put(f"rule:{rule.id}", key, "chart",
                                      f"rule{rule.id}_{result.start}_{result.end}.png", title, "image/png", data)


def _store_trades(call: CommandCall, rule: Rule, result: RuleBacktest) -> ArtifactRef:
    """Every trade of the backtest as a CSV, stored with the rule (the same trades store once in each language: the
    file's title is in the reader's)."""
    rows = [[t.trade_date, t.side, t.quantity, t.price, t.value, t.fees.commission, t.fees.stamp_duty,
             t.fees.transfer_fee, t.fees.handling_fee, t.fees.regulator_fee, t.fees.total, t.decided_on]
            for t in result.strategy.trades]
    frame = pd.DataFrame(rows, columns=["trade_date", "side", "quantity", "price", "value", "commission",
                                        "stamp_duty", "transfer_fee", "handling_fee", "regulator_fee", "fees",
                                        "decided_on"])
    data = frame.to_csv(index=False).encode()
    stem = f"rule{rule.id}_{result.start}_{result.end}"
    key = f"backtest:{hashlib.sha256(data).hexdigest()[:32]}:{current()}"
    return call.context.artifacts.put(f"rule:{rule.id}", key, "reports", f"{stem}_trades.csv",
                                      _("Rule {id} backtest trades").format(id=rule.id), "text/csv", data)


def _int(text: str | None, what: str) -> int | None:
    if text is None:
        return None
    if not text.isdigit():
        raise CommandError(_("{what} must be a whole number of shares, not {text!r}").format(what=what, text=text))
    return int(text)


def _decimal(text: str | None, what: str) -> Decimal | None:
    if text is None:
        return None
    try:
        return Decimal(text)
    except InvalidOperation:
        raise CommandError(_("{what} must be a number, not {text!r}").format(what=what, text=text)) from None


def help_command(call: CommandCall) -> View:
    lines = [f"{command.usage} — {_(command.summary)}" for command in SUBCOMMANDS.values()]
    lines.insert(0, "rule run ID — " + _("check a rule now: every step is logged; a buy or sell at or above its "
                                         "threshold proposes an order for a trader's approval"))
    return View(_("Rule commands"), _("Save trading rules and check them on demand or on a schedule."), lines=lines,
                notes=[_("the rule language: buy when close > ma(30) and rsi(14) < 70; sell when close < ma(30) "
                         "(fields open high low close volume; ma ema rsi atr macd boll kdj; close[1]; and or not; "
                         "crosses above|below)")])
