"""`factor save NAME REASON`: the person's word that a factor the library gate refused belongs in the team library
anyway: its author's or an admin's. The reason is required, audited (the global chain) and shown on the factor from
then on."""

from __future__ import annotations

from graphs.context import admins_of
from graphs.factor.spec import SAVE_USAGE
from graphs.views import View
from graphs.workflow import CommandCall, CommandError
from tools.factors.store import FactorStore
from tools.i18n import _
from tools.research.gate import failures
from tools.research.library import TeamLibrary


def factor_save(call: CommandCall) -> View:
    if len(call.args) < 2:
        return View(_("Factor"), _("Usage: {usage} (a factor the library gate refused, and why it belongs there "
                                   "anyway)").format(usage=SAVE_USAGE))
    name, reason = call.args[0].strip().lower(), " ".join(call.args[1:]).strip()
    if call.user is None:
        return View(_("Factor"), _("Saving a factor anyway needs to know who you are."))
    info = FactorStore(call.context.engine).latest(name)
    if info is None:
        return View(_("Factor"), _("No factor named {name}. See `factor list`.").format(name=repr(name)))
    if call.user != info.author and call.user not in admins_of(call.context, ""):
        raise CommandError(_("Only {author}, who saved {name}, or an admin may put it in the team library over the "
                             "gate.").format(author=info.author or _("its author"), name=info.name))
    gate = (info.spec.get("honesty") or {}).get("gate") or {}
    library = TeamLibrary(call.context.engine)
    if not library.save_anyway(info.id, info.name, info.version, call.user, reason, gate):
        return View(_("Factor {name}").format(name=info.name),
                    _("{name} v{version} is in the team library already.").format(name=info.name,
                                                                                  version=info.version))
    failed = failures(gate) if gate else []
    return View(_("Factor {name}").format(name=info.name),
                _("{name} v{version} saved to the team library anyway by {user}: {reason}").format(
                    name=info.name, version=info.version, user=call.user, reason=reason),
                lines=[_("The gate had refused it: {failed}.").format(failed="; ".join(failed))] if failed else [],
                users=[call.user])
