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
import threading
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from tools.factors.rowsort import RowSorter
from tools.i18n import _

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
        funnel = _("dates: {dates} in the factor, {values} with values, {forward} (prices end {end}), {evaluated} "
                   "evaluated").format(
            dates=c.dates, values=c.with_values, end=f"{c.price_end:%Y%m%d}", evaluated=c.evaluated,
            forward=", ".join(_("{n} with a forward {period}d return").format(n=c.with_forward[p], period=p)
                              for p in self.periods))
        counts = ", ".join(f"{p}d: {n}" for p, n in short.items())
        detail = "; ".join(self.reasons(short))
        few = _("fewer than {minimum} evaluable dates ({counts})").format(minimum=minimum, counts=counts)
        return (_("{few}: {detail}. {funnel}") if detail else _("{few}. {funnel}")).format(
            few=few, detail=detail, funnel=funnel)

    def _horizon_reason(self, period: int) -> str | None:
        """Why `period` has no date with an IC, from the first requirement no date meets."""
        c = self.counts
        if c.with_values == 0:
            return _("the factor has no finite value on any of its {n} price date(s)").format(n=c.dates)
        if c.in_calendar[period] == 0:
            return _("no forward {period}d return: the data ends {end}, fewer than {period} trading day(s) after the "
                     "first factor date {first}").format(period=period, end=f"{c.price_end:%Y%m%d}",
                                                         first=f"{self.ic.index[0]:%Y%m%d}")
        if c.with_forward[period] == 0:
            return _("no forward {period}d return: no code with a factor value trades both on a date and {period} "
                     "trading day(s) later (suspended or not listed)").format(period=period)
        if c.with_all_forward == 0:
            lacking = [q for q in self.periods if c.with_forward[q] == 0]
            together = ", ".join(f"{q}d" for q in self.periods)
            if not lacking:
                return _("no code has a forward return for every horizon evaluated together ({together}) on one "
                         "date").format(together=together)
            q = lacking[-1]
            return _("no date has a forward return for every horizon evaluated together ({together}), because "
                     "{why}; evaluate without {period}d to use the others").format(
                together=together, why=self._horizon_reason(q), period=q)
        if c.evaluated == 0:
            return _("no date has {n} distinct quantile edges (too few codes or too many tied factor values)").format(
                n=self.quantiles)
        if min(self.ic[period].count(), self.rank_ic[period].count()) == 0:
            return _("no date has 2 or more evaluated codes whose factor values and {period}d returns both vary"
                     ).format(period=period)
        return None

    def _metric_reason(self, name: str, period: int) -> str:
        """Why one figure is NaN when its period has dates with an IC."""
        if name.startswith(("ic", "rank_ic")):
            kind, label = ("rank_ic", "Rank IC") if name.startswith("rank_ic") else ("ic", "IC")
            n = int(self.ic_summary.loc[(kind, period), "n"])
            if n < 2:
                return _("only {n} date(s) with a defined {label}: a standard deviation needs 2").format(
                    n=n, label=label)
            return _("the {label} is the same on every date (standard deviation 0)").format(label=label)
        if name in ("top_mean", "bottom_mean", "spread_mean"):
            return _("the top or bottom quantile is empty on every evaluated date (tied factor values)")
        if name == "spread_se":
            return _("a standard error needs 2 or more evaluated dates with the top and bottom quantiles")
        if name.startswith(("turnover", "rank_autocorr")):
            return _("needs an evaluated date {period} date(s) after another; {evaluated} of {dates} factor date(s) "
                     "are evaluated").format(period=period, evaluated=self.counts.evaluated, dates=self.counts.dates)
        return _("not defined on the evaluated dates")


def annualised(period_return: float, period: int) -> float:
    daily = (1.0 + period_return) ** (1.0 / period) - 1.0
    return (1.0 + daily) ** TRADING_DAYS - 1.0


