"""The main graph: route a request to a workflow subgraph and keep the thread's conversation.

Routing needs no LLM for the slash subcommand or the grammar (`signal ...`, `factor ...`); a follow-up in
the same thread goes to the workflow already running there, which continues its own state ("now only
600519.SH", "window=10"); free text with no workflow yet goes to the light model. Subgraphs keep their
state per thread across runs (`checkpointer=True`), and share `messages`, `consumed`, `requester`,
`result` and `final_reply` with this graph."""

from __future__ import annotations

import re
from typing import Annotated, Any, TypedDict

from langchain_core.messages import AnyMessage, HumanMessage, SystemMessage
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.graph.state import CompiledStateGraph
from langgraph.runtime import Runtime
from langgraph.types import Command

from graphs.common import message_text, parse_json_object
from graphs.context import WorkflowContext
from graphs.factor import spec as factor_grammar
from graphs.factor.graph import build_factor_graph
from graphs.signal import grammar as signal_grammar
from graphs.signal.graph import build_signal_graph

WORKFLOWS = ("signal", "factor")
PLANNED = {"analyze": "multi-analyst trading decision", "rule": "execution rules"}

ROUTER_PROMPT = """You route a quant's request in a Slack thread to one workflow. Workflows:
- signal: turn a trading idea into a daily buy/sell signal on some stocks and backtest it
- factor: write, check and evaluate a cross-sectional stock-selection factor (IC, quantile returns) and save it
- none: anything else (then write a short helpful reply)
Answer with one JSON object: {"workflow": "signal" | "factor" | "none", "reply": "only when none"}"""

NO_ROUTE = ("I can run these without an LLM:\n"
            "• `signal STRATEGY CODES START END [name=value ...]`, e.g. `signal ma_cross 000001.SZ 20190101 20200601`\n"
            "• `factor KIND START END [window=N]`, e.g. `factor momentum 20190301 20200601 window=20`\n"
            "Plain-language requests need an LLM (OPENAI_API_KEY, OPENAI_BASE_URL).")


class MainState(TypedDict, total=False):
    messages: Annotated[list[AnyMessage], add_messages]
    consumed: int
    requester: str | None
    workflow: str | None
    result: dict[str, Any] | None
    final_reply: str | None


def _first_word(text: str) -> str:
    match = re.match(r"\s*/?([A-Za-z_]+)", text)
    return match.group(1).lower() if match else ""


def route_node(state: MainState, runtime: Runtime[WorkflowContext]) -> Command:
    messages = state.get("messages", [])
    text = message_text(messages[-1]) if messages and isinstance(messages[-1], HumanMessage) else ""
    current = state.get("workflow")
    workflow, reply = _choose(text, current, runtime.context)
    update: dict[str, Any] = {"result": None, "final_reply": None}
    if workflow is None:
        return Command(goto=END, update={**update, "final_reply": reply})
    if workflow != current:  # a new workflow reads only from this message on
        update.update(workflow=workflow, consumed=max(len(messages) - 1, 0))
    return Command(goto=workflow, update=update)


def _choose(text: str, current: str | None, ctx: WorkflowContext) -> tuple[str | None, str]:
    first = _first_word(text)
    if first in WORKFLOWS:
        return first, ""
    if first in PLANNED:
        return None, f"The {PLANNED[first]} workflow is not available yet; `signal` and `factor` are."
    if current in WORKFLOWS:
        return current, ""
    if first in signal_grammar.strategy_names():
        return "signal", ""
    if first in factor_grammar.library_names():
        return "factor", ""
    if signal_grammar.looks_structured(text):
        return "signal", ""
    llm = ctx.light_llm or ctx.llm
    if llm is None:
        return None, NO_ROUTE
    try:
        answer = parse_json_object(message_text(llm.invoke([SystemMessage(ROUTER_PROMPT), HumanMessage(text)])))
    except Exception:  # noqa: BLE001 - an unusable routing answer becomes the help text
        return None, NO_ROUTE
    workflow = answer.get("workflow")
    if workflow in WORKFLOWS:
        return workflow, ""
    return None, str(answer.get("reply") or NO_ROUTE)


def build_main_graph(checkpointer: BaseCheckpointSaver | None = None) -> CompiledStateGraph:
    graph = StateGraph(MainState, context_schema=WorkflowContext)
    graph.add_node("route", route_node, destinations=(*WORKFLOWS, END))
    graph.add_node("signal", build_signal_graph(checkpointer=True))
    graph.add_node("factor", build_factor_graph(checkpointer=True))
    graph.add_edge(START, "route")
    graph.add_edge("signal", END)
    graph.add_edge("factor", END)
    return graph.compile(checkpointer=checkpointer, name="quantdesk")
