"""What a rule's backtest adds for honesty (issue 42, item 4): its period cut into an in-sample part and a holdout
(the last QUANTDESK_HOLDOUT_FRACTION of its sessions; none under 60 held out), each backtested apart from flat
beside its own buy-and-hold; the backtest recorded as a trial of the rule (thread `rule:ID@SAVED`, the person who asked,
the in-sample daily returns); the rule's trials judged (DSR, and PBO from 8); and the gate's verdict on it (the
holdout's Sharpe ratio has the in-sample sign, the DSR probability reaches QUANTDESK_DSR_THRESHOLD), which the
rule keeps as its latest and which `rule schedule` asks for."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import pandas as pd

from tools.research.gate import verdict
from tools.research.holdout import Split, split_sessions
from tools.research.trials import Trial, TrialStore, judge, universe_key
from tools.rules.backtest import Performance, RuleBacktest
from tools.rules.store import Rule

KIND = "rule"  # the trials' kind: a rule's backtests are judged among themselves


@dataclass(frozen=True)
class Judged:
    """A rule backtest's honesty: `split` in the signal card's shape ({split, in_sample, holdout}), the judgement
    of the rule's trials (None: too few returns to judge) and the verdict the rule keeps."""

    split: dict[str, Any]
    honesty: dict[str, Any] | None
    verdict: dict[str, Any]


def thread_of(rule: Rule) -> str:
    """The research thread a rule's backtests are trials of: its id and when it was saved (SQLite gives a deleted
    rule's id to the next rule saved; that rule's trials are its own)."""
    return f"rule:{rule.id}@{rule.created_at.astimezone(UTC):%Y%m%dT%H%M%S.%f}"


def judge_backtest(store: TrialStore, rule: Rule, whole: RuleBacktest, part: Callable[[str, str], RuleBacktest],
                   fraction: float, threshold: float, person: str | None, now: datetime) -> Judged:
    """Split `whole`'s sessions, backtest the parts with `part(start, end)`, record the trial and judge it."""
    sessions = [mark.trade_date for mark in whole.strategy.marks]
    split = split_sessions(sessions, fraction)
    if split.held_out:
        assert split.holdout_start is not None  # held_out says so
        inside, held = part(split.start, split.in_sample_end), part(split.holdout_start, split.end)
        parts: dict[str, Any] = {"split": split.as_dict(), "in_sample": _metrics(inside), "holdout": _metrics(held)}
        returns = daily_returns(inside.strategy)
    else:
        parts, held = {"split": split.as_dict(), "in_sample": None, "holdout": None}, None
        returns = daily_returns(whole.strategy)
    judged = _judged(store, rule, split, returns, person)
    in_sample = parts["in_sample"]["sharpe"] if parts["in_sample"] else whole.strategy.figures.sharpe
    gate = verdict(in_sample, held.strategy.figures.sharpe if held else None, judged["dsr"] if judged else None,
                   threshold)
    return Judged(parts, judged, {
        **gate, "measure": "sharpe", "start": split.start, "end": split.end, "holdout_sessions": split.holdout_sessions,
        "trials": judged["trials"] if judged else 0, "by": person, "at": now.isoformat(timespec="seconds")})


def daily_returns(performance: Performance) -> pd.Series:
    """A run's daily returns on the account: each close's equity over the one before (the starting cash first)."""
    equity = performance.equity
    return equity / equity.shift(1, fill_value=float(performance.starting_cash)) - 1.0


def _metrics(result: RuleBacktest) -> dict[str, Any]:
    """A part's figures beside its buy-and-hold's (`benchmark_` keys), as the signal card's parts have them."""
    mine, theirs = result.strategy.figures.as_dict(), result.benchmark.figures.as_dict()
    return {**mine, **{f"benchmark_{key}": value for key, value in theirs.items()}}


def _judged(store: TrialStore, rule: Rule, split: Split, returns: pd.Series,
            person: str | None) -> dict[str, Any] | None:
    """Record the backtest as a trial of the rule (its period, where it was cut and how it trades: another split or
    order size is another trial; the same one again is not) and judge it among the rule's trials."""
    if returns.dropna().size < 3:
        return None
    variant = json.dumps({"requirements": rule.requirements, "size": rule.size,
                          "value": None if rule.value_cny is None else str(rule.value_cny)}, sort_keys=True)
    thread = thread_of(rule)
    key = (f"{thread}:{split.start}:{split.end}:{split.in_sample_end}:"
           + hashlib.sha256(variant.encode()).hexdigest()[:12])
    universe = universe_key([rule.symbol])
    store.record([Trial(key, thread, person, KIND, thread, universe, split.start, split.end, returns)])
    trials = [r for r in store.of_thread(thread) if r.kind == KIND]
    return judge(returns, trials, store.count_of(person)).as_dict()
