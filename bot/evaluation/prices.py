"""Cost from the price table (QUANTDESK_MODEL_PRICES, per million tokens): an endpoint answers with a dated name
(gpt-4o-2024-08-06), so the longest table name it starts with prices it."""

from __future__ import annotations

from decimal import Decimal

from bot.evaluation.meter import ModelUsage

MILLION = Decimal(1_000_000)


def price_of(table: dict[str, tuple[Decimal, Decimal]], model: str) -> tuple[Decimal, Decimal] | None:
    names = [name for name in table if model == name or model.startswith(f"{name}-")]
    return table[max(names, key=len)] if names else None


def cost(table: dict[str, tuple[Decimal, Decimal]], usage: dict[str, ModelUsage]) -> Decimal | None:
    """What `usage` cost, or None when a model that was used has no price (a partial sum would mislead)."""
    total = Decimal(0)
    for model, used in usage.items():
        price = price_of(table, model)
        if price is None:
            return None
        total += (used.input_tokens * price[0] + used.output_tokens * price[1]) / MILLION
    return total
