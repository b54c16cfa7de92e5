"""The one report shape of both backtests (`signal ...` and `rule backtest`): the strategy beside buy-and-hold on
the same capital, in tools.research.performance's vocabulary, each figure labelled with the base it is on."""

from __future__ import annotations

from dataclasses import dataclass

from tools.research.performance import Figures

TRADES_SHOWN = 20  # trades listed in a report; the CSV has them all


@dataclass(frozen=True)
class Base:
    """What the returns are on: `short` for the summary sentence, `sizing` says how positions are sized."""

    short: str
    sizing: str


def _pct(value: float) -> str:
    return f"{value:.2%}"


def comparison_facts(strategy: Figures, benchmark: Figures, base: Base, fees: tuple[str, str]) -> list[tuple[str, str]]:
    """Label/value facts: each figure of the strategy with the buy-and-hold's in brackets, then the base."""
    pairs = [("Total return", _pct(strategy.total_return), _pct(benchmark.total_return)),
             ("Annualised", _pct(strategy.annual_return), _pct(benchmark.annual_return)),
             ("Sharpe", f"{strategy.sharpe:.2f}", f"{benchmark.sharpe:.2f}"),
             ("Max drawdown", _pct(strategy.max_drawdown), _pct(benchmark.max_drawdown)),
             ("Exposure", f"{strategy.exposure:.0%}", f"{benchmark.exposure:.0%}"),
             ("Trades", str(strategy.trades), str(benchmark.trades)),
             ("Fees", *fees)]
    return [*((f"{label} (buy-and-hold)", f"{mine} ({theirs})") for label, mine, theirs in pairs),
            ("Excess return", _pct(strategy.total_return - benchmark.total_return)),
            ("Base", f"{base.short}; {base.sizing}")]


def comparison_summary(name: str, strategy: Figures, benchmark: Figures, base: Base) -> str:
    return (f"{name}: total {_pct(strategy.total_return)} against buy-and-hold {_pct(benchmark.total_return)} "
            f"(excess {_pct(strategy.total_return - benchmark.total_return)}) on {base.short}, Sharpe "
            f"{strategy.sharpe:.2f}, max drawdown {_pct(strategy.max_drawdown)}, exposure {strategy.exposure:.0%}, "
            f"{strategy.trades} trades")


def cut_note(shown: int, total: int, what: str) -> str | None:
    """'first 20 of 25 trades (all in the CSV)' when a list is cut, else None."""
    return f"first {shown} of {total} {what} (all in the CSV)" if total > shown else None
