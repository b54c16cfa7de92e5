"""What a rule run decides on. On live data whose latest bar of the rule's stock is older than the last trading
day before today (Asia/Shanghai), the run holds, says why in its decision step and its result, and proposes no
order; with the bar there, it proposes. A rule-language rule's run decides, as of any day, exactly what its
backtest decided on that day (both read the stock's whole traded history). Sample data: 2019-01-02 to
2020-08-24 (a Monday)."""

from __future__ import annotations

import json
import shutil
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pandas as pd
import pytest
from sqlalchemy import Engine

from graphs.context import WorkflowContext
from graphs.rule.background import scheduled_request
from graphs.rule.present import present_rule_run
from testkit.desk import clock_at_data_end
from testkit.fakes.chat import ScriptedChatModel, answer
from testkit.graph_thread import GraphThread
from testkit.rules import add_scheduled
from tools.broker.checks import RiskLimits
from tools.broker.fees import DEFAULT_RATES
from tools.broker.paper import PaperBroker, PaperConfig
from tools.broker.proposal_claims import live_claims
from tools.data.klines import AShareKlines
from tools.data.local import LocalProvider, SampleProvider, sample_dir
from tools.data.provider import MarketDataProvider
from tools.rules.backtest import backtest_rule
from tools.rules.schedule import execution_id_for
from tools.rules.store import RuleStore, order_tag
from tools.sandbox import Sandbox
from tools.storage.artifacts import ArtifactStore

OWNER, TRADER = "UOWNER", "UTRADER"
CODE, SUSPENDED = "600519.SH", "000001.SZ"
SHANGHAI = ZoneInfo("Asia/Shanghai")
CONFIG = PaperConfig(DEFAULT_RATES, RiskLimits(Decimal("500000"), Decimal("0.5"), Decimal("0.05")),
                     Decimal("1000000"), "open", 7, timedelta(minutes=120))
ALWAYS_BUY = "buy when close > 0; sell when close < 0"
# Tuesday 2020-08-25, 10:00 Shanghai: the last trading day before it is Monday 08-24, the sample's last bar
FRESH = datetime(2020, 8, 25, 10, 0, tzinfo=SHANGHAI)
# Thursday 2020-08-27, 10:00: two weekdays after the last bar (live: at most 7), so Wednesday 08-26's bar is due
LATE = datetime(2020, 8, 27, 10, 0, tzinfo=SHANGHAI)


def _ctx(engine: Engine, sandbox: Sandbox, provider: MarketDataProvider, now: datetime,
         llm: Any = None) -> WorkflowContext:
    return WorkflowContext(provider=provider, engine=engine, sandbox=sandbox, artifacts=ArtifactStore(engine),
                           llm=llm, paper=CONFIG, traders=frozenset({TRADER}),
                           admins=frozenset({OWNER}),  # rule owners name their accounts (account=)
                           broker=lambda name, by: PaperBroker(engine, provider, name, CONFIG, opened_by=by),
                           rules=RuleStore(engine, frozenset(), clock=lambda: now.astimezone(UTC)),
                           klines=lambda symbol: AShareKlines(provider))


def _sample_until(root: Path, until: dict[str, str]) -> LocalProvider:
    """A local provider of the sample's bars of the codes in `until`, each up to its day, with their names."""
    frame = pd.read_parquet(sample_dir() / "daily.parquet")
    kept = pd.concat([frame[(frame["ts_code"] == code) & (frame["trade_date"] <= last)]
                      for code, last in until.items()])
    root.mkdir(parents=True, exist_ok=True)
    kept.to_csv(root / "daily.csv", index=False)
    shutil.copy(sample_dir() / "stock_basic.csv", root / "stock_basic.csv")
    return LocalProvider(root)


def test_on_live_data_a_stale_last_bar_holds_with_the_reason_and_proposes_nothing(
        db_url: str, engine: Engine, sandbox: Sandbox) -> None:
    provider = SampleProvider()
    ctx = _ctx(engine, sandbox, provider, LATE)
    rule = add_scheduled(ctx.rules, OWNER, "c", CODE, ALWAYS_BUY, "* * * * *",  # type: ignore[arg-type]
                         source="language", size=100)
    tick = execution_id_for(rule.id, LATE + timedelta(minutes=1))
    out = GraphThread(db_url, ctx, requester=OWNER).say("scheduled run", scheduled_request(rule.id, tick))
    assert "__interrupt__" not in out and out["result"]["order"] == {}
    stale = ("stale data: its latest bar is 20200824, but the bar of 20200826 (the last trading day before today, "
             "Asia/Shanghai) should be there; the stock may be suspended or the data feed behind")
    decision = out["result"]["decision"]
    assert (decision["action"], decision["stale"], out["result"]["stale"]) == ("hold", stale, stale)
    assert decision["reason"].startswith(f"no order on {stale}; the decision on that data was buy (1.00)")
    view = present_rule_run(out["result"])  # the reason is the summary, not said again as a warning (issue 28)
    assert view.summary.startswith(f"no order on {stale}") and view.warnings == []
    logged = ctx.rules.steps(rule.id)[-1]  # type: ignore[union-attr]
    assert logged.action_type == "decision" and logged.action_data["action"]["action"] == "hold"
    assert logged.result_data["decision"]["stale"] == stale
    assert ctx.rules.get(rule.id).consecutive_failures == 0  # type: ignore[union-attr]  # a tick that held on
    # stale data did not fail: the data is behind, not the rule
    assert live_claims(engine, order_tag(rule.id), LATE) == []


