"""Graph factories for LangGraph Agent Server and Studio (`langgraph.json`, `langgraph dev`): one per workflow graph
and one for the main router.

The server compiles each graph with its own checkpointer and store. It never passes the live database, provider,
sandbox and models the nodes read from `runtime.context`; every run gets a JSON dict as its context instead (the
caller's `context`, or its `configurable` mirrored). So the served graphs take `ServerContext` as their context
schema: LangGraph builds one from that dict, and it carries the process's `WorkflowContext` built once from
settings (`QUANTDESK_*`, `DATABASE_URL`, `.env`), whatever the dict holds.

Who decided: under the server, `graphs.context.decider` reads only the server's authenticated identity
(`configurable.langgraph_auth_user_id`), never `configurable.user`, which a caller can set to any name. The auth
handler `langgraph.json` names (`bot/studio_auth.py`) maps each caller's bearer token to a Slack user id, so the
order policy node (`graphs/order/nodes/authorize.py`) checks it against the traders as for Slack: a non-trader's
approval is refused and recorded; reject works. A server without that handler authenticates nobody: its
decisions carry no decider and every order approval is refused.

Input: each served graph takes `{"messages": [...]}` (a human message with the request, as typed in Slack), with a
typed input schema so that Studio shows a form."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from functools import cache
from typing import Annotated, Any

from langchain_core.messages import AnyMessage
from langgraph.graph.message import add_messages
from langgraph.graph.state import CompiledStateGraph, StateGraph
from pydantic import Field, GetCoreSchemaHandler
from pydantic_core import CoreSchema, core_schema
from typing_extensions import TypedDict

from graphs.context import WorkflowContext
from graphs.dependencies import workflow_context
from graphs.main import build_main_graph
from graphs.registry import ANALYZE, FACTOR, ORDER, RULE, SIGNAL, WORKFLOWS
from graphs.workflow import Workflow
from tools.data.factory import provider_from_settings
from tools.sandbox import default_sandbox
from tools.settings import Settings, get_settings
from tools.storage.db import is_sqlite, make_engine, redacted
from tools.storage.migrate import current_revision, head_revision, upgrade


def context_from_settings(settings: Settings) -> WorkflowContext:
    """What the bot's runner hands every run, from settings alone: the database (the embedded SQLite migrated to
    head; PostgreSQL must be there already), the data provider, the sandbox, the models and the paper account."""
    url = settings.database_url_value
    engine = make_engine(url)
    if is_sqlite(url):
        upgrade(engine)
    elif current_revision(engine) != head_revision():
        raise RuntimeError(f"database {redacted(url)} is not at the code's revision; run `quantdesk db upgrade`")
    return workflow_context(settings, engine, provider_from_settings(settings), default_sandbox())


_building = threading.Lock()


def server_context() -> WorkflowContext:
    """The process's workflow context, built from `get_settings()` on first use: by one thread, while the others
    wait (Studio opens several graphs at once)."""
    with _building:
        return _settings_context()


@cache
def _settings_context() -> WorkflowContext:
    return context_from_settings(get_settings())


class ServerContext(WorkflowContext):
    """The served graphs' context schema. LangGraph coerces the server's JSON context into it
    (`ServerContext(**context)`); the keys are ignored (per-run values travel in `configurable`) and the instance
    holds the process's context."""

    def __init__(self, **_json: Any) -> None:
        vars(self).update(vars(server_context()))

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: GetCoreSchemaHandler) -> CoreSchema:
        """Studio's context form: nothing to fill in (the live context comes from settings, not JSON)."""
        return core_schema.typed_dict_schema({})


def input_schema(name: str, what: str, examples: list[str]) -> type:
    """The input form of a served graph: `messages`, the request as a human message (Studio's form)."""
    shown = "; ".join(f'{{"type": "human", "content": "{example}"}}' for example in examples)
    messages = Field(description=f"The request as a human message, as typed in Slack, e.g. {shown}. A reply to a "
                                 "question is another human message in the same thread.")
    fields = {"messages": Annotated[list[AnyMessage], messages, add_messages]}
    # one schema per graph, named for it at run time (mypy's TypedDict() takes only a literal name)
    schema = TypedDict(f"{name.capitalize()}Input", fields)  # type: ignore[misc]  # noqa: UP013 - a run-time name
    schema.__doc__ = what
    return schema


def _workflow_input(workflow: Workflow) -> type:
    summary = workflow.summary[:1].upper() + workflow.summary[1:]
    return input_schema(workflow.name, f"{summary}. Usage: `{workflow.usage}`.", [workflow.example])


def _with_input(graph: CompiledStateGraph, schema: type) -> CompiledStateGraph:
    """`graph` built again through StateGraph's public constructor and methods, the same nodes, edges and branches
    (the same objects), with `schema` as its input (tests/project/test_studio.py checks that nothing else
    differs). Only the served graphs: inside the main router a workflow reads the router's whole state."""
    built = graph.builder
    served = StateGraph(built.state_schema, built.context_schema, input_schema=schema,
                        output_schema=built.output_schema)
    for name, node in built.nodes.items():
        served.add_node(name, node.runnable, defer=node.defer, metadata=node.metadata, input_schema=node.input_schema,
                        retry_policy=node.retry_policy, cache_policy=node.cache_policy, destinations=node.ends,
                        timeout=node.timeout, trace_policy=node.trace_policy)
    for start, end in built.edges:
        served.add_edge(start, end)
    for starts, end in built.waiting_edges:
        served.add_edge(list(starts), end)
    for source, branches in built.branches.items():
        for branch in branches.values():
            served.add_conditional_edges(source, branch.path, branch.ends)
    return served.compile(name=graph.name)


async def _served(build: Callable[[], CompiledStateGraph[Any, Any, Any, Any]], schema: type) -> CompiledStateGraph:
    """`build`'s graph without a checkpointer, on the server context, taking `schema` as input. The context and the
    graph are built in a worker thread: the server calls factories on its event loop, where opening the database or
    importing the workflow's modules (the registry names them lazily) would block every other request."""
    await asyncio.to_thread(server_context)
    graph = await asyncio.to_thread(build)
    return _with_input(graph, schema).copy(update={"context_schema": ServerContext})


async def main() -> CompiledStateGraph:
    """The main router: a request goes to its workflow, a follow-up to the thread's."""
    what = "A request to any workflow: " + "; ".join(f"`{w.usage}`" for w in WORKFLOWS.values()) + "."
    return await _served(build_main_graph, input_schema("quantdesk", what, [w.example for w in WORKFLOWS.values()]))


async def signal() -> CompiledStateGraph:
    """The signal workflow on its own."""
    return await _served(SIGNAL.build, _workflow_input(SIGNAL))


async def factor() -> CompiledStateGraph:
    """The factor workflow on its own."""
    return await _served(FACTOR.build, _workflow_input(FACTOR))


async def order() -> CompiledStateGraph:
    """The manual order workflow on its own."""
    return await _served(ORDER.build, _workflow_input(ORDER))


async def rule() -> CompiledStateGraph:
    """The execution rule workflow on its own."""
    return await _served(RULE.build, _workflow_input(RULE))


async def analyze() -> CompiledStateGraph:
    """The trading decision desk on its own."""
    return await _served(ANALYZE.build, _workflow_input(ANALYZE))
