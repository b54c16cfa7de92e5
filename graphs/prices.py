"""Cost from the price table (QUANTDESK_MODEL_PRICES, per million tokens). An endpoint answers with a dated name
(gpt-4o-2024-08-06, gpt-4-0613), priced as its base name; any other variant (gpt-4o-mini) needs its own entry."""

from __future__ import annotations

import re
from decimal import Decimal

from graphs.meter import ModelUsage

MILLION = Decimal(1_000_000)
DATED = re.compile(r"-(\d{4}-\d{2}-\d{2}|\d{4})$")


def price_of(table: dict[str, tuple[Decimal, Decimal]], model: str) -> tuple[Decimal, Decimal] | None:
    return table.get(model) or table.get(DATED.sub("", model))


def cost(table: dict[str, tuple[Decimal, Decimal]], usage: dict[str, ModelUsage]) -> Decimal | None:
    """What `usage` cost, or None when a model that was used has no price (a partial sum would mislead)."""
    total = Decimal(0)
    for model, used in usage.items():
        price = price_of(table, model)
        if price is None:
            return None
        total += (used.input_tokens * price[0] + used.output_tokens * price[1]) / MILLION
    return total
