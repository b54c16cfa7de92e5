"""`quantdesk chat`: a local console that reads requests from a terminal or piped stdin.

The session keeps one current thread: a follow-up (`fast=10 slow=30`, an answer, free text) continues it; a
new request (it starts with a workflow's keyword or one of its strategies or kinds) starts a new thread: a
question still pending in the old one is cancelled with a note, and a pending code review or order approval is
rejected (recorded) first. Commands and `help` always work, even while a question is pending."""

from __future__ import annotations

import getpass
import shlex
import sys
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO

import pandas as pd

from bot.context import AppContext
from bot.decisions import DecisionStore
from bot.interrupt_kinds import EDIT_BODY, code_edit, kind_of
from bot.runner import Outcome, Runner
from bot.views import view_text
from graphs.clarify import CANCELLED, is_cancel
from graphs.grammar import bad_code_message, tokenize
from graphs.interrupts import CLARIFY
from graphs.registry import COMMANDS, WORKFLOWS, command_for, workflow_for
from graphs.workflow import CommandCall, CommandError, Subcommand
from tools.data.schema import DATASET_FIELDS, DataError, dataset_of
from tools.workspace import Workspace, WorkspaceError

HOME = "console"  # the session's own thread id: its workspace holds what `load` stores, across console runs
ACCOUNT = "console"  # the console's paper account unless a request names another
MAX_SETTLE_STEPS = 10  # rejections a new request makes to close the old thread's pending reviews and approvals


@dataclass(frozen=True)
class DataCommand:
    usage: str
    summary: str
    arity: tuple[int, int | None]  # (fewest, most) arguments; None: no upper bound
    run: Callable[[list[str]], None]


USAGE_WIDTH = 34  # the help's usage column; a longer usage puts its summary on the next line


def _entry(usage: str, summary: str) -> str:
    if len(usage) < USAGE_WIDTH:
        return f"  {usage:<{USAGE_WIDTH}}{summary}"
    return f"  {usage}\n  {'':<{USAGE_WIDTH}}{summary}"


def _help_text(commands: dict[str, DataCommand]) -> str:
    lines = ["workflow requests (a new request starts a new thread; anything else continues the current one):"]
    for workflow in WORKFLOWS.values():
        lines += [f"  {workflow.usage}", f"      {workflow.summary}", f"      e.g. {workflow.example}"]
        lines += [f"      {note}" for note in workflow.notes]
        lines += [_entry(sub.usage, sub.summary) for sub in workflow.subcommands.values()]
    lines += ["paper account (you count as a trader here: it is your own machine):"]
    lines += [_entry(c.usage, c.summary) for c in COMMANDS.values()]
    lines += [
        "  free text (needs an LLM: OPENAI_API_KEY / OPENAI_BASE_URL); follow-ups such as `fast=10 slow=30` or",
        "  `window=10` re-run the current request with those changes",
        "while a question is pending, the next line is the answer; `cancel` ends the request",
        "while code is up for review:",
        "  approve                     accept the code as shown",
        "  edit                        replace the body: type it on the following lines, end with a line `.`",
        "  edit FILE                   replace the body with the contents of FILE",
        "  reject REASON               stop; the rejection and its reason are recorded (a reason is required)",
        "while an action waits for approval (an order, or saving a near duplicate of another factor):",
        "  approve | reject REASON     (and edit name=value ..., e.g. edit quantity=200 limit_price=9.80)",
        "data commands:",
    ]
    lines += [_entry(c.usage, c.summary) for c in commands.values()]
    lines += ["  help                              this text", "  quit                              leave (end of "
                                                                  "input does too)"]
    return "\n".join(lines)


