"""Charts as PNG bytes (matplotlib, headless). A chart with nothing to plot draws a note saying why instead
of empty axes; the functions that decide what is drawn (`nothing_to_plot`, `factor_chart_plan`) are plain
data, so they are tested without looking at pixels."""

from __future__ import annotations

import io
from dataclasses import dataclass

import matplotlib

matplotlib.use("Agg")

import matplotlib.dates as mdates  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.axes import Axes  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.ticker import FixedLocator, FuncFormatter  # noqa: E402

from tools.factors.ic import FactorEvaluation  # noqa: E402
from tools.i18n import _  # noqa: E402
from tools.research import cjk_font  # noqa: E402
from tools.research.backtest import executed_changes  # noqa: E402

cjk_font.install()  # titles and labels may be Chinese (the catalogs', a stock's name)

ROLLING = 20  # dates in the rolling means of IC and turnover
FEW_DATES = 8  # up to this many dates, each is a tick of its own
HORIZON_COLOURS = ("#2c3e50", "#c0392b", "#27ae60", "#8e44ad", "#d35400", "#2980b9")


def _png(fig: Figure) -> bytes:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=110, bbox_inches="tight")
    plt.close(fig)
    return buffer.getvalue()


def signed_percent(change: float) -> str:
    """A change as a signed percentage to two places; a change that rounds to nothing is +0.00%, never -0.00%."""
    text = f"{change:+.2%}"
    return "+0.00%" if text == "-0.00%" else text


def date_axis(ax: Axes, dates: pd.DatetimeIndex) -> None:
    """Session dates on the x axis, never hours: each date a tick when there are few (one date alone sits in the
    middle of a week, not stretched over years), else a concise axis of days, months or years."""
    if len(dates) <= FEW_DATES:
        ax.xaxis.set_major_locator(FixedLocator(mdates.date2num(dates)))
        ax.xaxis.set_major_formatter(mdates.DateFormatter("%Y-%m-%d"))
        pad = pd.Timedelta(days=3)
        ax.set_xlim(dates.min() - pad, dates.max() + pad)
        ax.tick_params(axis="x", labelrotation=30)
    else:
        locator = mdates.AutoDateLocator(minticks=3, maxticks=8)
        ax.xaxis.set_major_locator(locator)
        ax.xaxis.set_major_formatter(mdates.ConciseDateFormatter(locator))


def money_axis(ax: Axes) -> None:
    """Yuan on the y axis as whole numbers with thousands separators, no offset or scientific notation."""
    ax.yaxis.set_major_formatter(FuncFormatter(lambda value, _position: f"{value:,.0f}"))
    ax.set_ylabel(_("equity (CNY)"))


def note_chart(title: str, note: str) -> bytes:
    """A chart that only says why there is nothing to plot."""
    fig, ax = plt.subplots(figsize=(10, 3))
    ax.set_axis_off()
    ax.set_title(title)
    ax.text(0.5, 0.5, note, ha="center", va="center", wrap=True, fontsize=11, transform=ax.transAxes)
    return _png(fig)


def nothing_to_plot(data: pd.Series | pd.DataFrame, what: str) -> str | None:
    """Why `data` gives nothing to plot (no rows, no columns, every value missing), or None when it does."""
    if data.empty:
        return (_("no {what} to plot: no dates") if len(data.index) == 0 else _("no {what} to plot: no codes")).format(
            what=what)
    if not data.notna().to_numpy().any():
        return _("no {what} to plot: every value is missing").format(what=what)
    return None


