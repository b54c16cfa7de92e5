"""Exact money: Decimal yuan at the edges, integer fen in the database."""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal

FEN = Decimal("0.01")


def to_fen(amount: Decimal) -> int:
    """Yuan to integer fen, rounded half-up to the fen."""
    return int((amount / FEN).quantize(Decimal(1), rounding=ROUND_HALF_UP))


def yuan(fen: int) -> Decimal:
    """Integer fen as Decimal yuan with two places."""
    return (Decimal(fen) * FEN).quantize(FEN)


def price_of(value: float | Decimal) -> Decimal:
    """A bar's price (a float from the data) as Decimal yuan to the fen, half-up; the float's shortest repr is
    used so that 16.055 stays 16.055 before it is rounded."""
    return Decimal(repr(float(value))).quantize(FEN, rounding=ROUND_HALF_UP)


def money_text(amount: Decimal) -> str:
    """12,345.60 CNY style, for messages."""
    return f"{amount:,.2f}"
