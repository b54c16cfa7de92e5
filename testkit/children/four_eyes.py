"""A trader's process for the four-eyes race: once the start file exists, it approves every order card of the thread
that does not already carry its own approval, each through the decision row first (the first decision on an
interrupt wins, as in the bot), and resumes the graph with the decisions it won; it ends when the run is over."""

from __future__ import annotations

import sys
import time
from decimal import Decimal
from pathlib import Path

from langgraph.types import Command

from bot.stores.decisions import DecisionStore
from graphs.checkpointer import open_checkpointer
from graphs.context import WorkflowContext
from graphs.main import build_main_graph
from testkit.paper import CONFIG
from tools.broker.paper import PaperBroker
from tools.data.local import SampleProvider
from tools.storage.artifacts import ArtifactStore
from tools.storage.db import make_engine

APPROVE = {"type": "approve"}


def main(url: str, thread: str, trader: str, traders: str, start: Path) -> None:
    engine, provider = make_engine(url), SampleProvider()
    ctx = WorkflowContext(provider=provider, engine=engine, sandbox=None, artifacts=ArtifactStore(engine),  # type: ignore[arg-type]
                          paper=CONFIG, traders=frozenset(traders.split(",")), admins=frozenset({"UREQ"}),
                          second_approval_above=Decimal("100000"),
                          broker=lambda name, by: PaperBroker(engine, provider, name, CONFIG, opened_by=by))
    decisions, seen = DecisionStore(engine), set()
    while not start.exists():
        time.sleep(0.005)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        with open_checkpointer(url) as saver:
            graph = build_main_graph(saver)
            config = {"configurable": {"thread_id": thread, "user": trader}}
            snapshot = graph.get_state(config, subgraphs=True)
            if not snapshot.next:
                return
            pending = [i for i in snapshot.interrupts if i.id not in seen]
            if pending:
                card = pending[0]
                seen.add(card.id)
                if trader not in str(card.value["args"].get("approvals", "")) and decisions.accept(
                        card.id, thread, APPROVE, trader, "api"):
                    graph.invoke(Command(resume={card.id: APPROVE}), config, context=ctx)
                continue
        time.sleep(0.02)
    raise SystemExit(f"{trader}: the run did not end within 120 s")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], Path(sys.argv[5]))