def price_with_trades(close: pd.Series, positions: pd.Series, title: str, *, equity: pd.Series | None = None,
                      benchmark: pd.Series | None = None) -> bytes:
    """One code's close with markers where the backtest buys (position up) and sells (position down), counted as
    the backtest's metrics count them; with `equity` and `benchmark`, a second panel compares the strategy's
    equity with buying and holding the code."""
    note = nothing_to_plot(close, _("prices"))
    if note:
        return note_chart(title, note)
    compare = equity is not None and not equity.empty
    fig, axes = plt.subplots(2 if compare else 1, 1, figsize=(10, 7 if compare else 4.5), sharex=True, squeeze=False,
                             gridspec_kw={"height_ratios": [3, 2] if compare else [1]})
    ax = axes[0, 0]
    ax.plot(close.index, close.to_numpy(), color="#34495e", linewidth=1.2, label=_("close"))
    change = executed_changes(positions)
    buys, sells = change[change > 0].index, change[change < 0].index
    ax.scatter(buys, close.reindex(buys), marker="^", color="#27ae60", s=60,
               label=_("buy ({n})").format(n=len(buys)), zorder=3)
    ax.scatter(sells, close.reindex(sells), marker="v", color="#c0392b", s=60,
               label=_("sell ({n})").format(n=len(sells)), zorder=3)
    ax.set_title(title)
    ax.legend(loc="best")
    ax.grid(alpha=0.3)
    if equity is not None and compare:
        _equity_panel(axes[1, 0], equity, benchmark, _("buy-and-hold"))
    date_axis(axes[-1, 0], pd.DatetimeIndex(close.index))
    return _png(fig)


def equity_and_signal_counts(equity: pd.Series, signal: pd.DataFrame, title: str, *,
                             benchmark: pd.Series | None = None, exposure: pd.Series | None = None) -> bytes:
    """Portfolio equity (with the equal-weight buy-and-hold `benchmark` when given), the fraction of capital
    invested (`exposure`, when given), and the daily number of codes signalling 1 and -1."""
    note = nothing_to_plot(signal, _("signal")) or nothing_to_plot(equity, _("backtest bars"))
    if note:
        return note_chart(title, note)
    panels = 3 if exposure is not None else 2
    fig, axes = plt.subplots(panels, 1, figsize=(10, 2.5 + 2 * panels), sharex=True,
                             gridspec_kw={"height_ratios": [2] + [1] * (panels - 1)})
    top, bottom = axes[0], axes[-1]
    _equity_panel(top, equity, benchmark, _("buy-and-hold, equal weight"))
    top.set_title(title)
    if exposure is not None:
        middle = axes[1]
        middle.fill_between(exposure.index, exposure.to_numpy(), step="mid", color="#2980b9", alpha=0.6, linewidth=0)
        middle.set_ylim(0, max(1.0, float(exposure.max())))
        middle.set_ylabel(_("invested\n(mean {share})").format(share=f"{exposure.mean():.0%}"))
        middle.grid(alpha=0.3)
    buys, sells = (signal == 1).sum(axis=1).to_numpy(), (signal == -1).sum(axis=1).to_numpy()
    bottom.fill_between(signal.index, buys, step="mid", color="#27ae60", alpha=0.8, linewidth=0,
                        label=_("codes at 1"))
    bottom.fill_between(signal.index, -sells, step="mid", color="#c0392b", alpha=0.8, linewidth=0,
                        label=_("codes at -1"))
    bottom.set_ylabel(_("signals"))
    bottom.legend(loc="upper left")
    bottom.grid(alpha=0.3)
    date_axis(bottom, pd.DatetimeIndex(signal.index))
    return _png(fig)


def _equity_panel(ax: Axes, equity: pd.Series, benchmark: pd.Series | None, label: str) -> None:
    ax.plot(equity.index, equity.to_numpy(), color="#2c3e50", linewidth=1.3,
            label=_("strategy ({change})").format(change=signed_percent(equity.iloc[-1] - 1)))
    if benchmark is not None and not benchmark.empty:
        ax.plot(benchmark.index, benchmark.to_numpy(), color="#e67e22", linewidth=1.1,
                label=f"{label} ({signed_percent(benchmark.iloc[-1] - 1)})")
    ax.axhline(1.0, color="#95a5a6", linewidth=0.8)
    ax.set_ylabel(_("equity"))
    ax.legend(loc="upper left", fontsize=8)
    ax.grid(alpha=0.3)


@dataclass(frozen=True)
class FactorChartPlan:
    """What the factor chart draws: the horizons with dates to plot, why the others are left out, and the note
    drawn instead of the panels when no horizon has any."""

    horizons: tuple[int, ...]
    skipped: dict[int, str]
    note: str | None


