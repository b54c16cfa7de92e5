"""`roles`: who trades and administers which account, and which console login acts as whom (tools/access). Anyone
may list them; only a global admin changes them, and each change is an entry of the global audit chain."""

from __future__ import annotations

from graphs.order.grammar import OrderGrammarError, account_name
from graphs.views import View
from graphs.workflow import CommandCall, CommandError
from tools.access.roles import ROLES, RoleSet
from tools.access.store import (
    NO_ADMIN,
    ROLE_NAMES,
    AccessError,
    grant,
    load,
    map_login,
    revoke,
    scope_text,
    unmap_login,
)
from tools.i18n import N_, _

USAGE = N_("usage: roles [list] | roles grant|revoke trader|admin ID [account=NAME] | roles map LOGIN ID | roles unmap "
           "LOGIN")


def roles_command(call: CommandCall) -> View:
    """`roles` lists; `grant`, `revoke`, `map` and `unmap` change (global admins)."""
    words = [*call.args]
    verb = words[0].lower() if words else "list"
    if verb == "list" and len(words) <= 1:
        return _listed(load(call.context.engine))
    by = call.user
    if by is None:
        raise CommandError(_("a role change needs a known user"))
    try:
        return _change(call, verb, words[1:], by)
    except AccessError as exc:
        raise CommandError(str(exc)) from None


def _change(call: CommandCall, verb: str, args: list[str], by: str) -> View:
    engine = call.context.engine
    if verb in ("grant", "revoke") and len(args) in (2, 3) and args[0].lower() in ROLES:
        role, identity, account = args[0].lower(), _identity(args[1]), _account(args[2:])
        (grant if verb == "grant" else revoke)(engine, by, role, identity, account)
        done = (_("{identity} is now {role} {scope} (by {user}).") if verb == "grant" else
                _("{identity} is no longer {role} {scope} (by {user})."))
        return View(_("Roles"), done.format(identity=identity, role=_(ROLE_NAMES[role]), scope=scope_text(account),
                                            user=by), users=[identity, by])
    if verb == "map" and len(args) == 2:
        login, identity = _identity(args[0]), _identity(args[1])
        map_login(engine, by, login, identity)
        return View(_("Roles"), _("Console login {login} now acts as {identity} (by {user}).").format(
            login=login, identity=identity, user=by), users=[identity, by])
    if verb == "unmap" and len(args) == 1:
        login = _identity(args[0])
        unmap_login(engine, by, login)
        return View(_("Roles"), _("Console login {login} acts as itself again (by {user}).").format(
            login=login, user=by), users=[by])
    raise CommandError(_(USAGE))


def _identity(word: str) -> str:
    """A user id or login as typed: one word of at most 64 characters."""
    if not word or len(word) > 64 or any(c.isspace() for c in word):
        raise CommandError(_("{word!r} is not a user id or login (one word, at most 64 characters)").format(word=word))
    return word


def _account(words: list[str]) -> str:
    """The account an `account=NAME` names ("": global)."""
    if not words:
        return ""
    key, sep, name = words[0].partition("=")
    if not sep or key.lower() != "account":
        raise CommandError(_(USAGE))
    try:
        return account_name(name)
    except OrderGrammarError as exc:
        raise CommandError(str(exc)) from None


def _listed(roles: RoleSet) -> View:
    def names(people: frozenset[str]) -> str:
        return ", ".join(sorted(people)) or _("none")

    lines = [_("Admins: {names}").format(names=names(roles.admins)),
             _("Traders: {names}").format(names=names(roles.traders))]
    for account, people in sorted(roles.account_traders.items()):
        lines.append(_("Account {account}: its own traders {names} (instead of the global ones)").format(
            account=account, names=names(people)))
    for account, people in sorted(roles.account_admins.items()):
        lines.append(_("Account {account}: its own admins {names} (instead of the global ones)").format(
            account=account, names=names(people)))
    logins = ", ".join(f"{login} → {who}" for login, who in sorted(roles.logins.items()))
    lines.append(_("Console logins: {logins} (an unmapped login acts as itself)").format(logins=logins or _("none")))
    notes = [_("Roles are stored in the database; admins change them with `roles grant|revoke|map|unmap`, each change "
               "an entry of the global audit chain. The environment's role variables only seed an empty database.")]
    warnings = [] if roles.admins else [_(NO_ADMIN)]
    named = sorted(roles.admins | roles.traders | {*roles.logins.values()})
    return View(_("Roles"), _("Who may do what."), lines=lines, notes=notes, warnings=warnings, users=named)
