"""Several interrupts pending at once (parallel branches): each is rendered and answered on its own, in the
console and in Slack. The graph is a small two-branch one; the adapters and the runner are the real ones."""

from __future__ import annotations

import io
import operator
from pathlib import Path
from typing import Annotated, TypedDict

from langgraph.graph import END, START, StateGraph
from langgraph.types import interrupt

from bot.cards import Pending
from bot.console.session import CONSOLE_SCOPE, Console
from bot.console.surface import ConsoleSurface
from bot.core.wiring import build_core
from bot.jobs.local import LocalJobQueue
from bot.startup import build_context
from bot.stores.threads import thread_id_for
from graphs.checkpointer import open_checkpointer
from graphs.interrupts import answer_text, clarify_request
from testkit.fakes.slack_faults import post_key
from testkit.fakes.slack_server import TEAM
from testkit.slack_desk import Desk
from testkit.wait import wait_until
from tools.settings import Settings


class TwoQuestions(TypedDict, total=False):
    answers: Annotated[list[str], operator.add]


def _ask(question: str):  # noqa: ANN202
    def node(state: TwoQuestions) -> TwoQuestions:
        return {"answers": [f"{question} {answer_text(interrupt(clarify_request(question)))}"]}
    return node


def _two_branch_graph(checkpointer):  # noqa: ANN001, ANN202
    graph = StateGraph(TwoQuestions)
    graph.add_node("a", _ask("Which dates?"))
    graph.add_node("b", _ask("Which codes?"))
    graph.add_edge(START, "a")
    graph.add_edge(START, "b")
    graph.add_edge("a", END)
    graph.add_edge("b", END)
    return graph.compile(checkpointer=checkpointer)


def test_the_console_shows_each_pending_question_and_answers_them_one_by_one(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'q.db'}"
    settings = Settings(_env_file=None, DATABASE_URL=url, QUANTDESK_DATA_DIR=str(tmp_path / "d"))
    ctx = build_context(settings)
    out = io.StringIO()
    with open_checkpointer(url) as saver:
        surface = ConsoleSurface(out, tmp_path / "exports")
        core = build_core(ctx, saver, surface, CONSOLE_SCOPE, LocalJobQueue(ctx.engine, settings, CONSOLE_SCOPE))
        core.runner.graph = _two_branch_graph(saver)
        worker = core.queue.start_worker(core)
        try:
            console = Console(ctx, core, surface)
            console.handle("go\n")
            assert out.getvalue().splitlines() == ["[1/2] ? Which dates?", "[2/2] ? Which codes?"]
            console.handle("20190101 20200601\n")
            assert out.getvalue().splitlines()[-1] == "? Which codes?"  # the other one is still pending, alone
            console.handle("600519.SH\n")
            assert console.pending == []
            state = core.runner.graph.get_state({"configurable": {"thread_id": console.thread}})
            assert sorted(state.values["answers"]) == ["Which codes? 600519.SH", "Which dates? 20190101 20200601"]
        finally:
            worker.stop()


def test_slack_posts_each_pending_question_and_a_reply_answers_one(slack_desk: Desk) -> None:
    slack_desk.core.runner.graph = _two_branch_graph(slack_desk.core.runner.graph.checkpointer)
    slack_desk.say("C2", "500.1", "go")
    questions = [c for c in slack_desk.fake.of("chat.postMessage")
                 if c.args.get("thread_ts") == "500.1" and post_key(c.args)
                 and not c.args["text"].startswith(":hourglass")]  # keyed posts besides the run's status line
    assert sorted(c.args["text"] for c in questions) == ["Which codes?", "Which dates?"]
    assert len({post_key(c.args) for c in questions}) == 2  # each its own message and key
    info = slack_desk.core.threads.get(thread_id_for(TEAM, "C2", "500.1"))
    assert info is not None and len(info.pending) == 2
    slack_desk.say("C2", "500.1", "an answer")  # a thread reply answers one question (its row, then its apply job)

    def one_left() -> list[Pending] | None:
        pending = slack_desk.core.runner.pending(info.thread_id)
        return pending if len(pending) == 1 else None

    pending = wait_until(one_left, "the reply's apply job to answer one of the two questions")
    assert slack_desk.core.decisions.get(pending[0].id) is None  # nothing recorded for the other yet
