"""The workflows' home panels (the registry's HOME): the paper accounts, a person's rules, the desk's latest
decisions and the factor library, each read from its store as it is now. The texts of every panel are here."""

from __future__ import annotations

from datetime import UTC, datetime
from itertools import groupby

from graphs.context import WorkflowContext, admins_of
from graphs.factor.decay_view import state_word
from graphs.factor.present import library_line, status_word
from graphs.home import HomeAction, HomePanel, HomeRow
from graphs.order.deps import accounts
from tools.broker.clock import SHANGHAI
from tools.broker.money import money_text
from tools.broker.notes import note_text
from tools.broker.orders import SIDE_WORDS, STATUS_WORDS, Order, Position
from tools.broker.reports import account_report
from tools.broker.sim_clock import paper_clock
from tools.broker.store import AccountError, switch_state
from tools.desk.log import Decision, RatingScore, list_decisions, rating_word, scores_by_rating
from tools.factors.store import FactorInfo, FactorStore
from tools.i18n import N_, _, pgettext
from tools.research.decay import DecayStore
from tools.research.library import TeamLibrary
from tools.research.records import LibraryEntry
from tools.rules.schedule import IsTradingDay, next_tick, trading_day_checker
from tools.rules.store import Rule

DESK_ROWS = 10
FACTOR_ROWS = 10


def account_panels(ctx: WorkflowContext, user: str) -> list[HomePanel]:
    """Each paper account: cash, equity, positions (cost, last price, P&L, sellable today), today's orders and
    fills, the trading switch and the risk limits; every figure the paper broker's own."""
    paper = ctx.paper
    if paper is None or ctx.broker is None:
        return []
    enabled, by, at = switch_state(ctx.engine)
    switch = [_switch_row(enabled, by, at)] if user in admins_of(ctx, "") else []
    limits = _("limits: order value ≤ {value} CNY, a position ≤ {weight} of equity, daily loss ≤ {loss}").format(
        value=money_text(paper.risk.max_order_value), weight=f"{paper.risk.max_position_weight:.0%}",
        loss=f"{paper.risk.daily_loss_limit:.0%}")
    panels = []
    desk = accounts(ctx)
    for name in desk.names():
        broker = desk.broker(name)
        try:
            account = broker.account()
        except AccountError as exc:  # a live broker's server that does not answer: said, not guessed
            panels.append(HomePanel(f"account:{name}", _("Account {name}").format(name=name), str(exc), tuple(switch),
                                    users=(by,) if switch and by else (), accounts=(name,)))
            continue
        report = account_report(account, broker.realised(), [])
        summary = _("Cash {cash} CNY ({reserved} held for open buys), equity {equity} CNY ({pnl} since the start), "
                    "as of {today} ({clock} clock, {basis} prices). Trading is {switch}; {limits}.").format(
            cash=money_text(account.cash), reserved=money_text(account.reserved), equity=money_text(report.equity),
            pnl=f"{report.total_pnl:+,.2f}", today=account.today, clock=_clock_word(account.clock),
            basis=_basis_word(account.price_basis),
            switch=_("on") if enabled else _("OFF"), limits=limits)
        rows = [*switch, *(HomeRow(position_text(p)) for p in account.positions)]
        rows += [HomeRow(order_text(o), thread_id=o.thread_id) for o in broker.orders("today")]
        panels.append(HomePanel(f"account:{name}", _("Account {name}").format(name=name), summary, tuple(rows),
                                broker.notes(), users=(by,) if switch and by else (), accounts=(name,)))
    return panels


def _switch_row(enabled: bool, by: str | None, at: datetime | None) -> HomeRow:
    """The kill switch, for admins: one click (confirmed) switches trading off, or on, for every account, with
    the reason typed beside it; it runs `trading off|on REASON` as them."""
    since = _(" (set by {user} at {at} UTC)").format(user=by, at=f"{at:%Y-%m-%d %H:%M}") if by and at else ""
    why = _("Why (recorded with your name in the audit trail)")
    if enabled:
        return HomeRow(_("Trading is on for every account{since}.").format(since=since), (HomeAction(
            _("Trading off"), ("trading", "off"), style="danger", asks=why,
            confirm=_("Switch trading off for every account? Nothing is submitted or filled, and every open order "
                      "card on every surface closes now.")),))
    return HomeRow(_("Trading is OFF for every account{since}.").format(since=since), (HomeAction(
        _("Trading on"), ("trading", "on"), style="primary", asks=why,
        confirm=_("Switch trading on for every account? Approved orders are submitted and filled again.")),))


