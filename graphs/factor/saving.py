"""What a save of a factor version carries: its idempotency key and the spec as stored."""

from __future__ import annotations

from typing import Any

from langchain_core.runnables import RunnableConfig

from graphs.context import thread_id
from graphs.factor.state import FactorState


def run_key(state: FactorState, config: RunnableConfig) -> str:
    """One per factor request in a thread, so a resumed run never writes twice."""
    return f"{thread_id(config)}:{state.get('run_no', 1)}"


def stored_spec(state: FactorState, **extra: Any) -> dict[str, Any]:
    """The spec as saved: the body under review (library body or edit) replaces the library's, plus `extra`."""
    spec = {k: v for k, v in state["spec"].items() if k != "body"}
    return {**spec, "body": state.get("factor_body"), **extra}
