"""The workflows' home panels (the registry's HOME): the paper accounts, a person's rules, the desk's latest
decisions and the factor library, each read from its store as it is now. The texts of every panel are here."""

from __future__ import annotations

from datetime import UTC, datetime

from graphs.context import WorkflowContext
from graphs.home import HomeAction, HomePanel, HomeRow
from tools.broker.clock import SHANGHAI
from tools.broker.money import money_text
from tools.broker.orders import Order, Position
from tools.broker.paper import PaperBroker, account_names
from tools.broker.reports import account_report
from tools.broker.sim_clock import paper_clock
from tools.broker.store import switch_state
from tools.desk.log import Decision, list_decisions
from tools.factors.store import FactorInfo, FactorStore
from tools.rules.schedule import IsTradingDay, next_tick, trading_day_checker
from tools.rules.store import Rule

DESK_ROWS = 10
FACTOR_ROWS = 10


def account_panels(ctx: WorkflowContext, user: str) -> list[HomePanel]:
    """Each paper account: cash, equity, positions (cost, last price, P&L, sellable today), today's orders and
    fills, the trading switch and the risk limits; every figure the paper broker's own."""
    paper = ctx.paper
    if paper is None:
        return []
    enabled, _by, _at = switch_state(ctx.engine)
    limits = (f"limits: order value ≤ {money_text(paper.risk.max_order_value)} CNY, a position ≤ "
              f"{paper.risk.max_position_weight:.0%} of equity, daily loss ≤ {paper.risk.daily_loss_limit:.0%}")
    panels = []
    for name in account_names(ctx.engine):
        broker = PaperBroker(ctx.engine, ctx.provider, name, paper)
        account = broker.account()
        report = account_report(account, broker.realised(), [])
        summary = (f"Cash {money_text(account.cash)} CNY ({money_text(account.reserved)} held for open buys), "
                   f"equity {money_text(report.equity)} CNY ({report.total_pnl:+,.2f} since the start), as of "
                   f"{account.today} ({account.clock} clock, {account.price_basis} prices). Trading is "
                   f"{'on' if enabled else 'OFF'}; {limits}.")
        rows = [HomeRow(position_text(p)) for p in account.positions]
        rows += [HomeRow(order_text(o), thread_id=o.thread_id) for o in broker.orders("today")]
        panels.append(HomePanel(f"account:{name}", f"Account {name}", summary, tuple(rows), broker.notes()))
    return panels


def position_text(position: Position) -> str:
    price = (f"last {position.price} (close of {position.price_date})" if position.price is not None
             else "no price yet")
    pnl = f"P&L {position.unrealised:+,.2f}" if position.unrealised is not None else "P&L -"
    name = f" {position.name}" if position.name else ""
    return (f"{position.ts_code}{name}: {position.quantity:,} shares, {position.sellable:,} sellable today (T+1) · "
            f"cost {money_text(position.cost)} · {price} · {pnl}")


def order_text(order: Order) -> str:
    price = f"limit {order.limit_price}" if order.limit_price is not None else "market"
    fills = "; ".join(f"filled {f.quantity:,} at {f.price} ({f.basis})" for f in order.fills)
    return (f"Order {order.id}: {order.side} {order.quantity:,} {order.ts_code} {price}, {order.status}"
            + (f"; {fills}" if fills else "") + f" · session {order.session_date}")


def rule_panels(ctx: WorkflowContext, user: str) -> list[HomePanel]:
    """The person's rules: state, schedule, next run (Shanghai time, trading days), the last action and its
    confidence, failures in a row; pause or resume and run now (the owner's own rules)."""
    store = ctx.rules
    if store is None:
        return []
    rules = store.list(owner=user)
    if not rules:
        return []
    now = datetime.now(UTC)
    simulated = ctx.paper is not None and paper_clock(ctx.engine, ctx.provider, ctx.paper.live_data_days,
                                                      now).simulated
    trading_day = trading_day_checker(ctx.provider)
    rows = []
    for rule in rules:
        executions = store.executions(rule.id, limit=1)
        last = executions[0].decision if executions else None
        rows.append(HomeRow(rule_text(rule, last, _next_run(rule, now, simulated, trading_day)),
                            rule_actions(rule)))
    active = sum(1 for r in rules if r.enabled)
    return [HomePanel("rules", "Your rules", f"{len(rules)} rule(s), {active} active.", tuple(rows))]


