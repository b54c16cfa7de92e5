"""The rule commands as an adapter calls them: saving (the rule language is recognised, words are not), who may
change or delete a rule (owner, admin, nobody else), the log timeline of a run, schedules and backtests."""

from __future__ import annotations

import re
import uuid
from datetime import timedelta
from decimal import Decimal

import pytest
from sqlalchemy import Engine

from graphs.context import WorkflowContext
from graphs.rule.grammar import SUBCOMMANDS
from graphs.workflow import CommandCall, CommandError
from testkit.graph_thread import GraphThread
from tools.broker.checks import RiskLimits
from tools.broker.fees import DEFAULT_RATES
from tools.broker.paper import PaperBroker, PaperConfig
from tools.data.klines import AShareKlines
from tools.data.local import SampleProvider
from tools.rules.store import RuleStore
from tools.sandbox import Sandbox
from tools.storage.artifacts import ArtifactStore

OWNER, OTHER, ADMIN = "UOWNER", "UOTHER", "UADMIN"
CONFIG = PaperConfig(DEFAULT_RATES, RiskLimits(Decimal("500000"), Decimal("0.5"), Decimal("0.05")),
                     Decimal("1000000"), "open", 7, timedelta(minutes=120))
CHANNELS: dict[int, str] = {}
LANGUAGE = "buy when close > ma(30) and rsi(14) < 70; sell when close < ma(30) or rsi(14) > 80"


@pytest.fixture
def ctx(engine: Engine, sandbox: Sandbox) -> WorkflowContext:
    provider = SampleProvider()
    ctx = WorkflowContext(provider=provider, engine=engine, sandbox=sandbox, artifacts=ArtifactStore(engine),
                           paper=CONFIG, traders=frozenset({"UTRADER"}),
                           broker=lambda name, by: PaperBroker(engine, provider, name, CONFIG, opened_by=by),
                           rules=RuleStore(engine, frozenset({ADMIN})), klines=lambda symbol: AShareKlines(provider))
    CHANNELS[id(ctx)] = f"C{uuid.uuid4().hex[:10]}"  # the PostgreSQL test database is shared: a channel per test
    return ctx


def run(ctx: WorkflowContext, user: str, line: list[str]) -> str:
    command = SUBCOMMANDS[line[0]].run
    view = command(CommandCall(ctx, line[1:], user, CHANNELS[id(ctx)]))
    return "\n".join([view.title, view.summary, *view.lines, *(f"{k}: {v}" for k, v in view.facts)])


def _mine(ctx: WorkflowContext) -> list:
    return ctx.rules.list(channel=CHANNELS[id(ctx)])  # type: ignore[union-attr]


def test_the_rule_language_is_recognised_and_words_are_kept_for_the_model(ctx: WorkflowContext) -> None:
    saved = run(ctx, OWNER, ["add", "600519.SH", LANGUAGE, "size=100", "tz=UTC"])
    assert "in the rule language: it runs and backtests without an LLM" in saved
    assert "Schedule: none" in saved and "Schedule gate: no backtest yet: `rule backtest " in saved
    words = run(ctx, OWNER, ["add", "000001.SZ", "buy when the trend turns up", "value=20000", "threshold=0.8",
                             "kind=words"])
    assert "in words: each run asks the model" in words and "Order size: 20,000.00 CNY" in words
    with pytest.raises(CommandError, match=r"order size in shares \(size=\) or in CNY \(value=\), not both"):
        run(ctx, OWNER, ["add", "000001.SZ", LANGUAGE, "size=100", "value=5000"])
    with pytest.raises(CommandError, match="unknown option colour="):
        run(ctx, OWNER, ["add", "000001.SZ", LANGUAGE, "colour=red"])


def test_only_the_owner_or_an_admin_may_change_or_delete_a_rule(ctx: WorkflowContext) -> None:
    run(ctx, OWNER, ["add", "600519.SH", LANGUAGE])
    (rule,) = _mine(ctx)
    for line in (["pause", str(rule.id)], ["delete", str(rule.id)], ["schedule", str(rule.id), "0 10 * * 1-5"]):
        with pytest.raises(CommandError, match="only its owner or an admin"):
            run(ctx, OTHER, line)
    assert "is paused" in run(ctx, OWNER, ["pause", str(rule.id), "earnings week"])
    assert "runs on its schedule again" in run(ctx, ADMIN, ["resume", str(rule.id)])
    assert "deleted" in run(ctx, ADMIN, ["delete", str(rule.id)])
    assert _mine(ctx) == []


def test_the_log_shows_a_runs_steps_as_a_timeline(db_url: str, ctx: WorkflowContext) -> None:
    run(ctx, OWNER, ["add", "600519.SH", LANGUAGE, "size=100"])
    (rule,) = _mine(ctx)
    assert "has not run yet" in run(ctx, OWNER, ["log", str(rule.id)])
    GraphThread(db_url, ctx, requester=OWNER).say(f"rule run {rule.id}")
    timeline = run(ctx, OTHER, ["log", str(rule.id)]).splitlines()
    assert timeline[1].startswith("11 step(s)")
    assert timeline[2].startswith("1. tool_call: the rule needs 29 bars before its first decision")
    assert timeline[-1].startswith("11. decision: ")


