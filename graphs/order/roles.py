"""Who may do what on a paper account (roles per account, graphs/context.py) and the words of each refusal and of the
kill switch, kept together for the i18n work."""

from __future__ import annotations

from graphs.context import has_role, traders_of
from graphs.order.deps import OrderDeps
from tools.i18n import N_, _

TRADERS_ONLY = N_("Only traders (`roles` lists them) can {what}.")
ACCOUNT_TRADERS_ONLY = N_("Only traders of account {account} (`roles` lists them) can {what}.")
NO_ROLE = N_("{user} has no role on account {account} (trader or admin; `roles` lists them), so cannot name it; "
             "leave account= out to use {default}")
NOT_A_TRADER = N_("{user} is not a trader of account {account} and cannot {what} its orders (`roles` lists who is)")
NOBODY = N_("a caller who named no user")

SWITCHED_ON = N_("Trading is on: approved orders are submitted and filled again (why: {why}).")
SWITCHED_OFF = N_("Trading is OFF: nothing is submitted or filled, every open order card has expired and rules "
                  "propose nothing until a trader sends `trading on` (why: {why}).")
CARD_SWITCHED_OFF = N_("Trading was switched off by {who} at {at:%Y-%m-%d %H:%M} UTC ({why}) after this card was "
                       "made: it expired before {decider}'s {kind}; nothing was placed. Propose it again once "
                       "trading is on.")
RULES_SWITCHED_OFF = N_("trading is switched off ({why}): rules propose nothing until a trader sends `trading on`")
NO_REASON = N_("no reason given")


def naming_refusal(ctx: OrderDeps, user: str | None, account: str, default: str) -> str | None:
    """Why `user` may not name `account` (None: they may). The adapter's default account needs no role."""
    if account == default or has_role(ctx, user, account):
        return None
    return _(NO_ROLE).format(user=user or _(NOBODY), account=account, default=default)


def trader_refusal(ctx: OrderDeps, user: str | None, account: str, what: str) -> str | None:
    """Why `user` may not `what` (approve, edit) `account`'s orders (None: a trader of it)."""
    if user is not None and user in traders_of(ctx, account):
        return None
    return _(NOT_A_TRADER).format(user=user or _(NOBODY), account=account, what=what)
