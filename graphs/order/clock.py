"""`clock`, `clock next`, `clock set DATE`: the paper accounts' session clock (no graph run). On static data it is
simulated, one clock for the whole database, and traders move it; on live data it is the real one. A move names
the scheduled rules due on the new session: the background service's next rule schedule pass runs them (once per
tick, as of that session; graphs/rule/background.py)."""

from __future__ import annotations

from datetime import datetime

from graphs.order.commands import TRADERS_ONLY
from graphs.order.deps import accounts
from graphs.views import View
from graphs.workflow import CommandCall, CommandError
from tools.broker.clock import SHANGHAI, day
from tools.broker.clock_moves import ClockError, ClockMove, ClockState, clock_state, move_clock
from tools.broker.sim_clock import START_SESSIONS, last_move
from tools.data.schema import DataError, normalize_date
from tools.i18n import N_, _
from tools.rules.schedule import SessionTick, session_ticks

USAGE = N_("usage: clock, clock next, or clock set YYYYMMDD")
SHARED = N_("one simulated clock for every paper account in this database")
RULES_NOTE = N_("a scheduled rule runs on each session the clock moves to (its cron times that day, each once), as "
                "of that session: it reads no later bar")


def clock_command(call: CommandCall) -> View:
    """`clock` shows the clock (anyone); `clock next` and `clock set DATE` move the simulated one (traders)."""
    ctx = call.context
    if ctx.paper is None:
        raise CommandError(_("the paper account is not configured in this process"))
    words = [w.lower() for w in call.args]
    if not words:
        return _show(clock_state(ctx.engine, ctx.provider, ctx.paper.live_data_days, ctx.now()))
    if words == ["next"]:
        to = None
    elif len(words) == 2 and words[0] == "set":
        try:
            to = normalize_date(words[1], N_("clock date"))
        except DataError as exc:
            raise CommandError(_("{error}; {usage}").format(error=exc, usage=_(USAGE))) from None
    else:
        raise CommandError(_(USAGE))
    if not call.is_trader:
        raise CommandError(_(TRADERS_ONLY).format(what=_("move the clock")))
    try:
        move = move_clock(ctx.engine, ctx.provider, ctx.paper.live_data_days, accounts(ctx), to, call.user or "?",
                          ctx.now().astimezone(SHANGHAI))
    except ClockError as exc:
        raise CommandError(str(exc)) from None
    moved_at, ticks = _due(call, move.after)
    if any(not tick.ran_before(moved_at) for tick in ticks):  # unclaimed, or claimed by a pass that ran meanwhile
        call.background_due()
    return _moved(move, call.user or "?", _rule_lines(ticks, move.after, moved_at))


def _due(call: CommandCall, session: str) -> tuple[datetime, list[SessionTick]]:
    """When the clock moved, and the scheduled rules' ticks on the session it just moved to (as the schedule pass
    runs them)."""
    ctx = call.context
    moved = last_move(ctx.engine, ctx.provider, ctx.paper.live_data_days, ctx.now()) if ctx.paper else None
    if ctx.rules is None or moved is None or moved.session != session:
        return ctx.now(), []
    return moved.moved_at, session_ticks(ctx.engine, ctx.rules, day(session), moved.moved_at)


def _rule_lines(ticks: list[SessionTick], session: str, moved_at: datetime) -> list[str]:
    if not ticks:
        return [_("No scheduled rule is due on {day}.").format(day=session)]
    lines = []
    for tick in ticks:
        rule, at = tick.rule, tick.tick.astimezone(SHANGHAI)
        what = _("Rule {id} ({symbol}, schedule `{schedule}` {zone})").format(
            id=rule.id, symbol=rule.symbol, schedule=rule.schedule, zone=rule.timezone)
        text = (_("{what} ran for {day} at {time} already (each tick runs once).") if tick.ran_before(moved_at) else
                _("{what} runs for {day} at {time} Asia/Shanghai, on bars up to {day}, in a new thread of its "
                  "channel."))
        lines.append(text.format(what=what, day=session, time=f"{at:%H:%M}"))
    return lines


def _show(state: ClockState) -> View:
    if state.mode == "live":
        return View(_("Clock"), _("Live clock: today is {today} (Asia/Shanghai) and the data has bars through "
                                  "{end}. `clock next` and `clock set` move only the simulated clock of static "
                                  "data.").format(today=state.today, end=state.data_end))
    if state.next_session is not None and state.next_session <= state.data_end:
        step = _("`clock next` moves it to {next}: due orders settle at that session's bars, every account is marked "
                 "at its closes, and shares bought on {today} become sellable (T+1).").format(
            next=state.next_session, today=state.today)
    else:
        step = _("`clock next` cannot move it: the data ends at {end}, and the simulated clock moves only over days "
                 "the data has bars for (fills need bars); `clock set DATE` can go back to an earlier day no order "
                 "is dated after.").format(end=state.data_end)
    moved = (_("Last moved by {user} at {time} UTC.").format(user=state.moved_by,
                                                             time=f"{state.moved_at:%Y-%m-%d %H:%M}")
             if state.moved_by and state.moved_at else
             _("Never moved: a new clock starts {n} of the data's sessions before its last day, a month to trade "
               "through.").format(n=START_SESSIONS))
    return View(_("Clock"), _("Simulated clock: the session is {today} ({shared}; the data ends at {end}).").format(
        today=state.today, shared=_(SHARED), end=state.data_end), lines=[step, moved, _("Moving it is for traders.")],
                users=[state.moved_by] if state.moved_by else [])


def _moved(move: ClockMove, user: str, rule_lines: list[str]) -> View:
    moved = (_("The simulated clock moved back from {before} to {after} (by {user}; {shared}).")
             if move.after < move.before else
             _("The simulated clock moved from {before} to {after} (by {user}; {shared})."))
    lines = [order.summary() for order in move.changed]
    lines.append(_("Marked {n} account(s) at the closes of {day}; shares bought before {day} are sellable "
                   "(T+1).").format(n=len(move.marked), day=move.after))
    lines += rule_lines
    return View(_("Clock moved"), moved.format(before=move.before, after=move.after, user=user, shared=_(SHARED)),
                lines=lines, notes=[_(RULES_NOTE)], users=[user])
