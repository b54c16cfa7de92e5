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
- turnover of quantile q at period p: share of the names in q at t that were not in q at t-p; factor rank
  autocorrelation: Pearson correlation of a date's ranks with the ranks p dates earlier, over codes present
  in both. Lags count dates of the factor's calendar; when the date p earlier has no evaluated codes, both
  are NaN. alphalens lags on the frequency it infers for the index (the same for a daily factor), and when
  it infers none (e.g. a weekly factor) over the dates that survived cleaning, which can pair dates weeks
  apart.
- annualisation: a period-p mean return r is put on a daily basis as (1 + r)^(1/p) - 1 (alphalens
  `rate_of_return`) and compounded over 252 trading days a year.
- missing figures: `DateCounts` records how many factor dates survive each requirement above, so
  `FactorEvaluation.horizons()` and `missing_reasons()` say why a figure is NaN (e.g. the prices end
  before a forward return exists), and `shortfall()` flags fewer than `MIN_EVALUATED_DATES` dates.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

TRADING_DAYS = 252
MIN_EVALUATED_DATES = 20  # fewer dates with an IC than this make figures too thin to save without approval


class EvaluationError(ValueError):
    """The factor and prices cannot be evaluated together; the message says why."""


@dataclass(frozen=True)
class DateCounts:
    """How many factor dates pass each requirement of the evaluated set, in order."""

    dates: int  # factor dates that are also price dates
    with_values: int  # ... with a finite factor value for at least one code
    in_calendar: dict[int, int]  # period -> dates with a price row `period` rows later
    with_forward: dict[int, int]  # period -> dates where a code has a factor value and that period's forward return
    with_all_forward: int  # dates where a code has a factor value and a forward return for every period
    evaluated: int  # dates left once dates without unique quantile edges drop out
    price_end: pd.Timestamp  # the last price date


