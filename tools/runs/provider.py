"""The data a run reads, recorded as it is read (`RecordingProvider`) and served again from the record
(`RecordedProvider`): a re-run reads exactly the rows the run read, even after the provider restated them."""

from __future__ import annotations

import threading
from dataclasses import asdict, dataclass, field
from typing import Any

import pandas as pd

from tools.data.calendar import TradingCalendar
from tools.data.provider import MarketDataProvider
from tools.data.schema import DataError
from tools.data.securities import Security
from tools.i18n import _
from tools.runs.hashing import frame_digest


@dataclass(frozen=True)
class Read:
    """One fetch of rows: what was asked and what came back."""

    dataset: str
    codes: tuple[str, ...]
    start: str
    end: str
    fields: tuple[str, ...]
    rows: pd.DataFrame = field(compare=False, repr=False)

    @property
    def key(self) -> str:
        return read_key(self.dataset, self.codes, self.start, self.end, self.fields)

    @property
    def digest(self) -> str:
        return frame_digest(self.rows)


def read_key(dataset: str, codes: tuple[str, ...] | list[str], start: str, end: str,
             fields: tuple[str, ...] | list[str]) -> str:
    return "|".join((dataset, ",".join(codes), start, end, ",".join(fields)))


@dataclass
class DataRecord:
    """What a run read: the fetched rows by request, and the small answers (calendars, securities, the last
    date, the codes and fields served) as JSON by question."""

    provider: str = ""
    price_basis: str = "unknown"
    reads: dict[str, Read] = field(default_factory=dict)
    lookups: dict[str, Any] = field(default_factory=dict)


class RecordingProvider(MarketDataProvider):
    """`inner`, with every read kept in `record`."""

    def __init__(self, inner: MarketDataProvider, record: DataRecord) -> None:
        self.inner = inner
        self.record = record
        self.name = inner.name
        self.price_basis = inner.price_basis
        record.provider, record.price_basis = inner.name, inner.price_basis
        self._lock = threading.Lock()

    def label(self) -> str:
        return self.inner.label()

    @property
    def trading_calendar(self) -> TradingCalendar:
        return self.inner.trading_calendar

    def _keep(self, key: str, value: Any) -> Any:
        with self._lock:
            self.record.lookups.setdefault(key, value)
        return value

    def available_fields(self, dataset: str) -> tuple[str, ...]:
        return tuple(self._keep(f"fields:{dataset}", list(self.inner.available_fields(dataset))))

    def known_codes(self) -> frozenset[str] | None:
        known = self.inner.known_codes()
        self._keep("known_codes", sorted(known) if known is not None else None)
        return known

    def stock_names(self) -> dict[str, str]:
        return dict(self._keep("stock_names", self.inner.stock_names()))

    def last_date(self) -> str | None:
        return self._keep("last_date", self.inner.last_date())

    def _coverage_hint(self) -> str:
        """What the inner provider says its data covers, in a no-data error (words, not data: not kept)."""
        return self.inner._coverage_hint()

    def _calendar(self, start: str, end: str) -> list[str]:
        return list(self._keep(f"calendar:{start}:{end}", self.inner.calendar(start, end)))

    def _securities(self, codes: list[str]) -> dict[str, Security]:
        found = self.inner.securities(codes)
        self._keep(f"securities:{','.join(codes)}", {code: asdict(s) for code, s in found.items()})
        return found

    def _fetch(self, dataset: str, codes: list[str], start: str, end: str, fields: list[str]) -> pd.DataFrame:
        frame = self.inner._fetch(dataset, codes, start, end, fields)
        read = Read(dataset, tuple(codes), start, end, tuple(fields), frame.copy())
        with self._lock:
            self.record.reads.setdefault(read.key, read)
        return frame


class NotRecorded(DataError):
    """A re-run asked the record for data the run never read."""


class RecordedProvider(MarketDataProvider):
    """Serves a `DataRecord`: the same questions get the same answers; another question is a `NotRecorded`."""

    def __init__(self, record: DataRecord, calendar: TradingCalendar) -> None:
        self.record = record
        self.name = record.provider
        self.price_basis = record.price_basis  # type: ignore[assignment]  # a stored PriceBasis
        self._trading_calendar = calendar

    @property
    def trading_calendar(self) -> TradingCalendar:
        return self._trading_calendar

    def _lookup(self, key: str) -> Any:
        if key not in self.record.lookups:
            raise NotRecorded(_("the run's record has no answer for {question}").format(question=key))
        return self.record.lookups[key]

    def available_fields(self, dataset: str) -> tuple[str, ...]:
        return tuple(self._lookup(f"fields:{dataset}"))

    def known_codes(self) -> frozenset[str] | None:
        known = self.record.lookups.get("known_codes")
        return frozenset(known) if known is not None else None

    def stock_names(self) -> dict[str, str]:
        return dict(self.record.lookups.get("stock_names") or {})

    def last_date(self) -> str | None:
        value = self._lookup("last_date")
        return str(value) if value is not None else None

    def _calendar(self, start: str, end: str) -> list[str]:
        return list(self._lookup(f"calendar:{start}:{end}"))

    def _securities(self, codes: list[str]) -> dict[str, Security]:
        stored = self._lookup(f"securities:{','.join(codes)}")
        return {code: Security(**{**s, "st_periods": _periods(s.get("st_periods"))}) for code, s in stored.items()}

    def _fetch(self, dataset: str, codes: list[str], start: str, end: str, fields: list[str]) -> pd.DataFrame:
        read = self.record.reads.get(read_key(dataset, codes, start, end, fields))
        if read is None:
            raise NotRecorded(_("the run's record has no {dataset} rows for {codes} from {start} to {end}").format(
                dataset=dataset, codes=",".join(codes), start=start, end=end))
        return read.rows.copy()


def _periods(value: Any) -> tuple[tuple[str, str | None], ...] | None:
    return None if value is None else tuple((str(a), None if b is None else str(b)) for a, b in value)