def _clock_word(clock: str) -> str:
    """The account's clock (simulated, live) as the reader says it."""
    words = {"simulated": pgettext("clock", "simulated"), "live": pgettext("clock", "live")}
    return words.get(clock, clock)


def _basis_word(basis: str) -> str:
    """The prices' basis (forward-adjusted, unadjusted, unknown) as the reader says it."""
    words = {"forward-adjusted": pgettext("price basis", "forward-adjusted"),
             "unadjusted": pgettext("price basis", "unadjusted"), "unknown": pgettext("price basis", "unknown")}
    return words.get(basis, basis)


ACTION_WORDS = {**SIDE_WORDS, "hold": N_("HOLD")}  # a rule's last decision, as the Home says it


def _action_word(action: str) -> str:
    return _(ACTION_WORDS[action]) if action in ACTION_WORDS else action.upper()


def position_text(position: Position) -> str:
    price = (_("last {price} (close of {date})").format(price=position.price, date=position.price_date)
             if position.price is not None else _("no price yet"))
    pnl = _("P&L {pnl}").format(pnl=f"{position.unrealised:+,.2f}" if position.unrealised is not None else "-")
    name = f" {position.name}" if position.name else ""
    return _("{code}: {quantity} shares, {sellable} sellable today (T+1) · cost {cost} · {price} · {pnl}").format(
        code=f"{position.ts_code}{name}", quantity=f"{position.quantity:,}", sellable=f"{position.sellable:,}",
        cost=money_text(position.cost), price=price, pnl=pnl)


def order_text(order: Order) -> str:
    """An order's line on the Home; its side (buy, sell: message ids of a rule's decision words), status and fill
    basis are stored in English and said in the reader's language."""
    price = _("limit {price}").format(price=order.limit_price) if order.limit_price is not None else _("market")
    fills = _("; ").join(_("filled {quantity} at {price} ({basis})").format(quantity=f"{f.quantity:,}", price=f.price,
                                                                          basis=note_text(f.basis))
                      for f in order.fills)
    return _("Order {id}: {side} {quantity} {code} {price}, {status}{fills} · session {session}").format(
        id=order.id, side=_(order.side), quantity=f"{order.quantity:,}", code=order.ts_code, price=price,
        status=_(STATUS_WORDS[order.status]), fills=f"; {fills}" if fills else "", session=order.session_date)


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
    return [HomePanel("rules", _("Your rules"), _("{count} rule(s), {active} active.").format(
        count=len(rules), active=active), tuple(rows))]


def _next_run(rule: Rule, now: datetime, simulated: bool, trading_day: IsTradingDay) -> str:
    if rule.schedule is None:
        return _("not scheduled")
    if not rule.enabled:
        return _("paused")
    if simulated:
        return _("when the simulated clock moves to a session its schedule matches")
    tick = next_tick(rule, now, is_trading_day=trading_day)
    return (_("{time} Shanghai").format(time=f"{tick.astimezone(SHANGHAI):%Y-%m-%d %H:%M}") if tick
            else _("none in the next month"))


def rule_text(rule: Rule, last: dict | None, next_run: str) -> str:
    state = _("active") if rule.enabled else _("paused") + (f" ({rule.paused_reason})" if rule.paused_reason else "")
    schedule = f"{rule.schedule} ({rule.timezone})" if rule.schedule else _("no schedule")
    decided = (last or {}).get("action")
    action = _("not run yet")
    if isinstance(decided, dict):
        action = _("last: {action} (confidence {confidence})").format(
            action=_action_word(str(decided.get("action", "?"))),
            confidence=f"{float(decided.get('confidence') or 0):.2f}")
    return _("Rule {id} · {symbol} · {state} · {schedule} · next: {next} · {action} · {failures} failure(s) in a "
             "row").format(id=rule.id, symbol=rule.symbol, state=state, schedule=schedule, next=next_run,
                           action=action, failures=rule.consecutive_failures)


def rule_actions(rule: Rule) -> tuple[HomeAction, ...]:
    toggle = (HomeAction(_("Pause"), ("rule", "pause", str(rule.id))) if rule.enabled else
              HomeAction(_("Resume"), ("rule", "resume", str(rule.id)), style="primary"))
    return toggle, HomeAction(_("Run now"), ("rule", "run", str(rule.id)), channel=rule.channel)


