"""`quantdesk chat`: a local console that reads requests from a terminal or piped stdin.

It goes through the same core as Slack (bot/core), on its own surface (bot/console/surface.py) and the in-process
job queue: a request is recorded and run as a job, a decision typed here is a decision row applied by a job, and
the background service runs due rules and fills due orders while the session is open.

The session keeps one current thread: a follow-up (`fast=10 slow=30`, an answer, free text) continues it; a
new request (it starts with a workflow's keyword or one of its strategies or kinds) starts a new thread: a
question still pending in the old one is cancelled with a note, and a pending code review or order approval is
rejected (recorded) first. Commands and `help` always work, even while a question is pending.

What is left open when a session ends stays open: `pending` lists the open questions, reviews and order cards of
every console thread (any session), and `pending N` makes one of them the current thread. Ctrl-C drops the line
(or the `edit`) being typed; a second Ctrl-C in a row leaves."""

from __future__ import annotations

import itertools
import sys
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TextIO

from langgraph.checkpoint.base import BaseCheckpointSaver

from bot import cards
from bot.cards import ClarifyCard, Decision, Reject, code_edit
from bot.console.data import DataCommands
from bot.console.help import DATA_HELP, help_text
from bot.console.prompt import LINE_CANCELLED, LineReader
from bot.console.surface import ConsoleSurface, console_place
from bot.console.text import view_text
from bot.core import Core
from bot.core.background import BackgroundService
from bot.core.intake import Answer, Cancel, Leave, LocalCommand, Pending, Reply, Request, Typed
from bot.core.kinds import EDIT_BODY, kind_of
from bot.core.outbox import kind_word
from bot.core.surface import Place, Question, Result
from bot.core.wiring import build_core
from bot.jobs.base import WorkerHandle
from bot.jobs.local import LocalJobQueue
from bot.startup import AppServices
from bot.surfaces import CONSOLE, CONSOLE_CHANNEL, CONSOLE_TEAM
from graphs.background import Notice as BackgroundNotice
from graphs.clarify import CANCEL_ANSWER, CANCELLED
from tools.access.login import os_login
from tools.access.store import identity_of
from tools.access.store import load as load_roles
from tools.i18n import N_, _, using
from tools.storage.artifacts import ArtifactRef

ACCOUNT = CONSOLE_CHANNEL  # the console's paper account unless a request names another
CONSOLE_SCOPE = CONSOLE.scope  # the thread-id prefix of console threads (bot/surfaces.py)
MAX_SETTLE_STEPS = 10  # rejections a new request makes to close the old thread's pending reviews and approvals
INTERRUPTED = 130  # the exit code of a session left with Ctrl-C (a shell's, for SIGINT)
EDIT_DROPPED = N_("(the edit you were typing was dropped; nothing was decided and the review is still open)")



