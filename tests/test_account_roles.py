"""Who is who, per account (issue 29, item 0): traders and admins per account with the global lists as default; the
console acts as the identity QUANTDESK_CONSOLE_USERS maps its login to; naming an account needs a role on it; the
embedded default with no trader configured anywhere is still a one-person desk. Real `quantdesk chat` processes on
SQLite and PostgreSQL."""

from __future__ import annotations

from pathlib import Path

from testkit.console import quantdesk

ROLES = {"QUANTDESK_ACCOUNT_TRADERS": "console=U_ANNA; desk1=U_ANNA", "QUANTDESK_ACCOUNT_ADMINS": "desk2=U_BOB",
         "QUANTDESK_CONSOLE_USERS": "bob=U_BOB,anna=U_ANNA", "QUANTDESK_DATA_PROVIDER": "sample"}
NO_ROLE = ("{user} has no role on account {account} (trader or admin: QUANTDESK_ACCOUNT_TRADERS, "
           "QUANTDESK_ACCOUNT_ADMINS), so cannot name it; leave account= out to use console")


def chat(tmp_path: Path, url: str, login: str, *lines: str, **env: str) -> list[str]:
    out = quantdesk(["chat"], tmp_path, "\n".join(lines) + "\n", DATABASE_URL=url, LOGNAME=login, **env)
    assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr
    return out.stdout.splitlines()


def test_a_console_user_who_is_not_a_trader_cannot_approve_or_name_an_account(tmp_path: Path, own_url: str) -> None:
    assert quantdesk(["db", "upgrade"], tmp_path, DATABASE_URL=own_url).returncode == 0
    bob = chat(tmp_path, own_url, "bob", "order 000001.SZ buy 100", "approve", "account desk1",
               "order 000001.SZ buy 100 account=desk1", "account desk2", **ROLES)
    assert "error: Only traders (QUANTDESK_TRADERS) can approve or edit orders; you can reject it." in bob
    assert "  why: manual order by bob" in bob  # the console acts as its mapped identity, shown by its name
    assert "  mandate: none" in bob and any(line.startswith("  expires: ") for line in bob)  # what the card shows
    assert not any(line.startswith("Order 1 filled") for line in bob)
    assert f"error: {NO_ROLE.format(user='U_BOB', account='desk1')}" in bob
    assert f"The order cannot be proposed: {NO_ROLE.format(user='U_BOB', account='desk1')}." in bob
    assert not any("has no role on account desk2" in line for line in bob)  # an admin of desk2 may name it

    anna = chat(tmp_path, own_url, "anna", "order 000001.SZ buy 100", "approve", "order 000001.SZ buy 100 "
                "account=desk1", "approve", **ROLES)
    placed = [line.split(":")[0] for line in anna if line.startswith("Order ") and " filled:" in line]
    assert placed == ["Order 1 filled", "Order 2 filled"], anna
    assert not any("no role" in line or line.startswith("error:") for line in anna), anna


def test_with_no_trader_configured_anywhere_the_console_is_a_one_person_desk(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'solo.db'}"
    lines = chat(tmp_path, url, "carol", "order 000001.SZ buy 100 account=side", "approve",
                 QUANTDESK_DATA_PROVIDER="sample")
    assert any(line.startswith("Order 1 filled: BUY 100 000001.SZ") for line in lines), lines
    assert not any(line.startswith("error:") for line in lines), lines
