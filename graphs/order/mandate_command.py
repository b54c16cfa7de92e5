"""`mandate [NAME]` shows an account's mandate (anyone with a role on it); `mandate NAME set KEY=VALUE ...` and
`mandate NAME clear` change it (the account's admins). Each change is a decision with its own audit entry."""

from __future__ import annotations

from sqlalchemy.orm import Session

from graphs.context import admins_of
from graphs.order.commands import account_arg
from graphs.views import View
from graphs.workflow import CommandCall, CommandError
from tools.broker.mandate import KEYS, MandateError, load_mandate, parse_settings, set_mandate
from tools.i18n import N_, _

USAGE = N_("usage: mandate [NAME], mandate NAME set {settings}, or mandate NAME clear")
ADMINS_ONLY = N_("Only admins of account {account} (`roles` lists them) can change its mandate.")
TITLE = N_("Mandate of account {account}")
CHANGED = N_("Mandate of account {account} changed")
NONE = N_("Account {account} has no mandate: any symbol, no daily order, exposure or turnover cap.")
WITHIN = N_("Account {account} may trade only within:")
SET_BY = N_("Account {account} may trade only within (set by {user}):")
CLEARED = N_("Account {account} has no mandate now (cleared by {user}).")


def mandate_command(call: CommandCall) -> View:
    words = call.args
    if len(words) <= 1:
        name = account_arg(call, words)
        with Session(call.context.engine) as session:
            mandate = load_mandate(session, name)
        lines = mandate.lines() if mandate else []
        title = _(TITLE).format(account=name)
        if not lines:
            return View(title, _(NONE).format(account=name), accounts=[name])
        return View(title, _(WITHIN).format(account=name), lines=lines, accounts=[name])
    action = words[1].lower()
    if action not in ("set", "clear") or (action == "clear") != (len(words) == 2):
        raise CommandError(_(USAGE).format(settings=" ".join(k + "=…" for k in KEYS)))
    name = account_arg(call, words[:1])
    if call.user is None or call.user not in admins_of(call.context, name):
        raise CommandError(_(ADMINS_ONLY).format(account=name))
    try:
        changes = {"clear": True} if action == "clear" else parse_settings(words[2:])
    except MandateError as exc:
        raise CommandError(str(exc)) from None
    lines = set_mandate(call.context.engine, name, changes, call.user).lines()
    summary = _(SET_BY if lines else CLEARED).format(account=name, user=call.user)
    return View(_(CHANGED).format(account=name), summary, lines=lines, users=[call.user], accounts=[name])
