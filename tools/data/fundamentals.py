"""Point-in-time fundamentals: daily indicators, income statements and financial indicators as known on a day.

Every source answers with a `SourceResult`: rows in tushare's schema and units, or an empty result whose `gap`
says in one sentence why there is nothing (not configured, no file, no permission, nothing announced yet).
Statements are chosen by when they were announced, never by the period they report on: a report is visible
on `as_of` when its announcement date (`f_ann_date`, else `ann_date`) is on or before `as_of`, and of several
versions of one report period (restatements) only the latest one announced by then is kept.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

import pandas as pd

from tools.data.provider import MarketDataProvider
from tools.data.schema import DAILY, DAILY_BASIC, DataError, normalize_codes, normalize_date
from tools.data.securities import day_or_none, text_or_none
from tools.data.tushare import TushareProvider
from tools.i18n import N_, _

INCOME = "income"
FINA_INDICATOR = "fina_indicator"
DATASETS = (DAILY_BASIC, INCOME, FINA_INDICATOR)

DAILY_BASIC_LOOKBACK_DAYS = 30  # the latest daily_basic row must be at most this many calendar days old
CONSOLIDATED = "1"  # tushare report_type of the consolidated statement (合并报表)

DAILY_BASIC_VALUES = ("close", "turnover_rate", "volume_ratio", "pe", "pe_ttm", "pb", "ps", "ps_ttm", "dv_ratio",
                      "dv_ttm", "total_share", "float_share", "free_share", "total_mv", "circ_mv")
INCOME_VALUES = ("total_revenue", "revenue", "operate_profit", "total_profit", "n_income", "n_income_attr_p",
                 "basic_eps")
FINA_VALUES = ("eps", "roe", "roe_dt", "roa", "grossprofit_margin", "netprofit_margin", "debt_to_assets",
               "netprofit_yoy", "or_yoy")

# Columns per dataset: text columns first, then the float values.
TEXT_COLUMNS: dict[str, tuple[str, ...]] = {
    DAILY_BASIC: ("ts_code", "trade_date"),
    INCOME: ("ts_code", "ann_date", "f_ann_date", "end_date", "report_type", "update_flag"),
    FINA_INDICATOR: ("ts_code", "ann_date", "end_date", "update_flag"),
}
VALUE_COLUMNS: dict[str, tuple[str, ...]] = {DAILY_BASIC: DAILY_BASIC_VALUES, INCOME: INCOME_VALUES,
                                             FINA_INDICATOR: FINA_VALUES}
DATE_COLUMNS = ("trade_date", "ann_date", "f_ann_date", "end_date")

# tushare's units per value (REFERENCE.md, tushare endpoints): they differ between endpoints.
UNITS: dict[str, dict[str, str]] = {
    DAILY_BASIC: {"close": "元", "turnover_rate": "%", "volume_ratio": "倍", "pe": "倍", "pe_ttm": "倍",
                  "pb": "倍", "ps": "倍", "ps_ttm": "倍", "dv_ratio": "%", "dv_ttm": "%", "total_share": "万股",
                  "float_share": "万股", "free_share": "万股", "total_mv": "万元", "circ_mv": "万元"},
    INCOME: {"total_revenue": "元", "revenue": "元", "operate_profit": "元", "total_profit": "元",
             "n_income": "元", "n_income_attr_p": "元", "basic_eps": "元/股"},
    FINA_INDICATOR: {"eps": "元/股", "roe": "%", "roe_dt": "%", "roa": "%", "grossprofit_margin": "%",
                     "netprofit_margin": "%", "debt_to_assets": "%", "netprofit_yoy": "%", "or_yoy": "%"},
}
WHAT = {DAILY_BASIC: N_("daily_basic rows"), INCOME: N_("income statements"), FINA_INDICATOR: N_("fina_indicator rows")}

Row = dict[str, str | float | None]


@dataclass(frozen=True)
class SourceResult:
    """Rows of one dataset (newest first), the source that served them and, when there are none, why.

    Text columns hold strings (dates as YYYYMMDD), value columns floats or None (tushare null: pe of a loss
    maker); `units` names each value column's unit, e.g. total_mv → 万元, revenue → 元, roe → %."""

    dataset: str
    rows: list[Row]
    source: str
    gap: str | None = None
    units: dict[str, str] = field(default_factory=dict)