class Console:
    """One console session: a current thread (with its workspace) and the interrupts pending in it."""

    def __init__(self, ctx: AppContext, runner: Runner, out: TextIO) -> None:
        self.ctx = ctx
        self.runner = runner
        self.out = out
        self.user = getpass.getuser()
        runner.context.traders = runner.context.traders | {self.user}  # the local operator trades on their machine
        self.decisions = DecisionStore(ctx.engine)
        self.thread = HOME
        self.pending: list[dict[str, Any]] = []  # [{"id", "value"}] of the current thread, oldest first
        self.editing: list[str] | None = None  # body lines of an `edit` being typed
        self.commands: dict[str, DataCommand] = {
            "codes": DataCommand("codes", "codes the data provider knows", (0, 0), self.codes),
            "fields": DataCommand("fields", "fields the data provider offers", (0, 0), self.fields),
            "bars": DataCommand("bars CODES START END [FIELD ...]", "daily bars (long), e.g. bars 000001.SZ "
                                "20200101 20200331", (3, None), self.bars),
            "load": DataCommand("load FIELD CODES START END", "a wide date x code frame into the workspace",
                                (4, 4), self.load),
            "ws": DataCommand("ws", "frames in the current thread's workspace (inputs and outputs)", (0, 0),
                              self.ws),
            "show": DataCommand("show NAME", "head and tail of a workspace frame", (1, 1), self.show),
        }

    @staticmethod
    def _new_thread() -> str:
        return f"console-{uuid.uuid4().hex[:12]}"

    @property
    def workspaces(self) -> list[tuple[str, Workspace]]:
        """The session's own workspace (what `load` stores; kept between console runs), then the current
        request's (what the workflow produced)."""
        own = [("session", Workspace(self.ctx.engine, HOME))]
        return own if self.thread == HOME else [*own, ("current request", Workspace(self.ctx.engine, self.thread))]

    @property
    def prompt(self) -> str:
        if self.editing is not None:
            return "... "
        return kind_of(self.pending[0]["value"]).prompt if self.pending else "quant> "

    def say(self, text: str) -> None:
        print(text, file=self.out, flush=True)

    def handle(self, line: str) -> bool:
        """Run one input line; False means the session is over."""
        if self.editing is not None:
            if line.rstrip("\n") == ".":
                body, self.editing = "\n".join(self.editing), None
                self.decide(code_edit(body))
            else:
                self.editing.append(line.rstrip("\n"))
            return True
        text = line.strip()
        try:
            words = shlex.split(text)
        except ValueError as exc:
            self.say(f"error: {exc}")
            return True
        if not words:
            return True
        name, args = words[0].lower(), words[1:]
        if name in ("quit", "exit"):
            return False
        if name == "help":
            self.say(_help_text(self.commands))
        elif name in self.commands:
            self.command(name, args)
        elif (found := command_for(words)) is not None:
            self.run_command(*found)
        elif workflow_for(text) is not None:
            self.new_request(text)
        elif self.pending:
            self.answer(text)
        else:
            self.show_outcome(self.runner.start(self.thread, text, user=self.user, account=ACCOUNT))
        return True

    def run_command(self, command: Subcommand, args: list[str]) -> None:
        """A command that needs no run (account, orders, factor list, ...), as the console operator."""
        try:
            view = command.run(CommandCall(self.runner.context, args, self.user, ACCOUNT))
        except (CommandError, DataError, ValueError) as exc:
            self.say(f"error: {exc}")
            return
        self.say(view_text(view))
        self.export(view.artifacts, self.ctx.settings.data_dir / "exports" / "commands")

    def command(self, name: str, args: list[str]) -> None:
        command = self.commands[name]
        low, high = command.arity
        if len(args) < low or (high is not None and len(args) > high):
            self.say(f"usage: {command.usage}")
            return
        try:
            command.run(args)
        except (DataError, WorkspaceError, ValueError) as exc:
            self.say(f"error: {exc}")

    def new_request(self, text: str) -> None:
        """Start a new thread. A review or approval still pending in the old one is rejected (recorded), so its
        card does not block the rule or stock it was for; a pending clarify question is simply dropped."""
        for _ in range(MAX_SETTLE_STEPS):
            if not self.pending or kind_of(self.pending[0]["value"]).name == CLARIFY:
                break
            self.say("(the previous request's pending review or approval is rejected first)")
            self.decide({"type": "reject", "message": "superseded by a new request in the console"})
        if self.pending:
            self.say("(the previous request's pending question was cancelled; starting the new request)")
        self.thread, self.pending = self._new_thread(), []
        self.show_outcome(self.runner.start(self.thread, text, user=self.user, account=ACCOUNT))

    def answer(self, text: str) -> None:
        """A line typed while the run waits: the answer or decision for the oldest pending interrupt."""
        payload = self.pending[0]["value"]
        kind = kind_of(payload)
        if is_cancel(text) and kind.name != CLARIFY:  # a review or approval ends as a rejection, recorded
            self.decide({"type": "reject", "message": "cancelled in the console"})
            return
        step = kind.console_step(text, payload)
        if step.message == EDIT_BODY:
            self.editing = []
            self.say("type the new body of compute_factor; end with a line holding only `.`")
        elif step.message:
            self.say(step.message)
        else:
            self.decide(step.decision)  # type: ignore[arg-type]

    def decide(self, decision: dict[str, Any]) -> None:
        """Record the decision (the same durable table as Slack's), apply it, and mark how that went."""
        interrupt_id = self.pending[0]["id"]
        if not self.decisions.accept(interrupt_id, self.thread, decision, self.user, "console"):
            self.say("already handled")
            return
        outcome = self.runner.resume(self.thread, interrupt_id, decision, self.user, decided_at=datetime.now(UTC))
        if outcome.status != "failed":
            self.decisions.mark_applied(interrupt_id)
        elif outcome.retryable:
            self.decisions.mark_retry(interrupt_id, outcome.text)
        else:
            self.decisions.mark_failed(interrupt_id, outcome.text)
        self.show_outcome(outcome)

    def show_outcome(self, outcome: Outcome) -> None:
        self.pending = list(outcome.interrupts) if outcome.status == "waiting" else []
        if outcome.status == "waiting":
            for index, interrupt in enumerate(self.pending):
                prefix = f"[{index + 1}/{len(self.pending)}] " if len(self.pending) > 1 else ""
                self.say(prefix + kind_of(interrupt["value"]).console_text(interrupt["value"]))
            return
        if outcome.status == "failed":
            self.say(f"error: {outcome.text}")
            return
        if outcome.text == CANCELLED:  # a cancelled request is over: the next line starts afresh
            self.thread = self._new_thread()
        if outcome.result and outcome.workflow in WORKFLOWS:
            self.say(view_text(WORKFLOWS[outcome.workflow].present(outcome.result)))
            self.export(outcome.result.get("artifacts", []), self.ctx.settings.data_dir / "exports" / outcome.thread_id)
        else:
            self.say(outcome.text)

    def export(self, artifacts: list[dict[str, Any]], folder: Path) -> None:
        """This machine's copies of stored charts and files, and where they went."""
        for artifact in artifacts:
            path = self.runner.context.artifacts.export(artifact["id"], folder)
            self.say(f"  saved {artifact['kind']}: {path}" if path else
                     f"  {artifact['kind']} is no longer stored (older than the retention period)")

    def say_warnings(self, notes: list[str]) -> None:
        """The data provider's warnings (e.g. codes without rows), shown here rather than only in the log."""
        for note in notes:
            self.say(f"warning: {note}")

    def codes(self, _args: list[str]) -> None:
        known = self.ctx.provider.known_codes()
        if known is None:
            self.say(f"the {self.ctx.provider.name} provider serves any listed A-share code")
        else:
            self.say(f"{len(known)} codes: {' '.join(sorted(known))}")

    def fields(self, _args: list[str]) -> None:
        for dataset in DATASET_FIELDS:
            have = self.ctx.provider.available_fields(dataset)
            self.say(f"{dataset}: {', '.join(have) or 'none'}")

    def bars(self, args: list[str]) -> None:
        """Up to 10 rows (the first and last 5 of a longer frame) in one table: one number format per column."""
        codes, start, end, *fields = args
        if bad := tokenize(codes).bad_codes:
            raise DataError(bad_code_message(bad))
        notes: list[str] = []
        frame = self.ctx.provider.daily(codes, start, end, fields or None, warnings=notes)
        shown = frame if len(frame) <= 10 else pd.concat([frame.head(5), frame.tail(5)])
        rows = shown.to_string(formatters={c: "{:.4f}".format for c in shown.select_dtypes("float").columns},
                               max_cols=12).splitlines()
        if len(frame) > 10:
            rows.insert(6, "...")
        self.say("\n".join([f"{len(frame)} rows", *rows]))
        self.say_warnings(notes)

    def load(self, args: list[str]) -> None:
        field, codes, start, end = args
        if bad := tokenize(codes).bad_codes:
            raise DataError(bad_code_message(bad))
        namespace = "ohlcv" if dataset_of(field) == "daily" else "indicators"
        notes: list[str] = []
        frame = self.ctx.provider.wide(field, codes, start, end, warnings=notes)
        info = Workspace(self.ctx.engine, HOME).put(f"{namespace}/{field}", frame)
        self.say(f"stored {info.describe()}")
        self.say_warnings(notes)

    def ws(self, _args: list[str]) -> None:
        lines = []
        for label, workspace in self.workspaces:
            items = workspace.list()
            if items and label != "session":
                lines.append(f"{label}:")
            lines += [item.describe() for item in items]
        self.say("\n".join(lines) if lines else "workspace is empty")

    def show(self, args: list[str]) -> None:
        """The frame from the current request's workspace, else from the session's."""
        found = [w for _, w in reversed(self.workspaces) if any(i.name == args[0] for i in w.list())]
        frame = (found[0] if found else Workspace(self.ctx.engine, HOME)).get(args[0])
        with pd.option_context("display.width", 160, "display.max_columns", 8):
            self.say(f"{frame.head(5)}\n...\n{frame.tail(5)}")


def run_console(ctx: AppContext, runner: Runner, stdin: TextIO = sys.stdin, out: TextIO = sys.stdout) -> int:
    console = Console(ctx, runner, out)
    interactive = stdin.isatty()
    if interactive:
        console.say("QuantDesk console. Type help.")
    while True:
        if interactive:
            out.write(console.prompt)
            out.flush()
        line = stdin.readline()
        if not line:
            return 0
        if not console.handle(line):
            return 0
