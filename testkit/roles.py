"""Playing different people at the console: the operating-system account cannot change in a test, so the admin ROOT
maps this machine's login to the person a session plays (`roles map`, through the store the command uses)."""

from __future__ import annotations

from pathlib import Path

from testkit.console import quantdesk
from tools.access.login import os_login
from tools.access.roles import RoleSet
from tools.access.store import identity_of, map_login, seed
from tools.storage.db import make_engine
from tools.storage.migrate import upgrade

ROOT = "U_ROOT"  # the admin who maps the test machine's login to whoever a session plays


def desk(url: str, roles: RoleSet) -> None:
    """A migrated database holding `roles`, as a first start seeds them from the environment."""
    engine = make_engine(url)
    upgrade(engine)
    seed(engine, roles)
    engine.dispose()


def act_as(url: str, identity: str) -> None:
    """The admin ROOT maps this machine's login to `identity` (`roles map LOGIN ID`)."""
    engine = make_engine(url)
    if identity_of(engine, os_login()) != identity:
        map_login(engine, ROOT, os_login(), identity)
    engine.dispose()


def chat(tmp_path: Path, url: str, identity: str | None, *lines: str, **env: str) -> list[str]:
    """A `quantdesk chat` session as `identity` (None: as this machine's login, unmapped)."""
    if identity is not None:
        act_as(url, identity)
    out = quantdesk(["chat"], tmp_path, "\n".join(lines) + "\n", DATABASE_URL=url, **env)
    assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr
    return out.stdout.splitlines()
