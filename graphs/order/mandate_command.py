"""`mandate [NAME]` shows an account's mandate (anyone with a role on it); `mandate NAME set KEY=VALUE ...` and
`mandate NAME clear` change it (the account's admins). Each change is a decision with its own audit entry."""

from __future__ import annotations

from sqlalchemy.orm import Session

from graphs.context import admins_of
from graphs.order.commands import account_arg
from graphs.views import View
from graphs.workflow import CommandCall, CommandError
from tools.broker.mandate import KEYS, MandateError, load_mandate, parse_settings, set_mandate

USAGE = f"usage: mandate [NAME], mandate NAME set {' '.join(k + '=…' for k in KEYS)}, or mandate NAME clear"
ADMINS_ONLY = "Only admins of account {account} (QUANTDESK_ADMINS, QUANTDESK_ACCOUNT_ADMINS) can change its mandate."


def mandate_command(call: CommandCall) -> View:
    words = call.args
    if len(words) <= 1:
        name = account_arg(call, words)
        with Session(call.context.engine) as session:
            mandate = load_mandate(session, name)
        lines = mandate.lines() if mandate else []
        if not lines:
            return View(f"Mandate of account {name}", f"Account {name} has no mandate: any symbol, no daily order, "
                                                       "exposure or turnover cap.")
        return View(f"Mandate of account {name}", f"Account {name} may trade only within:", lines=lines)
    action = words[1].lower()
    if action not in ("set", "clear") or (action == "clear") != (len(words) == 2):
        raise CommandError(USAGE)
    name = account_arg(call, words[:1])
    if call.user is None or call.user not in admins_of(call.context, name):
        raise CommandError(ADMINS_ONLY.format(account=name))
    try:
        changes = {"clear": True} if action == "clear" else parse_settings(words[2:])
    except MandateError as exc:
        raise CommandError(str(exc)) from None
    lines = set_mandate(call.context.engine, name, changes, call.user).lines()
    summary = (f"Account {name} may trade only within (set by {call.user}):" if lines else
               f"Account {name} has no mandate now (cleared by {call.user}).")
    return View(f"Mandate of account {name} changed", summary, lines=lines, users=[call.user])
