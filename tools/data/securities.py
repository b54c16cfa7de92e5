"""What a provider knows about a security besides its bars: name, listing date and ST history."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, timedelta

import pandas as pd

from tools.data.schema import normalize_date

Period = tuple[str, str | None]  # first and last day (YYYYMMDD), inclusive; None: still ongoing


@dataclass(frozen=True)
class Security:
    """One ts_code's reference data; a None field is unknown to the provider (not "no")."""

    ts_code: str
    name: str | None = None
    list_date: str | None = None  # YYYYMMDD
    st_periods: tuple[Period, ...] | None = None  # when it was ST or *ST, oldest first; () never
    st_known_until: str | None = None  # the last day the ST history covers (YYYYMMDD); None: it is current

    def is_st(self, on: str) -> bool | None:
        """Whether it was ST (or *ST) on the day `on`; None when its ST history is unknown. After the history's
        last day the status of that day is carried forward (see `st_carried_from`)."""
        if self.st_periods is None:
            return None
        day = normalize_date(on)
        if self.st_known_until is not None and day > self.st_known_until:
            day = self.st_known_until
        return any(start <= day and (end is None or day <= end) for start, end in self.st_periods)

    def st_carried_from(self, on: str) -> str | None:
        """The history's last day when the status on `on` is carried forward from it, else None."""
        known = self.st_known_until
        return known if self.st_periods is not None and known is not None and normalize_date(on) > known else None


def text_or_none(value: object) -> str | None:
    """A table cell's stripped text, None for an empty cell."""
    text = "" if value is None or (not isinstance(value, str) and pd.isna(value)) else str(value).strip()
    return text or None


def day_or_none(value: object) -> str | None:
    """A YYYYMMDD string from a table cell (text, number or date), None for an empty cell."""
    if isinstance(value, date):
        return normalize_date(value)
    if isinstance(value, float) and not pd.isna(value):
        value = int(value)
    text = text_or_none(value)
    return normalize_date(text) if text else None


def st_periods_from_names(names: pd.DataFrame) -> dict[str, tuple[Period, ...]]:
    """ST periods per code from name-change rows (tushare `namechange`: ts_code, name, start_date, end_date).

    A name containing "ST" (ST, *ST, SST, S*ST) marks its row's span as ST. A row without an end date ends
    the day before the code's next name starts, or is ongoing when it is the latest name."""
    result: dict[str, tuple[Period, ...]] = {}
    for code, rows in names.groupby("ts_code", sort=False):
        starts = rows["start_date"].map(day_or_none)
        spans = {(start, str(name), day_or_none(end))
                 for start, name, end in zip(starts, rows["name"], rows["end_date"], strict=True) if start is not None}
        periods: list[Period] = []
        for start, name, end in spans:
            if end is None:
                later = [s for s, _, _ in spans if s > start]
                end = _shift(min(later), -1) if later else None
            if "ST" in name:
                periods.append((start, end))
        result[str(code)] = _merged(periods)
    return result


def st_periods_from_flags(flags: pd.DataFrame) -> dict[str, tuple[Period, ...]]:
    """ST periods per code from daily rows with an `is_st` flag (1 on ST days): each run of flagged rows is
    a period from its first to its last flagged day, so periods never reach past the rows' dates (a day after a
    code's last row carries that row's status: `last_flag_days`)."""
    frame = flags.loc[:, ["ts_code", "trade_date", "is_st"]].sort_values(["ts_code", "trade_date"])
    st = pd.to_numeric(frame["is_st"], errors="coerce").eq(1)
    run = (st.ne(st.shift()) | frame["ts_code"].ne(frame["ts_code"].shift())).cumsum()
    runs = frame[st].groupby(run[st]).agg(ts_code=("ts_code", "first"), start=("trade_date", "min"),
                                          end=("trade_date", "max"))
    result: dict[str, tuple[Period, ...]] = {str(code): () for code in frame["ts_code"].unique()}
    for code, rows in runs.groupby("ts_code", sort=False):
        result[str(code)] = tuple(zip(rows["start"].astype(str), rows["end"].astype(str), strict=True))
    return result


def last_flag_days(flags: pd.DataFrame) -> dict[str, str]:
    """Each code's last day with an `is_st` flag: the last day its flag history covers."""
    return {str(code): str(last) for code, last in flags.groupby("ts_code")["trade_date"].max().items()}


def _merged(periods: list[Period]) -> tuple[Period, ...]:
    """Sorted periods with overlapping or adjoining ones joined."""
    joined: list[Period] = []
    for start, end in sorted(periods, key=lambda period: period[0]):
        if joined:
            last_start, last_end = joined[-1]
            if last_end is None or start <= _shift(last_end, 1):
                joined[-1] = (last_start, None if last_end is None or end is None else max(last_end, end))
                continue
        joined.append((start, end))
    return tuple(joined)


def _shift(day: str, days: int) -> str:
    return (datetime.strptime(day, "%Y%m%d") + timedelta(days=days)).strftime("%Y%m%d")