def evaluate_factor(factor: pd.DataFrame, prices: pd.DataFrame, periods: tuple[int, ...] = (1, 5, 20),
                    quantiles: int = 5, tradable: pd.DataFrame | None = None) -> FactorEvaluation:
    """Evaluate a dates x codes factor against dates x codes prices (adjusted closes)."""
    periods = tuple(sorted({int(p) for p in periods}))
    if not periods or periods[0] < 1:
        raise EvaluationError(_("periods must be positive integers"))
    if quantiles < 2:
        raise EvaluationError(_("quantiles must be at least 2"))
    prices = prices.sort_index()
    dates = factor.index.intersection(prices.index).sort_values()
    codes = factor.columns.intersection(prices.columns)
    if len(dates) == 0 or len(codes) == 0:
        raise EvaluationError(_("the factor and the prices share no dates or no codes (check date types and ts_code)"))
    rows = prices.index.get_indexer(dates)
    run = _Evaluation(factor.reindex(index=dates, columns=codes).to_numpy(dtype=float),
                      prices[codes].to_numpy(dtype=float),
                      None if tradable is None else
                      tradable.reindex(index=prices.index, columns=codes).fillna(False).to_numpy(dtype=bool),
                      rows, periods, quantiles)
    run.compute()

    index = pd.Index(dates, name=factor.index.name)
    quantile_axis = pd.Index(range(1, quantiles + 1))
    wide = lambda a: pd.DataFrame(a, index=index, columns=codes, copy=False)  # noqa: E731
    by_date = {p: pd.DataFrame(run.by_quantile[i], index=index, columns=quantile_axis)
               for i, p in enumerate(periods)}
    per_date = lambda a: pd.DataFrame({p: a[i] for i, p in enumerate(periods)}, index=index)  # noqa: E731
    ic, rank_ic = per_date(run.ic), per_date(run.rank_ic)
    return FactorEvaluation(
        periods=periods, quantiles=quantiles,
        forward_returns={p: wide(run.forward[i]) for i, p in enumerate(periods)},
        factor_quantile=wide(run.f),
        ic=ic, rank_ic=rank_ic, ic_summary=_ic_summary(ic, rank_ic),
        quantile_returns_by_date=by_date,
        quantile_mean=pd.DataFrame({p: by_date[p].mean() for p in periods}).rename_axis("quantile"),
        quantile_std_err=pd.DataFrame({p: by_date[p].std() / np.sqrt(by_date[p].count())
                                       for p in periods}).rename_axis("quantile"),
        spread=pd.DataFrame({p: by_date[p][quantiles] - by_date[p][1] for p in periods}, index=index),
        factor_returns=per_date(run.factor_returns),
        turnover={p: pd.DataFrame(run.turnover[i], index=index, columns=quantile_axis)
                  for i, p in enumerate(periods)},
        rank_autocorrelation=per_date(run.autocorr),
        counts=DateCounts(dates=len(dates), with_values=int(run.with_values.sum()),
                          in_calendar={p: int((rows + p < len(prices.index)).sum()) for p in periods},
                          with_forward={p: int(run.with_forward[i].sum()) for i, p in enumerate(periods)},
                          with_all_forward=int(run.with_all_forward.sum()),
                          evaluated=int((run.n > 0).sum()), price_end=prices.index[-1]),
        coverage=pd.Series(run.n, index=index, name="codes"),
    )


_BLOCK_CELLS = 1 << 17  # cells per block of dates: a block's working arrays stay in the cores' caches
_TILE_COLUMNS = 256  # columns per tile when a column-major input is copied row-major (whole rows: twice the time)


class _Scratch:
    """One thread's working arrays for blocks of at most `rows` dates, reused block after block."""

    def __init__(self, rows: int, width: int) -> None:
        self.sorter = RowSorter(rows, width)
        self.cells = np.empty((rows, width), dtype=np.intp)  # the factor's sorted cells, as flat places in the block
        self.place = np.empty((rows, width), dtype=np.uint32)  # each cell's place in the factor's sorted row
        self.centred = np.empty((rows, width))  # the factor, centred per date
        self.demeaned = np.empty((rows, width))  # a period's forward returns, demeaned per date
        self.bins = np.empty((rows, width), dtype=np.intp)  # each cell's (date, quantile) bin