class Console:
    """One console session: a current thread (with its workspace) and the interrupts pending in it."""

    def __init__(self, ctx: AppServices, core: Core, surface: ConsoleSurface) -> None:
        self.ctx = ctx
        self.core = core
        self.runner = core.runner
        self.surface = surface
        # who the console acts as (its decisions' name): what the database maps the OS account to, read at start
        self.user = identity_of(ctx.engine, os_login())
        self.runner.context.console_operator = self.user  # trades on a desk with no trader configured anywhere
        self.place = console_place(self.user)
        self.keys = itertools.count(1)
        self.pending: list[cards.Pending] = []  # the current thread's open pauses, oldest first
        self.editing: list[str] | None = None  # body lines of an `edit` being typed
        self.edit_name: str | None = None  # the name that edit asks for (`edit name=NAME`)
        self.background: BackgroundService | None = None  # the session's (open_session sets it)
        self.data = DataCommands(ctx, self.surface.say, lambda: self.thread)  # codes, bars, load, ws …

    @property
    def thread(self) -> str:
        return self.place.thread_id

    @property
    def prompt(self) -> str:
        if self.editing is not None:
            return "... "
        return kind_of(self.pending[0].card).prompt if self.pending else "quant> "

    def handle(self, line: str) -> bool:
        """Run one input line, answering in the operator's language; False means the session is over."""
        with using(self.core.language_of(self.user)):
            return self._handle(line)

    def _handle(self, line: str) -> bool:
        if self.editing is not None:
            if line.rstrip("\n") == ".":
                body, self.editing = "\n".join(self.editing), None
                self.decide(code_edit(body, self.edit_name))
            else:
                self.editing.append(line.rstrip("\n"))
            return True
        text = line.strip()
        waiting = self.pending[0].card.kind if self.pending else None
        reply = self.core.intake.answer(Typed(self.place, text, waiting=waiting, local=DATA_HELP, session=True),
                                        ACCOUNT)
        intent = reply.intent
        if reply.answered:
            self.show_reply(reply)
        elif isinstance(intent, Leave):
            return False
        elif isinstance(intent, Pending):
            self.choose_pending(list(intent.args))
        elif isinstance(intent, LocalCommand):
            self.data.run(intent.name, list(intent.args))
        elif isinstance(intent, Request):
            self.new_request(text)
        elif isinstance(intent, Answer | Cancel) and self.pending:
            self.answer(intent.text if isinstance(intent, Answer) else CANCEL_ANSWER)
        else:
            self.submit(text)
        return True

    def show_reply(self, reply: Reply) -> None:
        """What the core answered at once: the help, a line, or a command's view (with its files saved here); the
        runs of cards a command closed end, and background work it made due runs, before the next prompt."""
        if reply.help:
            self.surface.say(help_text(reply.help))
        elif reply.failed:
            self.surface.say(_("error: {error}").format(error=reply.text))
        elif reply.text:
            self.surface.say(reply.text)
        if reply.view is None:
            return
        self.surface.say(view_text(reply.view, self.surface.person))
        self.export(reply.view.artifacts, self.ctx.settings.data_dir / "exports" / "commands")
        for thread_id in reply.closed:  # the cards it closed: their runs end before the next prompt
            _wait_idle(self.core, thread_id)
        if reply.closed:
            self.pending = self.runner.pending(self.thread)
        if reply.background_due and self.background is not None:
            self.background.run_jobs(force=True)
            for thread_id in list(self.surface.opened):  # the runs the pass started (a scheduled rule's)
                _wait_idle(self.core, thread_id)

    def submit(self, text: str) -> None:
        """A message into the current thread, run as a job; returns once the run is over or waits."""
        self.core.intake.submit_text(self.place, text, f"console:{self.place.thread_ts}:{next(self.keys)}")
        self.settled()

    def settled(self) -> None:
        """Wait for the current thread's jobs, then read what it waits on (the checkpoint is the truth). A
        cancelled request is over: the next line starts afresh."""
        _wait_idle(self.core, self.thread)
        self.pending = self.runner.pending(self.thread)
        last = self.surface.last.get(self.thread)
        if not self.pending and isinstance(last, Result) and last.text == _(CANCELLED):
            self.place = console_place(self.user)
        elif self.pending and not (isinstance(last, Question) and last.interrupt_id == self.pending[-1].id):
            # one of several answered: the next is still open (shown before)
            self.surface.say(self.surface.card_text(self.pending[0].card))

    def heard(self, notice: BackgroundNotice) -> None:
        """A background job's notice: shown in its thread already when the thread is the console's."""
        if not notice.thread_id.startswith(CONSOLE_SCOPE):
            self.surface.say(_("(background: {text})").format(text=notice.said()))

    def loop(self, stdin: TextIO, out: TextIO, first: str | None = None) -> int:
        """Read and run lines until end of input, `quit`, Ctrl-C at an empty prompt or a second Ctrl-C in a row
        (exit code 130). `first`: a line read already, at the prompt shown while the session warmed up
        (bot/console/launch.py)."""
        reader = LineReader(stdin, out)
        interrupted = False
        while True:
            at_prompt = False
            try:
                with using(self.core.language_of(self.user)):  # what it shows is the operator's, as a line's answer
                    self.catch_up()
                    self.adopt_waiting_thread()
                if first is not None:
                    line, first = first, None
                else:
                    at_prompt = True
                    line = reader.read(self.prompt)
                    at_prompt = False
                interrupted = False
                if not line or not self.handle(line):
                    return self.leave(0)
            except KeyboardInterrupt:
                typed = reader.typed() if at_prompt else None
                if typed is not None:
                    out.write("\n")  # readline leaves the cursor on the prompt's line
                if interrupted or (typed is False and self.editing is None):
                    return self.leave(INTERRUPTED)
                interrupted = True
                self.interrupt(cancelled_line=bool(typed))

    def interrupt(self, cancelled_line: bool = False) -> None:
        """Ctrl-C: the line being typed is gone, an `edit` being typed too; a run the line started is stopped at
        its next step."""
        if cancelled_line:
            self.surface.say(_(LINE_CANCELLED))
        if self.editing is not None:
            self.editing = None
            self.surface.say(_(EDIT_DROPPED))
        elif self.core.queue.abort(self.thread):
            self.surface.say(_("(stopping the current request at its next step)"))
        self.pending = self.runner.pending(self.thread)
        self.surface.say(_("(Ctrl-C again, `quit` or end of input leaves)"))

    def leave(self, code: int) -> int:
        """The session ends: an `edit` being typed is dropped (said so), and what is still open is named, in the
        operator's language."""
        with using(self.core.language_of(self.user)):
            if self.editing is not None:
                self.editing = None
                self.surface.say(_(EDIT_DROPPED))
            if waiting := self.open_threads():
                self.surface.say(_("{n} question(s), review(s) or order card(s) are still open; they stay open: in "
                           "`quantdesk chat`, `pending` lists them and `pending N` answers one").format(
                    n=len(waiting)))
        return code

    def open_threads(self) -> list[tuple[Place, list[cards.Pending]]]:
        """Every console thread waiting on a person (any session), oldest first, with what it waits on."""
        found = []
        for info in self.core.threads.waiting_in(CONSOLE_TEAM, CONSOLE_CHANNEL):
            if pending := self.runner.pending(info.thread_id):  # the checkpoint is the truth
                found.append((Place(info.team_id, info.channel_id, info.thread_ts, self.user), pending))
        return found

    def choose_pending(self, args: list[str]) -> None:
        """`pending`: the open threads, numbered; `pending N`: the N-th becomes the current thread."""
        waiting = self.open_threads()
        if not waiting:
            self.surface.say(_("nothing is waiting for an answer"))
            return
        if not args:
            lines = [_("{n} waiting (`pending N` makes one current: the next line answers it):").format(
                n=len(waiting))]
            for number, (place, pending) in enumerate(waiting, 1):
                card = pending[0].card
                more = _(" (and {n} more in that thread)").format(n=len(pending) - 1) if len(pending) > 1 else ""
                current = _(" (current)") if place.thread_id == self.thread else ""
                lines.append(f"  {number}. {kind_of(card).title(card)}{more}{current}")
            self.surface.say("\n".join(lines))
            return
        if len(args) > 1 or not args[0].isdigit() or not 1 <= int(args[0]) <= len(waiting):
            self.surface.say(_("usage: pending [N], N from 1 to {n}").format(n=len(waiting)))
            return
        self.place, self.pending = waiting[int(args[0]) - 1]
        card = self.pending[0].card
        self.surface.say(kind_of(card).console_text(card))

    def catch_up(self) -> None:
        """Before a prompt: what another surface's process left for the console's threads (a switch-off there closed
        a card here) is shown now, and the current thread's open questions are read again."""
        for post in self.core.posts.unposted(scope=self.core.scope):
            self.core.repost(post.key)
        if self.pending:
            self.pending = self.runner.pending(self.thread)

    def adopt_waiting_thread(self) -> None:
        """With nothing pending here, a question a background run (a scheduled rule) asked elsewhere becomes the
        current thread, so the next line answers it."""
        if self.pending or self.editing is not None:
            return
        for thread_id, place in list(self.surface.asked.items()):
            pending = self.runner.pending(thread_id)
            if not pending or thread_id == self.thread:
                del self.surface.asked[thread_id]
                continue
            self.place, self.pending = Place(place.team, place.channel, place.thread_ts, self.user), pending
            del self.surface.asked[thread_id]
            card = pending[0].card
            self.surface.say(_("(now answering: {title})").format(title=kind_of(card).title(card)))
            return

    def new_request(self, text: str) -> None:
        """Start a new thread. What the old one still waits on ends first, so nothing is left open behind the
        prompt: a review or approval is rejected (recorded), so its card does not block the rule or stock it was
        for; a clarify question is answered `cancel`, as typing it would."""
        for _step in range(MAX_SETTLE_STEPS):
            if not self.pending:
                break
            if isinstance(self.pending[0].card, ClarifyCard):
                self.surface.say(_("(the previous request's pending question was cancelled; starting the new request)"))
                self.decide(cards.Answer(CANCEL_ANSWER))
            else:
                self.surface.say(_("(the previous request's pending review or approval is rejected first)"))
                self.decide(Reject(_("superseded by a new request in the console")))
        self.place, self.pending = console_place(self.user), []
        self.submit(text)

    def answer(self, text: str) -> None:
        """A line typed while the run waits: the answer or decision for the oldest pending interrupt (a decision's
        word read in English by the core: `批准` is approve)."""
        card = self.pending[0].card
        if text == CANCEL_ANSWER and not isinstance(card, ClarifyCard):  # a review or approval: a rejection, recorded
            self.decide(Reject(_("cancelled in the console")))
            return
        step = kind_of(card).console_step(text, card)
        if step.message == EDIT_BODY:
            self.editing, self.edit_name = [], step.name
            self.surface.say(_("type the new body of compute_factor; end with a line holding only `.`"))
        elif step.message:
            self.surface.say(step.message)
        elif step.decision is not None:
            self.decide(step.decision)

    def decide(self, decision: Decision) -> None:
        """Record the decision (the same durable row as a Slack click), then its job applies it, as every
        decision is."""
        interrupt_id = self.pending[0].id
        verdict = self.core.decider.decide(self.thread, interrupt_id, self.user, decision, "console")
        if not verdict.allowed:
            self.surface.say(_("already handled") if verdict.already else
                             _("error: {error}").format(error=verdict.reason))
            self.settled()
            return
        self.core.decider.confirm(verdict, interrupt_id, self.user, decision)
        self.settled()

    def export(self, artifacts: list[ArtifactRef], folder: Path) -> None:
        """This machine's copies of stored charts and files, and where they went."""
        for artifact in artifacts:
            path = self.runner.context.artifacts.export(artifact["id"], folder)
            kind = kind_word(artifact["kind"])
            self.surface.say(_("  saved {kind}: {path}").format(kind=kind, path=path) if path else
                     _("  {kind} is no longer stored (older than the retention period)").format(kind=kind))

