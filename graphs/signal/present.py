"""The signal workflow's result as a view for the adapters, in the report shape both backtests share."""

from __future__ import annotations

from typing import Any

from graphs.backtest_view import Base, comparison_facts, comparison_summary
from graphs.views import View
from tools.research.performance import Figures

CODES_SHOWN = 12
BASE = Base("equal sleeves of the capital", "each of the N codes trades its own 1/N of the starting capital; weights "
            "drift with prices between trades and are never rebalanced (the buy-and-hold holds the same sleeves)")


def _figures(m: dict[str, Any], prefix: str = "") -> Figures:
    return Figures(m[f"{prefix}total_return"], m[f"{prefix}annual_return"], m[f"{prefix}sharpe"],
                   m[f"{prefix}max_drawdown"], m[f"{prefix}exposure"], m[f"{prefix}trades"], m[f"{prefix}fees"],
                   m["bars"])


def present_signal(result: dict[str, Any]) -> View:
    m, counts = result["metrics"], result["counts"]
    codes = result["codes"]
    shown = ", ".join(codes[:CODES_SHOWN]) + (f" and {len(codes) - CODES_SHOWN} more" if len(codes) > CODES_SHOWN
                                               else "")
    strategy, benchmark = _figures(m), _figures(m, "benchmark_")
    facts = [
        *comparison_facts(strategy, benchmark, BASE, (f"{m['fees']:.2%}", f"{m['benchmark_fees']:.2%}")),
        ("Signal days buy / sell", f"{counts['buy']} / {counts['sell']}"),
        ("Trades: buys / sells", f"{m['buys']} / {m['sells']} ({m['round_trips']} round trips)"),
        ("Hit rate", f"{m['hit_rate']:.1%}"),
        ("Daily turnover, fee a side", f"{m['turnover']:.2%}, {m['fee_rate']:.2%}"),
    ]
    return View(title=f"Signal: {result['title']}",
                summary=comparison_summary(f"Signal {result['title']}", strategy, benchmark, BASE),
                lines=[shown, f"{result['first_date']} – {result['last_date']} · {result['shape'][0]} dates × "
                              f"{result['shape'][1]} codes"],
                facts=facts, notes=[*result.get("notes", []), result["conventions"]],
                warnings=list(result.get("warnings", [])))
