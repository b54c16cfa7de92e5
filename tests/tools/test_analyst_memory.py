"""Analyst memory (seed 001's Memory Controller): idempotent saves, point-in-time reads, summaries written exactly
when the time-scale table says, persistence across a restart, namespaces; on SQLite and PostgreSQL."""

from __future__ import annotations

import threading
import uuid
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime

import pytest
from sqlalchemy import Engine, select, text

from tools.broker.clock import SHANGHAI
from tools.desk.memory import EXCERPT_CHARS, AnalystMemorySummary, MemoryController, session_at
from tools.desk.records import AnalystReport, AnalystSummary
from tools.storage.db import make_engine
from tools.storage.migrate import downgrade, upgrade

AT = datetime(2022, 12, 20, 7, 0, tzinfo=UTC)
EMPTY = AnalystMemorySummary(today_report="", memory_summary_pre_open="", memory_summary_post_close="")
WEEK = ["20221212", "20221213", "20221214", "20221215", "20221216", "20221219"]  # Mon-Fri, then Monday


class _Recorder:
    """A fake light model that records every call and answers with a numbered summary."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, list[str]]] = []

    def __call__(self, instruction: str, texts: list[str]) -> str:
        self.calls.append((instruction, list(texts)))
        return f"summary {len(self.calls)}"


@pytest.fixture
def namespace() -> str:
    return f"test:{uuid.uuid4().hex}"


def test_session_at_uses_shanghai_time() -> None:
    def at(hour: int, minute: int) -> str:
        return session_at(datetime(2022, 12, 20, hour, minute, tzinfo=SHANGHAI))

    assert [at(0, 0), at(9, 29), at(9, 30), at(11, 45), at(14, 59), at(15, 0), at(23, 59)] == [
        "pre_open", "pre_open", "intraday", "intraday", "intraday", "post_close", "post_close"]
    assert session_at(datetime(2022, 12, 20, 1, 29, tzinfo=UTC)) == "pre_open"  # 09:29 in Shanghai
    assert session_at(datetime(2022, 12, 20, 7, 0, tzinfo=UTC)) == "post_close"  # 15:00 in Shanghai
    with pytest.raises(ValueError, match="aware"):
        session_at(datetime(2022, 12, 20, 10, 0))


def test_every_report_is_kept_as_a_version_and_a_resave_under_its_id_replaces_it(engine: Engine,
                                                                                  namespace: str) -> None:
    memory = MemoryController(engine, "news", namespace)
    first = memory.save_today_report("600519.SH", "20221220", "draft", session="intraday", written_at=AT,
                                     report_id=f"r-{namespace}")
    second = memory.save_today_report("600519.SH", "2022-12-20", "second look", session="intraday", written_at=AT)
    other = memory.save_today_report("600519.SH", "20221220", "after close", session="post_close", written_at=AT)
    assert first == f"r-{namespace}" and len({first, second, other}) == 3
    again = memory.save_today_report("600519.SH", "20221220", "draft, rewritten", session="intraday",
                                     written_at=AT, report_id=first)  # the step that saved it ran again
    assert again == first

    def stored() -> list[tuple[str, str, int, str]]:
        with engine.connect() as connection:
            return [tuple(row) for row in connection.execute(
                select(AnalystReport.id, AnalystReport.session, AnalystReport.version, AnalystReport.report)
                .where(AnalystReport.namespace == namespace).order_by(AnalystReport.session, AnalystReport.version))]

    assert stored() == [(first, "intraday", 1, "draft, rewritten"), (second, "intraday", 2, "second look"),
                        (other, "post_close", 1, "after close")]
    assert memory.get_memory_summary("600519.SH", "20221220", "intraday")["today_report"] == "second look"
    assert memory.get_memory_summary("600519.SH", "20221220", "post_close")["today_report"] == "after close"
    pinned = memory.get_memory_summary("600519.SH", "20221220", "post_close", report_id=first)
    assert pinned["today_report"] == "draft, rewritten"  # the version an earlier decision read, still there
    with pytest.raises(ValueError, match="belongs to another"):
        memory.save_today_report("600519.SH", "20221221", "x", session="intraday", written_at=AT, report_id=first)
    with pytest.raises(ValueError, match=f"no news report {other}"):  # not visible before the close
        memory.get_memory_summary("600519.SH", "20221220", "intraday", report_id=other)


def test_the_summaries_read_only_the_newest_version_of_a_session(engine: Engine, namespace: str) -> None:
    model = _Recorder()
    memory = MemoryController(engine, "news", namespace, model)
    memory.save_today_report("600519.SH", "20221220", "first look", session="post_close", written_at=AT)
    memory.save_today_report("600519.SH", "20221220", "second look", session="post_close", written_at=AT)
    assert memory.refresh_summaries("600519.SH", "20221220", "post_close") == "post_close"
    assert model.calls[0][1] == ["second look"]


def test_concurrent_saves_of_one_key_each_get_their_own_version(engine: Engine, namespace: str) -> None:
    memory = MemoryController(engine, "market", namespace)
    barrier = threading.Barrier(4, timeout=30)

    def save(worker: int) -> list[str]:
        barrier.wait()
        return [memory.save_today_report("600519.SH", "20221220", f"w{worker} r{i}", session="post_close",
                                         written_at=AT) for i in range(5)]

    with ThreadPoolExecutor(4) as pool:
        ids = [i for saved in pool.map(save, range(4)) for i in saved]
    with engine.connect() as connection:
        versions = list(connection.scalars(select(AnalystReport.version).where(
            AnalystReport.namespace == namespace).order_by(AnalystReport.version)))
    assert len(set(ids)) == 20 and versions == list(range(1, 21))


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_migration_0011_keeps_the_reports_as_first_versions_and_downgrades_to_the_newest(
        backend: str, request: pytest.FixtureRequest) -> None:
    url = request.getfixturevalue("sqlite_url" if backend == "sqlite" else "fresh_pg_url")  # its own database
    engine = make_engine(url)
    key = {"namespace": "live", "analyst": "news", "symbol": "600519.SH", "trade_date": "20221220",
           "session": "post_close", "written_at": AT, "updated_at": AT}
    try:
        upgrade(engine, "0010")
        with engine.begin() as connection:
            connection.execute(text("INSERT INTO analyst_reports (id, namespace, analyst, symbol, trade_date, session, "
                                    "report, written_at, updated_at) VALUES ('old', :namespace, :analyst, :symbol, "
                                    ":trade_date, :session, 'before 0011', :written_at, :updated_at)"), key)
        upgrade(engine, "0011")
        memory = MemoryController(engine, "news")
        newer = memory.save_today_report("600519.SH", "20221220", "after 0011", session="post_close", written_at=AT)
        with engine.connect() as connection:
            rows = connection.execute(text("SELECT id, version FROM analyst_reports ORDER BY version")).all()
        assert [tuple(r) for r in rows] == [("old", 1), (newer, 2)]
        downgrade(engine, "0010")
        with engine.connect() as connection:
            assert [tuple(r) for r in connection.execute(text("SELECT id, report FROM analyst_reports"))] == [
                (newer, "after 0011")]
        upgrade(engine)
    finally:
        engine.dispose()


def test_reads_are_point_in_time(engine: Engine, namespace: str) -> None:
    model = _Recorder()
    memory = MemoryController(engine, "news", namespace, model)
    memory.save_today_report("000001.SZ", "20221219", "R19 close", session="post_close", written_at=AT)
    memory.save_today_report("000001.SZ", "20221220", "R20 open", session="pre_open", written_at=AT)
    memory.save_today_report("000001.SZ", "20221220", "R20 close", session="post_close", written_at=AT)

    def today(date: str, session: str) -> str:
        return memory.get_memory_summary("000001.SZ", date, session)["today_report"]

    assert [today("20221219", "pre_open"), today("20221219", "post_close"), today("20221220", "pre_open"),
            today("20221220", "intraday"), today("20221220", "post_close")] == [
        "", "R19 close", "R20 open", "R20 open", "R20 close"]
    assert memory.get_memory_summary("000001.SZ", "20221218", "post_close") == EMPTY

    assert memory.refresh_summaries("000001.SZ", "20221219", "post_close") == "post_close"
    assert model.calls[-1][1] == ["R19 close"]  # nothing of 20221220 reached the 20221219 summary
    assert memory.refresh_summaries("000001.SZ", "20221220", "pre_open") == "pre_open"
    assert model.calls[-1][1] == ["summary 1"]
    assert memory.get_memory_summary("000001.SZ", "20221219", "intraday") == EMPTY
    assert memory.get_memory_summary("000001.SZ", "20221219", "post_close") == AnalystMemorySummary(
        today_report="R19 close", memory_summary_pre_open="", memory_summary_post_close="summary 1")
    assert memory.get_memory_summary("000001.SZ", "20221220", "pre_open") == AnalystMemorySummary(
        today_report="R20 open", memory_summary_pre_open="summary 2", memory_summary_post_close="summary 1")


def test_summaries_are_written_exactly_when_the_table_says(engine: Engine, namespace: str) -> None:
    models = {analyst: _Recorder() for analyst in ("market", "news", "sentiment", "fundamentals")}
    memories = {analyst: MemoryController(engine, analyst, namespace, model) for analyst, model in models.items()}
    written: dict[str, list[tuple[str, str | None]]] = {analyst: [] for analyst in memories}
    for day in WEEK:
        for analyst, memory in memories.items():
            refresh = written[analyst].append
            refresh((day, memory.refresh_summaries("300750.SZ", day, "pre_open")))
            memory.save_today_report("300750.SZ", day, f"{analyst} {day} intraday", session="intraday",
                                     written_at=AT)
            refresh((day, memory.refresh_summaries("300750.SZ", day, "intraday")))
            memory.save_today_report("300750.SZ", day, f"{analyst} {day} close", session="post_close",
                                     written_at=AT)
            refresh((day, memory.refresh_summaries("300750.SZ", day, "post_close")))
            refresh((day, memory.refresh_summaries("300750.SZ", day, "post_close")))

    daily = [(WEEK[0], None), (WEEK[0], None), (WEEK[0], "post_close"), (WEEK[0], None)]
    for day in WEEK[1:]:
        daily += [(day, "pre_open"), (day, None), (day, "post_close"), (day, None)]
    for analyst in ("market", "news", "sentiment"):
        assert written[analyst] == daily
        assert len(models[analyst].calls) == 11  # six post-close, five pre-open
    weekly = [(day, kind) for day, kind in daily if kind is not None and (
        (kind == "post_close" and day in ("20221212", "20221219")) or (kind == "pre_open" and day == "20221213"))]
    assert [(day, kind) for day, kind in written["fundamentals"] if kind] == weekly
    assert len(models["fundamentals"].calls) == 3

    # market: the last five reports; news: the previous memory and the reports since it
    market_friday = models["market"].calls[8][1]
    assert market_friday == ["market 20221214 close", "market 20221215 intraday", "market 20221215 close",
                             "market 20221216 intraday", "market 20221216 close"]
    assert models["news"].calls[2][1] == ["summary 1", "news 20221213 intraday", "news 20221213 close"]
    fundamentals_week_two = models["fundamentals"].calls[2][1]
    assert fundamentals_week_two[0] == "summary 1"
    assert fundamentals_week_two[1:] == [f"fundamentals {day} {part}" for day in WEEK[1:]
                                         for part in ("intraday", "close")]
    assert memories["fundamentals"].get_memory_summary("300750.SZ", "20221216", "intraday") == AnalystMemorySummary(
        today_report="fundamentals 20221216 intraday", memory_summary_pre_open="summary 2",
        memory_summary_post_close="summary 1")

    # no new report: nothing is due, even on a new day
    assert memories["news"].refresh_summaries("300750.SZ", "20221220", "post_close") is None
    assert memories["news"].refresh_summaries("300750.SZ", "20221220", "pre_open") == "pre_open"
    assert memories["news"].refresh_summaries("300750.SZ", "20221221", "pre_open") is None
    assert len(models["news"].calls) == 12


def test_summaries_survive_a_restart(engine: Engine, db_url: str, namespace: str) -> None:
    model = _Recorder()
    memory = MemoryController(engine, "sentiment", namespace, model)
    memory.save_today_report("601318.SH", "20221219", "calm", session="post_close", written_at=AT)
    memory.refresh_summaries("601318.SH", "20221219", "post_close")
    memory.refresh_summaries("601318.SH", "20221220", "pre_open")
    before = memory.get_memory_summary("601318.SH", "20221220", "intraday")

    restarted = make_engine(db_url)
    try:
        again = _Recorder()
        memory = MemoryController(restarted, "sentiment", namespace, again)
        assert memory.get_memory_summary("601318.SH", "20221220", "intraday") == before == AnalystMemorySummary(
            today_report="", memory_summary_pre_open="summary 2", memory_summary_post_close="summary 1")
        assert memory.refresh_summaries("601318.SH", "20221220", "intraday") is None
        assert memory.refresh_summaries("601318.SH", "20221219", "post_close") is None
        assert again.calls == []
    finally:
        restarted.dispose()


def test_without_a_model_a_summary_is_a_labelled_excerpt(engine: Engine, namespace: str) -> None:
    memory = MemoryController(engine, "fundamentals", namespace)
    report = "".join(f"{i:04d} " for i in range(300))  # 1500 characters
    memory.save_today_report("600036.SH", "20221216", "older", session="intraday", written_at=AT)
    memory.save_today_report("600036.SH", "20221216", report, session="post_close", written_at=AT)
    assert memory.refresh_summaries("600036.SH", "20221216", "post_close") == "post_close"
    assert memory.refresh_summaries("600036.SH", "20221219", "pre_open") == "pre_open"
    label = "[no summary model: the first 600 characters of the latest fundamentals report, 20221216 post_close]"
    excerpt = f"{label}\n{report[:EXCERPT_CHARS]}"
    assert memory.get_memory_summary("600036.SH", "20221219", "pre_open") == AnalystMemorySummary(
        today_report="", memory_summary_pre_open=excerpt, memory_summary_post_close=excerpt)
    with engine.connect() as connection:
        methods = connection.scalars(select(AnalystSummary.method).where(AnalystSummary.namespace == namespace))
        assert set(methods) == {"excerpt"}


def test_namespaces_are_isolated(engine: Engine, namespace: str) -> None:
    live_model, replay_model = _Recorder(), _Recorder()
    live = MemoryController(engine, "market", namespace, live_model)
    live.save_today_report("600519.SH", "20221219", "live report", session="post_close", written_at=AT)
    live.refresh_summaries("600519.SH", "20221219", "post_close")
    live.refresh_summaries("600519.SH", "20221220", "pre_open")

    replay = MemoryController(engine, "market", f"replay:{namespace}", replay_model)
    assert replay.get_memory_summary("600519.SH", "20221220", "post_close") == EMPTY
    assert replay.refresh_summaries("600519.SH", "20221220", "pre_open") is None
    assert replay.refresh_summaries("600519.SH", "20221219", "post_close") is None
    replay.save_today_report("600519.SH", "20221219", "replay report", session="post_close", written_at=AT)
    assert replay.get_memory_summary("600519.SH", "20221219", "post_close")["today_report"] == "replay report"
    assert live.get_memory_summary("600519.SH", "20221219", "post_close")["today_report"] == "live report"
    assert (len(live_model.calls), replay_model.calls) == (2, [])


def test_bad_arguments_are_refused(engine: Engine, namespace: str) -> None:
    with pytest.raises(ValueError, match="unknown analyst 'macro'"):
        MemoryController(engine, "macro", namespace)
    with pytest.raises(ValueError, match="namespace must be a non-empty string"):
        MemoryController(engine, "news", "")
    memory = MemoryController(engine, "news", namespace)
    with pytest.raises(ValueError, match="unknown session 'lunch'"):
        memory.save_today_report("600519.SH", "20221220", "x", session="lunch", written_at=AT)
    with pytest.raises(ValueError, match="aware"):
        memory.save_today_report("600519.SH", "20221220", "x", session="intraday",
                                 written_at=datetime(2022, 12, 20, 10, 0))
    with pytest.raises(ValueError, match="is not a date"):
        memory.get_memory_summary("600519.SH", "yesterday", "intraday")
