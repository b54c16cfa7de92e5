"""The main graph: route a request to a workflow subgraph and keep the thread's conversation.

Routing needs no LLM for the slash subcommand or the grammar (`signal ...`, `factor ...`); a follow-up in
the same thread goes to the workflow already running there, which continues its own state ("now only
600519.SH", "window=10"); free text with no workflow yet goes to the light model. Subgraphs keep their
state per thread across runs (`checkpointer=True`), and share `messages`, `consumed`, `requester`,
`result` and `final_reply` with this graph."""

from __future__ import annotations

from typing import Annotated, Any, TypedDict

from langchain_core.messages import AnyMessage, HumanMessage, SystemMessage
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.graph.state import CompiledStateGraph
from langgraph.runtime import Runtime
from langgraph.types import Command
from pydantic import BaseModel, Field

from graphs.clarify import is_cancel
from graphs.common import message_text
from graphs.context import WorkflowContext, model_for
from graphs.grammar import first_word
from graphs.llm import MODEL_FAILURES, describe_model_failure, invoke_structured, language_instruction
from graphs.model_roles import LIGHT
from graphs.registry import WORKFLOWS, workflow_for
from tools.i18n import N_, _

ROUTER_PROMPT = ("You route a quant's request in a Slack thread to one workflow. Workflows:\n"
                 + "".join(f"- {w.name}: {w.summary}\n" for w in WORKFLOWS.values())
                 + "- none: anything else (then write a short helpful reply)\n"
                 "Answer with RouteAnswer.")


class RouteAnswer(BaseModel):
    """The workflow a request goes to, or none with a short reply."""

    workflow: str = Field(description="the workflow, or none for anything else",
                          json_schema_extra={"enum": [*WORKFLOWS, "none"]})
    reply: str | None = Field(default=None, description="a short helpful reply, only when the workflow is none")


def grammar_help() -> str:
    """Every workflow's usage and example, one a line, in the language in effect."""
    return "".join(_("• `{usage}`, e.g. `{example}`").format(usage=w.usage, example=w.example) + "\n"
                   for w in WORKFLOWS.values())


def no_route() -> str:
    """What free text gets when no LLM is configured: the requests that need none."""
    return _("I can run these without an LLM:\n{requests}Plain-language requests need an LLM (OPENAI_API_KEY, "
             "OPENAI_BASE_URL).").format(requests=grammar_help())


class MainState(TypedDict, total=False):
    messages: Annotated[list[AnyMessage], add_messages]
    consumed: int
    requester: str | None
    background_request: dict[str, Any] | None  # a structured request (a scheduled run): it names its workflow
    workflow: str | None
    result: dict[str, Any] | None
    final_reply: str | None


def route_node(state: MainState, runtime: Runtime[WorkflowContext]) -> Command:
    messages = state.get("messages", [])
    text = message_text(messages[-1]) if messages and isinstance(messages[-1], HumanMessage) else ""
    current = state.get("workflow")
    request = state.get("background_request") or {}
    workflow: str | None
    if request.get("workflow") in WORKFLOWS:
        workflow, reply = str(request["workflow"]), ""
    else:
        workflow, reply = _choose(text, current, runtime.context)
    update: dict[str, Any] = {"result": None, "final_reply": None}
    if workflow is None:
        return Command(goto=END, update={**update, "final_reply": reply})
    if workflow != current:  # a new workflow reads only from this message on
        update.update(workflow=workflow, consumed=max(len(messages) - 1, 0))
    return Command(goto=workflow, update=update)


def _choose(text: str, current: str | None, ctx: WorkflowContext) -> tuple[str | None, str]:
    first = first_word(text)  # normalised, in English: `信号 …` names signal
    if first in WORKFLOWS:  # a request that names its workflow
        return first, ""
    if current in WORKFLOWS:  # anything else continues the thread's workflow
        return current, ""
    if is_cancel(text):  # a new thread: nothing runs or waits here (the help would not answer it)
        return None, _("Nothing is running or waiting in this thread, so there is nothing to cancel.")
    named = workflow_for(text)  # a request that starts with a strategy or factor kind
    if named is not None:
        return named.name, ""
    structured = next((w for w in WORKFLOWS.values() if w.looks_structured(text)), None)
    if structured is not None:
        return structured.name, ""
    llm = model_for(ctx, LIGHT)
    if llm is None:
        return None, no_route()
    try:
        answer = invoke_structured(llm, [SystemMessage(ROUTER_PROMPT + language_instruction()), HumanMessage(text)],
                                   RouteAnswer, N_("routing answer"))
    except MODEL_FAILURES as exc:
        return None, _("{failure}\nThese work without the model:\n{requests}").format(
            failure=describe_model_failure(exc), requests=grammar_help())
    if answer.workflow in WORKFLOWS:
        return answer.workflow, ""
    return None, answer.reply or _("I can run these:\n{requests}").format(requests=grammar_help())


def build_main_graph(checkpointer: BaseCheckpointSaver | None = None,
                     ) -> CompiledStateGraph[MainState, WorkflowContext, MainState, MainState]:
    graph = StateGraph(MainState, context_schema=WorkflowContext)
    graph.add_node("route", route_node, destinations=(*WORKFLOWS, END))
    graph.add_edge(START, "route")
    for workflow in WORKFLOWS.values():
        graph.add_node(workflow.name, workflow.build(checkpointer=True))
        graph.add_edge(workflow.name, END)
    return graph.compile(checkpointer=checkpointer, name="quantdesk")