class FundamentalsSource(ABC):
    """Fundamentals of one ts_code as known at the end of `as_of` (YYYYMMDD; other date spellings accepted).

    Malformed arguments raise `DataError`; a source that cannot answer returns a result with a `gap`."""

    name: str = "fundamentals"

    @abstractmethod
    def daily_basic(self, ts_code: str, as_of: str) -> SourceResult:
        """The latest daily_basic row on or before `as_of` (at most `DAILY_BASIC_LOOKBACK_DAYS` old)."""

    @abstractmethod
    def income(self, ts_code: str, as_of: str, periods: int = 4) -> SourceResult:
        """The newest `periods` consolidated income statements announced on or before `as_of`."""

    @abstractmethod
    def fina_indicator(self, ts_code: str, as_of: str, periods: int = 4) -> SourceResult:
        """The newest `periods` report periods of financial indicators announced on or before `as_of`."""


class _TableFundamentals(FundamentalsSource):
    """A source that loads a raw tushare-schema frame per dataset; the point-in-time rules live here."""

    @abstractmethod
    def _where(self) -> str:
        """How gap sentences name the source, e.g. "from tushare", in the language in effect."""

    @abstractmethod
    def _load(self, dataset: str, ts_code: str, as_of: str) -> pd.DataFrame:
        """Raw rows of `dataset` for `ts_code` (may hold rows after `as_of`); `DataError` when unavailable."""

    def daily_basic(self, ts_code: str, as_of: str) -> SourceResult:
        return self._answer(DAILY_BASIC, ts_code, as_of, 1)

    def income(self, ts_code: str, as_of: str, periods: int = 4) -> SourceResult:
        return self._answer(INCOME, ts_code, as_of, periods)

    def fina_indicator(self, ts_code: str, as_of: str, periods: int = 4) -> SourceResult:
        return self._answer(FINA_INDICATOR, ts_code, as_of, periods)

    def _answer(self, dataset: str, ts_code: str, as_of: str, periods: int) -> SourceResult:
        code, day = _check(ts_code, as_of, periods)
        try:
            frame = _clean(dataset, self._load(dataset, code, day), code)
        except DataError as exc:
            return SourceResult(dataset, [], self.name, gap=str(exc))
        if dataset == DAILY_BASIC:
            chosen = latest_daily_basic(frame, day)
        else:
            chosen = point_in_time_reports(frame, day, periods)
        if chosen.empty:
            return SourceResult(dataset, [], self.name, gap=_nothing(dataset, code, day, self._where()))
        return SourceResult(dataset, _rows(dataset, chosen), self.name, units=dict(UNITS[dataset]))


class TushareFundamentals(_TableFundamentals):
    """tushare Pro's daily_basic, income and fina_indicator endpoints through `TushareProvider.query`.

    Requests end at `as_of` (income by announcement date, fina_indicator by report period, which ends before
    its announcement), so no later row is downloaded; the point-in-time rules are applied to the answer too."""

    name = "tushare"

    def __init__(self, provider: TushareProvider) -> None:
        self._provider = provider

    def _where(self) -> str:
        return _("from tushare")

    def _load(self, dataset: str, ts_code: str, as_of: str) -> pd.DataFrame:
        params: dict[str, object] = {"ts_code": ts_code, "end_date": as_of}
        if dataset == DAILY_BASIC:
            params["start_date"] = _days_before(as_of, DAILY_BASIC_LOOKBACK_DAYS)
        elif dataset == INCOME:
            params["report_type"] = CONSOLIDATED
        return self._provider.query(dataset, params, [*TEXT_COLUMNS[dataset], *VALUE_COLUMNS[dataset]])


class LocalFundamentals(_TableFundamentals):
    """Reads `daily_basic`, `income` and `fina_indicator` (.parquet or .csv, tushare schema) from `root`.

    Files are read once, lazily; a missing directory or file makes that dataset answer with a gap."""

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)
        self.name = f"local files in {self.root}"
        self._frames: dict[str, pd.DataFrame] = {}

    def _where(self) -> str:
        return _("in the local files at {path}").format(path=self.root)

    def _load(self, dataset: str, ts_code: str, as_of: str) -> pd.DataFrame:
        if dataset not in self._frames:
            self._frames[dataset] = self._read(dataset)
        frame = self._frames[dataset]
        return frame[frame["ts_code"] == ts_code]

    def _read(self, dataset: str) -> pd.DataFrame:
        if not self.root.is_dir():
            raise DataError(_("the fundamentals directory {path} does not exist").format(path=self.root))
        path = next((p for p in (self.root / f"{dataset}.parquet", self.root / f"{dataset}.csv") if p.is_file()),
                    None)
        if path is None:
            raise DataError(_("no {dataset}.parquet or {dataset}.csv in {path}").format(dataset=dataset,
                                                                                        path=self.root))
        try:
            if path.suffix == ".parquet":
                frame = pd.read_parquet(path)
            else:
                frame = pd.read_csv(path, dtype={c: str for c in TEXT_COLUMNS[dataset]})
        except (OSError, ValueError) as exc:
            raise DataError(_("cannot read {path}: {error}").format(path=path, error=exc)) from None
        if "ts_code" not in frame.columns:
            raise DataError(_("{path} has no ts_code column").format(path=path))
        return frame.assign(ts_code=frame["ts_code"].astype(str).str.strip().str.upper())


