"""An in-memory cache in front of a provider: repeated, narrower or adjoining requests do not refetch history,
and recent dates are refetched once they are older than a TTL. Securities and the last date are kept for TTLs
of their own; the calendar is passed through."""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, datetime, timedelta

import pandas as pd

from tools.data.calendar import TradingCalendar
from tools.data.provider import MarketDataProvider
from tools.data.securities import Security

Key = tuple[str, str, tuple[str, ...]]  # dataset, code, fields
DEFAULT_RECENT_DAYS = 7
DEFAULT_RECENT_TTL = 600.0
DEFAULT_SECURITIES_TTL = 3600.0  # names and ST status change at most daily, announced ahead


@dataclass(frozen=True)
class _Entry:
    """One code's rows over the contiguous range [start, end] (YYYYMMDD), sorted by trade_date."""

    start: str
    end: str
    rows: pd.DataFrame
    fetched_at: float  # clock reading when the oldest recent rows it holds were fetched

    def covers(self, start: str, end: str) -> bool:
        return self.start <= start and end <= self.end


class CachingProvider(MarketDataProvider):
    """Caches one contiguous date range per (dataset, code, fields); LRU-bounded.

    A cached range never shrinks: a request overlapping or adjoining it fetches only the missing part and
    is merged in; a disjoint request replaces it only when wider. Rows dated within `recent_days` of today
    may still change (today's bar arrives after the close), so they are served from the cache for
    `recent_ttl` seconds only; older rows are immutable history and stay until evicted.

    Securities are kept per code for `securities_ttl` seconds, `last_date` for `recent_ttl` seconds.
    """

    def __init__(self, inner: MarketDataProvider, max_entries: int = 4096, *,
                 recent_days: int = DEFAULT_RECENT_DAYS, recent_ttl: float = DEFAULT_RECENT_TTL,
                 securities_ttl: float = DEFAULT_SECURITIES_TTL,
                 clock: Callable[[], float] = time.monotonic, today: Callable[[], date] = date.today,
                 calendar: TradingCalendar | None = None) -> None:
        self.inner = inner
        self._trading_calendar = calendar
        self.name = inner.name
        self.price_basis = inner.price_basis
        self.securities_ttl = securities_ttl
        self.max_entries = max_entries
        self.recent_days = recent_days
        self.recent_ttl = recent_ttl
        self.misses = 0  # calls made to the inner provider
        self._clock = clock
        self._today = today
        self._entries: OrderedDict[Key, _Entry] = OrderedDict()
        self._securities_cache: dict[str, tuple[float, Security]] = {}
        self._last_date: tuple[float, str | None] | None = None
        self._lock = threading.Lock()

    def available_fields(self, dataset: str) -> tuple[str, ...]:
        return self.inner.available_fields(dataset)

    def known_codes(self) -> frozenset[str] | None:
        return self.inner.known_codes()

    def stock_names(self) -> dict[str, str]:
        return self.inner.stock_names()

    @property
    def trading_calendar(self) -> TradingCalendar:
        """The calendar given (tushare's while local data is read), else the inner provider's."""
        return self._trading_calendar or self.inner.trading_calendar

    def _coverage_hint(self) -> str:
        return self.inner._coverage_hint()

    def _securities(self, codes: list[str]) -> dict[str, Security]:
        now = self._clock()
        with self._lock:
            cached = {code: hit[1] for code in codes
                      if (hit := self._securities_cache.get(code)) and now - hit[0] < self.securities_ttl}
        missing = [code for code in codes if code not in cached]
        if missing:
            fresh = self.inner.securities(missing)
            with self._lock:
                self.misses += 1
                self._securities_cache.update({code: (now, security) for code, security in fresh.items()})
            cached.update(fresh)
        return cached

    def _calendar(self, start: str, end: str) -> list[str]:
        return self.inner.calendar(start, end)

    def last_date(self) -> str | None:
        now = self._clock()
        with self._lock:
            hit = self._last_date
        if hit is not None and now - hit[0] < self.recent_ttl:
            return hit[1]
        value = self.inner.last_date()
        with self._lock:
            self.misses += 1
            self._last_date = (now, value)
        return value

    def _fetch(self, dataset: str, codes: list[str], start: str, end: str, fields: list[str]) -> pd.DataFrame:
        now = self._clock()
        cutoff = (self._today() - timedelta(days=self.recent_days)).strftime("%Y%m%d")
        keys = {code: (dataset, code, tuple(fields)) for code in codes}
        bases: dict[str, _Entry | None] = {}
        needs: dict[tuple[str, str], list[str]] = {}  # missing range -> codes
        with self._lock:
            for code, key in keys.items():
                bases[code] = self._valid(self._entries.get(key), cutoff, now)
                need = _missing(bases[code], start, end)
                if need is None:
                    self._entries.move_to_end(key)
                else:
                    needs.setdefault(need, []).append(code)
        fresh: dict[str, _Entry] = {}
        for (need_start, need_end), group in needs.items():
            with self._lock:
                self.misses += 1
            rows = self.inner._fetch(dataset, group, need_start, need_end, fields)
            by_code = dict(iter(rows.groupby("ts_code", sort=False)))
            empty = rows.iloc[0:0]
            for code in group:
                code_rows = by_code.get(code, empty).sort_values("trade_date", ignore_index=True)
                fresh[code] = _Entry(need_start, need_end, code_rows, now)
        parts: list[pd.DataFrame] = []
        with self._lock:
            for code, key in keys.items():
                entry = bases[code]
                if code in fresh:
                    merged = _merge(entry, fresh[code], cutoff)
                    entry = merged if merged.covers(start, end) else fresh[code]
                    current = self._valid(self._entries.get(key), cutoff, now)
                    self._entries[key] = _merge(current, merged, cutoff)
                    self._entries.move_to_end(key)
                assert entry is not None
                rows = entry.rows
                parts.append(rows[(rows["trade_date"] >= start) & (rows["trade_date"] <= end)])
            while len(self._entries) > self.max_entries:
                self._entries.popitem(last=False)
        return pd.concat(parts, ignore_index=True)

    def _valid(self, entry: _Entry | None, cutoff: str, now: float) -> _Entry | None:
        """`entry` without its recent rows once they are older than the TTL (None when nothing is left)."""
        if entry is None or entry.end < cutoff or now - entry.fetched_at < self.recent_ttl:
            return entry
        last = _shift(cutoff, -1)
        if last < entry.start:
            return None
        return _Entry(entry.start, last, entry.rows[entry.rows["trade_date"] <= last], entry.fetched_at)


