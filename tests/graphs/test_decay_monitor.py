"""The decay monitor on a synthetic market with a known answer: a one-day reversal factor whose power stops halfway
through the data. Stepped session by session on the simulated clock, the monitor's job flags it weakening, then dead,
and posts exactly one thread to the research channel per state change; `factor status` shows the state."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pandas as pd
from sqlalchemy import Engine

from graphs.background import BackgroundCall, ScheduledRun
from graphs.context import WorkflowContext
from graphs.factor.decay import decay_job
from graphs.factor.decay_view import decay_reply, factor_status
from graphs.factor.present import present_factor
from graphs.home_panels import factor_panels
from graphs.workflow import CommandCall
from testkit.graph_thread import GraphThread
from testkit.market import config, market
from tools.audit.chain import GLOBAL, lock
from tools.broker.sim_clock import set_session
from tools.broker.store import write_lock
from tools.factors.store import FactorStore
from tools.research.decay import Figures, pointed
from tools.research.library import TeamLibrary
from tools.sandbox import Sandbox
from tools.storage.artifacts import ArtifactStore

CODES = [f"{600000 + i}.SH" for i in range(60)]
SESSIONS = 300
BREAK = 150  # from this session on, yesterday's return no longer predicts today's
BODY = "return -(close / close.shift(1) - 1)"


def _bars() -> tuple[list[tuple[str, str, str, str, str, str, str]], list[str]]:
    rng = np.random.default_rng(42)
    days = [f"{d:%Y%m%d}" for d in pd.bdate_range("2023-01-02", periods=SESSIONS)]
    returns = np.zeros((SESSIONS, len(CODES)))
    for t in range(1, SESSIONS):
        power = 0.5 if t < BREAK else 0.0
        returns[t] = -power * returns[t - 1] + 0.02 * rng.standard_normal(len(CODES))
    close = 10 * np.cumprod(1 + returns, axis=0)
    bars = []
    for t, day in enumerate(days):
        for j, code in enumerate(CODES):
            c, pre = f"{close[t, j]:.4f}", f"{close[t - 1, j] if t else close[t, j]:.4f}"
            bars.append((code, day, c, c, c, c, pre))
    return bars, days


def _move(engine: Engine, before: str, after: str, data_end: str) -> None:
    with write_lock(engine) as session:
        lock(session, GLOBAL)
        set_session(session, before, after, data_end, "UALICE")


def test_hysteresis_needs_stricter_levels_to_leave_a_state() -> None:
    figs = Figures("20230601", ic20=0.6 * 0.3, ic60=0.3, icir60=0.5, t60=4.0, reference=0.3)
    assert pointed("active", figs) == "active" and pointed("weakening", figs) == "weakening"  # 0.6: between levels
    dead = Figures("20230601", ic20=0.0, ic60=0.05, icir60=0.1, t60=0.8, reference=0.3)
    assert pointed("active", dead) == "dead"
    revived = Figures("20230601", ic20=0.3, ic60=0.12, icir60=0.2, t60=1.6, reference=0.3)
    assert pointed("dead", revived) == "dead"  # not back until 50% of the level with t ≥ 2


def test_a_factor_whose_power_stops_goes_weakening_then_dead_with_one_post_each(
        tmp_path: Path, db_url: str, engine: Engine, sandbox: Sandbox) -> None:
    bars, days = _bars()
    provider = market(tmp_path / "market", bars)
    ctx = WorkflowContext(provider=provider, engine=engine, sandbox=sandbox, artifacts=ArtifactStore(engine),
                          paper=config(), research_channel="research")
    name = f"rev1_{tmp_path.name[-8:]}".lower()
    end = days[BREAK - 31]
    info, _created = FactorStore(engine).save(
        name=name, description="minus yesterday's return", code=BODY,
        spec={"name": name, "fields": ["close"], "lookback": 1, "codes": CODES, "start": days[5], "end": end,
              "body": BODY, "holdout": {"metrics": {"1": {"rank_ic_mean": 0.45}}}},
        author="UALICE", reviewer="UBOB", decision="approve", run_key=f"decay-test-{name}")
    TeamLibrary(engine).admit(info.id, {"passed": True})
    posted: list[ScheduledRun] = []
    states = []
    before = days[BREAK - 30]
    _move(engine, days[-21], before, days[-1])
    for day in days[BREAK - 30::3]:  # three sessions a move: each pass steps every session since the last
        _move(engine, before, day, days[-1])
        before = day
        call = BackgroundCall(datetime.now(UTC), "test", lambda run, again: posted.append(run),
                              serves=lambda channel: channel == "research")
        assert decay_job(ctx, call) == []
        states.append(factor_status(CommandCall(ctx, [name], "UALICE", "console")).lines[0].split(": ")[1])
    changes = [run.request["decay"] for run in posted]
    assert [(c["from"], c["to"]) for c in changes] == [("active", "weakening"), ("weakening", "dead")]
    assert len({run.key for run in posted}) == 2 and all(run.channel == "research" for run in posted)
    weakening, dead = (days.index(c["session"]) for c in changes)
    assert BREAK < weakening < dead < BREAK + 80  # after the break, weakening first, then dead
    assert weakening - BREAK >= 3  # never before three sessions in a row pointed to it
    assert states[-1].startswith(f"dead since {changes[1]['session']}")
    title = posted[0].titled()
    assert title.startswith(f"Factor {name} v1 is now weakening (was active): after {changes[0]['session']}")
    assert "holdout level +0.4500" in title
    reply = decay_reply(changes[1])
    assert reply.startswith(f"{name} v1: weakening → dead") and f"factor status {name}" in reply
    thread = GraphThread(db_url, ctx)  # the post's run, as the channel's thread runs it: the factor workflow answers
    answered = thread.say(posted[1].titled(), background_request=posted[1].request)
    assert "__interrupt__" not in answered
    result = answered["result"]
    assert result["kind"] == "decay" and result["decay"] == changes[1]
    view = present_factor(result)
    assert [view.title, view.summary, *view.lines] == reply.split("\n")
    ics = changes[1]["ics"]  # the chart's bars: the kept daily ICs up to the change, none after it
    assert ics and max(ics) == changes[1]["session"] and len(ics) <= 60
    (chart,) = result["artifacts"]
    assert (chart["kind"], chart["mime"], chart["filename"]) == ("chart", "image/png", f"decay_{name}_v1.png")
    assert ArtifactStore(engine).get(chart["id"]).data.startswith(b"\x89PNG")
    (panel,) = factor_panels(ctx, "UALICE")
    row = next(r.text for r in panel.rows if r.text.startswith(f"{name} v1"))  # PostgreSQL's library is shared
    assert row.endswith(f"in the team library (passed the gate) · dead since {changes[1]['session']}")
    again = BackgroundCall(datetime.now(UTC), "test", lambda run, again: posted.append(run))
    decay_job(ctx, again)  # nothing new: nothing posted twice
    assert len(posted) == 2
