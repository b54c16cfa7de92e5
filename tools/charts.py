"""Charts as PNG bytes (matplotlib, headless)."""

from __future__ import annotations

import io

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402


def _png(fig: Figure) -> bytes:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=110, bbox_inches="tight")
    plt.close(fig)
    return buffer.getvalue()


def price_with_trades(close: pd.Series, positions: pd.Series, title: str) -> bytes:
    """One code's close with markers where its position goes up (buy) or down (sell)."""
    change = positions.diff().fillna(positions)
    fig, ax = plt.subplots(figsize=(10, 4.5))
    ax.plot(close.index, close.to_numpy(), color="#34495e", linewidth=1.2, label="close")
    buys, sells = change[change > 0].index, change[change < 0].index
    ax.scatter(buys, close.reindex(buys), marker="^", color="#27ae60", s=60, label=f"buy ({len(buys)})", zorder=3)
    ax.scatter(sells, close.reindex(sells), marker="v", color="#c0392b", s=60, label=f"sell ({len(sells)})",
               zorder=3)
    ax.set_title(title)
    ax.legend(loc="best")
    ax.grid(alpha=0.3)
    return _png(fig)


def equity_and_signal_counts(equity: pd.Series, signal: pd.DataFrame, title: str) -> bytes:
    """Portfolio equity curve above daily counts of buy and sell signals."""
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(10, 6), sharex=True, gridspec_kw={"height_ratios": [2, 1]})
    top.plot(equity.index, equity.to_numpy(), color="#2c3e50", linewidth=1.3)
    top.axhline(1.0, color="#95a5a6", linewidth=0.8)
    top.set_title(title)
    top.set_ylabel("equity")
    top.grid(alpha=0.3)
    buys, sells = (signal == 1).sum(axis=1).to_numpy(), (signal == -1).sum(axis=1).to_numpy()
    bottom.fill_between(signal.index, buys, step="mid", color="#27ae60", alpha=0.8, linewidth=0, label="buy")
    bottom.fill_between(signal.index, -sells, step="mid", color="#c0392b", alpha=0.8, linewidth=0, label="sell")
    bottom.set_ylabel("signals")
    bottom.legend(loc="upper left")
    bottom.grid(alpha=0.3)
    return _png(fig)


def factor_tear_sheet(ic: pd.Series, rank_ic: pd.Series, quantile_mean: pd.Series,
                      quantile_daily: pd.DataFrame, turnover: pd.DataFrame, title: str) -> bytes:
    """Four panels: IC and Rank IC with a 20-day rolling mean, mean (demeaned) return by quantile,
    cumulative demeaned return per quantile, and turnover of the top and bottom quantiles."""
    fig, axes = plt.subplots(2, 2, figsize=(13, 8))
    (ic_ax, bar_ax), (cum_ax, turn_ax) = axes
    ic_ax.bar(rank_ic.index, rank_ic.to_numpy(), color="#95a5a6", width=1.0, label="Rank IC")
    ic_ax.plot(rank_ic.index, rank_ic.rolling(20, min_periods=5).mean().to_numpy(), color="#c0392b",
               label="Rank IC, 20-day mean")
    ic_ax.plot(ic.index, ic.rolling(20, min_periods=5).mean().to_numpy(), color="#2c3e50", label="IC, 20-day mean")
    ic_ax.axhline(0, color="black", linewidth=0.6)
    ic_ax.set_title(f"IC and Rank IC ({ic.name}-day forward return)")
    ic_ax.legend(loc="best", fontsize=8)
    bar_ax.bar(range(len(quantile_mean)), quantile_mean.to_numpy() * 1e4, color="#2980b9")
    bar_ax.set_xticks(range(len(quantile_mean)), [f"Q{q}" for q in quantile_mean.index])
    bar_ax.set_title(f"Mean demeaned {quantile_mean.name}-day return by quantile (bps)")
    bar_ax.axhline(0, color="black", linewidth=0.6)
    cumulative = (1 + quantile_daily.fillna(0)).cumprod() - 1
    for q in cumulative.columns:
        cum_ax.plot(cumulative.index, cumulative[q].to_numpy(), label=f"Q{q}")
    cum_ax.set_title("Cumulative demeaned 1-day return by quantile")
    cum_ax.legend(loc="best", fontsize=8)
    for q, color in ((turnover.columns[0], "#27ae60"), (turnover.columns[-1], "#c0392b")):
        turn_ax.plot(turnover.index, turnover[q].rolling(20, min_periods=5).mean().to_numpy(), color=color,
                     label=f"Q{q}, 20-day mean")
    turn_ax.set_title("Quantile turnover (1 day)")
    turn_ax.legend(loc="best", fontsize=8)
    for ax in axes.ravel():
        ax.grid(alpha=0.3)
    fig.suptitle(title)
    fig.autofmt_xdate()
    return _png(fig)