@dataclass(frozen=True)
class HorizonCoverage:
    """Dates behind one period's figures, and why there are none (None when there are some)."""

    period: int
    forward_dates: int  # dates where a code has a factor value and this period's forward return
    evaluated_dates: int  # dates in the evaluated set (the same for every period: it needs all of them)
    ic_dates: int  # dates with a Pearson IC (metrics()["dates"])
    rank_ic_dates: int  # dates with a Rank IC
    reason: str | None


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
    counts: DateCounts
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

    def horizons(self) -> dict[int, HorizonCoverage]:
        """Per period: the dates its figures rest on and, when it has no dated IC, why."""
        return {p: HorizonCoverage(p, self.counts.with_forward[p], self.counts.evaluated,
                                   int(self.ic_summary.loc[("ic", p), "n"]),
                                   int(self.ic_summary.loc[("rank_ic", p), "n"]), self._horizon_reason(p))
                for p in self.periods}

    def missing_reasons(self) -> dict[int, dict[str, str]]:
        """Period -> metric -> why it is NaN, for every NaN figure of `metrics()` (periods without one left out)."""
        out: dict[int, dict[str, str]] = {}
        for p, row in self.metrics().iterrows():
            horizon = self._horizon_reason(int(p))
            reasons = {str(name): horizon or self._metric_reason(str(name), int(p))
                       for name, value in row.items() if not np.isfinite(value)}
            if reasons:
                out[int(p)] = reasons
        return out

    def reasons(self, periods: Iterable[int] | None = None) -> list[str]:
        """The distinct reasons why `periods` (default all) have no dated IC; one that repeats inside another
        (a longer horizon's, quoted by the shorter ones it blocks) is given once."""
        found = [r for p in (self.periods if periods is None else periods) if (r := self._horizon_reason(p))]
        found = list(dict.fromkeys(found))
        return [r for r in found if not any(r != other and r in other for other in found)]

    def shortfall(self, minimum: int = MIN_EVALUATED_DATES) -> str | None:
        """Why the figures are too thin to keep (a period with fewer than `minimum` dates with an IC), or None."""
        short = {p: min(h.ic_dates, h.rank_ic_dates) for p, h in self.horizons().items()}
        short = {p: n for p, n in short.items() if n < minimum}
        if not short:
            return None
        c = self.counts
        funnel = (f"dates: {c.dates} in the factor, {c.with_values} with values, "
                  + ", ".join(f"{c.with_forward[p]} with a forward {p}d return" for p in self.periods)
                  + f" (prices end {c.price_end:%Y%m%d}), {c.evaluated} evaluated")
        counts = ", ".join(f"{p}d: {n}" for p, n in short.items())
        detail = "; ".join(self.reasons(short))
        return f"fewer than {minimum} evaluable dates ({counts})" + (f": {detail}" if detail else "") + f". {funnel}"

    def _horizon_reason(self, period: int) -> str | None:
        """Why `period` has no date with an IC, from the first requirement no date meets."""
        c = self.counts
        if c.with_values == 0:
            return f"the factor has no finite value on any of its {c.dates} price date(s)"
        if c.in_calendar[period] == 0:
            return (f"no forward {period}d return: the data ends {c.price_end:%Y%m%d}, fewer than {period} trading "
                    f"day(s) after the first factor date {self.ic.index[0]:%Y%m%d}")
        if c.with_forward[period] == 0:
            return (f"no forward {period}d return: no code with a factor value trades both on a date and {period} "
                    "trading day(s) later (suspended or not listed)")
        if c.with_all_forward == 0:
            lacking = [q for q in self.periods if c.with_forward[q] == 0]
            together = ", ".join(f"{q}d" for q in self.periods)
            if not lacking:
                return f"no code has a forward return for every horizon evaluated together ({together}) on one date"
            q = lacking[-1]
            return (f"no date has a forward return for every horizon evaluated together ({together}), because "
                    f"{self._horizon_reason(q)}; evaluate without {q}d to use the others")
        if c.evaluated == 0:
            return (f"no date has {self.quantiles} distinct quantile edges (too few codes or too many tied factor "
                    "values)")
        if min(self.ic[period].count(), self.rank_ic[period].count()) == 0:
            return f"no date has 2 or more evaluated codes whose factor values and {period}d returns both vary"
        return None

    def _metric_reason(self, name: str, period: int) -> str:
        """Why one figure is NaN when its period has dates with an IC."""
        if name.startswith(("ic", "rank_ic")):
            kind, label = ("rank_ic", "Rank IC") if name.startswith("rank_ic") else ("ic", "IC")
            n = int(self.ic_summary.loc[(kind, period), "n"])
            if n < 2:
                return f"only {n} date(s) with a defined {label}: a standard deviation needs 2"
            return f"the {label} is the same on every date (standard deviation 0)"
        if name in ("top_mean", "bottom_mean", "spread_mean"):
            return "the top or bottom quantile is empty on every evaluated date (tied factor values)"
        if name == "spread_se":
            return "a standard error needs 2 or more evaluated dates with the top and bottom quantiles"
        if name.startswith(("turnover", "rank_autocorr")):
            return (f"needs an evaluated date {period} date(s) after another; {self.counts.evaluated} of "
                    f"{self.counts.dates} factor date(s) are evaluated")
        return "not defined on the evaluated dates"


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
    with ThreadPoolExecutor(max_workers=min(len(periods), os.cpu_count() or 1)) as pool:  # numpy frees the GIL
        pending = {p: pool.submit(_forward_returns, px, rows, p) for p in periods}
        f = factor.reindex(index=dates, columns=codes).to_numpy(dtype=float, copy=True)
        fwd = {p: job.result() for p, job in pending.items()}  # finite only where t and t+p are tradable
        del px, trade_ok
        valid = np.isfinite(f)
        finite = valid.copy()
        with_values, with_forward = int(finite.any(axis=1).sum()), {}
        for p in periods:
            ok = np.isfinite(fwd[p])
            valid &= ok
            ok &= finite
            with_forward[p] = int(ok.any(axis=1).sum())
        with_all_forward = int(valid.any(axis=1).sum())
        del finite, ok
        f[~valid] = np.nan
        order = np.argsort(f, axis=1)  # NaN last; shared by the quantile edges and the factor's ranks
        ordered = np.take_along_axis(f, order, axis=1)
        labels = _quantile_labels(f, ordered, valid.sum(axis=1), quantiles)
        valid = labels > 0  # dates whose edges are not unique drop out entirely
        n = valid.sum(axis=1)
        f[~valid] = np.nan
        for p in periods:
            fwd[p][~valid] = np.nan
        ranks = _average_ranks(order, ordered) * valid  # 0 outside the evaluated cells
        del order, ordered

        rank_sums = _RankSums(ranks, valid, n)  # the sorting-heavy part runs on the pool meanwhile
        rank_jobs = {p: (pool.submit(rank_sums.rank_ic, fwd[p]), pool.submit(rank_sums.rank_autocorrelation, p))
                     for p in periods}
        moments = _FactorMoments(f, valid, n)
        cells = (np.arange(len(dates)) * (quantiles + 1))[:, None] + labels  # (date, quantile) bin of each cell
        sizes = _bin_sums(cells, None, len(dates), quantiles)
        per: dict[int, dict[str, np.ndarray]] = {}
        for p in periods:
            demeaned = _centred(fwd[p], valid, n)
            with np.errstate(invalid="ignore", divide="ignore"):
                by_quantile = _bin_sums(cells, demeaned, len(dates), quantiles) / sizes
            ic, factor_returns = moments.ic_and_returns(demeaned)
            per[p] = {"ic": ic, "factor_returns": factor_returns, "by_quantile": by_quantile,
                      "turnover": _turnover(cells, labels, sizes, p, quantiles)}
        for p, (rank_ic_job, autocorr_job) in rank_jobs.items():
            per[p].update(rank_ic=rank_ic_job.result(), autocorr=autocorr_job.result())

    index = pd.Index(dates, name=factor.index.name)
    quantile_axis = pd.Index(range(1, quantiles + 1))
    wide = lambda a: pd.DataFrame(a, index=index, columns=codes, copy=False)  # noqa: E731
    by_date = {p: pd.DataFrame(per[p]["by_quantile"], index=index, columns=quantile_axis) for p in periods}
    per_date = lambda key: pd.DataFrame({p: per[p][key] for p in periods}, index=index)  # noqa: E731
    ic, rank_ic = per_date("ic"), per_date("rank_ic")
    return FactorEvaluation(
        periods=periods, quantiles=quantiles,
        forward_returns={p: wide(fwd[p]) for p in periods},
        factor_quantile=wide(np.where(valid, labels, np.nan)),
        ic=ic, rank_ic=rank_ic, ic_summary=_ic_summary(ic, rank_ic),
        quantile_returns_by_date=by_date,
        quantile_mean=pd.DataFrame({p: by_date[p].mean() for p in periods}).rename_axis("quantile"),
        quantile_std_err=pd.DataFrame({p: by_date[p].std() / np.sqrt(by_date[p].count())
                                       for p in periods}).rename_axis("quantile"),
        spread=pd.DataFrame({p: by_date[p][quantiles] - by_date[p][1] for p in periods}, index=index),
        factor_returns=per_date("factor_returns"),
        turnover={p: pd.DataFrame(per[p]["turnover"], index=index, columns=quantile_axis) for p in periods},
        rank_autocorrelation=per_date("autocorr"),
        counts=DateCounts(dates=len(dates), with_values=with_values,
                          in_calendar={p: int((rows + p < len(prices.index)).sum()) for p in periods},
                          with_forward=with_forward, with_all_forward=with_all_forward,
                          evaluated=int((n > 0).sum()), price_end=prices.index[-1]),
        coverage=pd.Series(n, index=index, name="codes"),
    )


