"""A provider reading tushare-schema Parquet or CSV files from a directory; also the bundled sample."""

from __future__ import annotations

import bisect
import logging
from importlib import resources
from pathlib import Path

import pandas as pd

from tools.data.provider import PRICE_BASES, MarketDataProvider, PriceBasis
from tools.data.schema import DAILY, DATASET_FIELDS, KEY_COLUMNS, DataError
from tools.data.securities import (
    Period,
    Security,
    day_or_none,
    last_flag_days,
    st_periods_from_flags,
    st_periods_from_names,
    text_or_none,
)
from tools.i18n import N_, _

log = logging.getLogger(__name__)

STOCK_BASIC = "stock_basic"
NAMECHANGE = "namechange"


def sample_dir() -> Path:
    """The sample bundled inside the package (see its NOTICE)."""
    return Path(str(resources.files("tools.data.sample")))


class LocalProvider(MarketDataProvider):
    """Reads `daily.parquet|csv` (bars) and optional `daily_basic.parquet|csv` (indicators) from `root`.

    Extra columns are ignored; a `tradestatus` column (1 trading, 0 suspended) drops suspended rows,
    so the result matches tushare, which has no rows on suspended days. Files are read once, lazily.

    Securities come from optional files in tushare's schema: `stock_basic.parquet|csv` (ts_code, name,
    list_date) and `namechange.parquet|csv` (ts_code, name, start_date, end_date) for ST history; for codes
    without name changes, an `is_st` column (1 on ST days) of the daily file gives ST history within its dates
    (a later day carries the code's last flagged status forward).
    """

    def __init__(self, root: str | Path, name: str = N_("local"), price_basis: PriceBasis = "unknown") -> None:
        self.root = Path(root)
        self.name = name
        if price_basis not in PRICE_BASES:
            raise DataError(_("price basis {basis!r} is not one of: {known}").format(
                basis=price_basis, known=", ".join(PRICE_BASES)))
        self.price_basis = price_basis
        if not self.root.is_dir():
            raise DataError(_("local data directory {path} does not exist").format(path=self.root))
        self._files = {ds: self._find(ds) for ds in DATASET_FIELDS}
        if self._files[DAILY] is None:
            raise DataError(_("no daily.parquet or daily.csv in {path}").format(path=self.root))
        self._frames: dict[str, pd.DataFrame] = {}
        self._codes: frozenset[str] | None = None
        self._days: list[str] | None = None
        self._st_flags: dict[str, tuple[Period, ...]] | None = None  # from the daily file's is_st column
        self._st_flag_ends: dict[str, str] = {}  # each code's last flagged day: later days carry its status
        self._reference: dict[str, Security] | None = None

    def _find(self, stem: str) -> Path | None:
        for suffix in (".parquet", ".csv"):
            path = self.root / f"{stem}{suffix}"
            if path.is_file():
                return path
        return None

    def _load(self, dataset: str) -> pd.DataFrame:
        if dataset in self._frames:
            return self._frames[dataset]
        path = self._files[dataset]
        if path is None:
            frame = pd.DataFrame(columns=list(KEY_COLUMNS))
        elif path.suffix == ".parquet":
            frame = pd.read_parquet(path)
        else:
            frame = pd.read_csv(path, dtype={"ts_code": str, "trade_date": str})
        frame = frame.assign(ts_code=frame["ts_code"].astype(str),
                             trade_date=frame["trade_date"].astype(str).str.replace("-", "", regex=False))
        if dataset == DAILY and "is_st" in frame.columns:
            self._st_flags = st_periods_from_flags(frame)  # suspended days included: ST on them too
            self._st_flag_ends = last_flag_days(frame)
        if "tradestatus" in frame.columns:
            frame = frame[frame["tradestatus"] == 1]
        keep = [c for c in (*KEY_COLUMNS, *DATASET_FIELDS[dataset]) if c in frame.columns]
        frame = frame.loc[:, keep].sort_values(["ts_code", "trade_date"], ignore_index=True)
        log.debug("loaded %s rows of %s from %s", len(frame), dataset, path)
        self._frames[dataset] = frame
        return frame

    def available_fields(self, dataset: str) -> tuple[str, ...]:
        columns = set(self._load(dataset).columns)
        return tuple(f for f in DATASET_FIELDS[dataset] if f in columns)

    def known_codes(self) -> frozenset[str]:
        if self._codes is None:
            self._codes = frozenset(self._load(DAILY)["ts_code"].unique())
        return self._codes

    def date_range(self) -> tuple[str, str]:
        dates = self._load(DAILY)["trade_date"]
        return str(dates.min()), str(dates.max())

    def _coverage_hint(self) -> str:
        first, last = self.date_range()
        return _(" (its data covers {first} to {last})").format(first=first, last=last)

    def _fetch(self, dataset: str, codes: list[str], start: str, end: str, fields: list[str]) -> pd.DataFrame:
        frame = self._load(dataset)
        mask = frame["ts_code"].isin(codes) & (frame["trade_date"] >= start) & (frame["trade_date"] <= end)
        return frame.loc[mask, [*KEY_COLUMNS, *fields]]

    def _trade_days(self) -> list[str]:
        """Every trade_date of the daily file, ascending."""
        if self._days is None:
            self._days = sorted(self._load(DAILY)["trade_date"].unique())
        return self._days

    def _calendar(self, start: str, end: str) -> list[str]:
        days = self._trade_days()
        return days[bisect.bisect_left(days, start) : bisect.bisect_right(days, end)]

    def last_date(self) -> str | None:
        days = self._trade_days()
        return days[-1] if days else None

    def _securities(self, codes: list[str]) -> dict[str, Security]:
        if self._reference is None:
            self._reference = self._read_reference()
        return {code: self._reference[code] for code in codes if code in self._reference}

    def _read_reference(self) -> dict[str, Security]:
        """Every code the stock_basic, namechange and daily files say something about."""
        basics = self._read_table(STOCK_BASIC, ["ts_code", "name", "list_date"])
        names = {code: (text_or_none(name), day_or_none(listed))
                 for code, name, listed in zip(basics["ts_code"], basics["name"], basics["list_date"], strict=True)}
        changes = self._read_table(NAMECHANGE, ["ts_code", "name", "start_date", "end_date"])
        self._load(DAILY)  # sets the is_st flags aside when the file has them
        renamed = st_periods_from_names(changes)
        st = {**(self._st_flags or {}), **renamed}
        return {code: Security(code, *names.get(code, (None, None)), st_periods=st.get(code),
                               st_known_until=None if code in renamed else self._st_flag_ends.get(code))
                for code in {*names, *st}}

    def _read_table(self, stem: str, columns: list[str]) -> pd.DataFrame:
        """An optional reference table's `columns` (empty without the file); a missing column is a `DataError`."""
        path = self._find(stem)
        if path is None:
            return pd.DataFrame(columns=columns)
        frame = pd.read_parquet(path) if path.suffix == ".parquet" else pd.read_csv(
            path, dtype=str, keep_default_na=False)
        lacking = [c for c in columns if c not in frame.columns]
        if lacking:
            raise DataError(_("{path} lacks the column(s) {lacking}; it needs {columns}").format(
                path=path, lacking=", ".join(lacking), columns=", ".join(columns)))
        return frame.loc[:, columns].assign(ts_code=frame["ts_code"].astype(str).str.strip().str.upper())


class SampleProvider(LocalProvider):
    """The bundled CSI 300 sample: the embedded default that needs no keys. Its prices are forward-adjusted."""

    def __init__(self) -> None:
        super().__init__(sample_dir(), name=N_("bundled sample"), price_basis="forward-adjusted")
