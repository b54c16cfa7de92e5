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
decisions carry no decider and every order approval is refused."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from functools import cache
from typing import Any

from langgraph.graph.state import CompiledStateGraph
from pydantic import GetCoreSchemaHandler
from pydantic_core import CoreSchema, core_schema

from graphs.context import WorkflowContext
from graphs.context_factory import workflow_context
from graphs.main import build_main_graph
from graphs.registry import ANALYZE, FACTOR, ORDER, RULE, SIGNAL
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


async def _served(build: Callable[[], CompiledStateGraph]) -> CompiledStateGraph:
    """`build`'s graph without a checkpointer, on the server context. The context is built in a worker thread: the
    server calls factories on its event loop, where opening the database would block every other request."""
    await asyncio.to_thread(server_context)
    return build().copy(update={"context_schema": ServerContext})


async def main() -> CompiledStateGraph:
    """The main router: a request goes to its workflow, a follow-up to the thread's."""
    return await _served(build_main_graph)


async def signal() -> CompiledStateGraph:
    """The signal workflow on its own."""
    return await _served(SIGNAL.build)


async def factor() -> CompiledStateGraph:
    """The factor workflow on its own."""
    return await _served(FACTOR.build)


async def order() -> CompiledStateGraph:
    """The manual order workflow on its own."""
    return await _served(ORDER.build)


async def rule() -> CompiledStateGraph:
    """The execution rule workflow on its own."""
    return await _served(RULE.build)


async def analyze() -> CompiledStateGraph:
    """The trading decision desk on its own."""
    return await _served(ANALYZE.build)
