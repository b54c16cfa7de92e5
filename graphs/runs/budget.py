"""Daily token budgets per person and per channel (QUANTDESK_TOKEN_BUDGET_PERSON_DAY, ..._CHANNEL_DAY), the day
read in QUANTDESK_TIMEZONE: checked before each model call against the calls recorded that day (the run records'
`run_calls`) and the run's own calls not saved yet."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, time, timedelta
from decimal import ROUND_HALF_UP, Decimal
from zoneinfo import ZoneInfo

from graphs.context import WorkflowContext
from graphs.meter import ModelUsage
from graphs.prices import cost as price
from graphs.prices import price_of
from graphs.runs.recorder import Recorder
from tools.i18n import _
from tools.runs.store import RunStore

PERSON, CHANNEL, RUN = "person", "channel", "run"
MONEY = "money"  # a suffix: "person money", "channel money"


class BudgetReached(Exception):  # noqa: N818 - named for what happened
    """A budget is spent: the run stops before its next model call. `which` is PERSON, CHANNEL or RUN (tokens), or
    PERSON/CHANNEL + " money"; `resets` is None for a run's own budget; `unpriced` names a model the money budget
    cannot price (the check fails closed)."""

    def __init__(self, which: str, spent: int | Decimal, limit: int | Decimal, resets: datetime | None,
                 unpriced: str | None = None) -> None:
        super().__init__(f"{which} budget reached: {spent} of {limit}")
        self.which, self.spent, self.limit, self.resets, self.unpriced = which, spent, limit, resets, unpriced

    def text(self) -> str:
        """What the thread is told, in the language in effect."""
        kept = _("Nothing of this run was kept as a result.")
        if self.unpriced is not None:
            return " ".join([_("Stopped before the next model call: the money budget cannot be checked, because model "
                               "{model} has no price in QUANTDESK_MODEL_PRICES.").format(model=self.unpriced), kept])
        if self.which == RUN:
            return " ".join([_("Stopped before the next model call: this run's token budget is spent ({spent} of "
                               "{limit} tokens).").format(spent=f"{self.spent:,}", limit=f"{self.limit:,}"), kept,
                             _("Ask for less (a lower depth, fewer codes or analysts), or ask an admin to raise "
                               "QUANTDESK_TOKEN_BUDGET_RUN.")])
        money = self.which.endswith(MONEY)
        person = self.which.startswith(PERSON)
        which = ((_("your daily money budget") if person else _("this channel's daily money budget")) if money else
                 _("your daily token budget") if person else _("this channel's daily token budget"))
        amounts = (_("{spent} of {limit} today").format(spent=yuan(self.spent), limit=yuan(self.limit)) if money else
                   _("{spent} of {limit} tokens today").format(spent=f"{self.spent:,}", limit=f"{self.limit:,}"))
        resets = self.resets.strftime("%Y-%m-%d %H:%M %Z") if self.resets else ""
        return " ".join([_("Stopped before the next model call: {which} is spent ({amounts}).").format(
            which=which, amounts=amounts), kept, _("The budget resets at {resets}.").format(resets=resets)])


def yuan(amount: int | Decimal) -> str:
    """¥0.08: money in the price table's currency, to the fen."""
    return f"¥{Decimal(amount).quantize(Decimal('0.01'), ROUND_HALF_UP):,}"


def local_day(now: datetime, zone: str) -> str:
    return now.astimezone(ZoneInfo(zone)).strftime("%Y-%m-%d")


def next_midnight(now: datetime, zone: str) -> datetime:
    local = now.astimezone(ZoneInfo(zone))
    return datetime.combine(local.date() + timedelta(days=1), time(0), tzinfo=ZoneInfo(zone))