class _FactorMoments:
    """The factor's centred values and their per-date norms, shared by every period's IC and long-short return."""

    def __init__(self, f: np.ndarray, valid: np.ndarray, n: np.ndarray) -> None:
        self.n = n
        self.centred = _centred(f, valid, n)
        self.norm = np.sqrt(_dot_rows(self.centred, self.centred))
        self.gross = np.abs(self.centred).sum(axis=1)

    def ic_and_returns(self, demeaned: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Pearson IC and factor-weighted long-short return per date, given demeaned forward returns."""
        cov = _dot_rows(self.centred, demeaned)
        norm_y = np.sqrt(_dot_rows(demeaned, demeaned))
        with np.errstate(invalid="ignore", divide="ignore"):
            ic = np.where((self.n >= 2) & (self.norm > 0) & (norm_y > 0), cov / (self.norm * norm_y), np.nan)
            returns = np.where(self.n > 0, cov / np.where(self.gross > 0, self.gross, 1.0), np.nan)
        return np.clip(ic, -1.0, 1.0), returns


class _RankSums:
    """The factor's ranks (0 outside the evaluated cells) and their per-date sums, for Spearman IC and rank
    autocorrelation.

    Correlations of ranks are computed from raw sums: ranks are half-integers, so every sum and product below
    is exact in float64 (up to 2**53) and only the final square root and division round.
    """

    def __init__(self, ranks: np.ndarray, valid: np.ndarray, n: np.ndarray) -> None:
        self.ranks, self.n = ranks, n
        self.mask = valid.astype(float)
        self.squares = ranks * ranks
        self.rank_sum = ranks.sum(axis=1)
        self.rank_squares = self.squares.sum(axis=1)

    def rank_ic(self, y: np.ndarray) -> np.ndarray:
        """Spearman correlation of the factor and `y` per date (`y` NaN outside the evaluated cells)."""
        order = np.argsort(y, axis=1)
        ordered = np.take_along_axis(y, order, axis=1)
        factor_ranks = np.take_along_axis(self.ranks, order, axis=1)  # in y's order, 0 in the NaN tail
        width = y.shape[1]
        n = self.n.astype(float)
        cross = factor_ranks @ np.arange(1.0, width + 1)  # y's ranks are the positions when a row has no ties
        y_squares = n * (n + 1) * (2 * n + 1) / 6
        tied = np.flatnonzero((ordered[:, 1:] == ordered[:, :-1]).any(axis=1))
        if len(tied):
            y_ranks = _tie_averaged(ordered[tied]) * (np.arange(width) < self.n[tied, None])
            cross[tied] = _dot_rows(factor_ranks[tied], y_ranks)
            y_squares[tied] = _dot_rows(y_ranks, y_ranks)
        return _pearson_from_sums(n, self.rank_sum, n * (n + 1) / 2, self.rank_squares, y_squares, cross)

    def rank_autocorrelation(self, period: int) -> np.ndarray:
        """Pearson correlation of each date's factor ranks with those `period` dates earlier, over common codes."""
        out = np.full(len(self.ranks), np.nan)
        if period >= len(self.ranks):
            return out
        now, before = self.ranks[period:], self.ranks[:-period]
        now_mask, before_mask = self.mask[period:], self.mask[:-period]
        out[period:] = _pearson_from_sums(
            _dot_rows(now_mask, before_mask), _dot_rows(now, before_mask), _dot_rows(before, now_mask),
            _dot_rows(self.squares[period:], before_mask), _dot_rows(self.squares[:-period], now_mask),
            _dot_rows(now, before))
        return out


def _pearson_from_sums(n: np.ndarray, sx: np.ndarray, sy: np.ndarray, sxx: np.ndarray, syy: np.ndarray,
                       sxy: np.ndarray) -> np.ndarray:
    var_x, var_y = n * sxx - sx * sx, n * syy - sy * sy
    with np.errstate(invalid="ignore", divide="ignore"):
        r = np.where((n >= 2) & (var_x > 0) & (var_y > 0), (n * sxy - sx * sy) / np.sqrt(var_x * var_y), np.nan)
    return np.clip(r, -1.0, 1.0)


def _forward_returns(px: np.ndarray, rows: np.ndarray, period: int) -> np.ndarray:
    """close[t + period] / close[t] - 1 at the given price rows (NaN past the end of the prices)."""
    out = np.empty((len(rows), px.shape[1]))
    inside = int((rows + period < len(px)).sum())  # rows are sorted, so those inside come first
    out[inside:] = np.nan
    first = rows[0] if len(rows) else 0
    if inside and (rows[:inside] == np.arange(first, first + inside)).all():  # consecutive: views, no copies
        np.divide(px[first + period : first + period + inside], px[first : first + inside], out=out[:inside])
    elif inside:
        np.divide(px[rows[:inside] + period], px[rows[:inside]], out=out[:inside])
    out[:inside] -= 1.0
    return out


def _quantile_labels(values: np.ndarray, ordered: np.ndarray, n: np.ndarray, quantiles: int) -> np.ndarray:
    """Per-row `pd.qcut(row, q, labels=False) + 1` as int8, 0 where NaN; rows with non-unique edges get 0.

    `ordered` is each row sorted ascending (NaN last) and `n` its count of values. The edges are computed as
    pandas 3 computes them: its rounded-up quantile levels, then numpy's linear interpolation, bit for bit.
    """
    levels = np.linspace(0, 1, quantiles + 1)
    np.putmask(levels, quantiles * levels != np.arange(quantiles + 1), np.nextafter(levels, 1))
    last = np.maximum(n, 1)[:, None] - 1
    virtual = last * levels  # numpy's 'linear' virtual index, (n - 1) * level
    below = np.floor(virtual)
    gamma = virtual - below
    below_i = np.minimum(below, last).astype(np.intp)
    above_i = np.where(virtual >= last, last, below_i + 1).astype(np.intp)
    a = np.take_along_axis(ordered, below_i, axis=1)
    b = np.take_along_axis(ordered, above_i, axis=1)
    diff = b - a
    edges = np.where(gamma >= 0.5, b - diff * (1 - gamma), a + diff * gamma)  # numpy's _lerp
    labels = np.ones(values.shape, dtype=np.int8)
    for k in range(1, quantiles):
        labels += values > edges[:, k : k + 1]
    usable = (n > 0) & (np.diff(edges, axis=1) != 0).all(axis=1)
    labels[~np.isfinite(values) | ~usable[:, None]] = 0
    return labels


def _average_ranks(order: np.ndarray, ordered: np.ndarray) -> np.ndarray:
    """Average ranks (1-based, ties share their mean rank, as pandas' rank(axis=1)) per row of finite values.

    `order` is the row-wise argsort (NaN last) and `ordered` the sorted rows; cells that were NaN get
    arbitrary ranks above the row's count, for the caller to mask. Only rows with ties pay for tie arithmetic.
    """
    out = np.empty(ordered.shape)
    np.put_along_axis(out, order, np.arange(1.0, ordered.shape[1] + 1)[None, :], axis=1)
    tied = np.flatnonzero((ordered[:, 1:] == ordered[:, :-1]).any(axis=1))
    if len(tied):
        fixed = np.empty((len(tied), ordered.shape[1]))
        np.put_along_axis(fixed, order[tied], _tie_averaged(ordered[tied]), axis=1)
        out[tied] = fixed
    return out


def _tie_averaged(ordered: np.ndarray) -> np.ndarray:
    """1-based ranks of sorted rows where each run of equal values gets the mean of its positions."""
    width = ordered.shape[1]
    starts = np.ones(ordered.shape, dtype=bool)
    starts[:, 1:] = ordered[:, 1:] != ordered[:, :-1]
    ends = np.ones(ordered.shape, dtype=bool)
    ends[:, :-1] = starts[:, 1:]
    position = np.broadcast_to(np.arange(width), ordered.shape)
    first = np.maximum.accumulate(np.where(starts, position, 0), axis=1)
    last = np.minimum.accumulate(np.where(ends, position, width - 1)[:, ::-1], axis=1)[:, ::-1]
    return (first + last) / 2.0 + 1.0


def _centred(a: np.ndarray, mask: np.ndarray, n: np.ndarray) -> np.ndarray:
    """`a` minus its row mean over `mask`, and 0 outside `mask`."""
    out = np.where(mask, a, 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(n > 0, out.sum(axis=1) / np.maximum(n, 1), 0.0)
    out -= mean[:, None]
    out *= mask
    return out


def _dot_rows(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return np.einsum("ij,ij->i", x, y)


def _bin_sums(cells: np.ndarray, weights: np.ndarray | None, dates: int, quantiles: int) -> np.ndarray:
    """Per date and quantile (dates x quantiles): the count of cells, or the sum of `weights` over them."""
    flat = None if weights is None else weights.ravel()
    sums = np.bincount(cells.ravel(), weights=flat, minlength=dates * (quantiles + 1))
    return sums.reshape(dates, quantiles + 1)[:, 1:].astype(float)


def _turnover(cells: np.ndarray, labels: np.ndarray, sizes: np.ndarray, period: int, quantiles: int) -> np.ndarray:
    """Per date and quantile: share of today's members that were not members `period` dates earlier.

    NaN when the quantile is empty on either date.
    """
    out = np.full(sizes.shape, np.nan)
    if period >= len(labels):
        return out
    stayed = (labels[period:] == labels[:-period]) & (labels[period:] > 0)
    kept = np.zeros(sizes.shape)
    kept[period:] = _bin_sums(cells[period:][stayed] - period * (quantiles + 1), None, len(labels) - period,
                              quantiles)
    defined = np.zeros(sizes.shape, dtype=bool)
    defined[period:] = (sizes[period:] > 0) & (sizes[:-period] > 0)
    np.divide(sizes - kept, sizes, out=out, where=defined)
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
