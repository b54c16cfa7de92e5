"""Who is who, per account (issue 29, item 0; issue 38, item 2): traders and admins per account with the global lists
as default, stored in the database; the console acts as the identity the database maps its operating-system login
to; naming an account needs a role on it; the embedded default with no trader configured anywhere is still a
one-person desk. Real `quantdesk chat` processes on SQLite and PostgreSQL.

The operating-system account cannot change in a test, so a test plays different people the way an admin would:
`desk` stores the roles as a first start seeds them, and `chat` has the admin ROOT map this machine's login to the
person before each session (`roles map`, through the store the command uses)."""

from __future__ import annotations

from pathlib import Path

from testkit.roles import ROOT, chat, desk
from tools.access.login import os_login
from tools.access.roles import RoleSet

SAMPLE = {"QUANTDESK_DATA_PROVIDER": "sample"}
ROLES = RoleSet(admins=frozenset({ROOT}), account_traders={"console": frozenset({"U_ANNA"}),
                                                           "desk1": frozenset({"U_ANNA"})},
                account_admins={"desk2": frozenset({"U_BOB"})})
NO_ROLE = ("{user} has no role on account {account} (trader or admin; `roles` lists them), so cannot name it; "
           "leave account= out to use console")


def test_a_console_user_who_is_not_a_trader_cannot_approve_or_name_an_account(tmp_path: Path, own_url: str) -> None:
    desk(own_url, ROLES)
    bob = chat(tmp_path, own_url, "U_BOB", "order 000001.SZ buy 100", "approve", "account desk1",
               "order 000001.SZ buy 100 account=desk1", "account desk2", **SAMPLE)
    assert "error: Only traders can approve or edit orders (`roles` lists them); you can reject it." in bob
    assert f"  why: manual order by {os_login()}" in bob  # the console acts as its mapped identity, named by its login
    assert "  mandate: none" in bob and any(line.startswith("  expires: ") for line in bob)  # what the card shows
    assert not any(line.startswith("Order 1 filled") for line in bob)
    assert f"error: {NO_ROLE.format(user='U_BOB', account='desk1')}" in bob
    assert f"The order cannot be proposed: {NO_ROLE.format(user='U_BOB', account='desk1')}." in bob
    assert not any("has no role on account desk2" in line for line in bob)  # an admin of desk2 may name it

    anna = chat(tmp_path, own_url, "U_ANNA", "order 000001.SZ buy 100", "approve", "order 000001.SZ buy 100 "
                "account=desk1", "approve", **SAMPLE)
    placed = [line.split(":")[0] for line in anna if line.startswith("Order ") and " filled:" in line]
    assert placed == ["Order 1 filled", "Order 2 filled"], anna
    assert not any("no role" in line or line.startswith("error:") for line in anna), anna


def test_with_no_trader_configured_anywhere_the_console_is_a_one_person_desk(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'solo.db'}"
    lines = chat(tmp_path, url, None, "order 000001.SZ buy 100 account=side", "approve",
                 QUANTDESK_DATA_PROVIDER="sample")
    assert any(line.startswith("Order 1 filled: BUY 100 000001.SZ") for line in lines), lines
    assert not any(line.startswith("error:") for line in lines), lines
