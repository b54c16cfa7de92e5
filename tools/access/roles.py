"""A snapshot of who holds which role, and of which console login acts as whom."""

from __future__ import annotations

from dataclasses import dataclass, field

from tools.settings import Settings

TRADER, ADMIN = "trader", "admin"
ROLES = (TRADER, ADMIN)


@dataclass(frozen=True)
class RoleSet:
    """Global traders and admins, each account's own (instead of the global ones), and the console's logins."""

    traders: frozenset[str] = frozenset()
    admins: frozenset[str] = frozenset()
    account_traders: dict[str, frozenset[str]] = field(default_factory=dict)
    account_admins: dict[str, frozenset[str]] = field(default_factory=dict)
    logins: dict[str, str] = field(default_factory=dict)  # console login -> the identity it acts as

    def grants(self) -> set[tuple[str, str, str]]:
        """Every (role, account, identity); account "" is global."""
        rows = {(TRADER, "", who) for who in self.traders} | {(ADMIN, "", who) for who in self.admins}
        for role, table in ((TRADER, self.account_traders), (ADMIN, self.account_admins)):
            rows |= {(role, account, who) for account, people in table.items() for who in people}
        return rows

    @property
    def empty(self) -> bool:
        return not self.grants() and not self.logins


def role_set(grants: set[tuple[str, str, str]], logins: dict[str, str]) -> RoleSet:
    """The snapshot of (role, account, identity) rows and logins."""
    by_account: dict[str, dict[str, set[str]]] = {TRADER: {}, ADMIN: {}}
    for role, account, who in grants:
        by_account[role].setdefault(account, set()).add(who)
    traders, admins = (frozenset(by_account[role].pop("", set())) for role in ROLES)
    return RoleSet(traders=traders, admins=admins,
                   account_traders={a: frozenset(p) for a, p in by_account[TRADER].items()},
                   account_admins={a: frozenset(p) for a, p in by_account[ADMIN].items()}, logins=dict(logins))


def from_settings(settings: Settings) -> RoleSet:
    """The environment's roles: what seeds a database that holds none (tools/access/store.py)."""
    return RoleSet(traders=settings.traders, admins=settings.admins, account_traders=dict(settings.account_traders),
                   account_admins=dict(settings.account_admins), logins=dict(settings.console_users))
