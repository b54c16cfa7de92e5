"""Which A-share board a ts_code trades on, and when each board opened."""

from __future__ import annotations

from datetime import date
from enum import StrEnum
from typing import Literal

from tools.i18n import N_, _

Side = Literal["buy", "sell"]


class Board(StrEnum):
    MAIN = "main board"
    CHINEXT = "ChiNext"
    STAR = "STAR Market"
    BSE = "Beijing Stock Exchange"


BOARD_NAMES = {Board.MAIN: N_("main board"), Board.CHINEXT: N_("ChiNext"), Board.STAR: N_("STAR Market"),
               Board.BSE: N_("Beijing Stock Exchange")}  # as the trader reads them


def board_name(board: Board) -> str:
    """The board's name in the language in effect."""
    return _(BOARD_NAMES[board])


class OrderRuleError(ValueError):
    """An order, code or date the exchange rules refuse; the message is written for the trader."""


BOARD_OPENED: dict[Board, date] = {
    Board.MAIN: date(1990, 12, 19),
    Board.CHINEXT: date(2009, 10, 30),
    Board.STAR: date(2019, 7, 22),
    Board.BSE: date(2021, 11, 15),
}

# exchange suffix -> (code prefix, board); the SZ 002 (former SME board) merged into the main board on 2021-04-06
_PREFIXES: dict[str, tuple[tuple[str, Board], ...]] = {
    "SH": (("688", Board.STAR), ("689", Board.STAR), ("600", Board.MAIN), ("601", Board.MAIN),
           ("603", Board.MAIN), ("605", Board.MAIN)),
    "SZ": (("300", Board.CHINEXT), ("301", Board.CHINEXT), ("000", Board.MAIN), ("001", Board.MAIN),
           ("002", Board.MAIN), ("003", Board.MAIN)),
    "BJ": (("43", Board.BSE), ("83", Board.BSE), ("87", Board.BSE), ("88", Board.BSE), ("92", Board.BSE)),
}


def _classify(ts_code: str) -> tuple[str, Board]:
    """(exchange, board) of an A-share stock code such as "600519.SH"; anything else is refused."""
    digits, _dot, exchange = ts_code.strip().upper().partition(".")
    if len(digits) == 6 and digits.isdigit():
        for prefix, board in _PREFIXES.get(exchange, ()):
            if digits.startswith(prefix):
                return exchange, board
    raise OrderRuleError(_("{code} is not supported: only A-share stocks (SH, SZ and BJ) can be traded").format(
        code=ts_code))


def board_of(ts_code: str) -> Board:
    """The board `ts_code` is listed on."""
    return _classify(ts_code)[1]


def exchange_of(ts_code: str) -> str:
    """The exchange suffix: "SH", "SZ" or "BJ"."""
    return _classify(ts_code)[0]


def check_open(ts_code: str, on: date) -> Board:
    """The board of `ts_code`, refusing a date before that board opened."""
    board = board_of(ts_code)
    opened = BOARD_OPENED[board]
    if on < opened:
        opening = (_("no trading in {code} on {day}: ChiNext opened on {opened}") if board is Board.CHINEXT else
                   _("no trading in {code} on {day}: the {board} opened on {opened}"))
        raise OrderRuleError(opening.format(code=ts_code, day=on, board=board_name(board), opened=opened))
    return board
