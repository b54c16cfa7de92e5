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
