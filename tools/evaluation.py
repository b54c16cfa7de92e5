"""Factor evaluation over wide frames (dates x codes), computing what alphalens-reloaded computes, vectorised.

Conventions (the tests compare each with alphalens-reloaded 0.5.1 on real data):
- forward return of period p at date t: close[t+p] / close[t] - 1, t+p counted in rows of the price
  calendar. Unlike alphalens, prices are **not forward-filled**: a missing price (no row, late listing) or a
  non-tradable day (`tradable` False, e.g. suspended) at t or at t+p makes that forward return missing, so
  a suspension never shows up as a zero return. With complete prices both agree exactly.
- the evaluated set (alphalens' "clean factor data"): rows with a finite factor, a tradable day t and a
  forward return for *every* period; then quantiles per date with `pd.qcut` semantics (right-closed bins
  on linearly interpolated edges, labels 1..q); a date whose edges are not unique (too many ties, a
  constant factor) drops out entirely, as alphalens drops it.
- IC = Pearson correlation of factor and forward return per date; Rank IC = Spearman (average ranks for
  ties), which is what alphalens calls "IC". Summary: mean, std (ddof 1), ICIR = mean / std per period
  (not annualised), t-stat = mean / (std / sqrt(n)), n dates.
- quantile returns are demeaned per date (minus the mean over all evaluated codes of that date); mean
  over dates, standard error = std over dates / sqrt(number of dates).
- spread = top quantile minus bottom quantile, per date, and its mean with standard error
  sqrt(se_top^2 + se_bottom^2). alphalens-reloaded's `compute_mean_returns_spread` halves this figure.
- factor-weighted long-short return per date: weights (f - mean f) / sum |f - mean f| over the date's
  codes, return = sum(weight x forward return) (alphalens `factor_returns`, demeaned).
- turnover of quantile q at period p: share of the names in q at t that were not in q at t-p (dates
  of the factor's calendar); factor rank autocorrelation: Pearson correlation of a date's ranks with
  the ranks p dates earlier, over codes present in both.
- annualisation: a period-p mean return r is put on a daily basis as (1 + r)^(1/p) - 1 (alphalens
  `rate_of_return`) and compounded over 252 trading days a year.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

TRADING_DAYS = 252


class EvaluationError(ValueError):
    """The factor and prices cannot be evaluated together; the message says why."""


@dataclass
class FactorEvaluation:
    periods: tuple[int, ...]
    quantiles: int
    forward_returns: dict[int, pd.DataFrame]  # period -> dates x codes, NaN outside the evaluated set
    factor_quantile: pd.DataFrame  # dates x codes, 1..q, NaN outside the evaluated set
    ic: pd.DataFrame  # dates x periods (Pearson)
    rank_ic: pd.DataFrame  # dates x periods (Spearman)
    ic_summary: pd.DataFrame  # rows (kind, period), columns mean, std, icir, t_stat, n
    quantile_returns_by_date: dict[int, pd.DataFrame]  # period -> dates x quantiles (demeaned)
    quantile_mean: pd.DataFrame  # quantiles x periods
    quantile_std_err: pd.DataFrame  # quantiles x periods
    spread: pd.DataFrame  # dates x periods: top minus bottom
    factor_returns: pd.DataFrame  # dates x periods: factor-weighted long-short
    turnover: dict[int, pd.DataFrame]  # period -> dates x quantiles
    rank_autocorrelation: pd.DataFrame  # dates x periods
    coverage: pd.Series = field(default_factory=lambda: pd.Series(dtype=float))  # evaluated codes per date

    def metrics(self) -> pd.DataFrame:
        """One row per period: the figures a summary shows and the database stores."""
        rows = []
        top, bottom = self.quantiles, 1
        for p in self.periods:
            ic, ric = self.ic_summary.loc[("ic", p)], self.ic_summary.loc[("rank_ic", p)]
            spread = self.spread[p].dropna()
            ls = self.factor_returns[p].dropna()
            se = float(np.sqrt(self.quantile_std_err.loc[top, p] ** 2 + self.quantile_std_err.loc[bottom, p] ** 2))
            rows.append({
                "period": p,
                "ic_mean": ic["mean"], "ic_std": ic["std"], "icir": ic["icir"], "ic_t": ic["t_stat"],
                "rank_ic_mean": ric["mean"], "rank_ic_std": ric["std"], "rank_icir": ric["icir"],
                "rank_ic_t": ric["t_stat"],
                "top_mean": float(self.quantile_mean.loc[top, p]),
                "bottom_mean": float(self.quantile_mean.loc[bottom, p]),
                "spread_mean": float(spread.mean()) if len(spread) else np.nan, "spread_se": se,
                "long_short_mean": float(ls.mean()) if len(ls) else np.nan,
                "long_short_ann": annualised(float(ls.mean()), p) if len(ls) else np.nan,
                "turnover_top": float(self.turnover[p][top].mean()),
                "turnover_bottom": float(self.turnover[p][bottom].mean()),
                "rank_autocorr": float(self.rank_autocorrelation[p].mean()),
                "dates": int(ic["n"]),
            })
        return pd.DataFrame(rows).set_index("period")


def annualised(period_return: float, period: int) -> float:
    daily = (1.0 + period_return) ** (1.0 / period) - 1.0
    return (1.0 + daily) ** TRADING_DAYS - 1.0


def evaluate_factor(factor: pd.DataFrame, prices: pd.DataFrame, periods: tuple[int, ...] = (1, 5, 20),
                    quantiles: int = 5, tradable: pd.DataFrame | None = None) -> FactorEvaluation:
    """Evaluate a dates x codes factor against dates x codes prices (adjusted closes)."""
    periods = tuple(sorted({int(p) for p in periods}))
    if not periods or periods[0] < 1:
        raise EvaluationError("periods must be positive integers")
    if quantiles < 2:
        raise EvaluationError("quantiles must be at least 2")
    prices = prices.sort_index()
    dates = factor.index.intersection(prices.index).sort_values()
    codes = factor.columns.intersection(prices.columns)
    if len(dates) == 0 or len(codes) == 0:
        raise EvaluationError("the factor and the prices share no dates or no codes (check date types and ts_code)")
    px = prices[codes].to_numpy(dtype=float, copy=True)
    trade_ok = np.isfinite(px) & (px > 0)
    if tradable is not None:
        trade_ok &= tradable.reindex(index=prices.index, columns=codes).fillna(False).to_numpy(dtype=bool)
    px[~trade_ok] = np.nan
    rows = prices.index.get_indexer(dates)

    fwd: dict[int, np.ndarray] = {}
    for p in periods:
        ahead = np.full_like(px, np.nan)
        ahead[:-p] = px[p:]
        fwd[p] = (ahead / px - 1.0)[rows]
    f = factor.reindex(index=dates, columns=codes).to_numpy(dtype=float)
    valid = np.isfinite(f) & trade_ok[rows]
    for p in periods:
        valid &= np.isfinite(fwd[p])

    quantile = _qcut_rows(np.where(valid, f, np.nan), quantiles)
    valid &= np.isfinite(quantile)
    f = np.where(valid, f, np.nan)
    for p in periods:
        fwd[p] = np.where(valid, fwd[p], np.nan)

    index = pd.Index(dates, name=factor.index.name)
    wide = lambda a: pd.DataFrame(a, index=index, columns=codes)  # noqa: E731
    ranks = _rank_rows(f)
    ic = pd.DataFrame({p: _row_corr(f, fwd[p]) for p in periods}, index=index)
    fwd_ranks = {p: _rank_rows(fwd[p]) for p in periods}
    rank_ic = pd.DataFrame({p: _row_corr(ranks, fwd_ranks[p]) for p in periods}, index=index)

    by_date, qmean, qse, spread = {}, {}, {}, {}
    labels = list(range(1, quantiles + 1))
    members = {q: quantile == q for q in labels}
    sizes = {q: members[q].sum(axis=1) for q in labels}
    for p in periods:
        demeaned = fwd[p] - _row_mean(fwd[p])[:, None]
        table = pd.DataFrame({q: _masked_mean(demeaned, members[q], sizes[q]) for q in labels}, index=index)
        by_date[p] = table
        qmean[p] = table.mean()
        qse[p] = table.std() / np.sqrt(table.count())
        spread[p] = table[quantiles] - table[1]
    centred = f - _row_mean(f)[:, None]
    gross = np.nansum(np.abs(centred), axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        weights = np.where(gross[:, None] > 0, centred / gross[:, None], 0.0 * centred)
    has_rows = valid.any(axis=1)
    factor_returns = pd.DataFrame(
        {p: np.where(has_rows, np.nansum(weights * fwd[p], axis=1), np.nan) for p in periods}, index=index)

    turnover = {p: pd.DataFrame({q: _turnover(members[q], p) for q in labels}, index=index) for p in periods}
    autocorr = pd.DataFrame({p: _row_corr(ranks, _shift_down(ranks, p)) for p in periods}, index=index)

    return FactorEvaluation(
        periods=periods, quantiles=quantiles,
        forward_returns={p: wide(fwd[p]) for p in periods},
        factor_quantile=wide(quantile),
        ic=ic, rank_ic=rank_ic, ic_summary=_ic_summary(ic, rank_ic),
        quantile_returns_by_date=by_date,
        quantile_mean=pd.DataFrame(qmean).rename_axis("quantile"),
        quantile_std_err=pd.DataFrame(qse).rename_axis("quantile"),
        spread=pd.DataFrame(spread, index=index), factor_returns=factor_returns,
        turnover=turnover, rank_autocorrelation=autocorr,
        coverage=pd.Series(valid.sum(axis=1), index=index, name="codes"),
    )


def _masked_mean(a: np.ndarray, mask: np.ndarray, count: np.ndarray) -> np.ndarray:
    """Row means of `a` over `mask` (NaN where a row has no cell in it)."""
    total = np.where(mask, a, 0.0).sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(count > 0, total / np.maximum(count, 1), np.nan)


def _row_mean(a: np.ndarray) -> np.ndarray:
    finite = np.isfinite(a)
    return _masked_mean(a, finite, finite.sum(axis=1))


def _rank_rows(a: np.ndarray) -> np.ndarray:
    """Average ranks (1-based, ties share their mean rank) per row; NaN stays NaN (pandas rank(axis=1))."""
    width = a.shape[1]
    order = np.argsort(a, axis=1)  # NaN sorts last; the order within ties does not change their mean rank
    ordered = np.take_along_axis(a, order, axis=1)
    starts = np.ones(a.shape, dtype=bool)
    starts[:, 1:] = ordered[:, 1:] != ordered[:, :-1]
    ends = np.ones(a.shape, dtype=bool)
    ends[:, :-1] = starts[:, 1:]
    position = np.broadcast_to(np.arange(width), a.shape)
    first = np.maximum.accumulate(np.where(starts, position, 0), axis=1)
    last = np.minimum.accumulate(np.where(ends, position, width - 1)[:, ::-1], axis=1)[:, ::-1]
    ranked = (first + last) / 2.0 + 1.0
    ranked[np.isnan(ordered)] = np.nan
    out = np.empty(a.shape)
    np.put_along_axis(out, order, ranked, axis=1)
    return out


def _row_corr(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Pearson correlation per row over the columns where both are finite; NaN when undefined."""
    both = np.isfinite(x) & np.isfinite(y)
    n = both.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        xc = np.where(both, x - _masked_mean(x, both, n)[:, None], 0.0)
        yc = np.where(both, y - _masked_mean(y, both, n)[:, None], 0.0)
        cov = (xc * yc).sum(axis=1)
        var = np.sqrt((xc * xc).sum(axis=1) * (yc * yc).sum(axis=1))
        r = np.where((n >= 2) & (var > 0), cov / var, np.nan)
    return np.clip(r, -1.0, 1.0)


