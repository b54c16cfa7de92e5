"""The market-data interface every provider implements: long frames in the tushare schema, wide frames per field."""

from __future__ import annotations

import logging
from abc import ABC, abstractmethod
from collections.abc import Iterable, Sequence
from datetime import date
from typing import Literal, get_args

import pandas as pd

from tools.data.calendar import TradingCalendar, exchange_calendar
from tools.data.schema import (
    DAILY,
    DAILY_BASIC,
    DATASET_FIELDS,
    KEY_COLUMNS,
    DataError,
    check_fields,
    check_range,
    codes_text,
    dataset_of,
    normalize_codes,
    normalize_date,
)
from tools.data.securities import Security
from tools.i18n import N_, _

log = logging.getLogger(__name__)

PriceBasis = Literal["unadjusted", "forward-adjusted", "unknown"]
PRICE_BASES: tuple[str, ...] = get_args(PriceBasis)


class MarketDataProvider(ABC):
    """Daily bars and daily indicators for one or many codes over a date range.

    Long frames have columns ts_code, trade_date (YYYYMMDD strings) and the fields, sorted by
    trade_date then ts_code. Wide frames have a DatetimeIndex named trade_date and one column per ts_code.

    Every public data method takes `warnings`: a list the provider appends readable notes to (codes that came
    back without rows, hence as NaN columns), for the caller to show its user. Without it the notes are logged.

    `price_basis` says what the prices are: exchange prices ("unadjusted"), forward-adjusted ("qfq", as of the
    data's last day) or "unknown".
    """

    name: str = "provider"  # English, as logs name it; `label()` as people read it
    price_basis: PriceBasis = "unknown"

    def label(self) -> str:
        """The provider's name in the language in effect (the bundled sample is 内置样本数据 in Chinese)."""
        return _(self.name)

    @abstractmethod
    def available_fields(self, dataset: str) -> tuple[str, ...]:
        """Fields of `dataset` this provider can really serve."""

    @abstractmethod
    def _fetch(self, dataset: str, codes: list[str], start: str, end: str, fields: list[str]) -> pd.DataFrame:
        """Rows for validated arguments; may be empty. Columns: key columns plus `fields`."""

    @abstractmethod
    def _securities(self, codes: list[str]) -> dict[str, Security]:
        """What the source knows about validated codes; codes it does not know may be left out."""

    @abstractmethod
    def _calendar(self, start: str, end: str) -> list[str]:
        """Trading days (YYYYMMDD) within validated [start, end], ascending."""

    @abstractmethod
    def last_date(self) -> str | None:
        """The latest trade_date this provider has bars for (YYYYMMDD); None when it finds none."""

    def known_codes(self) -> frozenset[str] | None:
        """Codes this provider can serve, when it knows them up front (None: ask the source)."""
        return None

    def stock_names(self) -> dict[str, str]:
        """Every stock's current name the source can list up front (ts_code -> name, e.g. 贵州茅台); empty when it
        cannot. Reads the reference data: call once and keep the answer."""
        known = self.known_codes()
        if not known:
            return {}
        return {code: security.name for code, security in self.securities(sorted(known)).items() if security.name}

    @property
    def trading_calendar(self) -> TradingCalendar:
        """The exchange's trading days, also beyond the data (tools/data/calendar.py); `calendar` has only the
        days the source has."""
        return exchange_calendar()

    def securities(self, codes: str | Iterable[str]) -> dict[str, Security]:
        """Name, listing date and ST history per code, in the caller's order; a code the provider does not know
        comes back with all fields None (unknown), never as an error."""
        code_list = normalize_codes(codes)
        known = self._securities(code_list)
        return {code: known.get(code) or Security(code) for code in code_list}

    def calendar(self, start: str | date, end: str | date) -> list[str]:
        """Trading days (YYYYMMDD) from `start` to `end` inclusive, ascending; may include future days when the
        source publishes them (tushare), else only days with bars."""
        start_s, end_s = normalize_date(start, "start date"), normalize_date(end, "end date")
        if start_s > end_s:
            raise DataError(_("start date {start} is after end date {end}").format(start=start_s, end=end_s))
        return self._calendar(start_s, end_s)

    def daily(self, codes: str | Iterable[str], start: str | date, end: str | date,
              fields: Sequence[str] | None = None, *, warnings: list[str] | None = None) -> pd.DataFrame:
        """Daily bars (tushare `daily`); fields of the other datasets, like daily_basic's turnover_rate,
        are joined on (ts_code, trade_date)."""
        return self._joined(DAILY, codes, start, end, fields, warnings)

    def daily_basic(self, codes: str | Iterable[str], start: str | date, end: str | date,
                    fields: Sequence[str] | None = None, *, warnings: list[str] | None = None) -> pd.DataFrame:
        """Daily indicators (tushare `daily_basic`); bar fields are joined like in `daily`."""
        return self._joined(DAILY_BASIC, codes, start, end, fields, warnings)

    def _joined(self, dataset: str, codes: str | Iterable[str], start: str | date, end: str | date,
                fields: Sequence[str] | None, warnings: list[str] | None) -> pd.DataFrame:
        """All of `dataset` when no fields are named, else the named fields fetched per dataset and joined."""
        if fields is None:
            return self.fetch(dataset, codes, start, end, None, warnings=warnings)
        wanted = list(dict.fromkeys(fields))
        code_list = normalize_codes(codes)
        frames = [self.fetch(ds, code_list, start, end, ds_fields, warnings=warnings)
                  for ds, ds_fields in _by_dataset(wanted).items()]
        frame = frames[0]
        for other in frames[1:]:
            frame = frame.merge(other, on=list(KEY_COLUMNS), how="outer")
        return frame.loc[:, [*KEY_COLUMNS, *wanted]].sort_values(["trade_date", "ts_code"], ignore_index=True)

    def fetch(self, dataset: str, codes: str | Iterable[str], start: str | date, end: str | date,
              fields: Sequence[str] | None = None, *, warnings: list[str] | None = None) -> pd.DataFrame:
        """Validated long rows of one dataset; every problem is a `DataError` naming it."""
        if dataset not in DATASET_FIELDS:
            raise DataError(_("unknown dataset {dataset!r}; use one of: {known}").format(
                dataset=dataset, known=", ".join(DATASET_FIELDS)))
        code_list = normalize_codes(codes)
        start_s, end_s = check_range(start, end)
        wanted = check_fields(dataset, fields, self.available_fields(dataset), self.label())
        known = self.known_codes()
        if known is not None:
            unknown = [c for c in code_list if c not in known]
            if unknown:
                raise DataError(_("unknown ts_code {codes} for the {provider} provider").format(
                    codes=codes_text(unknown), provider=self.label()))
        frame = self._fetch(dataset, code_list, start_s, end_s, wanted)
        if frame.empty:
            raise DataError(_("no {dataset} rows for {codes} between {start} and {end} from the {provider} "
                              "provider{coverage} (suspended, not yet listed, or unknown code)").format(
                dataset=dataset, codes=codes_text(code_list), start=start_s, end=end_s, provider=self.label(),
                coverage=self._coverage_hint()))
        present = set(frame["ts_code"].unique())
        missing = [c for c in code_list if c not in present]
        if missing:
            # Late listings and long suspensions are normal in a universe: those codes come back
            # as all-NaN columns of wide frames. A lone code with no rows is an error (above).
            _warn(warnings, N_("no {dataset} rows for {codes} between {start} and {end} from the {provider} provider "
                               "(not yet listed or suspended); their values are missing (NaN)"),
                  dataset=dataset, codes=codes_text(missing), start=start_s, end=end_s, provider=self.name)
        frame = frame.loc[:, [*KEY_COLUMNS, *wanted]]
        return frame.sort_values(["trade_date", "ts_code"], ignore_index=True)

    def _coverage_hint(self) -> str:
        """What dates the provider has, for a message saying it has no rows (in the language in effect)."""
        return ""

    def wide(self, field: str, codes: str | Iterable[str], start: str | date, end: str | date, *,
             warnings: list[str] | None = None) -> pd.DataFrame:
        """One field as a date × code frame (NaN where a code has no row that day)."""
        return self.panel([field], codes, start, end, warnings=warnings)[field]

    def panel(self, fields: Sequence[str], codes: str | Iterable[str], start: str | date,
              end: str | date, *, warnings: list[str] | None = None) -> dict[str, pd.DataFrame]:
        """Several fields as wide frames, fetching each dataset once."""
        code_list = normalize_codes(codes)
        result: dict[str, pd.DataFrame] = {}
        for dataset, dataset_fields in _by_dataset(fields).items():
            long = self.fetch(dataset, code_list, start, end, dataset_fields, warnings=warnings)
            for field in dataset_fields:
                result[field] = to_wide(long, field, code_list)
        return {field: result[field] for field in fields}