def _next_run(rule: Rule, now: datetime, simulated: bool, trading_day: IsTradingDay) -> str:
    if rule.schedule is None:
        return "not scheduled"
    if not rule.enabled:
        return "paused"
    if simulated:
        return "when the simulated clock moves to a session its schedule matches"
    tick = next_tick(rule, now, is_trading_day=trading_day)
    return f"{tick.astimezone(SHANGHAI):%Y-%m-%d %H:%M} Shanghai" if tick else "none in the next month"


def rule_text(rule: Rule, last: dict | None, next_run: str) -> str:
    state = "active" if rule.enabled else "paused" + (f" ({rule.paused_reason})" if rule.paused_reason else "")
    schedule = f"{rule.schedule} ({rule.timezone})" if rule.schedule else "no schedule"
    decided = (last or {}).get("action")
    action = "not run yet"
    if isinstance(decided, dict):
        confidence = float(decided.get("confidence") or 0)
        action = f"last: {str(decided.get('action', '?')).upper()} (confidence {confidence:.2f})"
    return (f"Rule {rule.id} · {rule.symbol} · {state} · {schedule} · next: {next_run} · {action} · "
            f"{rule.consecutive_failures} failure(s) in a row")


def rule_actions(rule: Rule) -> tuple[HomeAction, ...]:
    toggle = (HomeAction("Pause", ("rule", "pause", str(rule.id))) if rule.enabled else
              HomeAction("Resume", ("rule", "resume", str(rule.id)), style="primary"))
    return toggle, HomeAction("Run now", ("rule", "run", str(rule.id)), channel=rule.channel)


def desk_panels(ctx: WorkflowContext, user: str) -> list[HomePanel]:
    """The desk's latest decisions with their rating, and the outcome once resolved."""
    decisions = list_decisions(ctx.engine, limit=DESK_ROWS)
    if not decisions:
        return []
    return [HomePanel("desk", "Desk", f"The latest {len(decisions)} decision(s) of the analysis desk.",
                      tuple(HomeRow(decision_text(d), thread_id=d.thread_id or None) for d in decisions))]


def decision_text(decision: Decision) -> str:
    outcome = "not resolved yet"
    if decision.resolutions:
        last = decision.resolutions[-1]
        hit = {True: "hit", False: "miss", None: "no verdict"}[last.hit]
        excess = f", excess {last.excess_return:+.2%}" if last.excess_return is not None else ""
        outcome = f"{last.horizon}d: {last.realised_return:+.2%}{excess} ({hit})"
    return (f"{decision.ts_code} on {decision.trade_date}: {decision.rating} (confidence {decision.confidence:.2f}, "
            f"target {decision.target_position:.0%}) · {outcome}")


def factor_panels(ctx: WorkflowContext, user: str) -> list[HomePanel]:
    """The factor library's top factors by rank IC, with status and reviewer."""
    store = FactorStore(ctx.engine)
    ranked = sorted(((f, _rank_ic(store, f)) for f in store.list()),
                    key=lambda pair: -abs(pair[1][1]) if pair[1] else 0.0)
    if not ranked:
        return []
    shown = ranked[:FACTOR_ROWS]
    return [HomePanel("factors", "Factor library",
                      f"{len(ranked)} factor(s); the top {len(shown)} by |rank IC| (mean, shortest horizon).",
                      tuple(HomeRow(factor_text(f, ic)) for f, ic in shown))]


def _rank_ic(store: FactorStore, factor: FactorInfo) -> tuple[str, float] | None:
    metrics = store.metrics(factor.id)
    if metrics.empty or "rank_ic_mean" not in metrics.columns:
        return None
    series = metrics["rank_ic_mean"].dropna()
    return (f"{series.index[0]}d", float(series.iloc[0])) if not series.empty else None


def factor_text(factor: FactorInfo, rank_ic: tuple[str, float] | None) -> str:
    ic = f"rank IC {rank_ic[1]:+.4f} ({rank_ic[0]})" if rank_ic else "no rank IC yet"
    return (f"{factor.name} v{factor.version} · {ic} · {factor.status} · reviewed by {factor.reviewer or 'nobody'}"
            f" · by {factor.author or '?'}")

