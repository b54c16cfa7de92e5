"""`decisions [CODE]`: the desk's past decisions with their resolution (realised return against the equal-weight
benchmark after the horizon)."""

from __future__ import annotations

from graphs.analyze.present import present_decisions
from graphs.grammar import CODE
from graphs.views import View
from graphs.workflow import CommandCall, CommandError
from tools.desk.log import list_decisions
from tools.i18n import _


def decisions_command(call: CommandCall) -> View:
    if len(call.args) > 1 or (call.args and not CODE.match(call.args[0])):
        raise CommandError(_("usage: decisions [CODE], e.g. `decisions 600519.SH`"))
    code = call.args[0].upper() if call.args else None
    found = list_decisions(call.context.engine, call.context.desk_namespace, code)
    return present_decisions(found, _("for {code}").format(code=code) if code else _("all codes, newest first"))
