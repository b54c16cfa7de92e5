"""Orders between graph state (JSON) and the broker (Decimal): requests, previews and orders."""

from __future__ import annotations

from dataclasses import asdict
from decimal import Decimal
from typing import Any

from tools.broker.orders import Order, OrderRequest, Preview


def request_of(intent: dict[str, Any], client_order_id: str, thread_id: str, approved_by: str | None = None,
               ) -> OrderRequest:
    limit = intent.get("limit_price")
    return OrderRequest(client_order_id=client_order_id, ts_code=str(intent["ts_code"]), side=intent["side"],
                        quantity=int(intent["quantity"]), price_type=intent.get("price_type") or "market",
                        limit_price=Decimal(str(limit)) if limit not in (None, "") else None,
                        reason=str(intent.get("reason") or ""), thread_id=thread_id,
                        proposed_by=intent.get("proposed_by"), approved_by=approved_by, tag=intent.get("tag"))


def jsonable(value: Any) -> Any:
    """Dataclass dicts with Decimals as text and tuples as lists."""
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, dict):
        return {k: jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    return value


def preview_json(preview: Preview) -> dict[str, Any]:
    data = jsonable(asdict(preview))
    data["passed"] = preview.passed
    return data


def order_json(order: Order) -> dict[str, Any]:
    data = jsonable(asdict(order))
    data["fees"] = str(sum((f.fees for f in order.fills), Decimal("0.00")))
    return data