def test_only_rule_language_rules_backtest(ctx: WorkflowContext) -> None:
    run(ctx, OWNER, ["add", "000001.SZ", "go long when it feels right"])
    (rule,) = _mine(ctx)
    with pytest.raises(CommandError, match="only rules in the rule language backtest"):
        run(ctx, OWNER, ["backtest", str(rule.id), "20190601", "20200824"])
    with pytest.raises(CommandError, match="usage: rule backtest ID START END"):
        run(ctx, OWNER, ["backtest", str(rule.id)])


def test_a_rule_meant_for_the_rule_language_shows_where_it_does_not_parse(ctx: WorkflowContext) -> None:
    with pytest.raises(CommandError) as refused:
        run(ctx, OWNER, ["add", "600519.SH", "buy when close > ma(30) && rsi(14) < 70"])
    assert "the rule does not parse" in str(refused.value) and "add kind=words" in str(refused.value)
    assert "at column 25\nbuy when close > ma(30) && rsi(14) < 70\n" + " " * 24 + "^\n" in str(refused.value)
    assert _mine(ctx) == []


@pytest.mark.parametrize("line, problem", [
    (["add", "600519.SH", LANGUAGE, "size=150"],
     "size=150: main board buys come in lots of 100 shares: 150 is not a multiple of 100"),
    (["add", "999999.SH", LANGUAGE], "the bundled sample provider has no 999999.SH; `codes` lists what it has"),
    (["add", "600519.SH", LANGUAGE, "kind=maybe"], "kind= is words (for the model) or language (the rule language)"),
])
def test_a_rule_that_could_never_trade_is_not_saved(ctx: WorkflowContext, line: list[str], problem: str) -> None:
    with pytest.raises(CommandError) as refused:
        run(ctx, OWNER, line)
    assert str(refused.value) == problem and _mine(ctx) == []


def test_backtest_dates_and_unknown_runs_are_named_as_typed(ctx: WorkflowContext) -> None:
    run(ctx, OWNER, ["add", "600519.SH", LANGUAGE, "size=100"])
    (rule,) = _mine(ctx)
    with pytest.raises(CommandError, match="^start date 20200824 is after end date 20190601$"):
        run(ctx, OWNER, ["backtest", str(rule.id), "20200824", "20190601"])
    with pytest.raises(CommandError, match=f"^rule {rule.id} has no run nosuch;"):
        run(ctx, OWNER, ["log", str(rule.id), "nosuch"])


def test_a_backtest_reports_like_the_signal_backtest_and_says_where_a_cut_list_goes(ctx: WorkflowContext) -> None:
    """Issue 28, item 1: the figures both backtests share, each labelled with its base; a cut trade list says so
    and every trade is in the stored CSV."""
    run(ctx, OWNER, ["add", "600519.SH", "buy when close > ma(5); sell when close < ma(5)"])
    (rule,) = _mine(ctx)
    command = SUBCOMMANDS["backtest"].run
    view = command(CommandCall(ctx, [str(rule.id), "20180101", "20200601"], OWNER, CHANNELS[id(ctx)]))
    facts = dict(view.facts)
    for label in ("Total return", "Annualised", "Sharpe", "Max drawdown", "Exposure", "Trades", "Fees",
                  "Final equity"):  # each figure named: the strategy's, then the buy-and-hold's
        assert re.fullmatch(r"strategy \S+( CNY)? · buy-and-hold \S+( CNY)?", facts[label]), label
    assert "on the 1,000,000.00 CNY account" in view.summary
    assert facts["Base"].startswith("the 1,000,000.00 CNY account; returns are on the whole account, position-sized")
    chart, csv = view.artifacts
    drawn = ctx.artifacts.get(chart["id"])
    assert drawn is not None and drawn.mime == "image/png" and drawn.data.startswith(b"\x89PNG")
    stored = ctx.artifacts.get(csv["id"])
    assert stored is not None and stored.filename.endswith("_trades.csv")
    rows = stored.data.decode().splitlines()[1:]
    trades = int(facts["Trades"].split()[1])
    assert len(rows) == trades > 20
    assert view.lines[:20] == [f"{r.split(',')[0]} {r.split(',')[1]} {int(r.split(',')[2]):,} at {r.split(',')[3]} "
                               f"(fees {r.split(',')[10]})" for r in rows[:20]]
    assert view.lines[20:] == [f"first 20 of {trades} trades (all in the CSV)"]
    # the sample's data begins on 20190102: the run says which dates ran and why
    assert "Asked for 20180101–20200601; ran 20190102–20200601: there is no data before 20190102." in view.notes