def budget_guard(store: RunStore, ctx: WorkflowContext, user: str | None,
                 account: str) -> Callable[[Recorder], None] | None:
    """The check run before each model call of a run (None when no budget is set)."""
    money = ctx.money_budget_person_day is not None or ctx.money_budget_channel_day is not None
    if (ctx.token_budget_person_day is None and ctx.token_budget_channel_day is None
            and ctx.token_budget_run is None and not money):
        return None

    def check(recorder: Recorder) -> None:
        now = ctx.now()
        day = local_day(now, ctx.timezone)
        resets = next_midnight(now, ctx.timezone)
        if ctx.token_budget_run is not None and recorder.tokens >= ctx.token_budget_run:
            raise BudgetReached(RUN, recorder.tokens, ctx.token_budget_run, None)
        if ctx.token_budget_person_day is not None and user is not None:
            _check(PERSON, store.spent(day, user=user) + recorder.tokens,
                   ctx.token_budget_person_day + store.raised(day, user), resets)
        if ctx.token_budget_channel_day is not None:
            _check(CHANNEL, store.spent(day, account=account) + recorder.tokens, ctx.token_budget_channel_day, resets)
        if ctx.money_budget_person_day is not None and user is not None:
            _check(f"{PERSON} {MONEY}", _spent_money(store.usage(day_from=day, day_to=day, user=user), recorder),
                   ctx.money_budget_person_day, resets)
        if ctx.money_budget_channel_day is not None:
            _check(f"{CHANNEL} {MONEY}", _spent_money(store.usage(day_from=day, day_to=day, account=account),
                                                      recorder), ctx.money_budget_channel_day, resets)

    def _spent_money(rows: list[tuple[str | None, str, str | None, str, int, int, int]],
                     recorder: Recorder) -> Decimal:
        """What the day's recorded calls and the run's own cost; a model without a price stops the run."""
        used: dict[str, ModelUsage] = {}
        for _person, _channel, _workflow, model, calls, tokens_in, tokens_out in rows:
            add_usage(used, model, calls, tokens_in, tokens_out)
        for model, usage in recorder.usage.items():
            add_usage(used, model, usage.calls, usage.input_tokens, usage.output_tokens)
        unpriced = next((model for model in used if price_of(ctx.model_prices, model) is None), None)
        total = price(ctx.model_prices, used)
        if unpriced is not None or total is None:
            raise BudgetReached(MONEY, 0, 0, None, unpriced=unpriced or "?")
        return total

    def _check(which: str, spent: int | Decimal, allowed: int | Decimal, resets: datetime) -> None:
        if spent >= allowed:
            raise BudgetReached(which, spent, allowed, resets)
    return check


def add_usage(used: dict[str, ModelUsage], model: str, calls: int, tokens_in: int, tokens_out: int) -> None:
    """Add one row of usage to `used`, by model."""
    usage = used.setdefault(model, ModelUsage())
    usage.calls += calls
    usage.input_tokens += tokens_in
    usage.output_tokens += tokens_out


def usage_line(store: RunStore, ctx: WorkflowContext, recorder: Recorder, user: str | None) -> str:
    """What a run's models used, for its result: tokens, their cost when priced, and the person's day so far
    against their budget."""
    cost = (f" · {yuan(priced)}" if ctx.model_prices and (priced := price(ctx.model_prices, recorder.usage))
            is not None else "")
    line = _("{tokens} tokens").format(tokens=short(recorder.tokens)) + cost
    return line if user is None else line + " · " + day_line(store, ctx, user)


def day_line(store: RunStore, ctx: WorkflowContext, user: str) -> str:
    """The tokens `user` used today (in QUANTDESK_TIMEZONE), against their budget when one is set."""
    day = local_day(ctx.now(), ctx.timezone)
    spent = short(store.spent(day, user=user))
    if ctx.token_budget_person_day is None:
        return _("today {spent}").format(spent=spent)
    limit = short(ctx.token_budget_person_day + store.raised(day, user))
    return _("today {spent} of {limit}").format(spent=spent, limit=limit)


def short(tokens: int) -> str:
    """11.7k for 11,700 tokens."""
    return f"{tokens / 1000:.1f}k" if tokens >= 1000 else str(tokens)

