"""An account's mandate: which symbols may be traded (an allowlist or blocklist of codes, boards and ST), at most
how many orders a day, the most gross exposure and the most turnover a day. Set by the account's admins; every
change is an order event in the account's audit chain; the broker's checks enforce it (one `mandate` check naming
the line an order breaks)."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from sqlalchemy import Engine
from sqlalchemy.orm import Session

from tools.broker.boards import Board, board_of
from tools.broker.money import money_text, to_fen, yuan
from tools.broker.notes import (
    MANDATE_BLOCKED,
    MANDATE_EXPOSURE,
    MANDATE_NOT_ALLOWED,
    MANDATE_ORDERS,
    MANDATE_ST_UNKNOWN,
    MANDATE_TURNOVER,
)
from tools.broker.orders import Check
from tools.broker.records import PaperMandate
from tools.broker.store import record_event, write_lock
from tools.i18n import N_, _
from tools.storage.models import utcnow

BOARDS = {"main": Board.MAIN, "chinext": Board.CHINEXT, "star": Board.STAR, "bse": Board.BSE}
KEYS = ("allow", "block", "max_orders", "max_exposure", "max_turnover")
MAX_ORDERS = 1_000_000  # a day's orders: more than any account places; the column is a 32-bit integer
MAX_AMOUNT = Decimal("1000000000000")  # one trillion CNY: any real exposure or turnover fits, and so does its fen
MANDATE_CHECK = N_("mandate")  # the order check's name: stored and compared in English, shown translated


class MandateError(ValueError):
    """A mandate setting that cannot be used; the message says what to type."""


@dataclass(frozen=True)
class Mandate:
    allow: tuple[str, ...] = ()  # codes (600519.SH), boards (main, chinext, star, bse) or ST
    block: tuple[str, ...] = ()
    max_orders_per_day: int | None = None
    max_exposure: Decimal | None = None
    max_turnover: Decimal | None = None

    def entries(self) -> list[tuple[str, dict[str, str]]]:
        """Each line of the mandate: its message id and the values it names."""
        lines = [(N_("allow only {entries}"), {"entries": ", ".join(self.allow)})] if self.allow else []
        lines += [(N_("block {entries}"), {"entries": ", ".join(self.block)})] if self.block else []
        if self.max_orders_per_day is not None:
            lines.append((N_("at most {n} orders a day"), {"n": str(self.max_orders_per_day)}))
        if self.max_exposure is not None:
            lines.append((N_("gross exposure at most {amount} CNY"), {"amount": money_text(self.max_exposure)}))
        if self.max_turnover is not None:
            lines.append((N_("turnover at most {amount} CNY a day"), {"amount": money_text(self.max_turnover)}))
        return lines

    def lines(self) -> list[str]:
        """The mandate as a trader reads it on the card, one line each, in the language in effect."""
        return [_(text).format(**values) for text, values in self.entries()]

    def record(self) -> list[str]:
        """The lines in English, as the account's audit chain keeps them."""
        return [text.format(**values) for text, values in self.entries()]


def load_mandate(session: Session, account: str) -> Mandate | None:
    row = session.get(PaperMandate, account)
    if row is None:
        return None
    return Mandate(tuple(row.allow), tuple(row.block), row.max_orders_per_day,
                   None if row.max_exposure_fen is None else yuan(row.max_exposure_fen),
                   None if row.max_turnover_fen is None else yuan(row.max_turnover_fen))


def parse_settings(words: list[str]) -> dict[str, Any]:
    """`allow=600519.SH,star block=ST max_orders=5 max_exposure=500000 max_turnover=200000` (a value `none`
    clears its line) into the changes to make."""
    changes: dict[str, Any] = {}
    for word in words:
        key, sep, value = word.partition("=")
        key = key.lower()
        if not sep or key not in KEYS:
            raise MandateError(_("{word} is not a mandate setting: use {keys}").format(
                word=repr(word), keys=", ".join(k + "=…" for k in KEYS)))
        if value.lower() == "none":
            changes[key] = None
        elif key in ("allow", "block"):
            changes[key] = tuple(_symbol(part) for part in value.split(",") if part)
        elif key == "max_orders":
            if not value.isdigit() or not value.isascii():
                raise MandateError(_("max_orders must be a whole number of orders, not {value}").format(
                    value=repr(value[:24])))
            if len(value) > len(str(MAX_ORDERS)) or int(value) > MAX_ORDERS:
                raise MandateError(_("max_orders must be at most {most}, not {value}").format(
                    most=f"{MAX_ORDERS:,}", value=value[:24]))
            changes[key] = int(value)
        else:
            changes[key] = _amount(key, value)
    return changes


