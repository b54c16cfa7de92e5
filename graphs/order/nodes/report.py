"""Report: the order's outcome as the workflow's result."""

from __future__ import annotations

from typing import Any

from graphs.order.state import OrderState


def report_node(state: OrderState) -> dict[str, Any]:
    outcome = state.get("order_outcome") or {}
    return {"result": {"kind": "order", **outcome}}
