"""One conversation thread of a graph, invoked the way the bot's runner invokes it: a fresh checkpointer
connection per turn, each resume keyed by its interrupt id."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

from langchain_core.messages import HumanMessage
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Command

from graphs.checkpointer import open_checkpointer
from graphs.context import WorkflowContext
from graphs.main import build_main_graph
from tools.storage.workspace import Workspace


class GraphThread:
    def __init__(self, url: str, ctx: WorkflowContext,
                 build: Callable[[Any], CompiledStateGraph] = build_main_graph, requester: str | None = "UALICE"
                 ) -> None:
        self.url, self.ctx, self.build, self.requester = url, ctx, build, requester
        self.thread = f"t-{uuid.uuid4().hex[:10]}"

    @property
    def config(self) -> dict[str, Any]:
        return {"configurable": {"thread_id": self.thread}}

    @property
    def workspace(self) -> Workspace:
        return Workspace(self.ctx.engine, self.thread)

    def say(self, text: str, background_request: dict[str, Any] | None = None) -> dict[str, Any]:
        """A new message in the thread; with `background_request`, a run background work started (a scheduled
        rule's), as the runner sends it."""
        update: dict[str, Any] = {"messages": [HumanMessage(text)], "background_request": background_request}
        if self.requester:
            update["requester"] = self.requester
        return self._invoke(update)

    def answer(self, out: dict[str, Any], text: str) -> dict[str, Any]:
        """A text answer (`respond`) to the one pending interrupt of `out`."""
        (pending,) = out["__interrupt__"]
        return self._invoke(Command(resume={pending.id: {"type": "respond", "message": text}}))

    def decide(self, out: dict[str, Any], decision: dict[str, Any], user: str | None = "UBOB",
               decided_at: str | None = None) -> dict[str, Any]:
        """A review or approval decision by `user` (made at `decided_at`, ISO) on the one pending interrupt."""
        (pending,) = out["__interrupt__"]
        return self._invoke(Command(resume={pending.id: decision}), user, decided_at)

    def _invoke(self, value: Any, user: str | None = None, decided_at: str | None = None) -> dict[str, Any]:
        config = self.config
        if user:  # the decider travels in the config, as the runner sends it
            config["configurable"]["user"] = user
        if decided_at:
            config["configurable"]["decided_at"] = decided_at
        with open_checkpointer(self.url) as saver:
            return self.build(saver).invoke(value, config, context=self.ctx)
