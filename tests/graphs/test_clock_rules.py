"""Rules on the simulated session clock (issue 28, item 12): on the bundled sample (bars through Monday 20200824,
Friday 20200821 before it) a rule run decides as of the simulated session, reading no later bar, and moving the
clock runs the rules whose schedule is due on the new session, once per tick, through the rule schedule job."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from sqlalchemy import Engine

from graphs.background import BackgroundCall, ScheduledRun
from graphs.context import WorkflowContext
from graphs.order.clock import clock_command
from graphs.rule.background import rule_schedule_job
from graphs.views import View
from graphs.workflow import CommandCall
from testkit.graph_thread import GraphThread
from testkit.paper import paper_context
from testkit.rules import add_scheduled
from tools.broker.clock import SHANGHAI, day
from tools.broker.sim_clock import last_move
from tools.data.klines import AShareKlines
from tools.data.local import SampleProvider
from tools.rules.schedule import session_ticks
from tools.sandbox import Sandbox

TRADER = "UTRADER"
SIMULATED_NOW = datetime(2026, 1, 5, 10, 0, tzinfo=SHANGHAI)  # years after the sample's last bar
CODE = "000001.SZ"
LANGUAGE = "buy when close > ma(30); sell when close < ma(30)"
CRON = "30 9 * * 1-5"  # 09:30 Asia/Shanghai on trading days: 01:30 UTC


@pytest.fixture(scope="module")
def provider() -> SampleProvider:
    return SampleProvider()


def _rules_ctx(engine: Engine, sandbox: Sandbox, provider: SampleProvider) -> WorkflowContext:
    ctx = paper_context(engine, sandbox, provider, traders={TRADER}, admins={"UALICE"}, now=SIMULATED_NOW, rules=True)
    ctx.klines = lambda symbol: AShareKlines(provider)
    return ctx


def _clock(ctx: WorkflowContext, line: str, due: list[bool] | None = None) -> View:
    wake = (lambda: due.append(True)) if due is not None else (lambda: None)
    return clock_command(CommandCall(ctx, line.split()[1:], TRADER, "console", background_due=wake))


def _pass(ctx: WorkflowContext) -> list[ScheduledRun]:
    """One rule schedule pass (as the background service runs it, now): the runs it started."""
    started: list[ScheduledRun] = []
    rule_schedule_job(ctx, BackgroundCall(datetime.now(UTC), "w1", lambda run, again: started.append(run)))
    return started


def _run(url: str, ctx: WorkflowContext, run: ScheduledRun) -> dict[str, Any]:
    """A started run, as the runner runs it: its structured request in a new thread."""
    return GraphThread(url, ctx, requester=run.owner).say(run.titled(), run.request)


def _last_bar(ctx: WorkflowContext, rule_id: int, execution_id: str) -> str:
    """The last bar the run logged fetching (its first step)."""
    fetch = next(s for s in ctx.rules.steps(rule_id) if s.execution_id == execution_id)  # type: ignore[union-attr]
    return str(fetch.result_data["last"])


def test_moving_the_clock_runs_the_rules_due_on_the_new_session_once(own_url: str, own_engine: Engine,
                                                                    sandbox: Sandbox, provider: SampleProvider) -> None:
    ctx = _rules_ctx(own_engine, sandbox, provider)
    rule = add_scheduled(ctx.rules, TRADER, "console", CODE, LANGUAGE, CRON, source="language")  # type: ignore[arg-type]
    assert _pass(ctx) == []  # never moved: nothing is due on the simulated clock

    due: list[bool] = []
    back = _clock(ctx, "clock set 20200821", due)
    assert f"Rule {rule.id} ({CODE}, schedule `{CRON}` Asia/Shanghai) runs for 20200821 at 09:30 Asia/Shanghai, on " \
           "bars up to 20200821, in a new thread of its channel." in back.lines
    assert due == [True]  # the surface is told to run its background pass
    (friday,) = _pass(ctx)
    assert friday.request["session"] == "20200821"
    assert friday.key == f"rule{rule.id}-20200821T0130Z"
    ran = _run(own_url, ctx, friday)["result"]
    assert ran["as_of"] == {"date": "20200821", "simulated": True}
    assert _last_bar(ctx, rule.id, friday.key) == "2020-08-21 00:00:00"

    moved = _clock(ctx, "clock next")
    assert f"Rule {rule.id} ({CODE}, schedule `{CRON}` Asia/Shanghai) runs for 20200824 at 09:30 Asia/Shanghai" \
           in moved.lines[-1]
    (monday,) = _pass(ctx)
    assert (monday.request["session"], monday.key) == ("20200824", f"rule{rule.id}-20200824T0130Z")
    assert _pass(ctx) == []  # a second pass runs nothing twice
    ran = _run(own_url, ctx, monday)["result"]
    assert ran["decision"]["as_of"] == "20200824"
    assert _last_bar(ctx, rule.id, monday.key) == "2020-08-24 00:00:00"
    executions = {s.execution_id for s in ctx.rules.steps(rule.id)}  # type: ignore[union-attr]
    assert executions == {friday.key, monday.key}

    _clock(ctx, "clock set 20200821")
    again = _clock(ctx, "clock next", due := [])
    assert f"Rule {rule.id} ({CODE}, schedule `{CRON}` Asia/Shanghai) ran for 20200824 at 09:30 already (each tick " \
           "runs once)." in again.lines
    assert due == [] and _pass(ctx) == []


def test_a_manual_run_decides_as_of_the_simulated_session(sqlite_url: str, sqlite_engine: Engine, sandbox: Sandbox,
                                                          provider: SampleProvider) -> None:
    """The decision, its logged steps and the order card name the session; no bar after it is read."""
    ctx = _rules_ctx(sqlite_engine, sandbox, provider)
    rule = ctx.rules.add(TRADER, "c1", CODE, "buy when close > 0; sell when close < 0",  # type: ignore[union-attr]
                         source="language", size=100)
    _clock(ctx, "clock set 20200821")
    out = GraphThread(sqlite_url, ctx, requester=TRADER).say(f"rule run {rule.id}")
    (card,) = out["__interrupt__"]
    assert f"rule {rule.id} as of 20200821: " in str(card.value)
    assert "(20200821)" in card.value["args"]["fills"]
    steps = ctx.rules.steps(rule.id)  # type: ignore[union-attr]
    assert steps[0].action_data["action"]["params"]["end"] == "20200821"
    assert steps[0].result_data["last"] == "2020-08-21 00:00:00"
    assert steps[-1].result_data["decision"]["as_of"] == "20200821"


def test_a_session_run_does_nothing_once_the_clock_moved_on(own_url: str, own_engine: Engine, sandbox: Sandbox,
                                                            provider: SampleProvider) -> None:
    ctx = _rules_ctx(own_engine, sandbox, provider)
    rule = add_scheduled(ctx.rules, TRADER, "console", CODE, LANGUAGE, CRON, source="language")  # type: ignore[arg-type]
    _clock(ctx, "clock set 20200821")
    (friday,) = _pass(ctx)  # queued; no worker has taken it yet
    _clock(ctx, "clock next")
    out = _run(own_url, ctx, friday)
    assert out["final_reply"] == (f"Rule {rule.id}'s run for the simulated session 20200821 was queued, and the clock "
                                  "has moved to 20200824 since; nothing was run.")
    assert ctx.rules.steps(rule.id) == []  # type: ignore[union-attr]



def test_a_tick_a_pass_claimed_as_the_clock_moved_is_this_moves_run(own_engine: Engine, sandbox: Sandbox,
                                                                     provider: SampleProvider) -> None:
    """The background loop's pass can claim a session's tick between the move and the clock command's reply (its
    clock read before the move): the reply still says the rule runs now, and still asks the surface to wait for
    it (the console read the next line while that run was queued, and the clock moved on under it)."""
    ctx = _rules_ctx(own_engine, sandbox, provider)
    rule = add_scheduled(ctx.rules, TRADER, "console", CODE, LANGUAGE, CRON, source="language")  # type: ignore[arg-type]
    before = datetime.now(UTC)
    _clock(ctx, "clock set 20200821")
    started: list[ScheduledRun] = []
    rule_schedule_job(ctx, BackgroundCall(before, "w1", lambda run, again: started.append(run)))
    assert [run.key for run in started] == [f"rule{rule.id}-20200821T0130Z"]
    move = last_move(own_engine, provider, ctx.paper.live_data_days)  # type: ignore[union-attr]
    assert move is not None
    (tick,) = session_ticks(own_engine, ctx.rules, day("20200821"), move.moved_at)  # type: ignore[arg-type]
    assert tick.claimed and not tick.ran_before(move.moved_at)
