"""The signal workflow's result as a view for the adapters, in the report shape both backtests share."""

from __future__ import annotations

from typing import Any

from graphs.backtest_view import Base, comparison_facts, comparison_summary, split_facts
from graphs.views import View
from tools.data.schema import codes_text
from tools.i18n import N_, _
from tools.research.overfitting import PBO_MIN_TRIALS
from tools.research.performance import Figures

CODES_SHOWN = 12
BASE = Base(N_("equal sleeves of the capital"), N_("each of the N codes trades its own 1/N of the starting capital; "
                                                  "weights drift with prices between trades and are never rebalanced "
                                                  "(the buy-and-hold holds the same sleeves)"))


def _figures(m: dict[str, Any], prefix: str = "") -> Figures:
    return Figures(m[f"{prefix}total_return"], m[f"{prefix}annual_return"], m[f"{prefix}sharpe"],
                   m[f"{prefix}max_drawdown"], m[f"{prefix}exposure"], m[f"{prefix}trades"], m[f"{prefix}fees"],
                   m["bars"])


def present_signal(result: dict[str, Any]) -> View:
    m, counts = result["metrics"], result["counts"]
    codes = result["codes"]
    shown = codes_text(codes, CODES_SHOWN)
    strategy, benchmark = _figures(m), _figures(m, "benchmark_")
    facts = [
        *comparison_facts(strategy, benchmark, BASE, (f"{m['fees']:.2%}", f"{m['benchmark_fees']:.2%}")),
        (_("Signal days buy / sell"), f"{counts['buy']} / {counts['sell']}"),
        (_("Trades: buys / sells"), _("{buys} / {sells} ({n} round trips)").format(
            buys=m["buys"], sells=m["sells"], n=m["round_trips"])),
        *(_outcomes(m) if "open_in_profit" in m else []),  # absent from results stored before it (a re-post)
        (_("Daily turnover, fee a side"), f"{m['turnover']:.2%}, {m['fee_rate']:.2%}"),
        *split_facts(result.get("split") or {}),
        *_honesty_facts(result.get("honesty")),
    ]
    return View(title=_("Signal: {title}").format(title=result["title"]),
                summary=comparison_summary(_("Signal {title}").format(title=result["title"]), strategy, benchmark,
                                           BASE),
                lines=[shown, _("{first} – {last} · {dates} dates × {codes} codes").format(
                    first=result["first_date"], last=result["last_date"], dates=result["shape"][0],
                    codes=result["shape"][1])],
                facts=facts, notes=[*result.get("notes", []), _(result["conventions"])],
                warnings=list(result.get("warnings", [])))


def _outcomes(m: dict[str, Any]) -> list[tuple[str, str]]:
    """The win rate over closed round trips (n/a when none closed), and apart from it the open positions in profit
    so far: an open position is not a trade won."""
    if m["win_rate"] is None:
        rate = _("n/a: no round trip closed")
    else:
        won = round(m["win_rate"] * m["round_trips"])
        rate = _("{rate} ({won} of {n})").format(rate=f"{m['win_rate']:.1%}", won=won, n=m["round_trips"])
    facts = [(_("Win rate (closed round trips)"), rate)]
    if m["open_positions"]:
        facts.append((_("Open positions in profit"), _("{n} of {open}").format(n=m["open_in_profit"],
                                                                               open=m["open_positions"])))
    return facts


def _honesty_facts(honesty: dict[str, Any] | None) -> list[tuple[str, str]]:
    """The trials behind the backtest, and what the DSR and the PBO say of them (one line each)."""
    if not honesty:
        return []
    pbo = (_("{p}: how often the in-sample best of this thread's backtests ranks in the bottom half out of sample "
             "(CSCV)").format(p=f"{honesty['pbo']:.2f}") if honesty.get("pbo") is not None
           else _("not computed: it needs {minimum} backtests in this thread").format(minimum=PBO_MIN_TRIALS))
    return [(_("Trials"), _("{n} backtest(s) in this thread, {mine} by the requester in all").format(
                n=honesty["trials"], mine=honesty["person_trials"])),
            (_("Deflated Sharpe ratio"), _("{p}: the probability that the in-sample Sharpe ratio ({sr} a day) beats "
                                           "{sr0}, the best {n} backtest(s) without skill would reach by luck").format(
                p=f"{honesty['dsr']:.3f}", sr=f"{honesty['sharpe']:.3f}", sr0=f"{honesty['benchmark']:.3f}",
                n=honesty["trials"])),
            (_("Probability of backtest overfitting"), pbo)]