def factor_chart_plan(evaluation: FactorEvaluation) -> FactorChartPlan:
    """Plot every period with at least one dated Rank IC; a period without says why (`horizons()` reasons)."""
    horizons, skipped = [], {}
    for p, h in evaluation.horizons().items():
        if h.rank_ic_dates:
            horizons.append(p)
        else:
            skipped[p] = h.reason or _("no date with a Rank IC")
    note = None if horizons else _("no evaluable dates for any horizon: {reasons}").format(
        reasons="; ".join(evaluation.reasons()))
    return FactorChartPlan(tuple(horizons), skipped, note)


def factor_chart(evaluation: FactorEvaluation, title: str) -> bytes:
    """Four panels over every evaluated horizon: cumulative Rank IC, mean demeaned return by quantile (on a daily
    basis), cumulative top-minus-bottom spread, and top / bottom quantile turnover; a note when nothing plots."""
    plan = factor_chart_plan(evaluation)
    if plan.note:
        return note_chart(title, plan.note)
    fig, axes = plt.subplots(2, 2, figsize=(13, 8), layout="constrained")
    (ic_ax, bar_ax), (spread_ax, turn_ax) = axes
    top, bottom = evaluation.quantiles, 1
    width = 0.8 / len(plan.horizons)
    quantiles = np.arange(1, evaluation.quantiles + 1)
    for i, p in enumerate(plan.horizons):
        colour = HORIZON_COLOURS[i % len(HORIZON_COLOURS)]
        rank_ic = evaluation.rank_ic[p].dropna()
        ic_ax.plot(rank_ic.index, rank_ic.cumsum().to_numpy(), color=colour,
                   label=_("{p}d (mean {mean}, {n} dates)").format(p=p, mean=f"{rank_ic.mean():.3f}", n=len(rank_ic)))
        daily_rate = (1 + evaluation.quantile_mean[p]) ** (1 / p) - 1
        bar_ax.bar(quantiles + (i - (len(plan.horizons) - 1) / 2) * width, daily_rate.to_numpy() * 1e4, width,
                   color=colour, label=f"{p}d")
        spread = evaluation.spread[p].dropna()
        spread_ax.plot(spread.index, (spread / p).cumsum().to_numpy(), color=colour, label=f"{p}d")
        for q, style in ((top, "-"), (bottom, "--")):
            turnover = evaluation.turnover[p][q].dropna().rolling(ROLLING, min_periods=1).mean()
            turn_ax.plot(turnover.index, turnover.to_numpy(), color=colour, linestyle=style, label=f"{p}d Q{q}")
    ic_ax.set_title(_("Cumulative Rank IC per horizon"))
    bar_ax.set_xticks(quantiles, [f"Q{q}" for q in quantiles])
    bar_ax.set_title(_("Mean demeaned return by quantile (bps a day, (1 + r)^(1/p) - 1)"))
    spread_ax.set_title(_("Cumulative Q{top} - Q{bottom} spread (each date's p-day spread / p)").format(
        top=top, bottom=bottom))
    turn_ax.set_title(_("Quantile turnover, {n}-date mean (solid Q{top}, dashed Q{bottom})").format(
        n=ROLLING, top=top, bottom=bottom))
    for ax in axes.ravel():
        ax.axhline(0, color="black", linewidth=0.6)
        ax.legend(loc="best", fontsize=8)
        ax.grid(alpha=0.3)
    if plan.skipped:
        fig.supxlabel(_("not plotted: {reasons}").format(reasons="; ".join(f"{p}d: {r}" for p, r in
                                                                          plan.skipped.items())),
                      fontsize=8, wrap=True)
    for ax in (ic_ax, spread_ax, turn_ax):
        ax.tick_params(axis="x", labelrotation=30)
    fig.suptitle(title)
    return _png(fig)