class MarketDataFundamentals(_TableFundamentals):
    """daily_basic through a `MarketDataProvider` (only the fields it serves, e.g. turnover_rate of the sample);
    it has no statements, so income and fina_indicator always answer with a gap."""

    def __init__(self, provider: MarketDataProvider) -> None:
        self._provider = provider
        self.name = f"the {provider.name} market-data provider"

    def _where(self) -> str:
        return _("from the {provider} market-data provider").format(provider=self._provider.label())

    def _load(self, dataset: str, ts_code: str, as_of: str) -> pd.DataFrame:
        if dataset != DAILY_BASIC:
            raise DataError(_("the {provider} market-data provider has no {what}; set a fundamentals directory or a "
                              "tushare token").format(provider=self._provider.label(), what=_(WHAT[dataset])))
        fields = [f for f in DAILY_BASIC_VALUES if f in self._provider.available_fields(DAILY_BASIC)]
        if "close" in self._provider.available_fields(DAILY):
            fields.insert(0, "close")
        if not fields:
            raise DataError(_("the {provider} market-data provider serves no daily_basic fields").format(
                provider=self._provider.label()))
        return self._provider.daily_basic(ts_code, _days_before(as_of, DAILY_BASIC_LOOKBACK_DAYS), as_of, fields,
                                          warnings=[])


class ChainedFundamentals(FundamentalsSource):
    """Asks `sources` in order and answers with the first result that has rows; else all their gaps."""

    def __init__(self, *sources: FundamentalsSource) -> None:
        if not sources:
            raise ValueError("ChainedFundamentals needs at least one source")
        self.sources = sources
        self.name = " then ".join(s.name for s in sources)

    def daily_basic(self, ts_code: str, as_of: str) -> SourceResult:
        return self._first(lambda s: s.daily_basic(ts_code, as_of))

    def income(self, ts_code: str, as_of: str, periods: int = 4) -> SourceResult:
        return self._first(lambda s: s.income(ts_code, as_of, periods))

    def fina_indicator(self, ts_code: str, as_of: str, periods: int = 4) -> SourceResult:
        return self._first(lambda s: s.fina_indicator(ts_code, as_of, periods))

    def _first(self, ask: Callable[[FundamentalsSource], SourceResult]) -> SourceResult:
        results = []
        for source in self.sources:
            result = ask(source)
            if result.rows:
                return result
            results.append(result)
        return SourceResult(results[0].dataset, [], self.name, gap="; ".join(str(r.gap) for r in results))


class NoFundamentals(FundamentalsSource):
    """The source when none is configured: every answer is a gap saying so (`reason`, a message id, in the
    language in effect)."""

    name = "none"

    def __init__(self, reason: str) -> None:
        self.reason = reason

    def daily_basic(self, ts_code: str, as_of: str) -> SourceResult:
        return self._gap(DAILY_BASIC, ts_code, as_of, 1)

    def income(self, ts_code: str, as_of: str, periods: int = 4) -> SourceResult:
        return self._gap(INCOME, ts_code, as_of, periods)

    def fina_indicator(self, ts_code: str, as_of: str, periods: int = 4) -> SourceResult:
        return self._gap(FINA_INDICATOR, ts_code, as_of, periods)

    def _gap(self, dataset: str, ts_code: str, as_of: str, periods: int) -> SourceResult:
        _check(ts_code, as_of, periods)
        return SourceResult(dataset, [], self.name, gap=_(self.reason))


NO_FUNDAMENTALS = N_("no fundamentals source configured (set QUANTDESK_FUNDAMENTALS_DIR to a folder with "
                     "daily_basic, income and fina_indicator files, or TUSHARE_TOKEN)")


def fundamentals_source(*, directory: str | Path | None = None, tushare: TushareProvider | None = None,
                        market: MarketDataProvider | None = None) -> FundamentalsSource:
    """The configured sources, asked in this order: local files in `directory`, tushare, then the market-data
    provider (daily_basic only); with none, a source whose every answer is the gap `NO_FUNDAMENTALS`."""
    sources: list[FundamentalsSource] = []
    if directory is not None:
        sources.append(LocalFundamentals(directory))
    if tushare is not None:
        sources.append(TushareFundamentals(tushare))
    if market is not None:
        sources.append(MarketDataFundamentals(market))
    if not sources:
        return NoFundamentals(NO_FUNDAMENTALS)
    return sources[0] if len(sources) == 1 else ChainedFundamentals(*sources)