@dataclass
class ConsoleSession:
    """A warmed-up console: its core's worker and background service run until `close()`."""

    console: Console
    worker: WorkerHandle
    background: BackgroundService

    def close(self) -> None:
        self.background.stop()
        self.worker.stop()


def _wait_idle(core: Core, thread_id: str) -> None:
    """Block until the thread has no job waiting or running."""
    queue = core.queue
    assert isinstance(queue, LocalJobQueue)  # the console's core runs on the in-process queue (open_session)
    queue.wait_idle(thread_id)


def open_session(ctx: AppServices, checkpointer: BaseCheckpointSaver, out: TextIO,
                 clock: Callable[[], datetime] | None = None) -> ConsoleSession:
    """The console's core on the in-process queue, with the background service (due rules, due orders, the desk's
    resolution) running while it is open; `clock`: its now."""
    settings = ctx.settings
    surface = ConsoleSurface(out, settings.data_dir / "exports",
                             {user: login for login, user in load_roles(ctx.engine).logins.items()},
                             live=out.isatty())
    core = build_core(ctx, checkpointer, surface, CONSOLE_SCOPE, LocalJobQueue(ctx.engine, settings, CONSOLE_SCOPE))
    console = Console(ctx, core, surface)
    worker = core.queue.start_worker(core)
    background = BackgroundService(core, settings.reconcile_interval_seconds, settings.rule_catch_up,
                                   serves=CONSOLE.serves_channel, on_notice=console.heard, clock=clock)
    console.background = background
    background.start()
    return ConsoleSession(console, worker, background)


def run_console(ctx: AppServices, checkpointer: BaseCheckpointSaver, stdin: TextIO = sys.stdin,
                out: TextIO = sys.stdout, clock: Callable[[], datetime] | None = None) -> int:
    """The console session until end of input or `quit`."""
    session = open_session(ctx, checkpointer, out, clock)
    try:
        return session.console.loop(stdin, out)
    finally:
        session.close()