def account_equity(dates: list[str], equity: list[float], starting_cash: float, title: str,
                   benchmark: list[float] | None = None, benchmark_label: str | None = None) -> bytes:
    """An account's equity at each mark (YYYYMMDD dates) in yuan, against its starting cash and, when given, a
    benchmark's equity on the same dates (buy-and-hold from the same cash)."""
    note = nothing_to_plot(pd.Series(equity, dtype="float64"), _("marks (the account has not traded yet)"))
    if note:
        return note_chart(title, note)
    return _png(account_figure(dates, equity, starting_cash, title, benchmark, benchmark_label))


def account_figure(dates: list[str], equity: list[float], starting_cash: float, title: str,
                   benchmark: list[float] | None = None, benchmark_label: str | None = None) -> Figure:
    """`account_equity`'s figure, before it is rendered."""
    index = pd.to_datetime(dates, format="%Y%m%d")
    series = pd.Series(equity, index=index, dtype="float64")
    fig, ax = plt.subplots(figsize=(10, 4))
    few = len(series) < 30
    ax.plot(series.index, series.to_numpy(), color="#2c3e50", linewidth=1.3, marker="o" if few else None,
            label=_("equity ({change})").format(change=signed_percent(series.iloc[-1] / starting_cash - 1)))
    if benchmark:
        compared = pd.Series(benchmark, index=index, dtype="float64")
        change = signed_percent(compared.iloc[-1] / starting_cash - 1)
        ax.plot(compared.index, compared.to_numpy(), color="#e67e22", linewidth=1.1, marker="o" if few else None,
                label=f"{benchmark_label or _('buy-and-hold')} ({change})")
    ax.axhline(starting_cash, color="#95a5a6", linewidth=0.8, label=_("starting cash"))
    ax.set_title(title)
    date_axis(ax, series.index)
    money_axis(ax)
    ax.legend(loc="upper left", fontsize=8)
    ax.grid(alpha=0.3)
    return fig


def trades_and_equity(closes: pd.Series, buys: list[str], sells: list[str], equity: pd.Series,
                      benchmark: pd.Series, starting_cash: float, title: str) -> bytes:
    """A one-code account's backtest: the close with its buys and sells (YYYYMMDD fill dates) above, its equity in
    yuan beside buy-and-hold's below; `closes`, `equity` and `benchmark` are indexed by YYYYMMDD dates."""
    note = nothing_to_plot(closes, _("prices"))
    if note:
        return note_chart(title, note)
    return _png(trades_figure(closes, buys, sells, equity, benchmark, starting_cash, title))


def trades_figure(closes: pd.Series, buys: list[str], sells: list[str], equity: pd.Series, benchmark: pd.Series,
                  starting_cash: float, title: str) -> Figure:
    """`trades_and_equity`'s figure, before it is rendered."""
    dated = {name: pd.Series(series.to_numpy(dtype="float64"), index=pd.to_datetime(series.index, format="%Y%m%d"))
             for name, series in (("close", closes), ("equity", equity), ("benchmark", benchmark))}
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(10, 7), sharex=True, gridspec_kw={"height_ratios": [3, 2]})
    close = dated["close"]
    few = len(close) < 30
    top.plot(close.index, close.to_numpy(), color="#34495e", linewidth=1.2, marker="o" if few else None,
             label=_("close"))
    for days, marker, colour, label in ((buys, "^", "#27ae60", _("buy ({n})")),
                                        (sells, "v", "#c0392b", _("sell ({n})"))):
        at = pd.to_datetime(pd.Index(days), format="%Y%m%d")
        top.scatter(at, close.reindex(at).to_numpy(), marker=marker, color=colour, s=60, zorder=3,
                    label=label.format(n=len(days)))
    top.set_title(title)
    top.legend(loc="best")
    top.grid(alpha=0.3)
    strategy, held = dated["equity"], dated["benchmark"]
    bottom.plot(strategy.index, strategy.to_numpy(), color="#2c3e50", linewidth=1.3, marker="o" if few else None,
                label=_("strategy ({change})").format(change=signed_percent(strategy.iloc[-1] / starting_cash - 1)))
    bottom.plot(held.index, held.to_numpy(), color="#e67e22", linewidth=1.1, marker="o" if few else None,
                label=f"{_('buy-and-hold')} ({signed_percent(held.iloc[-1] / starting_cash - 1)})")
    bottom.axhline(starting_cash, color="#95a5a6", linewidth=0.8)
    money_axis(bottom)
    bottom.legend(loc="upper left", fontsize=8)
    bottom.grid(alpha=0.3)
    date_axis(bottom, pd.DatetimeIndex(close.index))
    return fig


