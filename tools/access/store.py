"""The roles and console logins in the database: read whole, seeded once from the environment, changed only by a
global admin. Every change is an order event on the global audit chain, in the change's own transaction, checked and
written under the chain's locked head (`changing`), so two changes never both pass their checks."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager

from sqlalchemy import Engine, select
from sqlalchemy.orm import Session

from tools.access.records import ConsoleLogin, RoleGrant
from tools.access.roles import ADMIN, TRADER, RoleSet, role_set
from tools.audit.chain import GLOBAL, lock
from tools.broker.store import record_event, write_lock
from tools.i18n import N_, _

log = logging.getLogger(__name__)

SEEDER = "environment"  # the actor of the one seeding entry
NO_ADMIN = N_("Nobody is an admin yet, so nobody can change roles. Roles are seeded once, when a QuantDesk process "
              "first starts on a database that holds none: set QUANTDESK_ADMINS (and QUANTDESK_TRADERS, "
              "QUANTDESK_CONSOLE_USERS) before that first start.")
ROLE_NAMES = {TRADER: N_("a trader"), ADMIN: N_("an admin")}
NOT_ADMIN = N_("Only admins can change roles; {user} is not one (`roles` lists them).")


class AccessError(ValueError):
    """A role change that is refused; the message says why, in one line."""


def load(engine: Engine) -> RoleSet:
    """The roles and logins as stored now."""
    with Session(engine) as session:
        return _load(session)


def identity_of(engine: Engine, login: str) -> str:
    """Who the console login acts as: its mapped identity, else the login itself."""
    with Session(engine) as session:
        row = session.get(ConsoleLogin, login)
        return row.identity if row is not None else login


def seed(engine: Engine, wanted: RoleSet) -> bool:
    """Store `wanted` (the environment's roles) when the database holds no roles and no logins; True if it did.
    Otherwise the database's roles hold, and a difference from `wanted` is logged (never applied)."""
    stored = load(engine)
    if stored.empty and not wanted.empty:
        with changing(engine) as session:
            if _load(session).empty:  # no other process seeded meanwhile
                for role, account, who in sorted(wanted.grants()):
                    session.add(RoleGrant(role=role, account=account, identity=who, granted_by=SEEDER))
                for login, who in sorted(wanted.logins.items()):
                    session.add(ConsoleLogin(login=login, identity=who, mapped_by=SEEDER))
                record_event(session, None, None, "roles seeded", SEEDER, _detail(wanted))
                log.info("roles seeded from the environment: %d grants, %d console logins", len(wanted.grants()),
                         len(wanted.logins))
                return True
        stored = load(engine)
    if not wanted.empty and (wanted.grants() != stored.grants() or wanted.logins != stored.logins):
        log.warning("the role variables of the environment (QUANTDESK_TRADERS, QUANTDESK_ADMINS, "
                    "QUANTDESK_ACCOUNT_TRADERS, QUANTDESK_ACCOUNT_ADMINS, QUANTDESK_CONSOLE_USERS) differ from the "
                    "database's roles and are ignored: they only seed a database that holds none; admins change "
                    "roles with `roles grant|revoke|map|unmap`")
    return False


def grant(engine: Engine, by: str, role: str, identity: str, account: str = "") -> None:
    """Give `identity` a role (of `account`, "" global)."""
    with changing(engine) as session:
        _require_admin(session, by)
        if session.get(RoleGrant, (role, account, identity)) is not None:
            raise AccessError(_("{identity} is already {role} {scope}.").format(
                identity=identity, role=_(ROLE_NAMES[role]), scope=scope_text(account)))
        session.add(RoleGrant(role=role, account=account, identity=identity, granted_by=by))
        record_event(session, None, None, "role granted", by, {"role": role, "account": account,
                                                                "identity": identity})


def revoke(engine: Engine, by: str, role: str, identity: str, account: str = "") -> None:
    """Take a role back; the last global admin stays (else nobody could change roles again)."""
    with changing(engine) as session:
        stored = _require_admin(session, by)
        row = session.get(RoleGrant, (role, account, identity))
        if row is None:
            raise AccessError(_("{identity} is not {role} {scope}.").format(
                identity=identity, role=_(ROLE_NAMES[role]), scope=scope_text(account)))
        if (role, account) == (ADMIN, "") and stored.admins == {identity}:
            raise AccessError(_("{identity} is the last admin: grant another admin first.").format(identity=identity))
        session.delete(row)
        record_event(session, None, None, "role revoked", by, {"role": role, "account": account,
                                                                "identity": identity})


def map_login(engine: Engine, by: str, login: str, identity: str) -> None:
    """Let the console login `login` act as `identity` (replacing what it acted as)."""
    with changing(engine) as session:
        stored = _require_admin(session, by)
        _not_own(stored, by, login)
        holder = next((other for other, who in stored.logins.items() if who == identity), None)
        if holder == login:
            raise AccessError(_("Login {login} already acts as {identity}.").format(login=login, identity=identity))
        if holder is not None:
            raise AccessError(_("{identity} is already the console identity of login {holder}: one login per "
                                "identity (`roles unmap {holder}` first).").format(identity=identity, holder=holder))
        row = session.get(ConsoleLogin, login)
        before = row.identity if row is not None else None
        if row is None:
            session.add(ConsoleLogin(login=login, identity=identity, mapped_by=by))
        else:
            row.identity, row.mapped_by = identity, by
        record_event(session, None, None, "login mapped", by, {"login": login, "identity": identity,
                                                                        "before": before})


def unmap_login(engine: Engine, by: str, login: str) -> None:
    """Forget what `login` acts as (it acts as itself again)."""
    with changing(engine) as session:
        stored = _require_admin(session, by)
        _not_own(stored, by, login)
        row = session.get(ConsoleLogin, login)
        if row is None:
            raise AccessError(_("Login {login} is not mapped.").format(login=login))
        session.delete(row)
        record_event(session, None, None, "login unmapped", by, {"login": login, "identity": row.identity})


@contextmanager
def changing(engine: Engine) -> Iterator[Session]:
    """A write transaction holding the global chain's head (every role change is appended there)."""
    with write_lock(engine) as session:
        lock(session, GLOBAL)
        yield session


def scope_text(account: str) -> str:
    return _("of account {account}").format(account=account) if account else _("globally")


def _load(session: Session) -> RoleSet:
    grants = {(r.role, r.account, r.identity) for r in session.scalars(select(RoleGrant))}
    logins = {r.login: r.identity for r in session.scalars(select(ConsoleLogin))}
    return role_set(grants, logins)


def _require_admin(session: Session, by: str) -> RoleSet:
    stored = _load(session)
    if not stored.admins:
        raise AccessError(_(NO_ADMIN))
    if by not in stored.admins:
        log.info("role change refused: %s is not an admin", by)
        raise AccessError(_(NOT_ADMIN).format(user=by))
    return stored


def _not_own(stored: RoleSet, by: str, login: str) -> None:
    """An admin never moves the login that acts as them: another admin must (no second identity for oneself)."""
    if stored.logins.get(login) == by:
        raise AccessError(_("Login {login} acts as you ({user}): another admin must change it (nobody gives "
                            "themselves a second identity).").format(login=login, user=by))


def _detail(roles: RoleSet) -> dict[str, object]:
    return {"grants": [list(row) for row in sorted(roles.grants())],
            "logins": dict(sorted(roles.logins.items()))}

