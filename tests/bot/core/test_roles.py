"""Identities nobody can set for themselves (issue 38, item 2): the console is the operating-system account, roles
and console logins live in the database, the environment only seeds an empty one, only admins change them with
`roles`, and every change is an entry of the global audit chain that `quantdesk audit verify` checks. Each attack
runs against a real database (SQLite and PostgreSQL)."""

from __future__ import annotations

import logging
import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import Engine, inspect, select
from sqlalchemy.orm import Session

from graphs.access import roles_command
from graphs.registry import command_for
from testkit.audit import audit_cli
from testkit.console import quantdesk
from testkit.roles import ROOT, act_as, chat, desk
from tools.access.login import os_login
from tools.access.roles import RoleSet
from tools.access.store import AccessError, grant, identity_of, load, map_login, revoke, seed, unmap_login
from tools.audit.records import ChainEntry
from tools.broker.records import OrderEvent, PaperOrder
from tools.storage.db import make_engine
from tools.storage.migrate import current_revision, downgrade, upgrade
from tools.storage.models import Base

ANNA, BO, EVE = "U_ANNA", "U_BO", "U_EVE"
DESK = RoleSet(traders=frozenset({ANNA, BO}), admins=frozenset({ROOT}))
NOT_ADMIN = "Only admins can change roles; {user} is not one (`roles` lists them)."
ROLE_EVENTS = ("roles seeded", "role granted", "role revoked", "login mapped", "login unmapped")


def role_events(engine: Engine) -> list[tuple[str, str | None, dict]]:
    """The role changes on record, oldest first, each with its global chain entry."""
    with Session(engine) as session:
        rows = session.scalars(select(OrderEvent).where(OrderEvent.event.in_(ROLE_EVENTS))
                               .order_by(OrderEvent.id)).all()
        chained = set(session.scalars(select(ChainEntry.source_id).where(
            ChainEntry.chain == "global", ChainEntry.source == "order_events")))
    assert {row.id for row in rows} <= chained, "a role change outside the global chain"
    return [(row.event, row.actor, row.detail) for row in rows]


def test_migration_0022_up_and_down_and_the_models_agree(own_url: str) -> None:
    engine = make_engine(own_url)
    try:
        upgrade(engine)
        with engine.connect() as connection:
            context = MigrationContext.configure(connection, opts={"compare_type": True})
            differences = [str(d) for d in compare_metadata(context, Base.metadata)]
        assert not [d for d in differences if "role_grants" in d or "console_logins" in d], differences
        downgrade(engine, "0021")
        assert not {"role_grants", "console_logins"} & set(inspect(engine).get_table_names())
        upgrade(engine, "0022")
        assert current_revision(engine) == "0022"
    finally:
        engine.dispose()


def test_the_environment_seeds_an_empty_database_once_and_is_ignored_after(own_engine: Engine,
                                                                          caplog: pytest.LogCaptureFixture) -> None:
    assert seed(own_engine, RoleSet()) is False and load(own_engine).empty  # nothing to seed: stays empty
    assert seed(own_engine, RoleSet(traders=frozenset({ANNA}), admins=frozenset({ROOT}), logins={"anna": ANNA}))
    with caplog.at_level(logging.WARNING, "tools.access.store"):
        assert seed(own_engine, RoleSet(traders=frozenset({EVE}), admins=frozenset({EVE}),
                                        logins={"eve": ANNA})) is False
    assert "differ from the database's roles and are ignored" in caplog.text
    stored = load(own_engine)
    assert (stored.traders, stored.admins, stored.logins) == ({ANNA}, {ROOT}, {"anna": ANNA})
    assert [(event, actor) for event, actor, _ in role_events(own_engine)] == [("roles seeded", "environment")]


def test_two_processes_starting_at_once_seed_once(own_engine: Engine) -> None:
    """Two first starts race on an empty database: one seeds, the other finds the roles there (the global chain's
    head is held across the check and the write)."""
    with ThreadPoolExecutor(2) as pool:
        seeded = list(pool.map(lambda _: seed(own_engine, DESK), range(2)))
    assert sorted(seeded) == [False, True]
    assert [(event, actor) for event, actor, _ in role_events(own_engine)] == [("roles seeded", "environment")]


def test_only_an_admin_changes_roles_and_nobody_holds_two_identities(own_engine: Engine) -> None:
    with pytest.raises(AccessError, match="Nobody is an admin yet.*QUANTDESK_ADMINS"):
        grant(own_engine, EVE, "trader", EVE)
    seed(own_engine, DESK)
    with pytest.raises(AccessError) as refused:
        grant(own_engine, ANNA, "trader", EVE)  # a trader is not an admin
    assert str(refused.value) == NOT_ADMIN.format(user=ANNA)
    grant(own_engine, ROOT, "admin", ANNA)
    grant(own_engine, ROOT, "trader", EVE, "desk1")
    map_login(own_engine, ROOT, "anna", ANNA)
    with pytest.raises(AccessError, match="Login anna acts as you \\(U_ANNA\\): another admin must change it"):
        map_login(own_engine, ANNA, "anna", BO)  # an admin never moves their own login to a second identity
    with pytest.raises(AccessError, match="U_ANNA is already the console identity of login anna"):
        map_login(own_engine, ROOT, "other", ANNA)  # one login per identity
    map_login(own_engine, ANNA, "bo", BO)
    assert identity_of(own_engine, "bo") == BO and identity_of(own_engine, "nobody") == "nobody"
    unmap_login(own_engine, ANNA, "bo")
    revoke(own_engine, ANNA, "admin", ROOT)
    with pytest.raises(AccessError, match="U_ANNA is the last admin: grant another admin first"):
        revoke(own_engine, ANNA, "admin", ANNA)
    stored = load(own_engine)
    assert (stored.admins, stored.account_traders, stored.logins) == ({ANNA}, {"desk1": {EVE}}, {"anna": ANNA})
    assert [(event, actor) for event, actor, _ in role_events(own_engine)] == [
        ("roles seeded", "environment"), ("role granted", ROOT), ("role granted", ROOT),
        ("login mapped", ROOT), ("login mapped", ANNA), ("login unmapped", ANNA),
        ("role revoked", ANNA)]


