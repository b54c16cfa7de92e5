"""`clock`, `clock next`, `clock set DATE`: the paper accounts' session clock (no graph run). On static data it is
simulated, one clock for the whole database, and traders move it; on live data it is the real one. A move names
the scheduled rules due on the new session: the background service's next rule schedule pass runs them (once per
tick, as of that session; graphs/rule/background.py)."""

from __future__ import annotations

from graphs.order.commands import TRADERS_ONLY
from graphs.views import View
from graphs.workflow import CommandCall, CommandError
from tools.broker.clock import SHANGHAI, day
from tools.broker.clock_moves import ClockError, ClockMove, ClockState, clock_state, move_clock
from tools.broker.sim_clock import last_move
from tools.data.schema import DataError, normalize_date
from tools.rules.schedule import SessionTick, session_ticks

USAGE = "usage: clock, clock next, or clock set YYYYMMDD"
SHARED = "one simulated clock for every paper account in this database"
RULES_NOTE = ("a scheduled rule runs on each session the clock moves to (its cron times that day, each once), as of "
              "that session: it reads no later bar")


def clock_command(call: CommandCall) -> View:
    """`clock` shows the clock (anyone); `clock next` and `clock set DATE` move the simulated one (traders)."""
    ctx = call.context
    if ctx.paper is None:
        raise CommandError("the paper account is not configured in this process")
    words = [w.lower() for w in call.args]
    if not words:
        return _show(clock_state(ctx.engine, ctx.provider, ctx.paper.live_data_days, ctx.now()))
    if words == ["next"]:
        to = None
    elif len(words) == 2 and words[0] == "set":
        try:
            to = normalize_date(words[1], "clock date")
        except DataError as exc:
            raise CommandError(f"{exc}; {USAGE}") from None
    else:
        raise CommandError(USAGE)
    if not call.is_trader:
        raise CommandError(TRADERS_ONLY.format(what="move the clock"))
    try:
        move = move_clock(ctx.engine, ctx.provider, ctx.paper, to, call.user or "?", ctx.now().astimezone(SHANGHAI))
    except ClockError as exc:
        raise CommandError(str(exc)) from None
    ticks = _due(call, move.after)
    if any(not tick.claimed for tick in ticks):
        call.background_due()
    return _moved(move, call.user or "?", ticks)


def _due(call: CommandCall, session: str) -> list[SessionTick]:
    """The scheduled rules' ticks on the session the clock just moved to (as the schedule pass will run them)."""
    ctx = call.context
    moved = last_move(ctx.engine, ctx.provider, ctx.paper.live_data_days, ctx.now()) if ctx.paper else None
    if ctx.rules is None or moved is None or moved.session != session:
        return []
    return session_ticks(ctx.engine, ctx.rules, day(session), moved.moved_at)


def _rule_lines(ticks: list[SessionTick], session: str) -> list[str]:
    if not ticks:
        return [f"No scheduled rule is due on {session}."]
    lines = []
    for tick in ticks:
        rule, at = tick.rule, tick.tick.astimezone(SHANGHAI)
        what = f"Rule {rule.id} ({rule.symbol}, schedule `{rule.schedule}` {rule.timezone})"
        lines.append(f"{what} ran for {session} at {at:%H:%M} already (each tick runs once)." if tick.claimed else
                     f"{what} runs for {session} at {at:%H:%M} Asia/Shanghai, on bars up to {session}, in a new "
                     "thread of its channel.")
    return lines


def _show(state: ClockState) -> View:
    if state.mode == "live":
        return View("Clock", f"Live clock: today is {state.today} (Asia/Shanghai) and the data has bars through "
                             f"{state.data_end}. `clock next` and `clock set` move only the simulated clock of static "
                             "data.")
    if state.next_session is not None and state.next_session <= state.data_end:
        step = (f"`clock next` moves it to {state.next_session}: due orders settle at that session's bars, every "
                f"account is marked at its closes, and shares bought on {state.today} become sellable (T+1).")
    else:
        step = (f"`clock next` cannot move it: the data ends at {state.data_end}, and the simulated clock moves only "
                "over days the data has bars for (fills need bars); `clock set DATE` can go back to an earlier day "
                "no order is dated after.")
    moved = (f"Last moved by {state.moved_by} at {state.moved_at:%Y-%m-%d %H:%M} UTC." if state.moved_by and
             state.moved_at else "Never moved: it starts at the data's last day.")
    return View("Clock", f"Simulated clock: the session is {state.today} ({SHARED}; the data ends at "
                         f"{state.data_end}).", lines=[step, moved, "Moving it is for traders."],
                users=[state.moved_by] if state.moved_by else [])


def _moved(move: ClockMove, user: str, ticks: list[SessionTick]) -> View:
    direction = "back " if move.after < move.before else ""
    lines = [order.summary() for order in move.changed]
    lines.append(f"Marked {len(move.marked)} account(s) at the closes of {move.after}; shares bought before "
                 f"{move.after} are sellable (T+1).")
    lines += _rule_lines(ticks, move.after)
    return View("Clock moved", f"The simulated clock moved {direction}from {move.before} to {move.after} (by {user}; "
                               f"{SHARED}).", lines=lines, notes=[RULES_NOTE], users=[user])