def _qcut_rows(values: np.ndarray, quantiles: int) -> np.ndarray:
    """Per-row `pd.qcut(row, q, labels=False) + 1`; rows with non-unique edges (or no values) get NaN."""
    out = np.full(values.shape, np.nan)
    present = np.isfinite(values).any(axis=1)
    if not present.any():
        return out
    sub = values[present]
    qs = np.linspace(0, 1, quantiles + 1)
    edges = np.nanpercentile(sub, qs * 100, axis=1, method="linear").T  # as pandas' Series.quantile does
    unique = (np.diff(edges, axis=1) != 0).all(axis=1)
    labels = np.ones(sub.shape)
    for k in range(1, quantiles):
        labels += sub > edges[:, k : k + 1]
    labels[~np.isfinite(sub) | ~unique[:, None]] = np.nan
    out[present] = labels
    return out


def _turnover(member: np.ndarray, period: int) -> np.ndarray:
    """Share of today's members that were not members `period` dates earlier (NaN when either date is empty)."""
    count = member.sum(axis=1)
    before = _shift_down(member.astype(float), period)
    new = (member & ~(before == 1)).sum(axis=1)
    defined = (count > 0) & (np.nansum(before, axis=1) > 0)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(defined, new / np.where(count > 0, count, 1), np.nan)


def _shift_down(a: np.ndarray, period: int) -> np.ndarray:
    out = np.full(a.shape, np.nan)
    if period < len(a):
        out[period:] = a[:-period]
    return out


def _ic_summary(ic: pd.DataFrame, rank_ic: pd.DataFrame) -> pd.DataFrame:
    rows = {}
    for kind, table in (("ic", ic), ("rank_ic", rank_ic)):
        for p in table.columns:
            s = table[p].dropna()
            mean, std, n = float(s.mean()), float(s.std()), int(s.count())
            rows[(kind, p)] = {"mean": mean, "std": std, "icir": mean / std if std > 0 else np.nan,
                               "t_stat": mean / (std / np.sqrt(n)) if std > 0 and n > 1 else np.nan, "n": n}
    return pd.DataFrame.from_dict(rows, orient="index").rename_axis(["kind", "period"])
