"""The decay monitor (a registry BackgroundJob): after each session's close (on static data, each session of the
simulated clock) every factor in the team library is computed on the new sessions in the sandbox, its daily rank IC
measured, and its state stepped (tools/research/decay.py). Each state change is posted once to
QUANTDESK_RESEARCH_CHANNEL: a thread rooted by the change, answered with the figures (the factor workflow reads
the `decay` request)."""

from __future__ import annotations

import logging
from datetime import datetime, timedelta
from functools import partial
from typing import Any

import pandas as pd

from graphs.background import BackgroundCall, Notice, ScheduledRun
from graphs.factor.decay_view import figures_line, state_word
from graphs.factor.deps import FactorDeps
from graphs.factor.run import BACKFILL_LIMITS, execute, load_inputs, universe
from tools.broker.clock import clock_for
from tools.broker.sim_clock import paper_clock
from tools.data.schema import DataError
from tools.factors.store import FactorInfo, FactorStore
from tools.i18n import _
from tools.research.decay import LONG, DecayStore, Tracker, daily_rank_ic, figures
from tools.research.library import TeamLibrary

log = logging.getLogger(__name__)

CATCH_UP = 250  # sessions a first pass (or a long pause) looks back at most
CALENDAR_DAYS = 2.2  # calendar days searched per session wanted


def session_now(ctx: FactorDeps, now: datetime) -> str:
    """The last session with data: the simulated clock's on static data, else the provider's latest."""
    live_days = ctx.paper.live_data_days if ctx.paper is not None else 7
    if ctx.paper is not None:
        return paper_clock(ctx.engine, ctx.provider, live_days, now).data_end
    return clock_for(ctx.provider, live_days, now).data_end


def reference_ic(info: FactorInfo, store: FactorStore) -> float | None:
    """The level a factor is held to: its holdout's next-day rank IC, else its in-sample one."""
    held = ((info.spec.get("holdout") or {}).get("metrics") or {}).get("1") or {}
    if held.get("rank_ic_mean") is not None:
        return float(held["rank_ic_mean"])
    metrics = store.metrics(info.id)
    if 1 in metrics.index and "rank_ic_mean" in metrics.columns and pd.notna(metrics.loc[1, "rank_ic_mean"]):
        return float(metrics.loc[1, "rank_ic_mean"])
    return None


def monitor(ctx: FactorDeps, info: FactorInfo, session: str, reference: float, states: DecayStore) -> Tracker:
    """Step a factor's state over the sessions after the last it saw, up to `session`; saved before it returns."""
    start = str(info.spec.get("end") or session)
    tracker = states.load(info.id) or Tracker("active", start, start, None, 0, {}, [])
    if tracker.checked >= session:
        return tracker
    first_day = (datetime.strptime(session, "%Y%m%d") - timedelta(days=int((CATCH_UP + LONG) * CALENDAR_DAYS)))
    calendar = ctx.provider.calendar(first_day.strftime("%Y%m%d"), session)
    new = [s for s in calendar if s > tracker.checked][-CATCH_UP:]
    if not new:
        return tracker
    window = calendar[max(calendar.index(new[0]) - LONG - 1, 0):]
    spec = {**info.spec, "name": info.name, "description": info.description}
    codes = universe(ctx.provider, spec)
    inputs = load_inputs(ctx.provider, spec, codes, window[0], session, [])
    factor, error = execute(ctx.sandbox, spec, str(spec.get("body") or ""), inputs, BACKFILL_LIMITS)
    if factor is None:
        raise DataError(f"factor {info.name} v{info.version} failed on new data: {error}")
    close = ctx.provider.panel(["close"], codes, window[0], session, warnings=[])["close"]
    factor = factor.loc[pd.Timestamp(window[0]):]
    ics = daily_rank_ic(factor, close)
    known = pd.Series({pd.Timestamp(d): v for d, v in tracker.ics.items()}, dtype=float)
    ics = ics.combine_first(known).sort_index()
    for day in new:
        upto = ics.loc[:pd.Timestamp(day)]
        if len(upto.dropna()) >= 2:
            tracker.step(figures(upto, reference))
        tracker.checked = day
    tracker.ics = {f"{d:%Y%m%d}": float(v) for d, v in ics.dropna().iloc[-LONG:].items()}
    states.save(info.id, tracker)
    return tracker


def change_title(name: str, version: int, change: dict[str, Any]) -> str:
    """The root of a state change's thread, in the language in effect (the channel's: the owner's)."""
    return _("Factor {name} v{version} is now {to} (was {was}): {figures}.").format(
        name=name, version=version, to=state_word(change["to"]), was=state_word(change["from"]),
        figures=figures_line(change["figures"]))


def decay_job(ctx: FactorDeps, call: BackgroundCall) -> list[Notice]:
    """One pass over the team library; the changes not yet posted go to the research channel (when one is set and
    this process serves it), each once."""
    store, states = FactorStore(ctx.engine), DecayStore(ctx.engine)
    session = session_now(ctx, call.now)
    for factor_id in sorted(TeamLibrary(ctx.engine).entries()):
        info = store.get(factor_id)
        reference = reference_ic(info, store) if info is not None else None
        if info is None or not reference:
            continue
        try:
            tracker = monitor(ctx, info, session, reference, states)
        except (DataError, ValueError) as exc:  # one factor's failure leaves the others monitored
            log.warning("decay monitor: %s v%s not updated: %s", info.name, info.version, exc)
            continue
        channel = ctx.research_channel
        if not tracker.unposted or not channel or not call.serves(channel):
            continue
        for change in list(tracker.unposted):
            key = f"decay:{info.id}:{change['session']}:{change['to']}"
            ics = {day: ic for day, ic in tracker.ics.items() if day <= change["session"]}  # the chart's bars
            request = {"workflow": "factor", "decay": {"name": info.name, "version": info.version, **change,
                                                       "ics": ics}}
            call.start(ScheduledRun(channel, info.author or "quantdesk", key,
                                    partial(change_title, info.name, info.version, change), request), True)
            tracker.unposted.remove(change)
            states.save(info.id, tracker)
    return []
