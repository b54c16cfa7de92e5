"""The desk memory a run's record keeps (tools/runs/state.py `memory_snapshot`), on SQLite and PostgreSQL: the rows
of its namespace on its codes from before its start, and any code's decision still unresolved then; restored into a
scratch SQLite database, they read back as the run read them."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path

from sqlalchemy import Engine, insert

from tools.desk.log import list_decisions, record_decision, reflections_for
from tools.desk.memory import DueSummary, MemoryController
from tools.desk.records import DeskDecisionOutcome
from tools.runs.state import MEMORY_TABLES, memory_snapshot, restore
from tools.storage.db import make_engine
from tools.storage.migrate import upgrade
from tools.storage.models import utcnow

CODE, OTHER = "600519.SH", "000001.SZ"


def _report(engine: Engine, code: str, text: str, namespace: str = "live") -> None:
    MemoryController(engine, "market", namespace).save_today_report(
        code, "20200821", text, session="post_close", written_at=datetime(2020, 8, 21, 8, tzinfo=UTC))


def _decision(engine: Engine, code: str) -> str:
    return record_decision(engine, namespace="live", ts_code=code, trade_date="20200810",
                           as_of=datetime(2020, 8, 10, 7, tzinfo=UTC), rating="Buy", target_position="0.2",
                           confidence=0.6, price="1500.5", report_ids={}, universe=[code], thread_id="t",
                           summary={"rating": "Buy"})


def _resolved(engine: Engine, decision_id: str) -> None:
    with engine.begin() as conn:
        conn.execute(insert(DeskDecisionOutcome), [{
            "decision_id": decision_id, "horizon": 5, "exit_date": "20200817", "entry_close": Decimal("1500.5"),
            "exit_close": Decimal("1530.25"), "realised_return": Decimal("0.0198267244"),
            "benchmark_return": Decimal("0.01"), "excess_return": Decimal("0.0098267244"), "benchmark_codes": 1,
            "universe_size": 1, "hit": True, "resolved_at": utcnow()}])


def test_the_snapshot_keeps_the_codes_memory_from_before_the_start_and_reads_back_the_same(
        own_engine: Engine, tmp_path: Path) -> None:
    _report(own_engine, CODE, "old report")
    _report(own_engine, OTHER, "another code's report")
    _report(own_engine, CODE, "another namespace's report", namespace="replay:x")
    MemoryController(own_engine, "market").write_summary(DueSummary(
        "post_close", CODE, "20200821", "20200821", "", [], ("20200821", "post_close", "the memory then")))
    reflected, pending, done = _decision(own_engine, CODE), _decision(own_engine, OTHER), _decision(own_engine, OTHER)
    _resolved(own_engine, reflected)
    _resolved(own_engine, done)
    start = utcnow()
    _report(own_engine, CODE, "the run's own report")
    _resolved(own_engine, pending)  # resolved by the run: its starting state has the decision, not the outcome

    rows = memory_snapshot(own_engine, "live", [CODE], start)
    assert set(rows) == set(MEMORY_TABLES)
    assert [r["report"] for r in rows["analyst_reports"]] == ["old report"]
    assert [s["symbol"] for s in rows["analyst_summaries"]] == [CODE]
    assert {d["id"] for d in rows["desk_decisions"]} == {reflected, pending}
    assert [o["decision_id"] for o in rows["desk_decision_outcomes"]] == [reflected]
    assert memory_snapshot(own_engine, "elsewhere", [CODE], start) == {}

    scratch = make_engine(f"sqlite:///{tmp_path / 'scratch.db'}")
    upgrade(scratch)
    restore(scratch, rows, MEMORY_TABLES)
    read = MemoryController(scratch, "market").get_memory_summary(CODE, "20200821", "post_close")
    assert read["today_report"] == "old report" and "the memory then" in read["memory_summary_post_close"]
    assert reflections_for(scratch, "live", CODE, "20200901", 5) == reflections_for(own_engine, "live", CODE,
                                                                                  "20200901", 5)
    (restored,) = list_decisions(scratch, ts_code=CODE)
    assert (restored.target_position, restored.price) == (Decimal("0.2"), Decimal("1500.5"))
    assert restored.resolutions[0].realised_return == Decimal("0.0198267244")
    assert [d.id for d in list_decisions(scratch, ts_code=OTHER)] == [pending]
    scratch.dispose()
