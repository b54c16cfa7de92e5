"""A provider reading tushare-schema Parquet or CSV files from a directory; also the bundled sample."""

from __future__ import annotations

import logging
from importlib import resources
from pathlib import Path

import pandas as pd

from tools.data.provider import MarketDataProvider
from tools.data.schema import DAILY, DATASET_FIELDS, KEY_COLUMNS, DataError

log = logging.getLogger(__name__)


def sample_dir() -> Path:
    """The sample bundled inside the package (see its NOTICE)."""
    return Path(str(resources.files("tools.data.sample")))


class LocalProvider(MarketDataProvider):
    """Reads `daily.parquet|csv` (bars) and optional `daily_basic.parquet|csv` (indicators) from `root`.

    Extra columns are ignored; a `tradestatus` column (1 trading, 0 suspended) drops suspended rows,
    so the result matches tushare, which has no rows on suspended days. Files are read once, lazily.
    """

    def __init__(self, root: str | Path, name: str = "local") -> None:
        self.root = Path(root)
        self.name = name
        if not self.root.is_dir():
            raise DataError(f"local data directory {self.root} does not exist")
        self._files = {ds: self._find(ds) for ds in DATASET_FIELDS}
        if self._files[DAILY] is None:
            raise DataError(f"no daily.parquet or daily.csv in {self.root}")
        self._frames: dict[str, pd.DataFrame] = {}
        self._codes: frozenset[str] | None = None

    def _find(self, dataset: str) -> Path | None:
        for suffix in (".parquet", ".csv"):
            path = self.root / f"{dataset}{suffix}"
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
        if "tradestatus" in frame.columns:
            frame = frame[frame["tradestatus"] == 1]
        keep = [c for c in (*KEY_COLUMNS, *DATASET_FIELDS[dataset]) if c in frame.columns]
        frame = frame.loc[:, keep].copy()
        frame["ts_code"] = frame["ts_code"].astype(str)
        frame["trade_date"] = frame["trade_date"].astype(str).str.replace("-", "", regex=False)
        frame = frame.sort_values(["ts_code", "trade_date"], ignore_index=True)
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
        return f" (its data covers {first} to {last})"

    def _fetch(self, dataset: str, codes: list[str], start: str, end: str, fields: list[str]) -> pd.DataFrame:
        frame = self._load(dataset)
        mask = frame["ts_code"].isin(codes) & (frame["trade_date"] >= start) & (frame["trade_date"] <= end)
        return frame.loc[mask, [*KEY_COLUMNS, *fields]]


class SampleProvider(LocalProvider):
    """The bundled CSI 300 sample: the embedded default that needs no keys."""

    def __init__(self) -> None:
        super().__init__(sample_dir(), name="bundled sample")
