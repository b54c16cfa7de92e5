"""An in-memory cache in front of a provider: repeated or narrower requests do not refetch."""

from __future__ import annotations

import threading
from collections import OrderedDict

import pandas as pd

from tools.data.provider import MarketDataProvider

Key = tuple[str, str, tuple[str, ...]]  # dataset, code, fields


class CachingProvider(MarketDataProvider):
    """Caches per (dataset, code, fields) the widest date range fetched so far; LRU-bounded."""

    def __init__(self, inner: MarketDataProvider, max_entries: int = 4096) -> None:
        self.inner = inner
        self.name = inner.name
        self.max_entries = max_entries
        self.misses = 0
        self._entries: OrderedDict[Key, tuple[str, str, pd.DataFrame]] = OrderedDict()
        self._lock = threading.Lock()

    def available_fields(self, dataset: str) -> tuple[str, ...]:
        return self.inner.available_fields(dataset)

    def known_codes(self) -> frozenset[str] | None:
        return self.inner.known_codes()

    def _coverage_hint(self) -> str:
        return self.inner._coverage_hint()

    def _fetch(self, dataset: str, codes: list[str], start: str, end: str, fields: list[str]) -> pd.DataFrame:
        parts: list[pd.DataFrame] = []
        to_fetch: list[str] = []
        with self._lock:
            for code in codes:
                entry = self._entries.get((dataset, code, tuple(fields)))
                if entry is not None and entry[0] <= start and end <= entry[1]:
                    self._entries.move_to_end((dataset, code, tuple(fields)))
                    rows = entry[2]
                    parts.append(rows[(rows["trade_date"] >= start) & (rows["trade_date"] <= end)])
                else:
                    to_fetch.append(code)
        if to_fetch:
            self.misses += 1
            fresh = self.inner._fetch(dataset, to_fetch, start, end, fields)
            by_code = dict(iter(fresh.groupby("ts_code", sort=False)))
            empty = fresh.iloc[0:0]
            with self._lock:
                for code in to_fetch:
                    self._entries[(dataset, code, tuple(fields))] = (start, end, by_code.get(code, empty))
                while len(self._entries) > self.max_entries:
                    self._entries.popitem(last=False)
            parts.append(fresh)
        return pd.concat(parts, ignore_index=True)
