"""The paper account's commands (no graph run): account, account reset, orders, trading on|off, cancel ORDER.
Changing anything (reset, the switch, cancelling) is for traders only."""

from __future__ import annotations

from decimal import Decimal, InvalidOperation

from graphs.context import admins_of
from graphs.order.card import ACTION
from graphs.order.deps import accounts
from graphs.order.grammar import OrderGrammarError, account_name
from graphs.order.present import present_account, present_orders
from graphs.order.roles import (
    ACCOUNT_TRADERS_ONLY,
    NO_REASON,
    SWITCHED_OFF,
    SWITCHED_ON,
    TRADERS_ONLY,
    naming_refusal,
)
from graphs.views import View
from graphs.workflow import CommandCall, CommandError
from tools.broker.book import OUTCOMES
from tools.broker.money import money_text
from tools.broker.protocol import Broker, OrderScope
from tools.broker.reports import account_report
from tools.broker.store import AccountError, last_switch, set_trading, switch_state
from tools.i18n import N_, _, current, ngettext
from tools.storage.artifacts import ArtifactRef

SCOPES: tuple[OrderScope, ...] = ("open", "today", "all")


def _broker(call: CommandCall, name: str) -> Broker:
    """The broker of an existing account, or of the caller's default one (opened on first use); a name nobody
    opened is an error, not a new account."""
    ctx = call.context
    if ctx.paper is None or ctx.broker is None:
        raise CommandError(_("the paper account is not configured in this process"))
    if name != call.account and name not in (known := accounts(ctx).names()):
        listed = ", ".join(known) if known else _("none yet")
        raise CommandError(_("there is no paper account named {name} (accounts: {listed}); an order with "
                             "account={name} opens it").format(name=name, listed=listed))
    return accounts(ctx).broker(name, call.user)


def account_arg(call: CommandCall, words: list[str]) -> str:
    """The account the words name (the caller's default without one); naming another needs a role on it."""
    named = [w.split("=", 1)[1] if w.lower().startswith("account=") else w for w in words]
    try:
        name = account_name(named[0]) if named else call.account
    except OrderGrammarError as exc:
        raise CommandError(str(exc)) from None
    refused = naming_refusal(call.context, call.user, name, call.account)
    if refused:
        raise CommandError(refused)
    return name


def account_command(call: CommandCall) -> View:
    """`account [NAME]` and `account reset NAME [confirm]`."""
    if call.args and call.args[0].lower() == "reset":
        return _reset(call, call.args[1:])
    if len(call.args) > 1:
        raise CommandError(_("usage: {usage}, or {reset}").format(usage="account [NAME]", reset="account reset NAME"))
    name = account_arg(call, call.args)
    broker = _broker(call, name)
    broker.settle()  # orders whose bar arrived since the last settle pass fill before the account is shown
    try:
        account = broker.account()
    except AccountError as exc:  # a live broker's server that does not answer
        raise CommandError(str(exc)) from None
    marks = broker.marks()
    report = account_report(account, broker.realised(), [equity for _, _, _, equity in marks])
    chart: ArtifactRef | None = None
    if marks:
        from tools.research.charts import account_equity  # matplotlib on first draw: not at the start

        title = _("Paper account {name}: equity").format(name=name)
        data = account_equity([d for d, *_ in marks], [float(e) for *_, e in marks], float(account.starting_cash),
                              title)
        key = f"{marks[-1][0]}:{marks[-1][3]}:{len(marks)}:{current()}"  # its words are in the reader's language
        chart = call.context.artifacts.put(f"account:{name}", key, "chart", f"{_file(name)}_equity.png", title,
                                           "image/png", data)
    enabled, _by, _at = switch_state(call.context.engine)
    return present_account(account, report, broker.notes(), N_("on") if enabled else N_("OFF"), chart)


def _reset(call: CommandCall, words: list[str]) -> View:
    if not call.is_trader:
        raise CommandError(_(TRADERS_ONLY).format(what=_("reset a paper account")))
    confirmed = bool(words) and words[-1].lower() == "confirm"
    names = words[:-1] if confirmed else words
    if len(names) != 1:
        raise CommandError(_("usage: {usage} (then {confirm})").format(usage="account reset NAME",
                                                                       confirm="account reset NAME confirm"))
    name = account_arg(call, names)
    if not call.is_trader_of(name):
        raise CommandError(_(ACCOUNT_TRADERS_ONLY).format(account=name, what=_("reset it")))
    paper = call.context.paper
    assert paper is not None
    if not confirmed:
        return View(_("Reset paper account {name}?").format(name=name),
                    _("This cancels its open orders and deletes its orders, fills, positions, ledger and equity curve, "
                      "and starts it again with {cash} CNY. The audit trail stays. To go ahead, send: account reset "
                      "{name} confirm").format(cash=money_text(paper.starting_cash), name=name))
    if name not in accounts(call.context).names():  # resetting opens no account
        raise CommandError(_("there is no paper account named {name}").format(name=name))
    try:
        _broker(call, name).reset(paper.starting_cash, call.user or "?")
    except AccountError as exc:
        raise CommandError(str(exc)) from None
    return View(_("Paper account {name} reset").format(name=name),
                _("Account {name} starts again with {cash} CNY (reset by {user}).").format(
                    name=name, cash=money_text(paper.starting_cash), user=call.user), users=[call.user or ""])


def orders_command(call: CommandCall) -> View:
    """`orders [open|today|all] [account=NAME]`."""
    scope: OrderScope = "open"
    names: list[str] = []
    for word in call.args:
        lowered = word.lower()
        if lowered in SCOPES:
            scope = lowered
        else:
            names.append(word)
    if len(names) > 1:
        raise CommandError(_("usage: {usage}").format(usage="orders [open|today|all] [NAME]"))
    name = account_arg(call, names)
    broker = _broker(call, name)
    broker.settle()
    return present_orders(name, scope, broker.orders(scope))