def _by_dataset(fields: Iterable[str]) -> dict[str, list[str]]:
    """Fields grouped by the dataset they belong to, in the order given; an unknown field is a `DataError`."""
    grouped: dict[str, list[str]] = {}
    for field in fields:
        grouped.setdefault(dataset_of(field), []).append(field)
    return grouped


def _warn(warnings: list[str] | None, template: str, provider: str, **values: str) -> None:
    """Hand a note (`template`, a message id, filled with `values` and the provider's name) to the caller's list in
    the language in effect, or log it in English when the caller did not ask for notes."""
    if warnings is None:
        log.warning("%s", template.format(provider=provider, **values))
    else:
        warnings.append(_(template).format(provider=_(provider), **values))


def to_wide(long: pd.DataFrame, field: str, codes: Sequence[str] | None = None) -> pd.DataFrame:
    """Pivot a long tushare frame into a date × code frame of one field."""
    wide = long.pivot(index="trade_date", columns="ts_code", values=field)
    wide.index = pd.DatetimeIndex(pd.to_datetime(wide.index, format="%Y%m%d"), name="trade_date")
    wide.columns = pd.Index([str(c) for c in wide.columns], name="ts_code", dtype=object)
    if codes is not None:
        wide = wide.reindex(columns=list(codes))
    return wide.astype("float64")
