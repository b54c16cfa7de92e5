"""The rule workflow's background work: the scheduler pass (the wall clock's ticks, and on static data the ticks of
the simulated session a trader moved the clock to), and counting a scheduled run that crashed."""

from __future__ import annotations

from datetime import datetime
from functools import partial
from typing import Any

from graphs.background import BackgroundCall, Notice, ScheduledRun
from graphs.rule.deps import RuleDeps
from tools.broker.clock import day
from tools.broker.proposal_claims import release_proposals
from tools.broker.sim_clock import SessionMove, last_move
from tools.i18n import _
from tools.rules.schedule import run_due, run_session, trading_day_checker
from tools.rules.store import Rule, RuleError

WORKFLOW = "rule"


def scheduled_request(rule_id: int, execution_id: str, move: SessionMove | None = None) -> dict[str, Any]:
    """What a scheduled run of a rule asks for: the workflow reads it from its state (nobody can type it). A run
    of a simulated session carries it (`move`): the run does nothing once the clock has moved on."""
    request: dict[str, Any] = {"workflow": WORKFLOW, "rule_id": rule_id, "execution": execution_id}
    if move is not None:
        request |= {"session": move.session, "moved_at": move.moved_at.isoformat()}
    return request


def run_title(rule: Rule, tick: datetime, session: str | None) -> str:
    """The root of a scheduled run's thread, in the language in effect (the owner's): the rule, its tick and, on
    the simulated clock, its session."""
    if session is None:
        return _("Rule {id} ({symbol}): scheduled run for {time} UTC, owner {owner}").format(
            id=rule.id, symbol=rule.symbol, time=f"{tick:%Y-%m-%d %H:%M}", owner=rule.owner)
    return _("Rule {id} ({symbol}): scheduled run for the simulated session {session} ({time} UTC), owner "
             "{owner}").format(id=rule.id, symbol=rule.symbol, session=session, time=f"{tick:%Y-%m-%d %H:%M}",
                               owner=rule.owner)


def rule_schedule_job(ctx: RuleDeps, call: BackgroundCall) -> list[Notice]:
    """The scheduler pass: each enabled rule whose cron matched (in its timezone, on a trading day) runs once per
    tick across every process, in a new thread of its channel whose root names the rule; on static data also the
    rules due on the simulated session the clock was last moved to."""
    if ctx.rules is None:
        return []

    def start(rule: Rule, tick: datetime, execution_id: str, again: bool) -> None:
        call.start(ScheduledRun(rule.channel, rule.owner, execution_id, partial(run_title, rule, tick, None),
                                scheduled_request(rule.id, execution_id), tick.timestamp()), again)

    run_due(ctx.engine, ctx.rules, call.now, start, call.owner, is_trading_day=trading_day_checker(ctx.provider),
            catch_up=call.catch_up, serves=call.serves)
    move = last_move(ctx.engine, ctx.provider, ctx.paper.live_data_days, call.now) if ctx.paper else None
    if move is not None:
        def start_session(rule: Rule, tick: datetime, execution_id: str, again: bool) -> None:
            title = partial(run_title, rule, tick, move.session)
            call.start(ScheduledRun(rule.channel, rule.owner, execution_id, title,
                                    scheduled_request(rule.id, execution_id, move), move.moved_at.timestamp()), again)

        run_session(ctx.engine, ctx.rules, day(move.session), move.moved_at, call.now, start_session, call.owner,
                    catch_up=call.catch_up, serves=call.serves)
    return []


def rule_run_failed(ctx: RuleDeps, thread_id: str, request: dict[str, Any], error: str) -> list[Notice]:
    """A scheduled run whose graph crashed never reached its report node, which counts failed runs and gives back
    the rule's order proposal claim: count it toward the rule's auto-pause (QUANTDESK_RULE_MAX_FAILURES), release
    the claim (the run ended before any card was shown), and tell the owner when the rule was paused."""
    rules, execution_id = ctx.rules, str(request.get("execution") or "")
    rule = rules.get(request["rule_id"]) if rules is not None and isinstance(request.get("rule_id"), int) else None
    if rules is None or rule is None:  # deleted since the run was queued
        return []
    try:
        paused = rules.record_failure(rule.id, error)
    except RuleError:  # deleted a moment ago
        return []
    release_proposals(rules.engine, execution_id)
    if not paused:
        return []
    return [Notice(thread_id, f"rule-paused:{execution_id}",
                   lambda: _(":pause_button: Rule {id} is paused after repeated failures; its owner {owner} can "
                             "`rule resume {id}` once it is fixed.").format(id=rule.id, owner=rule.owner),
                   (rule.owner,))]
