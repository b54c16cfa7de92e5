"""A-share fees on a fill: commission with a per-order minimum, stamp duty on sells, transfer fee, and optional
exchange handling and regulator fees. Money is Decimal, each item rounded half-up to the fen."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from typing import TYPE_CHECKING

from tools.broker.boards import OrderRuleError, Side, exchange_of

if TYPE_CHECKING:
    from tools.settings import Settings

FEN = Decimal("0.01")
ZERO = Decimal("0")
MAX_RATE = Decimal("0.01")  # a schedule rate must be below this (1 %)


def round_fen(x: Decimal) -> Decimal:
    """`x` rounded half-up to the fen (0.01 CNY)."""
    return x.quantize(FEN, rounding=ROUND_HALF_UP)


@dataclass(frozen=True)
class Schedule:
    """A rate that changes on dates: (in force from, rate) entries in increasing date order."""

    what: str
    entries: tuple[tuple[date, Decimal], ...]

    def rate(self, on: date) -> Decimal:
        """The rate of the latest entry on or before `on`; a date before the first entry is refused."""
        known = [rate for start, rate in self.entries if start <= on]
        if not known:
            raise OrderRuleError(f"no {self.what} rate known before {self.entries[0][0]}")
        return known[-1]


def _entry(part: str) -> tuple[date, Decimal] | None:
    """(date, rate) from "YYYYMMDD:rate", or None when malformed."""
    day_text, _, rate_text = part.partition(":")
    if len(day_text) != 8 or not day_text.isdigit():
        return None
    try:
        return datetime.strptime(day_text, "%Y%m%d").date(), Decimal(rate_text.strip())
    except (ValueError, InvalidOperation):
        return None


def parse_schedule(text: str, what: str) -> Schedule:
    """A schedule from "YYYYMMDD:rate,YYYYMMDD:rate"; a malformed one raises ValueError naming `what`."""
    entries: list[tuple[date, Decimal]] = []
    for part in (piece.strip() for piece in text.split(",")):
        entry = _entry(part)
        if entry is None:
            raise ValueError(f"{what} schedule {text!r}: {part!r} is not YYYYMMDD:rate")
        start, rate = entry
        if not (rate.is_finite() and ZERO <= rate < MAX_RATE):
            raise ValueError(f"{what} schedule {text!r}: rate {rate} must be at least 0 and below 0.01")
        if entries and start <= entries[-1][0]:
            raise ValueError(f"{what} schedule {text!r}: dates must increase, {start} does not")
        entries.append((start, rate))
    return Schedule(what, tuple(entries))


@dataclass(frozen=True)
class FeeRates:
    """Rates as fractions of the traded value; `commission_min` in CNY per order. The commission usually already
    covers the exchange handling and regulator fees, so those two default to 0."""

    commission_rate: Decimal
    commission_min: Decimal
    handling_fee_rate: Decimal
    regulator_fee_rate: Decimal
    stamp_duty: Schedule
    transfer_fee: Schedule
    transfer_fee_bj: Schedule

    @classmethod
    def from_settings(cls, settings: Settings) -> FeeRates:
        """The rates configured in `settings` (QUANTDESK_COMMISSION_RATE, QUANTDESK_STAMP_DUTY, ...)."""
        return cls(
            commission_rate=settings.commission_rate,
            commission_min=settings.commission_min,
            handling_fee_rate=settings.handling_fee_rate,
            regulator_fee_rate=settings.regulator_fee_rate,
            stamp_duty=parse_schedule(settings.stamp_duty, "stamp duty"),
            transfer_fee=parse_schedule(settings.transfer_fee, "transfer fee"),
            transfer_fee_bj=parse_schedule(settings.transfer_fee_bj, "Beijing transfer fee"),
        )


DEFAULT_RATES = FeeRates(
    commission_rate=Decimal("0.00025"),
    commission_min=Decimal("5"),
    handling_fee_rate=ZERO,
    regulator_fee_rate=ZERO,
    stamp_duty=parse_schedule("20080919:0.001,20230828:0.0005", "stamp duty"),
    transfer_fee=parse_schedule("20150801:0.00002,20220429:0.00001", "transfer fee"),
    transfer_fee_bj=parse_schedule("20211115:0.000025,20220429:0.00001", "Beijing transfer fee"),
)


@dataclass(frozen=True)
class Fees:
    """The fees on one fill, in CNY."""

    commission: Decimal
    stamp_duty: Decimal
    transfer_fee: Decimal
    handling_fee: Decimal
    regulator_fee: Decimal

    @property
    def total(self) -> Decimal:
        return self.commission + self.stamp_duty + self.transfer_fee + self.handling_fee + self.regulator_fee


def fill_fees(code: str, side: Side, value: Decimal, on: date, rates: FeeRates,
              commission_so_far: Decimal = ZERO, value_so_far: Decimal = ZERO) -> Fees:
    """Fees on a fill of `value` CNY. The commission minimum applies to the whole order: `commission_so_far` and
    `value_so_far` are what the order's earlier fills were charged and traded."""
    if side not in ("buy", "sell"):
        raise ValueError(f"side must be 'buy' or 'sell', not {side!r}")
    if value <= 0:
        raise ValueError(f"a fill's value must be positive, not {value}")
    order_commission = round_fen(max(rates.commission_min, rates.commission_rate * (value_so_far + value)))
    transfer = rates.transfer_fee_bj if exchange_of(code) == "BJ" else rates.transfer_fee
    return Fees(
        commission=max(ZERO, order_commission - commission_so_far),
        stamp_duty=round_fen(rates.stamp_duty.rate(on) * value) if side == "sell" else round_fen(ZERO),
        transfer_fee=round_fen(transfer.rate(on) * value),
        handling_fee=round_fen(rates.handling_fee_rate * value),
        regulator_fee=round_fen(rates.regulator_fee_rate * value),
    )


def estimate_fees(code: str, side: Side, value: Decimal, on: date, rates: FeeRates) -> Fees:
    """Fees on a whole order of `value` CNY filled at once."""
    return fill_fees(code, side, value, on, rates)
