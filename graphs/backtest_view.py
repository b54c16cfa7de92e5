"""The one report shape of both backtests (`signal ...` and `rule backtest`): the strategy beside buy-and-hold on
the same capital, in tools.research.performance's vocabulary, each figure labelled with the base it is on, and the
period's in-sample part and holdout beside their own buy-and-hold."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tools.i18n import N_, _
from tools.research.holdout import MIN_HOLDOUT_SESSIONS
from tools.research.performance import Figures

TRADES_SHOWN = 20  # trades listed in a report; the CSV has them all


@dataclass(frozen=True)
class Base:
    """What the returns are on: `short` for the summary sentence, `sizing` says how positions are sized (message
    ids: shown translated)."""

    short: str
    sizing: str


def _pct(value: float) -> str:
    return f"{value:.2%}"


def side_by_side(mine: str, theirs: str) -> str:
    """A figure of the strategy beside the buy-and-hold's, each named."""
    return _("strategy {mine} · buy-and-hold {theirs}").format(mine=mine, theirs=theirs)


def comparison_facts(strategy: Figures, benchmark: Figures, base: Base, fees: tuple[str, str]) -> list[tuple[str, str]]:
    """Label/value facts: each figure of the strategy beside the buy-and-hold's, each named, then the base."""
    pairs = [(N_("Total return"), _pct(strategy.total_return), _pct(benchmark.total_return)),
             (N_("Annualised"), _pct(strategy.annual_return), _pct(benchmark.annual_return)),
             (N_("Sharpe"), f"{strategy.sharpe:.2f}", f"{benchmark.sharpe:.2f}"),
             (N_("Max drawdown"), _pct(strategy.max_drawdown), _pct(benchmark.max_drawdown)),
             (N_("Exposure"), f"{strategy.exposure:.0%}", f"{benchmark.exposure:.0%}"),
             (N_("Trades"), str(strategy.trades), str(benchmark.trades)),
             (N_("Fees"), *fees)]
    return [*((_(label), side_by_side(mine, theirs)) for label, mine, theirs in pairs),
            (_("Excess return"), _pct(strategy.total_return - benchmark.total_return)),
            (_("Base"), _("; ").join((_(base.short), _(base.sizing))))]


def comparison_summary(name: str, strategy: Figures, benchmark: Figures, base: Base) -> str:
    return _("{name}: total {total} against buy-and-hold {benchmark} (excess {excess}) on {base}, Sharpe {sharpe}, "
             "max drawdown {drawdown}, exposure {exposure}, {trades} trades").format(
        name=name, total=_pct(strategy.total_return), benchmark=_pct(benchmark.total_return),
        excess=_pct(strategy.total_return - benchmark.total_return), base=_(base.short),
        sharpe=f"{strategy.sharpe:.2f}", drawdown=_pct(strategy.max_drawdown), exposure=f"{strategy.exposure:.0%}",
        trades=strategy.trades)


def cut_note(shown: int, total: int, what: str) -> str | None:
    """'first 20 of 25 trades (all in the CSV)' when a list is cut, else None."""
    return _("first {shown} of {total} {what} (all in the CSV)").format(shown=shown, total=total, what=what) \
        if total > shown else None


def split_facts(split: dict[str, Any]) -> list[tuple[str, str]]:
    """The in-sample part and the holdout, each backtested apart beside its buy-and-hold; or why there is no holdout."""
    cut = split.get("split")
    if not cut:
        return []
    if not split.get("holdout"):
        return [(_("Holdout"), _("none: {n} sessions would be held out, fewer than {minimum}; the figures above are "
                                 "the whole period").format(n=cut["holdout_sessions"], minimum=MIN_HOLDOUT_SESSIONS))]
    parts = ((_("In-sample {first}–{last}"), cut["start"], cut["in_sample_end"], split["in_sample"]),
             (_("Holdout {first}–{last}"), cut["holdout_start"], cut["end"], split["holdout"]))
    return [(label.format(first=first, last=last), _part(m)) for label, first, last, m in parts]


def _part(m: dict[str, Any]) -> str:
    return _("return {total} (buy-and-hold {benchmark}), Sharpe {sharpe} ({benchmark_sharpe}), max drawdown {drawdown} "
             "({benchmark_drawdown})").format(
        total=f"{m['total_return']:.2%}", benchmark=f"{m['benchmark_total_return']:.2%}", sharpe=f"{m['sharpe']:.2f}",
        benchmark_sharpe=f"{m['benchmark_sharpe']:.2f}", drawdown=f"{m['max_drawdown']:.2%}",
        benchmark_drawdown=f"{m['benchmark_max_drawdown']:.2%}")