def test_with_the_last_trading_days_bar_there_the_run_proposes(db_url: str, engine: Engine,
                                                                sandbox: Sandbox) -> None:
    ctx = _ctx(engine, sandbox, SampleProvider(), FRESH)
    rule = ctx.rules.add(OWNER, "c", CODE, ALWAYS_BUY, source="language", size=100)  # type: ignore[union-attr]
    out = GraphThread(db_url, ctx, requester=OWNER).say(f"rule run {rule.id}")
    assert out["__interrupt__"][0].value["args"]["order"] == "BUY 100 600519.SH 贵州茅台 at market"


def test_a_suspended_stock_is_stale_though_the_data_is_current(db_url: str, engine: Engine, sandbox: Sandbox,
                                                               tmp_path: Path) -> None:
    """The provider has Monday's bars, but the rule's stock stopped trading the Wednesday before: a model's buy
    on its last bars is held."""
    provider = _sample_until(tmp_path / "data", {CODE: "20200824", SUSPENDED: "20200819"})
    llm = ScriptedChatModel(script=[answer(json.dumps({"type": "decision", "step": 1, "reasoning": "up",
                                                       "action": {"action": "buy", "reason": "up", "confidence": 0.9},
                                                       "next_step": "stop"}))])
    ctx = _ctx(engine, sandbox, provider, FRESH, llm)
    rule = ctx.rules.add(OWNER, "c", SUSPENDED, "buy on strength", size=100)  # type: ignore[union-attr]
    out = GraphThread(db_url, ctx, requester=OWNER).say(f"rule run {rule.id}")
    assert "__interrupt__" not in out
    decision = out["result"]["decision"]
    assert decision["action"] == "hold" and decision["overruled"] == "buy (0.90): up"
    assert decision["stale"].startswith("stale data: its latest bar is 20200819, but the bar of 20200824 ")


def test_on_simulated_data_nothing_is_stale(db_url: str, engine: Engine, sandbox: Sandbox) -> None:
    """Two years after the sample ends the account's clock is simulated on its last day: the run trades as of it."""
    ctx = _ctx(engine, sandbox, SampleProvider(), datetime(2022, 8, 25, 10, 0, tzinfo=SHANGHAI))
    rule = ctx.rules.add(OWNER, "c", CODE, ALWAYS_BUY, source="language", size=100)  # type: ignore[union-attr]
    out = GraphThread(db_url, ctx, requester=OWNER).say(f"rule run {rule.id}")
    assert out["__interrupt__"][0].value["args"]["order"] == "BUY 100 600519.SH 贵州茅台 at market"


RECURSIVE = "buy when ema(12) > ema(26) and rsi(14) < 70; sell when ema(12) < ema(26) or rsi(14) > 75"


def test_a_run_as_of_a_day_decides_what_the_backtest_decided_that_day(own_url: str, own_engine: Engine,
                                                                      sandbox: Sandbox, tmp_path: Path) -> None:
    """EMA and RSI are recursive: their values depend on the bar they are seeded at, so a run and a backtest
    agree only when they read the same history. Each run sees the sample cut at its day, the simulated clock moved
    there (a new clock starts 20 sessions before the data's last day; the clock is one per database)."""
    db_url, engine = own_url, own_engine
    backtest = backtest_rule(RECURSIVE, CODE, "20200102", "20200824", SampleProvider())
    actions = backtest.decisions["action"]
    flips = [day for day, before, now in zip(actions.index[1:], actions.iloc[:-1], actions.iloc[1:], strict=True)
             if before != now]
    days = sorted({*flips[:4], actions.index[0], actions.index[len(actions) // 2], actions.index[-1]})
    assert {actions[d] for d in days} >= {"buy", "sell"}  # both kinds of decision are compared
    for day in days:
        cut = f"{day:%Y%m%d}"
        provider = _sample_until(tmp_path / cut, {CODE: cut})
        ctx = _ctx(engine, sandbox, provider, datetime(2024, 1, 2, tzinfo=UTC))  # simulated: as of the cut
        clock_at_data_end(engine, provider)
        rule = ctx.rules.add(OWNER, "c", CODE, RECURSIVE, source="language")  # type: ignore[union-attr]
        out = GraphThread(db_url, ctx, requester=OWNER).say(f"rule run {rule.id}")
        steps = ctx.rules.steps(rule.id)  # type: ignore[union-attr]
        assert steps[0].result_data["last"].startswith(f"{day:%Y-%m-%d}")
        assert out["result"]["decision"]["action"] == actions[day], cut
        ema12 = next(s.result_data["ema(12)"] for s in steps if "ema(12)" in (s.result_data or {}))
        assert ema12 == pytest.approx(backtest.decisions.loc[day, "ema(12)"], rel=0, abs=0)  # the same value