def _shift(day: str, days: int) -> str:
    return (datetime.strptime(day, "%Y%m%d") + timedelta(days=days)).strftime("%Y%m%d")


def _span(entry: _Entry) -> int:
    return (datetime.strptime(entry.end, "%Y%m%d") - datetime.strptime(entry.start, "%Y%m%d")).days


def _touches(entry: _Entry, start: str, end: str) -> bool:
    """Whether [start, end] overlaps or adjoins the entry's range."""
    return start <= _shift(entry.end, 1) and entry.start <= _shift(end, 1)


def _missing(base: _Entry | None, start: str, end: str) -> tuple[str, str] | None:
    """The range to fetch so that `base` plus it covers [start, end]; None when `base` already does."""
    if base is None or not _touches(base, start, end):
        return start, end
    if base.covers(start, end):
        return None
    if start < base.start and end > base.end:
        return start, end
    if start < base.start:
        return start, _shift(base.start, -1)
    return _shift(base.end, 1), end


def _merge(old: _Entry | None, new: _Entry, cutoff: str) -> _Entry:
    """The union of two touching ranges (`new`'s rows win where they overlap), else the wider of the two."""
    if old is None:
        return new
    if not _touches(old, new.start, new.end):
        return new if _span(new) >= _span(old) else old
    kept = old.rows[(old.rows["trade_date"] < new.start) | (old.rows["trade_date"] > new.end)]
    parts = [p for p in (kept, new.rows) if not p.empty] or [new.rows]
    rows = pd.concat(parts, ignore_index=True).sort_values("trade_date", ignore_index=True)
    # The merged entry is as fresh as the oldest recent rows it keeps.
    old_recent_kept = old.end >= cutoff and (old.end > new.end or max(old.start, cutoff) < new.start)
    fetched_at = min(old.fetched_at, new.fetched_at) if old_recent_kept else new.fetched_at
    return _Entry(min(old.start, new.start), max(old.end, new.end), rows, fetched_at)
