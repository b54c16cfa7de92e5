"""State of the execution agent (seed 002): the rule, the logged steps, the model's pending action, the decision
and the order it leads to. Bars live in the thread's workspace, never in state."""

from __future__ import annotations

from typing import Annotated, Any, TypedDict

from langchain_core.messages import AnyMessage
from langgraph.graph.message import add_messages


class RuleRunState(TypedDict, total=False):
    messages: Annotated[list[AnyMessage], add_messages]
    consumed: int
    requester: str | None
    background_request: dict[str, Any] | None  # a scheduled run's request (graphs/rule/background.py)
    rule: dict[str, Any]  # the saved rule as it was when the run started
    execution_id: str
    started_at: str  # ISO: the run's timeout counts from here
    as_of: dict[str, Any] | None  # {"date", "simulated"}: the session it decides as of (load.run_as_of)
    history: list[dict[str, Any]]  # the seed's execution history: each action with its result, in step order
    action: dict[str, Any] | None  # the model's latest action, waiting to be carried out
    malformed: int  # malformed model answers so far (one is sent back; the next ends in hold)
    feedback: str | None  # what was wrong with the last answer, for the model
    decision: dict[str, Any] | None  # {action, reason, confidence}
    order_intent: dict[str, Any]
    order_outcome: dict[str, Any]
    result: dict[str, Any] | None
    final_reply: str | None
