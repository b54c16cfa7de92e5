"""Daily token budgets per person and per channel (QUANTDESK_TOKEN_BUDGET_PERSON_DAY, ..._CHANNEL_DAY), the day
read in QUANTDESK_TIMEZONE: checked before each model call against the calls recorded that day (the run records'
`run_calls`) and the run's own calls not saved yet."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, time, timedelta
from zoneinfo import ZoneInfo

from graphs.context import WorkflowContext
from graphs.prices import cost as price
from graphs.runs.recorder import Recorder
from tools.i18n import _
from tools.runs.store import RunStore

PERSON, CHANNEL = "person", "channel"


class BudgetReached(Exception):  # noqa: N818 - named for what happened
    """A day's budget is spent: the run stops before its next model call."""

    def __init__(self, which: str, spent: int, limit: int, resets: datetime) -> None:
        super().__init__(f"{which} budget reached: {spent} of {limit} tokens")
        self.which, self.spent, self.limit, self.resets = which, spent, limit, resets

    def text(self) -> str:
        """What the thread is told, in the language in effect."""
        which = _("your daily token budget") if self.which == PERSON else _("this channel's daily token budget")
        return _("Stopped before the next model call: {which} is spent ({spent} of {limit} tokens today). Nothing "
                 "of this run was kept as a result. The budget resets at {resets}.").format(
            which=which, spent=f"{self.spent:,}", limit=f"{self.limit:,}",
            resets=self.resets.strftime("%Y-%m-%d %H:%M %Z"))


def local_day(now: datetime, zone: str) -> str:
    return now.astimezone(ZoneInfo(zone)).strftime("%Y-%m-%d")


def next_midnight(now: datetime, zone: str) -> datetime:
    local = now.astimezone(ZoneInfo(zone))
    return datetime.combine(local.date() + timedelta(days=1), time(0), tzinfo=ZoneInfo(zone))


def budget_guard(store: RunStore, ctx: WorkflowContext, user: str | None,
                 account: str) -> Callable[[Recorder], None] | None:
    """The check run before each model call of a run (None when no budget is set)."""
    if ctx.token_budget_person_day is None and ctx.token_budget_channel_day is None:
        return None

    def check(recorder: Recorder) -> None:
        now = ctx.now()
        day = local_day(now, ctx.timezone)
        if ctx.token_budget_person_day is not None and user is not None:
            _check(PERSON, store.spent(day, user=user) + recorder.tokens,
                   ctx.token_budget_person_day + store.raised(day, user), now)
        if ctx.token_budget_channel_day is not None:
            _check(CHANNEL, store.spent(day, account=account) + recorder.tokens, ctx.token_budget_channel_day, now)

    def _check(which: str, spent: int, allowed: int, now: datetime) -> None:
        if spent >= allowed:
            raise BudgetReached(which, spent, allowed, next_midnight(now, ctx.timezone))
    return check


def usage_line(store: RunStore, ctx: WorkflowContext, recorder: Recorder, user: str | None) -> str:
    """What a run's models used, for its result: tokens, their cost when priced, and the person's day so far
    against their budget."""
    cost = (f" · ¥{priced:.2f}" if ctx.model_prices and (priced := price(ctx.model_prices, recorder.usage))
            is not None else "")
    line = _("{tokens} tokens").format(tokens=short(recorder.tokens)) + cost
    if user is None:
        return line
    day = local_day(ctx.now(), ctx.timezone)
    spent = short(store.spent(day, user=user))
    if ctx.token_budget_person_day is None:
        return line + " · " + _("today {spent}").format(spent=spent)
    limit = short(ctx.token_budget_person_day + store.raised(day, user))
    return line + " · " + _("today {spent} of {limit}").format(spent=spent, limit=limit)


def short(tokens: int) -> str:
    """11.7k for 11,700 tokens."""
    return f"{tokens / 1000:.1f}k" if tokens >= 1000 else str(tokens)

