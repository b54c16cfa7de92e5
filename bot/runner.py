"""Runs workflow graphs for the core: start a thread, resume a pause, report the outcome as data.

Every run gets the same checkpointer and context. The job queue runs one job of a thread at a time (its lock is
the thread id, across processes), so the runner keeps no lock of its own."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, cast

from langchain_core.messages import HumanMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph.state import CompiledStateGraph
from langgraph.pregel import Pregel
from langgraph.types import Command, Durability, StateSnapshot
from sqlalchemy.exc import SQLAlchemyError

from bot.cards import Malformed, Pending, card_of
from bot.jobs import should_stop, stop_honoured
from bot.jobs.failures import INFRASTRUCTURE_ERRORS
from bot.startup import AppServices
from graphs import names
from graphs.context import WorkflowContext
from graphs.dependencies import workflow_context
from graphs.main import MainState, build_main_graph
from graphs.progress import PROGRESS, PROSE
from graphs.runs.budget import BudgetReached, budget_guard, local_day, usage_line
from graphs.runs.session import RunSession, close_session, open_session
from tools.i18n import N_, _, using
from tools.runs.store import RunStore
from tools.sandbox import Sandbox, SandboxUnavailable, default_sandbox

log = logging.getLogger(__name__)

STOPPED = N_("Stopped at your request after the last finished step; nothing after it ran. Send a new request, "
             "or repeat this one to start it again.")

MainGraph = CompiledStateGraph[MainState, WorkflowContext, MainState, MainState]
Progress = Callable[[str, str | None], None]  # called with each step's label and detail, as nodes report them
ProseSink = Callable[[str, str, str], None]  # called with each piece of long prose a node finishes: (key, title, text)


@dataclass
class Outcome:
    """What a run came to: done (with a result or a reply), waiting on interrupts, or failed."""

    thread_id: str
    status: str
    text: str = ""
    result: dict[str, Any] | None = None
    interrupts: list[Pending] = field(default_factory=list)  # each pause's id and card
    workflow: str | None = None
    retryable: bool = False  # failed on the database or the network, not in the graph: the same run may succeed
    checkpoint: str = ""  # the checkpoint the outcome was read from (a stable key for its result post)
    usage: str = ""  # what the run's models used ("11.7k tokens · ¥0.08 · today 43.0k of 200.0k"); "" for none


class _Build(threading.Thread):
    """Behind the start: the stock names every line is read against loaded, the main graph compiled, then the
    sandbox's workers started. What a person types first (help, a command) is answered meanwhile; the first run
    waits for the graph (`graph()`)."""

    def __init__(self, checkpointer: BaseCheckpointSaver, sandbox: Sandbox) -> None:
        super().__init__(name="runner-build", daemon=True)
        self.checkpointer, self.sandbox = checkpointer, sandbox
        self._graph: MainGraph | None = None
        self._nodes: frozenset[str] = frozenset()
        self._error: BaseException | None = None

    def run(self) -> None:
        names.table()  # never raises (a failing source is asked again later)
        try:
            main = self._graph = build_main_graph(self.checkpointer)
            graphs = [main, *(graph for _name, graph in main.get_subgraphs(recurse=True) if isinstance(graph, Pregel))]
            self._nodes = frozenset(name for graph in graphs for name in graph.nodes)
        except BaseException as exc:  # noqa: BLE001 - raised again where the graph is first wanted
            self._error = exc
            return
        try:
            self.sandbox.warm()  # so the first user's code does not pay for the workers' start-up
        except SandboxUnavailable as exc:
            log.warning("the sandbox could not start its workers: %s", exc)

    def graph(self) -> MainGraph:
        self.join()
        if self._graph is None:
            raise RuntimeError("the workflow graph could not be built") from self._error
        return self._graph

    def nodes(self) -> frozenset[str]:
        self.graph()
        return self._nodes

    def replace(self, graph: MainGraph) -> None:
        self.join()
        self._graph = graph


class Runner:
    def __init__(self, app: AppServices, checkpointer: BaseCheckpointSaver) -> None:
        sandbox = default_sandbox()
        self.context = workflow_context(app.settings, app.engine, app.provider, sandbox, stop_requested=should_stop,
                                        stop_honoured=stop_honoured)
        # each run's record: its manifest, model calls and data (issue 41), purged with the artifacts
        self.runs = RunStore(app.engine, app.settings.artifact_retention_days)
        self._build = _Build(checkpointer, sandbox)
        self._build.start()

    @property
    def graph(self) -> MainGraph:
        """The main graph (waits for its build on first use)."""
        return self._build.graph()

    @graph.setter
    def graph(self, graph: MainGraph) -> None:
        self._build.replace(graph)

    def _at_node_boundary(self, namespace: tuple[str, ...], update: Any) -> bool:
        """A node of a workflow's graph finished: the place to honour a stop. Not a task inside a node (the desk's
        replay decides each date in a task and checks for a stop before the next date itself, so its partial
        report is kept) nor anything a task runs."""
        nodes = self._build.nodes()
        outside_tasks = all(part.split(":", 1)[0] in nodes for part in namespace)
        return outside_tasks and isinstance(update, dict) and any(name in nodes for name in update)

    def start(self, thread_id: str, text: str, progress: Progress | None = None, user: str | None = None,
              account: str | None = None, request: dict[str, Any] | None = None,
              message_id: str | None = None, language: str | None = None,
              prose: ProseSink | None = None) -> Outcome:
        """A new message in the thread: a new request or a follow-up to the work already there. `account` is the
        thread's default paper account (the channel's); `request` is a structured request a workflow's background
        work made (a scheduled run), which names its workflow; `text` then only says what it is.

        `message_id` (the adapter's stable id of the message) makes a repeat idempotent: a job retried after a
        crash finds its message already in the thread and goes on from the last checkpoint of the run it started
        (or reports where that run stands), instead of adding the message twice and starting over."""
        config = _config(thread_id, user, account=account, language=language)
        state = self.graph.get_state(config) if message_id else None
        if state is not None and _holds(state, message_id):
            if state.tasks and not state.interrupts:  # its run was cut short: tasks are left whose writes no
                # later checkpoint holds (a restart can keep the input checkpoint, its `next` then empty, and lose
                # the rest, while the workflow's own history ran on)
                log.info("thread %s: message %s was taken in before; continuing its run", thread_id, message_id)
                return self._run(thread_id, None, progress, config, "async", prose)
            return outcome_of(thread_id, state)
        update: dict[str, Any] = {"messages": [HumanMessage(text, id=message_id)],
                                  "background_request": request}
        if user:
            update["requester"] = user
        segment = {"kind": "start", "text": text, "message_id": message_id, "request": request}
        return self._run(thread_id, update, progress, config, "async", prose, segment)

    def took_in(self, thread_id: str, message_id: str) -> bool:
        """Whether the thread's state already holds the message with this id."""
        return _holds(self.graph.get_state(_config(thread_id)), message_id)

    def resume(self, thread_id: str, interrupt_id: str, decision: dict[str, Any], user: str | None,
               progress: Progress | None = None, decided_at: datetime | None = None,
               language: str | None = None, prose: ProseSink | None = None) -> Outcome:
        """Answer one pending interrupt with a HITL decision; `user` (the decider), when the decision was made and
        the thread's language travel in the config. A decision is what releases side effects (saves, orders), so
        its run checkpoints synchronously: each step is durable before the next one starts."""
        config = _config(thread_id, user, decided_at=decided_at, language=language)
        segment = {"kind": "resume", "interrupt": interrupt_id, "decision": decision, "user": user,
                   "decided_at": config["configurable"].get("decided_at")}
        return self._run(thread_id, Command(resume={interrupt_id: decision}), progress, config, "sync", prose,
                         segment)

    def pending(self, thread_id: str) -> list[Pending]:
        """The thread's open pauses, oldest first. Raises Malformed when one is no card the core knows."""
        return pending_of(self.graph.get_state(_config(thread_id)))

    def _run(self, thread_id: str, value: Any, progress: Progress | None, config: RunnableConfig,
             durability: Durability, prose: ProseSink | None = None,
             segment: dict[str, Any] | None = None) -> Outcome:
        with using(config["configurable"].get("language")):  # the graph's nodes read it too (a context variable)
            session = self._record(thread_id, config, segment or {"kind": "continue"})
            outcome = self._stream(thread_id, value, progress, config, durability, prose, session)
            self._keep(session, outcome)
            return outcome

    def _day(self) -> str:
        return local_day(self.context.now(), self.context.timezone)

    def _record(self, thread_id: str, config: RunnableConfig, segment: dict[str, Any]) -> RunSession:
        """The run's recording: its context reads data through the record, its model calls go through the
        recorder, which checks the budgets of the person who started it and of their channel first."""
        session = open_session(self.runs, self.context, thread_id, config["configurable"], segment, self._day)
        manifest = session.manifest
        session.recorder.guard = budget_guard(self.runs, self.context, manifest["user"], manifest["account"])
        return session

    def _keep(self, session: RunSession, outcome: Outcome) -> None:
        """Save the run's record as the outcome leaves it (a failure to save is logged: the outcome stands)."""
        status = ("stopped" if outcome.checkpoint.startswith("stopped") else
                  "done" if outcome.status == "done" else outcome.status)
        try:
            close_session(self.runs, session, status=status, workflow=outcome.workflow,
                          interrupts=[{"id": p.id, "value": p.card.payload()} for p in outcome.interrupts],
                          checkpoint=outcome.checkpoint, result=outcome.result,
                          day=self._day())
            if session.recorder.tokens:
                outcome.usage = usage_line(self.runs, self.context, session.recorder, session.manifest["user"])
        except SQLAlchemyError as exc:
            log.warning("run %s: its record could not be saved: %s", session.run_id, type(exc).__name__)

    def _stream(self, thread_id: str, value: Any, progress: Progress | None, config: RunnableConfig,
                durability: Durability, prose: ProseSink | None, session: RunSession) -> Outcome:
        recorded: RunnableConfig = {**config, "configurable": {**config["configurable"], "run_id": session.run_id},
                                    "callbacks": [session.recorder]}
        try:
            for part in self.graph.stream(value, recorded, context=session.context,
                                          stream_mode=["custom", "updates"], subgraphs=True, durability=durability):
                # with several modes and subgraphs, each part is (namespace, mode, event); the stubs say Any
                namespace, mode, event = cast(tuple[tuple[str, ...], str, Any], part)
                if mode == "updates":
                    session.observe(namespace, event)
                if mode == "updates" and self._at_node_boundary(namespace, event) and should_stop():
                    stopped = outcome_of(thread_id, self.graph.get_state(config))
                    return Outcome(thread_id, "done", _(STOPPED), workflow=stopped.workflow,
                                   checkpoint=f"stopped:{stopped.checkpoint}")
                if mode == "custom" and progress is not None and isinstance(event, dict) and PROGRESS in event:
                    progress(str(event[PROGRESS]), event.get("detail"))
                if mode == "custom" and prose is not None and isinstance(event, dict) and PROSE in event:
                    prose(str(event[PROSE]), str(event.get("title") or ""), str(event.get("text") or ""))
            state = self.graph.get_state(config)
        except BudgetReached as exc:
            log.info("run on thread %s stopped at a %s budget", thread_id, exc.which)
            stopped = outcome_of(thread_id, self.graph.get_state(config))
            return Outcome(thread_id, "done", exc.text(), workflow=stopped.workflow,
                           checkpoint=f"stopped:{stopped.checkpoint}")
        except SandboxUnavailable as exc:
            return Outcome(thread_id, "failed", _("Generated code cannot run here: {error}").format(error=exc))
        except INFRASTRUCTURE_ERRORS as exc:
            log.warning("run on thread %s hit an infrastructure error: %s", thread_id, type(exc).__name__)
            failed = _("the database or network failed ({error})").format(error=type(exc).__name__)
            return Outcome(thread_id, "failed", failed, retryable=True)
        except Exception:
            log.exception("run failed on thread %s", thread_id)
            return Outcome(thread_id, "failed", _("Something went wrong in this run; it was logged. You can try "
                                                  "again or start a new request."))
        return outcome_of(thread_id, state)

    def current(self, thread_id: str) -> Outcome:
        """Where the thread stands now, without running anything (what a lost post would have shown)."""
        return outcome_of(thread_id, self.graph.get_state(_config(thread_id)))


def outcome_of(thread_id: str, state: StateSnapshot) -> Outcome:
    checkpoint = str(state.config.get("configurable", {}).get("checkpoint_id") or "")
    values = state.values
    workflow = values.get("workflow")
    if state.interrupts:
        try:
            pending = pending_of(state)
        except Malformed as exc:
            log.error("thread %s paused on an interrupt that is no card: %s", thread_id, exc)
            return Outcome(thread_id, "failed", _("The run paused on a question I cannot read ({error}), so nothing "
                                                  "can be decided on it; it was logged.").format(error=exc),
                           workflow=workflow, checkpoint=checkpoint)
        return Outcome(thread_id, "waiting", interrupts=pending, workflow=workflow, checkpoint=checkpoint)
    if values.get("result"):
        return Outcome(thread_id, "done", result=values["result"], workflow=workflow, checkpoint=checkpoint)
    reply = _(values["final_reply"]) if values.get("final_reply") else _("Done.")  # a constant reply is a message id
    return Outcome(thread_id, "done", reply, workflow=workflow, checkpoint=checkpoint)


def _holds(state: StateSnapshot, message_id: str | None) -> bool:
    return any(getattr(m, "id", None) == message_id for m in state.values.get("messages") or [])


def pending_of(state: StateSnapshot) -> list[Pending]:
    """The snapshot's interrupts as cards: where a pause's payload leaves the graph, read once."""
    return [Pending(i.id, card_of(i.value)) for i in state.interrupts]


def _config(thread_id: str, user: str | None = None, *, account: str | None = None,
            decided_at: datetime | None = None, language: str | None = None) -> RunnableConfig:
    configurable: dict[str, Any] = {"thread_id": thread_id}
    if language:  # the thread's language: questions, cards, results and prompts are written in it
        configurable["language"] = language
    if user:
        configurable["user"] = user
    if account:
        configurable["account"] = account
    if decided_at is not None:  # SQLite hands back naive UTC times
        aware = decided_at if decided_at.tzinfo else decided_at.replace(tzinfo=UTC)
        configurable["decided_at"] = aware.isoformat()
    return {"configurable": configurable}
