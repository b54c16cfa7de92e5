"""The signal workflow's result as a view for the adapters."""

from __future__ import annotations

from typing import Any

from graphs.views import View

CODES_SHOWN = 12


def _pct(value: float) -> str:
    return f"{value:.2%}"


def present_signal(result: dict[str, Any]) -> View:
    m, counts = result["metrics"], result["counts"]
    codes = result["codes"]
    shown = ", ".join(codes[:CODES_SHOWN]) + (f" and {len(codes) - CODES_SHOWN} more" if len(codes) > CODES_SHOWN
                                               else "")
    facts = [
        ("Total return (buy-and-hold)", f"{_pct(m['total_return'])} ({_pct(m['benchmark_total_return'])})"),
        ("Excess return", _pct(m["excess_return"])),
        ("Sharpe (buy-and-hold)", f"{m['sharpe']:.2f} ({m['benchmark_sharpe']:.2f})"),
        ("Max drawdown (buy-and-hold)", f"{_pct(m['max_drawdown'])} ({_pct(m['benchmark_max_drawdown'])})"),
        ("Annualised", _pct(m["annual_return"])), ("Average exposure", f"{m['exposure']:.0%}"),
        ("Signal days buy / sell", f"{counts['buy']} / {counts['sell']}"),
        ("Trades: buys / sells", f"{m['buys']} / {m['sells']} ({m['round_trips']} round trips)"),
        ("Hit rate", f"{m['hit_rate']:.1%}"), ("Daily turnover, fee a side", f"{_pct(m['turnover'])}, "
                                                                            f"{_pct(m['fee_rate'])}"),
    ]
    summary = (f"Signal {result['title']}: total {_pct(m['total_return'])} against buy-and-hold "
               f"{_pct(m['benchmark_total_return'])} (excess {_pct(m['excess_return'])}), Sharpe {m['sharpe']:.2f}, "
               f"max drawdown {_pct(m['max_drawdown'])}, average exposure {m['exposure']:.0%}, {m['trades']} trades")
    return View(title=f"Signal: {result['title']}", summary=summary,
                lines=[shown, f"{result['first_date']} – {result['last_date']} · {result['shape'][0]} dates × "
                              f"{result['shape'][1]} codes"],
                facts=facts, notes=[result["conventions"]], warnings=list(result.get("warnings", [])))
