"""Routing of the signal subgraph (the seed's route functions). Every loop is bounded: reflection counts
retries and clarifications and stops at their limits, so no path can cycle forever."""

from __future__ import annotations

from langgraph.graph import END

from graphs.signal.state import SignalState


def route_from_reflection(state: SignalState) -> str:
    task = state.get("current_task")
    if task == "clarify" and state.get("clarification_needed"):
        return "clarify"
    if task in ("data_fetch", "signal_generate", "validate", "report"):
        return task
    if task == "reflection_failed":
        return "reflection"
    return END


def route_after_data_fetch(state: SignalState) -> str:
    return "reflection" if state.get("error_messages") else "signal_generate"


def route_after_signal_generate(state: SignalState) -> str:
    return "reflection" if state.get("error_messages") else "validate"


def route_after_validation(state: SignalState) -> str:
    return "reflection" if state.get("error_messages") else "report"