def price_with_indicators(lines: pd.DataFrame, title: str) -> bytes:
    """A stock's close with MA(20), MA(60) and the Bollinger bands, and MACD below: `lines` has a DatetimeIndex and
    columns close, MA(20), MA(60), BOLL upper, BOLL lower, MACD DIF, MACD DEA, MACD hist (NaN in warm-ups)."""
    note = nothing_to_plot(lines["close"], _("prices"))
    if note:
        return note_chart(title, note)
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(10, 6.5), sharex=True, gridspec_kw={"height_ratios": [3, 1.3]})
    top.plot(lines.index, lines["close"].to_numpy(), color="#34495e", linewidth=1.3, label=_("close"))
    for name, color in (("MA(20)", "#2980b9"), ("MA(60)", "#8e44ad")):
        top.plot(lines.index, lines[name].to_numpy(), color=color, linewidth=1, label=name)
    top.fill_between(lines.index, lines["BOLL lower"].to_numpy(), lines["BOLL upper"].to_numpy(), color="#95a5a6",
                     alpha=0.2, label="BOLL(20, 2)")
    top.set_title(title)
    top.legend(loc="best")
    top.grid(alpha=0.3)
    hist = lines["MACD hist"].to_numpy()
    bottom.bar(lines.index, hist, color=["#27ae60" if v >= 0 else "#c0392b" for v in hist], width=1.0)
    bottom.plot(lines.index, lines["MACD DIF"].to_numpy(), color="#2c3e50", linewidth=1, label="DIF")
    bottom.plot(lines.index, lines["MACD DEA"].to_numpy(), color="#e67e22", linewidth=1, label="DEA")
    bottom.set_ylabel("MACD(12,26,9)")
    bottom.legend(loc="best")
    bottom.grid(alpha=0.3)
    date_axis(bottom, pd.DatetimeIndex(lines.index))
    return _png(fig)


def rolling_ic_chart(ics: dict[str, float], reference: float, levels: dict[str, float], title: str) -> bytes:
    """A library factor's daily rank IC (YYYYMMDD → IC) as bars, its rolling 20- and 60-session means, its holdout
    level and the `levels` (label → IC) at which its state changes."""
    series = pd.Series({pd.Timestamp(day): value for day, value in sorted(ics.items())}, dtype="float64")
    note = nothing_to_plot(series.dropna(), _("daily rank ICs"))
    if note:
        return note_chart(title, note)
    fig, ax = plt.subplots(figsize=(10, 4.6))
    ax.bar(series.index, series.to_numpy(), color="#bdc3c7", width=0.8, label=_("daily rank IC"))
    for window, color in ((20, "#2980b9"), (60, "#8e44ad")):
        rolling = series.rolling(window, min_periods=min(window, 5)).mean()
        ax.plot(rolling.index, rolling.to_numpy(), color=color, linewidth=1.4,
                label=_("{n}-session mean").format(n=window))
    ax.axhline(reference, color="#27ae60", linewidth=1.0, label=_("holdout level {ic}").format(ic=f"{reference:.4f}"))
    for (label, level), style in zip(levels.items(), ("--", ":"), strict=False):
        ax.axhline(level, color="#c0392b", linewidth=0.9, linestyle=style, label=f"{label} {level:.4f}")
    ax.axhline(0, color="#7f8c8d", linewidth=0.6)
    ax.set_title(title)
    date_axis(ax, pd.DatetimeIndex(series.index))
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.12), ncol=3, fontsize=8)  # below: the bars stay visible
    ax.grid(alpha=0.3)
    fig.tight_layout()
    return _png(fig)