def latest_daily_basic(frame: pd.DataFrame, as_of: str) -> pd.DataFrame:
    """The row with the latest trade_date on or before `as_of`, within `DAILY_BASIC_LOOKBACK_DAYS`."""
    start = _days_before(as_of, DAILY_BASIC_LOOKBACK_DAYS)
    visible = frame[(frame["trade_date"] >= start) & (frame["trade_date"] <= as_of)]
    return visible.sort_values("trade_date", ascending=False, kind="stable").head(1)


def point_in_time_reports(frame: pd.DataFrame, as_of: str, periods: int) -> pd.DataFrame:
    """Per report period (end_date) the version announced last on or before `as_of`, newest periods first.

    The announcement date is f_ann_date, else ann_date (fina_indicator has only ann_date); rows without one
    are never visible. Two versions announced the same day: the one with update_flag 1 (tushare's latest)."""
    announced = frame["f_ann_date"] if "f_ann_date" in frame.columns else pd.Series("", index=frame.index)
    announced = announced.where(announced != "", frame["ann_date"])
    visible = frame.assign(_announced=announced)
    visible = visible[(visible["_announced"] != "") & (visible["_announced"] <= as_of) & (visible["end_date"] != "")]
    if "report_type" in visible.columns:
        visible = visible[visible["report_type"].isin([CONSOLIDATED, ""])]
    visible = visible.sort_values(["end_date", "_announced", "update_flag"], kind="stable")
    latest = visible.drop_duplicates("end_date", keep="last")
    return latest.sort_values("end_date", ascending=False, kind="stable").head(periods).drop(columns="_announced")


def _check(ts_code: str, as_of: str, periods: int) -> tuple[str, str]:
    """A validated single ts_code and YYYYMMDD day; `DataError` otherwise."""
    codes = normalize_codes(ts_code)
    if len(codes) != 1:
        raise DataError(_("one ts_code at a time, not {codes}").format(codes=", ".join(codes)))
    if periods < 1:
        raise DataError(_("periods must be at least 1, not {periods}").format(periods=periods))
    return codes[0], normalize_date(as_of, N_("as-of date"))


def _clean(dataset: str, frame: pd.DataFrame, ts_code: str) -> pd.DataFrame:
    """The dataset's columns with text as str ('' when empty, dates YYYYMMDD) and values as float64.

    The key columns must be there; a value column the source lacks becomes all-null."""
    needed = ("trade_date",) if dataset == DAILY_BASIC else ("ann_date", "end_date")
    lacking = [c for c in needed if c not in frame.columns]
    if lacking:
        raise DataError(_("the {dataset} data lacks the column(s) {columns}").format(dataset=dataset,
                                                                                    columns=", ".join(lacking)))
    columns: dict[str, pd.Series] = {}
    for column in TEXT_COLUMNS[dataset]:
        values = frame[column].tolist() if column in frame.columns else [""] * len(frame)
        convert = day_or_none if column in DATE_COLUMNS else _text
        columns[column] = pd.Series([convert(v) or "" for v in values], dtype=object)
    columns["ts_code"] = pd.Series([ts_code] * len(frame), dtype=object)
    for column in VALUE_COLUMNS[dataset]:
        values = frame[column].tolist() if column in frame.columns else [math.nan] * len(frame)
        columns[column] = pd.to_numeric(pd.Series(values, dtype=object), errors="coerce").astype("float64")
    return pd.DataFrame(columns)


def _rows(dataset: str, frame: pd.DataFrame) -> list[Row]:
    """Plain dicts: text as str or None, values as float or None."""
    rows: list[Row] = []
    for record in frame.to_dict("records"):
        row: Row = {c: (str(record[c]) or None) for c in TEXT_COLUMNS[dataset]}
        row.update({c: None if math.isnan(record[c]) else float(record[c]) for c in VALUE_COLUMNS[dataset]})
        rows.append(row)
    return rows


def _text(value: object) -> str | None:
    """A text cell; a whole float (a flag read as 1.0) is written without its decimals."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return text_or_none(value)


def _nothing(dataset: str, ts_code: str, as_of: str, where: str) -> str:
    if dataset == DAILY_BASIC:
        return _("no daily_basic row for {code} in the {days} days up to {day} {where} (suspended, not yet listed, "
                 "or not in the data)").format(code=ts_code, days=DAILY_BASIC_LOOKBACK_DAYS, day=as_of, where=where)
    return _("no {what} for {code} announced on or before {day} {where}").format(what=_(WHAT[dataset]), code=ts_code,
                                                                                 day=as_of, where=where)


def _days_before(day: str, days: int) -> str:
    return (datetime.strptime(day, "%Y%m%d") - timedelta(days=days)).strftime("%Y%m%d")