def _amount(key: str, value: str) -> Decimal:
    """An amount in CNY from 0 to MAX_AMOUNT, as typed (1,000,000 or 1e6); anything else is refused."""
    try:
        amount = Decimal(value.replace(",", ""))
    except ArithmeticError:
        amount = Decimal("NaN")
    if not amount.is_finite() or not Decimal(0) <= amount <= MAX_AMOUNT:
        raise MandateError(_("{key} must be an amount in CNY from 0 to {most}, not {value}").format(
            key=key, most=money_text(MAX_AMOUNT), value=repr(value[:24])))
    return amount


def _symbol(part: str) -> str:
    word = part.strip()
    if word.upper() == "ST":
        return "ST"
    if word.lower() in BOARDS:
        return word.lower()
    code = word.upper()
    if len(code) != 9 or code[6] != "." or not code[:6].isdigit():
        raise MandateError(_("{word} is not a code (600519.SH), a board ({boards}) or ST").format(
            word=repr(word), boards=", ".join(BOARDS)))
    return code


def set_mandate(engine: Engine, account: str, changes: dict[str, Any], by: str) -> Mandate:
    """Apply `changes` to the account's mandate (clear it with `changes` {"clear": True}); recorded as an order
    event with the mandate before and after."""
    with write_lock(engine, account) as session:
        before = load_mandate(session, account)
        row = session.get(PaperMandate, account)
        if changes.get("clear"):
            if row is not None:
                session.delete(row)
            after = None
        else:
            if row is None:
                row = PaperMandate(account=account, allow=[], block=[])
                session.add(row)
            for key, value in changes.items():
                if key in ("allow", "block"):
                    setattr(row, key, list(value or ()))
                elif key == "max_orders":
                    row.max_orders_per_day = value
                else:
                    setattr(row, f"{key}_fen", None if value is None else to_fen(value))
            row.changed_by, row.changed_at = by, utcnow()
            session.flush()
            after = load_mandate(session, account)
        record_event(session, None, account, "mandate set", by,
                     {"before": before.record() if before else [], "after": after.record() if after else []})
    return after or Mandate()


def symbol_refusal(mandate: Mandate, ts_code: str, is_st: bool | None) -> str | None:
    """The mandate line a symbol breaks, or None. An unknown ST status fails closed: `block ST` refuses it."""
    tags = {ts_code, _board_word(ts_code), *(["ST"] if is_st else [])}
    blocked = [entry for entry in mandate.block if entry in tags]
    if blocked:
        return _(MANDATE_BLOCKED).format(code=ts_code, entries=", ".join(blocked))
    if is_st is None and "ST" in mandate.block:
        return _(MANDATE_ST_UNKNOWN).format(code=ts_code)
    if mandate.allow and not tags & set(mandate.allow):
        return _(MANDATE_NOT_ALLOWED).format(code=ts_code, entries=", ".join(mandate.allow))
    return None


def _board_word(ts_code: str) -> str:
    board = board_of(ts_code)
    return next(word for word, b in BOARDS.items() if b == board)


def mandate_check(mandate: Mandate, ts_code: str, is_st: bool | None, side: str, value: Decimal,
                  orders_today: int, exposure: Decimal, turnover_today: Decimal) -> Check:
    """The order against every line of the mandate: the first line it breaks, or that it is within it.
    `exposure`: the positions at their marks before the order; `turnover_today`: the value of today's orders."""
    problem = symbol_refusal(mandate, ts_code, is_st)
    if problem is None and mandate.max_orders_per_day is not None and orders_today >= mandate.max_orders_per_day:
        problem = _(MANDATE_ORDERS).format(n=orders_today, most=mandate.max_orders_per_day)
    after = exposure + value if side == "buy" else exposure
    if problem is None and mandate.max_exposure is not None and after > mandate.max_exposure:
        problem = _(MANDATE_EXPOSURE).format(amount=money_text(after), most=money_text(mandate.max_exposure))
    if problem is None and mandate.max_turnover is not None and turnover_today + value > mandate.max_turnover:
        problem = _(MANDATE_TURNOVER).format(amount=money_text(turnover_today + value),
                                             most=money_text(mandate.max_turnover))
    return Check(MANDATE_CHECK, problem is None, problem or _("within the account's mandate: {lines}").format(
        lines=_("; ").join(mandate.lines())))
