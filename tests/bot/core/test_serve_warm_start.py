"""What `serve` does before it listens: the database pool's connections opened, and the background service's first
pass (it builds the exchange calendars) ended, so neither runs beside the first acks (bench/slack_scale)."""

from __future__ import annotations

import io
import threading
from pathlib import Path

from sqlalchemy import text

from bot.console.session import CONSOLE_SCOPE
from bot.console.surface import ConsoleSurface
from bot.core.background import BackgroundService
from bot.core.wiring import build_core
from bot.jobs.local import LocalJobQueue
from bot.startup import build_context
from graphs.background import BackgroundCall, BackgroundJob, Notice
from graphs.checkpointer import open_checkpointer
from graphs.context import WorkflowContext
from tools.settings import Settings
from tools.storage.db import make_engine, warm_pool


def test_the_first_pass_is_waited_for_until_it_ends(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'q.db'}"
    settings = Settings(_env_file=None, DATABASE_URL=url, QUANTDESK_DATA_DIR=str(tmp_path / "d"))
    ctx = build_context(settings)
    release, passes = threading.Event(), []

    def held(_context: WorkflowContext, _call: BackgroundCall) -> list[Notice]:
        passes.append(1)
        assert release.wait(30), "the test never released the first pass"
        return []

    with open_checkpointer(url) as saver:
        core = build_core(ctx, saver, ConsoleSurface(io.StringIO(), tmp_path / "exports"), CONSOLE_SCOPE,
                          LocalJobQueue(ctx.engine, settings, CONSOLE_SCOPE))
        service = BackgroundService(core, interval=3600, jobs={"held": BackgroundJob(3600, held)})
        service.start()
        try:
            assert service.wait_first_pass(0.2) is False  # its job is held: the pass has not ended
            release.set()
            assert service.wait_first_pass(30) is True
            assert passes == [1]
        finally:
            release.set()
            service.stop()


def test_a_failed_first_pass_still_counts_as_ended(tmp_path: Path) -> None:
    """A broken database at start-up must not keep serve from listening for the whole wait."""
    url = f"sqlite:///{tmp_path / 'q.db'}"
    settings = Settings(_env_file=None, DATABASE_URL=url, QUANTDESK_DATA_DIR=str(tmp_path / "d"))
    ctx = build_context(settings)
    with open_checkpointer(url) as saver:
        core = build_core(ctx, saver, ConsoleSurface(io.StringIO(), tmp_path / "exports"), CONSOLE_SCOPE,
                          LocalJobQueue(ctx.engine, settings, CONSOLE_SCOPE))
        service = BackgroundService(core, interval=3600, jobs={})
        with ctx.engine.begin() as connection:  # the fault: the pass's requeue finds no inbox table
            connection.execute(text("DROP TABLE inbox"))
        service.start()
        try:
            assert service.wait_first_pass(30) is True
        finally:
            service.stop()


def test_warm_pool_opens_the_pools_connections(fresh_pg_url: str) -> None:
    engine = make_engine(fresh_pg_url)
    try:
        assert engine.pool.checkedin() == 0  # type: ignore[attr-defined]
        warm_pool(engine)
        assert engine.pool.checkedin() == engine.pool.size() == 5  # type: ignore[attr-defined]
    finally:
        engine.dispose()


def test_warm_pool_leaves_sqlite_alone(tmp_path: Path) -> None:
    engine = make_engine(f"sqlite:///{tmp_path / 'w.db'}")
    warm_pool(engine)
    assert not (tmp_path / "w.db").exists()  # nothing opened: SQLite connects in no time
