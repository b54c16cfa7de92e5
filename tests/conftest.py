"""Shared fixtures: real SQLite files, a fresh PostgreSQL database per session, the shared data sets."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import Engine

from testkit.fakes.chat import ScriptedModels
from testkit.fakes.openai_server import OpenAIServer
from testkit.fakes.slack_server import SlackServer
from testkit.paths import SHARED_DATA
from testkit.pg import fresh_pg_database
from testkit.slack import BotProcess
from tools.data.local import SampleProvider
from tools.sandbox import Sandbox
from tools.storage.db import make_engine
from tools.storage.migrate import upgrade

pytest_plugins = ["testkit.slack_desk"]  # the in-process Slack desk fixture, `slack_desk`


@pytest.fixture(scope="module")
def sandbox() -> Iterator[Sandbox]:
    """One sandbox worker per test module (test_sandbox_run.py brings its own with two)."""
    box = Sandbox(workers=1)
    yield box
    box.close()


@pytest.fixture(scope="module")
def provider() -> SampleProvider:
    """The bundled sample data (a module that needs another provider defines its own)."""
    return SampleProvider()


@pytest.fixture(scope="session")
def shared_data() -> Path:
    if not SHARED_DATA.is_dir():
        pytest.fail(f"the shared data folder {SHARED_DATA} is missing (clone with ../shared beside it)")
    return SHARED_DATA


@pytest.fixture(scope="session")
def pg_url() -> Iterator[str]:
    """A database on the test server for this session, dropped afterwards. Fails (not skips) under CI=true."""
    with fresh_pg_database() as url:
        yield url


@pytest.fixture
def fresh_pg_url() -> Iterator[str]:
    """An empty database of its own for one test."""
    with fresh_pg_database() as url:
        yield url


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'quantdesk.db'}"


@pytest.fixture(params=["sqlite", "postgres"])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """Each test using it runs once on SQLite and once on PostgreSQL."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'quantdesk.db'}"
    return request.getfixturevalue("pg_url")


def _migrated(url: str) -> Iterator[Engine]:
    engine = make_engine(url)
    upgrade(engine)
    yield engine
    engine.dispose()


@pytest.fixture
def engine(db_url: str) -> Iterator[Engine]:
    yield from _migrated(db_url)


@pytest.fixture
def sqlite_engine(sqlite_url: str) -> Iterator[Engine]:
    """A migrated SQLite database of this test's own (for tests that do not need both databases)."""
    yield from _migrated(sqlite_url)


@pytest.fixture(params=["sqlite", "postgres"])
def own_url(request: pytest.FixtureRequest, sqlite_url: str) -> str:
    """A database of this test's own, on SQLite and on PostgreSQL (for state that is one per database, such as the
    simulated clock: tests must not share it)."""
    return sqlite_url if request.param == "sqlite" else request.getfixturevalue("fresh_pg_url")


@pytest.fixture
def own_engine(own_url: str) -> Iterator[Engine]:
    yield from _migrated(own_url)


@pytest.fixture
def models() -> Iterator[ScriptedModels]:
    """Scripted chat models for one test; at its end none may have run out or kept unused answers."""
    made = ScriptedModels()
    yield made
    made.check()


@pytest.fixture
def openai_server() -> Iterator[OpenAIServer]:
    """A running fake; at teardown every scripted step must have been used and no request may have failed."""
    with OpenAIServer() as server:
        yield server
    server.fake.check()


@pytest.fixture
def audit_keys(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[str]:
    """A new Ed25519 audit key: its private key file is this process's QUANTDESK_AUDIT_SIGNING_KEY (the writers'),
    its public key QUANTDESK_AUDIT_VERIFY_KEYS (what `quantdesk audit verify` children get); yields the key id."""
    from tools.audit.signing import write_pair
    from tools.settings import get_settings

    path, public = write_pair(tmp_path / "audit-keys")
    monkeypatch.setenv("QUANTDESK_AUDIT_SIGNING_KEY", str(path))
    monkeypatch.setenv("QUANTDESK_AUDIT_VERIFY_KEYS", public)
    get_settings.cache_clear()
    yield public.partition(":")[0]
    get_settings.cache_clear()


@pytest.fixture(scope="module")
def slack() -> Iterator[SlackServer]:
    """The fake Slack Web API for one test module (its `bot` posts to it); tests tell their calls apart by channel
    and thread. A module that needs faults or locales defines its own."""
    with SlackServer() as server:
        yield server


@pytest.fixture(scope="module")
def bot(slack: SlackServer, request: pytest.FixtureRequest,
        tmp_path_factory: pytest.TempPathFactory) -> Iterator[BotProcess]:
    """One `quantdesk serve` for the module, on SQLite in a folder of its own, with the module's `BOT_ENV`
    (environment variables) if it has one."""
    data = tmp_path_factory.mktemp("bot")
    process = BotProcess(slack.url, f"sqlite:///{data / 'q.db'}", data, **getattr(request.module, "BOT_ENV", {}))
    yield process
    process.stop()