def desk_panels(ctx: WorkflowContext, user: str) -> list[HomePanel]:
    """The desk's latest decisions with their rating, and the outcome once resolved."""
    decisions = list_decisions(ctx.engine, limit=DESK_ROWS)
    if not decisions:
        return []
    panels = [HomePanel("desk", _("Desk"), _("The latest {count} decision(s) of the analysis desk.").format(
        count=len(decisions)), tuple(HomeRow(decision_text(d), thread_id=d.thread_id or None) for d in decisions))]
    scores = scores_by_rating(ctx.engine)
    if scores:
        panels.append(HomePanel("desk_scores", _("Desk by rating"), _(
            "What the desk's resolved decisions returned, by rating, 5 and 20 sessions after each decision "
            "(excess: over the equal-weight universe)."), tuple(HomeRow(text) for text in rating_lines(scores))))
    return panels


def rating_lines(scores: list[RatingScore]) -> list[str]:
    """One line a rating: its horizons' decision counts, mean realised and excess returns, and hits."""
    lines = []
    for rating, group in groupby(scores, key=lambda score: score.rating):
        parts = [_("{horizon}d: {count} decision(s), mean {mean}{excess}, {hits} of {scored} hit").format(
            horizon=s.horizon, count=s.count, mean=f"{s.mean_return:+.2%}",
            excess=_(", excess {excess}").format(excess=f"{s.mean_excess:+.2%}") if s.mean_excess is not None else "",
            hits=s.hits, scored=s.scored) for s in group]
        lines.append(f"{rating_word(rating)} · " + " · ".join(parts))
    return lines


def decision_text(decision: Decision) -> str:
    outcome = _("not resolved yet")
    if decision.resolutions:
        last = decision.resolutions[-1]
        hit = {True: _("hit"), False: _("miss"), None: _("no verdict")}[last.hit]
        excess = (_(", excess {excess}").format(excess=f"{last.excess_return:+.2%}")
                  if last.excess_return is not None else "")
        outcome = f"{last.horizon}d: {last.realised_return:+.2%}{excess} ({hit})"
    return _("{code} on {date}: {rating} (confidence {confidence}, target {target}) · {outcome}").format(
        code=decision.ts_code, date=decision.trade_date, rating=rating_word(decision.rating),
        confidence=f"{decision.confidence:.2f}", target=f"{decision.target_position:.0%}", outcome=outcome)


def factor_panels(ctx: WorkflowContext, user: str) -> list[HomePanel]:
    """The factor library's top factors by rank IC, with status and reviewer."""
    store, library, states = FactorStore(ctx.engine), TeamLibrary(ctx.engine).entries(), DecayStore(ctx.engine)
    ranked = sorted(((f, _rank_ic(store, f)) for f in store.list()),
                    key=lambda pair: -abs(pair[1][1]) if pair[1] else 0.0)
    if not ranked:
        return []
    shown = ranked[:FACTOR_ROWS]
    return [HomePanel("factors", _("Factor library"),
                      _("{count} factor(s); the top {shown} by |rank IC| (mean, shortest horizon).").format(
                          count=len(ranked), shown=len(shown)),
                      tuple(HomeRow(" · ".join([factor_text(f, ic), *_library_texts(f, library, states)]))
                            for f, ic in shown),
                      users=tuple(u for f, _ic in shown
                                  for u in (f.reviewer, f.author, _saved_by(library.get(f.id))) if u))]


def _saved_by(entry: LibraryEntry | None) -> str | None:
    return entry.added_by if entry is not None else None


def _library_texts(factor: FactorInfo, library: dict[int, LibraryEntry], states: DecayStore) -> list[str]:
    """Whether the factor is in the team library (and why: the reason it was saved anyway), and its decay state."""
    entry = library.get(factor.id)
    texts = [library_line(entry, (factor.spec.get("honesty") or {}).get("gate") or {})]
    tracker = states.load(factor.id) if entry is not None else None
    if tracker is not None:
        texts.append(_("{state} since {since}").format(state=state_word(tracker.state), since=tracker.since))
    return texts


def _rank_ic(store: FactorStore, factor: FactorInfo) -> tuple[str, float] | None:
    metrics = store.metrics(factor.id)
    if metrics.empty or "rank_ic_mean" not in metrics.columns:
        return None
    series = metrics["rank_ic_mean"].dropna()
    return (f"{series.index[0]}d", float(series.iloc[0])) if not series.empty else None


def factor_text(factor: FactorInfo, rank_ic: tuple[str, float] | None) -> str:
    ic = (_("rank IC {ic} ({horizon})").format(ic=f"{rank_ic[1]:+.4f}", horizon=rank_ic[0]) if rank_ic
          else _("no rank IC yet"))
    return _("{name} v{version} · {ic} · {status} · reviewed by {reviewer} · by {author}").format(
        name=factor.name, version=factor.version, ic=ic, status=status_word(factor.status),
        reviewer=factor.reviewer or _("nobody"), author=factor.author or "?")