def test_the_console_is_its_os_account_whatever_logname_and_user_say(tmp_path: Path, own_url: str) -> None:
    """An insider sets LOGNAME and USER (and the login map) to another trader: the console is still the identity
    the database maps the operating-system account to, and the order is approved in that name only."""
    desk(own_url, DESK)
    act_as(own_url, ANNA)
    lines = chat(tmp_path, own_url, None, "order 000001.SZ buy 100", "approve", LOGNAME=BO, USER=BO,
                 QUANTDESK_CONSOLE_USERS=f"{os_login()}={BO}", QUANTDESK_DATA_PROVIDER="sample")
    assert f"  why: manual order by {os_login()}" in lines
    assert any(line.startswith("Order 1 filled: BUY 100 000001.SZ") for line in lines), lines
    engine = make_engine(own_url)
    with Session(engine) as session:
        assert session.scalars(select(PaperOrder.approved_by)).all() == [ANNA]
        assert BO not in set(session.scalars(select(OrderEvent.actor).where(OrderEvent.actor.is_not(None))))
    engine.dispose()


def test_role_variables_set_after_the_first_start_grant_nothing(tmp_path: Path, own_url: str) -> None:
    """Eve, no trader, starts the console with herself as trader and admin in the environment and her login mapped
    to Anna: she is still Eve, cannot approve, and her `roles grant` is refused in one line, in either language."""
    desk(own_url, DESK)
    act_as(own_url, EVE)
    typed = ["order 000001.SZ buy 100", "approve", f"roles grant trader {EVE}", "lang zh", f"角色 授予 交易员 {EVE}"]
    out = quantdesk(["chat"], tmp_path, "\n".join(typed) + "\n",
        DATABASE_URL=own_url, QUANTDESK_TRADERS=EVE, QUANTDESK_ADMINS=EVE,
        QUANTDESK_CONSOLE_USERS=f"{os_login()}={ANNA}", QUANTDESK_DATA_PROVIDER="sample")
    assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr
    lines = out.stdout.splitlines()
    assert f"  why: manual order by {os_login()}" in lines
    assert "error: Only traders can approve or edit orders (`roles` lists them); you can reject it." in lines
    assert f"error: {NOT_ADMIN.format(user=EVE)}" in lines
    assert f"错误：只有管理员可以更改角色；{EVE} 不是管理员（`roles` 列出管理员）。" in lines
    assert "differ from the database's roles and are ignored" in out.stderr  # the note at startup
    engine = make_engine(own_url)
    stored = load(engine)
    engine.dispose()
    assert (stored.traders, stored.admins, stored.logins) == (DESK.traders, DESK.admins, {os_login(): EVE})


def test_every_role_change_from_the_console_is_in_the_verified_global_chain(tmp_path: Path, own_url: str,
                                                                           audit_keys: str) -> None:
    desk(own_url, DESK)
    act_as(own_url, ROOT)
    lines = chat(tmp_path, own_url, None, f"roles grant trader {EVE} account=desk1", f"roles map eve {EVE}",
                 "roles", f"roles revoke trader {BO}", "roles unmap eve", "角色 列表",
                 QUANTDESK_AUDIT_SIGNING_KEY=os.environ["QUANTDESK_AUDIT_SIGNING_KEY"],
                 QUANTDESK_DATA_PROVIDER="sample")
    assert f"{EVE} is now a trader of account desk1 (by {os_login()})." in lines
    assert f"Console login eve now acts as {EVE} (by {os_login()})." in lines
    assert f"  Account desk1: its own traders {EVE} (instead of the global ones)" in lines
    assert f"{BO} is no longer a trader globally (by {os_login()})." in lines
    assert f"Console login eve acts as itself again (by {os_login()})." in lines
    engine = make_engine(own_url)
    events = role_events(engine)
    engine.dispose()
    assert [(event, actor) for event, actor, _ in events] == [
        ("roles seeded", "environment"), ("login mapped", ROOT), ("role granted", ROOT),
        ("login mapped", ROOT), ("role revoked", ROOT), ("login unmapped", ROOT)]
    assert events[2][2] == {"role": "trader", "account": "desk1", "identity": EVE}
    result = audit_cli(own_url, "verify")
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"global: 6 entries intact, head signature valid (key {audit_keys})" in result.stdout.splitlines()


@pytest.mark.parametrize(("typed", "args"), [
    ("roles grant trader U123", ["grant", "trader", "U123"]),
    ("角色 授予 交易员 U123", ["grant", "trader", "U123"]),
    ("角色 撤销 管理员 U123 account=desk1", ["revoke", "admin", "U123", "account=desk1"]),
    ("角色 映射 anna U_ANNA", ["map", "anna", "U_ANNA"]),
    ("角色 解除映射 anna", ["unmap", "anna"]),
    ("角色 列表", ["list"]),
])
def test_roles_reads_the_same_in_either_language(typed: str, args: list[str]) -> None:
    """`/quant roles …`, the console and a thread all read a line through the registry: the Chinese words too."""
    found = command_for(typed)
    assert found is not None and found[0].run.resolve() is roles_command and found[1] == args