CARD_CLOSED = N_("trading was switched off by {user}: {why}")
HALTED = {"cancelled": N_("Order {id} was cancelled at the broker: {summary}"),
          "filled": N_("Order {id} had already filled: {summary}"),
          "open": N_("Order {id} is still open at the broker (cancel it there): {summary}")}
ORDER_NOW = N_("Order {id}: {summary}")


def trading_command(call: CommandCall) -> View:
    """`trading on|off` (traders), `trading` shows the switch."""
    engine = call.context.engine
    if not call.args:
        enabled, by, at = switch_state(engine)
        last = last_switch(engine)
        since = ((_(" (set by {user} at {at} UTC: {why})") if last else _(" (set by {user} at {at} UTC)")).format(
            user=by, at=f"{at:%Y-%m-%d %H:%M}", why=last[3] if last else "") if by and at else "")
        shown = _("Trading is on{since}.") if enabled else _("Trading is OFF{since}.")
        return View(_("Trading"), shown.format(since=since), users=[by] if by else [])
    word = call.args[0].lower()
    if word not in ("on", "off"):
        raise CommandError(_("usage: {usage}").format(usage="trading on|off [REASON]"))
    if not (call.is_trader or (call.user is not None and call.user in admins_of(call.context, ""))):
        raise CommandError(_(TRADERS_ONLY).format(what=_("switch trading on or off")))
    reason = " ".join(call.args[1:])
    set_trading(engine, word == "on", call.user or "?", reason)
    message = SWITCHED_ON if word == "on" else SWITCHED_OFF
    text = _("{message} (by {user})").format(message=_(message).format(why=reason or _(NO_REASON)), user=call.user)
    if word == "off":  # every open order card ends now, each a rejection on record with who and why
        closed = call.close_cards(ACTION, _(CARD_CLOSED).format(user=call.user, why=reason or _(NO_REASON)))
        text += "\n" + ngettext("{n} open order card was closed.", "{n} open order cards were closed.",
                                 closed).format(n=closed)
        if call.context.broker is not None:  # a live broker cancels its open orders (the paper ones just wait)
            text += "".join("\n" + _(HALTED.get(o.status, ORDER_NOW)).format(id=o.id, summary=o.summary())
                            for o in accounts(call.context).halt(call.user or "?"))
    return View(_("Trading"), text, users=[call.user or ""])


def cancel_command(call: CommandCall) -> View:
    """`cancel ORDER`: an order that has not filled yet (traders)."""
    if len(call.args) != 1 or not call.args[0].isdigit():
        raise CommandError(_("usage: cancel ORDER (the order's number, see `orders`)"))
    if not call.is_trader:
        raise CommandError(_(TRADERS_ONLY).format(what=_("cancel orders")))
    order_id = int(call.args[0])
    name = accounts(call.context).order_account(order_id)
    if name is None:
        raise CommandError(_("there is no order {order}; see `orders all`").format(order=order_id))
    if not call.is_trader_of(name):
        raise CommandError(_(ACCOUNT_TRADERS_ONLY).format(account=name, what=_("cancel its orders")))
    try:
        order = _broker(call, name).cancel(order_id, call.user)
    except AccountError as exc:
        raise CommandError(str(exc)) from None
    if order.status != "cancelled":  # a live broker's order can fill before the cancel reaches it
        return View(_("Order {id}").format(id=order.id), order.summary(), users=[call.user or ""])
    return View(_("Order cancelled"), _("Order {id} ({what}) in account {name} is cancelled; the cash it held back is "
                                        "free again.").format(
        id=order.id, what=_("{side} {quantity} {code}").format(side=_(order.side),  # buy or sell, lower case
                                                               quantity=f"{order.quantity:,}", code=order.ts_code),
        name=name), users=[call.user or ""])


RESOLVE_USAGE = "resolve ORDER filled PRICE | resolve ORDER cancelled | resolve ORDER unsent"


def resolve_command(call: CommandCall) -> View:
    """`resolve ORDER filled PRICE|cancelled|unsent`: a trader's word on an order its live broker does not know."""
    words = [w.lower() for w in call.args]
    if len(words) not in (2, 3) or not words[0].isdigit() or words[1] not in OUTCOMES or \
            (words[1] == "filled") != (len(words) == 3):
        raise CommandError(_("usage: {usage}").format(usage=RESOLVE_USAGE))
    if not call.is_trader:
        raise CommandError(_(TRADERS_ONLY).format(what=_("mark orders")))
    order_id = int(words[0])
    name = accounts(call.context).order_account(order_id)
    if name is None:
        raise CommandError(_("there is no order {order}; see `orders all`").format(order=order_id))
    if not call.is_trader_of(name):
        raise CommandError(_(ACCOUNT_TRADERS_ONLY).format(account=name, what=_("mark its orders")))
    try:
        price = Decimal(words[2]) if len(words) == 3 else None
    except InvalidOperation:
        raise CommandError(_("usage: {usage}").format(usage=RESOLVE_USAGE)) from None
    try:
        order = _broker(call, name).resolve(order_id, words[1], price, call.user or "?")
    except AccountError as exc:
        raise CommandError(str(exc)) from None
    return View(_("Order {id}").format(id=order.id), order.summary(), users=[call.user or ""])


def _file(name: str) -> str:
    return "".join(c if c.isalnum() or c in "_.-" else "_" for c in name)
