"""State of the signal subgraph: metadata and workspace names only, never DataFrames."""

from __future__ import annotations

from typing import Annotated, Any, TypedDict

from langchain_core.messages import AnyMessage
from langgraph.graph.message import add_messages

MAX_RETRIES = 3


class SignalState(TypedDict, total=False):
    messages: Annotated[list[AnyMessage], add_messages]
    requester: str | None  # who asked (the main graph's): a backtest is a trial of theirs
    mode: str  # "structured" (grammar + library) or "llm"
    consumed: int  # how many messages reflection has already read
    request: dict[str, Any]  # structured request (grammar.SignalRequest.as_dict())
    user_intent: dict[str, Any]  # {type, params: {ts_codes, start_date, end_date, strategy_desc, required_indicators}}
    current_task: str
    data_ready: bool
    indicators_ready: bool
    signal_ready: bool
    validated: bool
    frames: list[dict[str, Any]]  # FrameInfo of the workspace frames this run uses
    signal_name: str | None
    signal_code: str | None
    clarification_needed: str | None
    clarify_choices: list[str]
    clarification_count: int
    execution_history: list[str]
    error_messages: list[str]  # errors of the last step
    error_log: list[str]  # every error so far ("same error twice" rule)
    planner_errors: list[str]  # the errors that are the reflection model's own failures (it cannot plan)
    warnings: list[str]
    retry_count: int
    result: dict[str, Any] | None  # the report for the adapters
    final_reply: str | None  # a plain reply when the run ends without a result