class _Evaluation:
    """The per-date figures of one evaluation, computed block of dates by block of dates on a thread per core.

    Every figure of a date depends on that date's row alone, except turnover and rank autocorrelation, which
    compare a date with the date `period` rows earlier; they run in a second pass once every row is done.
    Each row is sorted once for the factor and once per period for the returns (`RowSorter`); the returns' keys are
    tagged with the factor's places, so their sort yields the factor's ranks in the returns' order.
    """

    def __init__(self, factor: np.ndarray, prices: np.ndarray, tradable: np.ndarray | None, rows: np.ndarray,
                 periods: tuple[int, ...], quantiles: int) -> None:
        """`factor` dates x codes, `prices` and `tradable` price dates x codes (read only, any memory layout);
        `rows` the price row of each factor date."""
        self.factor, self.prices, self.tradable = factor, prices, tradable
        dates, width = factor.shape
        self.f = np.empty((dates, width))  # the factor by rows, then its quantiles (1..q, NaN outside the set)
        self.px = np.empty(prices.shape)  # prices by rows, NaN where not tradable
        self.rows, self.periods, self.quantiles = rows, periods, quantiles
        k = len(periods)
        self.forward = [np.empty((dates, width)) for _ in periods]  # NaN outside the evaluated set
        self.labels = np.empty((dates, width), dtype=np.int8)  # 1..q, 0 outside the evaluated set
        self.ranks = np.empty((dates, width))  # the factor's average ranks, 0 outside the evaluated set
        self.rank_squares = np.empty(dates)  # their sum of squares per date
        self.n = np.empty(dates, dtype=np.int64)
        self.with_values = np.empty(dates, dtype=bool)
        self.with_forward = np.empty((k, dates), dtype=bool)
        self.with_all_forward = np.empty(dates, dtype=bool)
        self.ic, self.rank_ic, self.factor_returns, self.autocorr = (np.full((k, dates), np.nan) for _ in range(4))
        self.by_quantile = np.empty((k, dates, quantiles))
        self.sizes = np.empty((dates, quantiles))
        self.turnover = np.full((k, dates, quantiles), np.nan)
        self.positions = np.arange(1.0, width + 1)
        self.step = max(1, _BLOCK_CELLS // max(width, 1))  # dates per block
        self.tiled_places = np.tile(np.arange(width, dtype=np.uint32), self.step)
        self.columns = np.arange(width, dtype=np.uint32)
        self.offsets = np.arange(self.step)[:, None] * width  # each row's first flat place in a block
        self.local = threading.local()  # each thread's _Scratch

    def compute(self) -> None:
        """Fill every figure, on one thread per core (numpy releases the GIL in its loops and sorts)."""
        blocks = [(a, min(a + self.step, len(self.f))) for a in range(0, len(self.f), self.step)]
        price_blocks = [(a, min(a + self.step, len(self.px))) for a in range(0, len(self.px), self.step)]
        phases = ((self.tradable_prices, price_blocks), (self.own, blocks), (self.lagged, blocks))
        workers = min(os.cpu_count() or 1, len(blocks))
        if workers > 1:
            with ThreadPoolExecutor(max_workers=workers) as pool:
                for phase, spans in phases:
                    list(pool.map(lambda span, phase=phase: phase(*span), spans))
        else:
            for phase, spans in phases:
                for span in spans:
                    phase(*span)

    def scratch(self) -> _Scratch:
        """This thread's working arrays, made on its first block."""
        mine = getattr(self.local, "scratch", None)
        if mine is None:
            mine = self.local.scratch = _Scratch(self.step, self.f.shape[1])
        return mine

    def tradable_prices(self, a: int, b: int) -> None:
        """Price rows a..b-1, NaN where a price is missing, not positive or not tradable."""
        px = self.px[a:b]
        _copy_rows(px, self.prices[a:b])
        untradable = ~np.isfinite(px)
        untradable |= px <= 0
        if self.tradable is not None:
            untradable |= ~self.tradable[a:b]
        np.copyto(px, np.nan, where=untradable)

    def own(self, a: int, b: int) -> None:
        """Everything that depends on dates a..b-1 alone."""
        s = self.scratch()
        f = self.f[a:b]
        _copy_rows(f, self.factor[a:b])
        rows, width = f.shape
        ys = [self._forward_block(a, b, p, out) for p, out in zip(self.periods, self.forward, strict=True)]
        valid = np.isfinite(f)
        self.with_values[a:b] = valid.any(axis=1)
        finite = valid.copy()
        for i, y in enumerate(ys):
            ok = np.isfinite(y)
            valid &= ok
            ok &= finite
            self.with_forward[i, a:b] = ok.any(axis=1)
        self.with_all_forward[a:b] = valid.any(axis=1)
        n = _row_counts(valid)
        invalid = ~valid
        np.copyto(f, np.nan, where=invalid)

        order, tied = s.sorter.sort(f, invalid, n, self.columns)
        cells, place = s.cells[:rows], s.place[:rows]
        np.add(order, self.offsets[:rows], out=cells)
        np.put(place, cells, self.tiled_places[: rows * width])
        labels = self.labels[a:b]
        usable, sizes = _quantile_labels(f, cells, place, n, tied, self.quantiles, labels)
        n[~usable] = 0  # dates whose edges are not unique drop out entirely
        valid &= usable[:, None]
        np.logical_not(valid, out=invalid)
        f[~usable] = np.nan
        self.n[a:b], self.sizes[a:b] = n, sizes
        ranks = self.ranks[a:b]
        np.add(place, 1.0, out=ranks)
        if len(tied):
            rows_cells = cells[tied]
            ranks.reshape(-1)[rows_cells] = _tie_averaged(f.reshape(-1)[rows_cells])
        np.copyto(ranks, 0.0, where=invalid)
        nf = n.astype(float)
        rank_squares = self.rank_squares[a:b]
        rank_squares[:] = nf * (nf + 1) * (2 * nf + 1) / 6
        rank_squares[tied] = _dot_rows(ranks[tied], ranks[tied])
        bins = s.bins[:rows]
        np.add(np.arange(rows)[:, None] * (self.quantiles + 1), labels, out=bins)

        moments = _FactorMoments(_centred(f, invalid, n, s.centred[:rows]), n)
        for i, y in enumerate(ys):
            np.copyto(y, np.nan, where=invalid)
            demeaned = _centred(y, invalid, n, s.demeaned[:rows])
            with np.errstate(invalid="ignore", divide="ignore"):
                self.by_quantile[i, a:b] = _bin_sums(bins, demeaned, rows, self.quantiles) / sizes
            self.ic[i, a:b], self.factor_returns[i, a:b] = moments.ic_and_returns(demeaned)
            self.rank_ic[i, a:b] = self._rank_ic(s, y, invalid, nf, ranks, tied, rank_squares)
        np.copyto(f, labels)  # the factor's rows are done with: they become the quantiles, NaN outside the set
        np.copyto(f, np.nan, where=labels == 0)

    def _rank_ic(self, s: _Scratch, y: np.ndarray, invalid: np.ndarray, n: np.ndarray, ranks: np.ndarray,
                 tied: np.ndarray, rank_squares: np.ndarray) -> np.ndarray:
        """Spearman correlation of the factor and `y` per row (`y` NaN outside the evaluated cells, `invalid`; `n`
        cells a row, as floats).

        Sorting `y` with the factor's places as tags gives, at `y`'s sorted position k, the factor's place there: with
        distinct values the cross sum of ranks is sum over k < n of (k + 1)(place + 1). The missing cells sort last
        in the order of their places, which are n..width-1, so the sum over the whole row less that tail is it. Rows
        where either side holds equal values average the ranks of their ties.
        """
        rows, width = y.shape
        places, tied_y = s.sorter.sort(y, invalid, n, s.place[:rows], s.cells[:rows])
        as_float = s.sorter.scaled[:rows]
        np.copyto(as_float, places)
        squares = n * (n + 1) * (2 * n + 1) / 6
        tail = width * (width + 1) * (2 * width + 1) / 6 - squares  # sum over k >= n of (k + 1)^2
        cross = as_float @ self.positions + width * (width + 1) / 2 - tail
        slow = np.union1d(tied, tied_y)
        if len(slow):
            sorted_cells = np.take_along_axis(s.cells[slow], places[slow].astype(np.intp), axis=1)
            y_ranks = _tie_averaged(y.reshape(-1)[sorted_cells]) * (np.arange(width) < n[slow, None])
            cross[slow] = _dot_rows(ranks.reshape(-1)[sorted_cells], y_ranks)
            squares[slow] = _dot_rows(y_ranks, y_ranks)
        sums = n * (n + 1) / 2
        return _pearson_from_sums(n, sums, sums, rank_squares, squares, cross)

    def _forward_block(self, a: int, b: int, period: int, out: np.ndarray) -> np.ndarray:
        """Rows a..b-1 of the forward returns of `period`, written into `out`."""
        out = out[a:b]
        rows = self.rows[a:b]
        inside = int((rows + period < len(self.px)).sum())  # rows are sorted, so those inside come first
        out[inside:] = np.nan
        if inside:
            first = rows[0]
            if rows[inside - 1] - first == inside - 1:  # consecutive price rows: views, no copies
                later, now = self.px[first + period : first + period + inside], self.px[first : first + inside]
            else:
                later, now = self.px[rows[:inside] + period], self.px[rows[:inside]]
            np.divide(later, now, out=out[:inside])
            out[:inside] -= 1.0
        return out

    def lagged(self, a: int, b: int) -> None:
        """Turnover and rank autocorrelation of dates a..b-1, against the dates `period` rows earlier."""
        q = self.quantiles
        for i, p in enumerate(self.periods):
            start = max(a, p)
            if start >= b:
                continue
            now, before = self.labels[start:b], self.labels[start - p : b - p]
            common = (now > 0) & (before > 0)
            stayed = now * (now == before)  # the label where it did not change, else 0
            kept = np.stack([_row_counts(stayed == k) for k in range(1, q + 1)], axis=1)
            sizes, earlier = self.sizes[start:b], self.sizes[start - p : b - p]
            np.divide(sizes - kept, sizes, out=self.turnover[i, start:b], where=(sizes > 0) & (earlier > 0))
            self.autocorr[i, start:b] = self._rank_autocorrelation(start, b, p, common)

    def _rank_autocorrelation(self, a: int, b: int, period: int, common: np.ndarray) -> np.ndarray:
        """Pearson correlation of the ranks of dates a..b-1 and those `period` rows earlier, over the codes evaluated
        on both (`common`). Ranks are 0 outside the evaluated set, so the cross sum needs no mask; on dates whose
        codes are those of the earlier date the rank sums are the dates' own."""
        x, y = self.ranks[a:b], self.ranks[a - period : b - period]
        n = _row_counts(common)
        n_x, n_y = self.n[a:b], self.n[a - period : b - period]
        sx, sy = n_x * (n_x + 1) / 2, n_y * (n_y + 1) / 2
        sxx, syy = self.rank_squares[a:b].copy(), self.rank_squares[a - period : b - period].copy()
        other = np.flatnonzero((n != n_x) | (n != n_y))
        if len(other):
            x, y, both = x[other], y[other], common[other]
            sx[other], sy[other] = _dot_rows(x, both), _dot_rows(y, both)
            sxx[other], syy[other] = _dot_rows(x * x, both), _dot_rows(y * y, both)
        return _pearson_from_sums(n.astype(float), sx, sy, sxx, syy, _dot_rows(self.ranks[a:b],
                                                                              self.ranks[a - period : b - period]))


class _FactorMoments:
    """The factor's centred values and their per-date norms, shared by every period's IC and long-short return."""

    def __init__(self, centred: np.ndarray, n: np.ndarray) -> None:
        self.n = n
        self.centred = centred
        self.norm = np.sqrt(_dot_rows(centred, centred))
        self.gross = np.add.reduce(np.abs(centred), axis=1)

    def ic_and_returns(self, demeaned: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Pearson IC and factor-weighted long-short return per date, given demeaned forward returns."""
        cov = _dot_rows(self.centred, demeaned)
        norm_y = np.sqrt(_dot_rows(demeaned, demeaned))
        with np.errstate(invalid="ignore", divide="ignore"):
            ic = np.where((self.n >= 2) & (self.norm > 0) & (norm_y > 0), cov / (self.norm * norm_y), np.nan)
            returns = np.where(self.n > 0, cov / np.where(self.gross > 0, self.gross, 1.0), np.nan)
        return np.clip(ic, -1.0, 1.0), returns


def _copy_rows(out: np.ndarray, rows: np.ndarray) -> None:
    """Copy `rows` into the C-order `out`; a column-major source tile by tile, which keeps both sides in cache."""
    if rows.flags.c_contiguous:
        np.copyto(out, rows)
        return
    for c in range(0, out.shape[1], _TILE_COLUMNS):
        np.copyto(out[:, c : c + _TILE_COLUMNS], rows[:, c : c + _TILE_COLUMNS])


def _pearson_from_sums(n: np.ndarray, sx: np.ndarray, sy: np.ndarray, sxx: np.ndarray, syy: np.ndarray,
                       sxy: np.ndarray) -> np.ndarray:
    var_x, var_y = n * sxx - sx * sx, n * syy - sy * sy
    with np.errstate(invalid="ignore", divide="ignore"):
        r = np.where((n >= 2) & (var_x > 0) & (var_y > 0), (n * sxy - sx * sy) / np.sqrt(var_x * var_y), np.nan)
    return np.clip(r, -1.0, 1.0)


def _quantile_labels(values: np.ndarray, cells: np.ndarray, place: np.ndarray, n: np.ndarray, tied: np.ndarray,
                     quantiles: int, labels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-row `pd.qcut(row, q, labels=False) + 1` written into `labels` (int8), 0 where NaN and in rows with
    non-unique edges; return whether each row's edges are unique and the count of each quantile per row (rows x q,
    floats).

    `cells` lists each row's cells in ascending order of value (NaN last) as flat places in the block, `place` is
    each cell's position in that order, `n` each row's count of values and `tied` the rows holding equal values.
    The edges are computed as pandas 3 computes them: its rounded-up quantile levels, then numpy's linear
    interpolation, bit for bit. In a row of distinct values an inner edge lies between the two sorted values it
    interpolates, so its label boundary is a position in the sorted row and a cell's label follows from its place;
    other rows compare every value with the edges.
    """
    levels = np.linspace(0, 1, quantiles + 1)
    np.putmask(levels, quantiles * levels != np.arange(quantiles + 1), np.nextafter(levels, 1))
    last = np.maximum(n, 1)[:, None] - 1
    virtual = last * levels  # numpy's 'linear' virtual index, (n - 1) * level
    below = np.floor(virtual)
    gamma = virtual - below
    below_i = np.minimum(below, last).astype(np.intp)
    above_i = np.where(virtual >= last, last, below_i + 1).astype(np.intp)
    flat = values.reshape(-1)
    a = flat[np.take_along_axis(cells, below_i, axis=1)]
    b = flat[np.take_along_axis(cells, above_i, axis=1)]
    diff = b - a
    edges = np.where(gamma >= 0.5, b - diff * (1 - gamma), a + diff * gamma)  # numpy's _lerp
    usable = (n > 0) & (np.diff(edges, axis=1) != 0).all(axis=1)

    inner, low, high = edges[:, 1:-1], a[:, 1:-1], b[:, 1:-1]
    at_most = below_i[:, 1:-1] + 1 + ((above_i[:, 1:-1] > below_i[:, 1:-1]) & (high <= inner))  # values <= edge
    rows = len(values)
    bounds = np.concatenate([np.zeros((rows, 1), dtype=np.intp), at_most, n[:, None]], axis=1)
    sizes = np.diff(bounds, axis=1)
    compared = np.zeros(rows, dtype=bool)
    compared[tied] = True
    compared |= ((low > inner) | (inner > high)).any(axis=1) | (sizes < 0).any(axis=1)
    compared &= usable
    # from its place: the boundaries at or below it (the count of values the last), 0..q-1 giving labels 1..q, q 0
    boundaries = np.maximum(bounds[:, 1:], 0).astype(np.uint32)
    np.greater_equal(place, boundaries[:, :1], out=labels)
    for k in range(1, quantiles):
        labels += place >= boundaries[:, k : k + 1]
    np.take(np.arange(1, quantiles + 2, dtype=np.int8) % (quantiles + 1), labels, out=labels, mode="clip")  # unbuffered
    if compared.any():
        rows_compared = np.flatnonzero(compared)
        row_values = values[rows_compared]
        row_labels = np.ones(row_values.shape, dtype=np.int8)
        for k in range(1, quantiles):
            row_labels += row_values > edges[rows_compared, k : k + 1]
        row_labels[~np.isfinite(row_values)] = 0
        labels[rows_compared] = row_labels
        bins = (np.arange(len(rows_compared)) * (quantiles + 1))[:, None] + row_labels
        sizes[rows_compared] = _bin_sums(bins, None, len(rows_compared), quantiles)
    if not usable.all():
        labels[~usable] = 0
        sizes[~usable] = 0
    return usable, sizes.astype(float)


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


def _centred(a: np.ndarray, invalid: np.ndarray, n: np.ndarray, out: np.ndarray) -> np.ndarray:
    """`a` minus its row mean over the cells not `invalid` (`n` of them a row), and 0 on `invalid` cells, in `out`."""
    np.copyto(out, a)
    np.copyto(out, 0.0, where=invalid)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(n > 0, out.sum(axis=1) / np.maximum(n, 1), 0.0)
    out -= mean[:, None]
    np.copyto(out, 0.0, where=invalid)
    return out


def _row_counts(mask: np.ndarray) -> np.ndarray:
    """True cells per row of a boolean block, as int64 (summed in the narrowest type that holds the width: a sum of
    booleans in 64 bits costs four times as much)."""
    return np.add.reduce(mask.view(np.uint8), axis=1, dtype=np.min_scalar_type(mask.shape[1])).astype(np.int64)


def _dot_rows(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return np.vecdot(x, y)


def _bin_sums(bins: np.ndarray, weights: np.ndarray | None, dates: int, quantiles: int) -> np.ndarray:
    """Per date and quantile (dates x quantiles): the count of cells in each bin, or the sum of `weights` over them."""
    flat = None if weights is None else weights.ravel()
    sums = np.bincount(bins.ravel(), weights=flat, minlength=dates * (quantiles + 1))
    return sums.reshape(dates, quantiles + 1)[:, 1:].astype(float)


def _ic_summary(ic: pd.DataFrame, rank_ic: pd.DataFrame) -> pd.DataFrame:
    rows = {}
    for kind, table in (("ic", ic), ("rank_ic", rank_ic)):
        for p in table.columns:
            s = table[p].dropna()
            mean, std, n = float(s.mean()), float(s.std()), int(s.count())
            rows[(kind, p)] = {"mean": mean, "std": std, "icir": mean / std if std > 0 else np.nan,
                               "t_stat": mean / (std / np.sqrt(n)) if std > 0 and n > 1 else np.nan, "n": n}
    return pd.DataFrame.from_dict(rows, orient="index").rename_axis(["kind", "period"])
