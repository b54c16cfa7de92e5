"""`quantdesk chat`: a local console that reads requests from a terminal or piped stdin."""

from __future__ import annotations

import getpass
import shlex
import sys
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

import pandas as pd

from bot.context import AppContext
from bot.factor_views import factor_list_text, factor_show_text
from bot.runner import Outcome, Runner
from tools.data.schema import DATASET_FIELDS, DataError, dataset_of
from tools.workspace import Workspace, WorkspaceError

HELP = """\
workflow requests (anything that is not a command below):
  signal STRATEGY CODES START END [name=value ...]
      e.g. signal ma_cross 000001.SZ,600000.SH 20200101 20200630 fast=5 slow=20
      strategies: ma_cross, momentum, mean_reversion, rsi, bollinger, channel, valuation
  factor KIND START END [window=N] [name=NAME]       (CODES optional: default the whole universe)
      e.g. factor momentum 20190301 20200601 window=20
      kinds: momentum, reversal, volatility, turnover, volume_price_corr, value, book_to_price, size,
             combo (e.g. factor combo 0.5*momentum(20) - volatility(20) 20190301 20200601)
  free text (needs an LLM: OPENAI_API_KEY / OPENAI_BASE_URL)
  while a question is pending, the next line is the answer (`cancel` to stop)
  while code is up for review:
      approve                     accept the code as shown
      edit                        replace the body: type it on the following lines, end with a line `.`
      edit FILE                   replace the body with the contents of FILE
      reject REASON               stop; the rejection is recorded
  while an action waits for approval (e.g. saving a near duplicate of another factor):
      approve | reject REASON
factor library:
  factor list                         saved factors (newest version of each)
  factor show NAME                    one factor: versions, reviewer, metrics, code
data commands:
  codes                               codes the data provider knows
  fields                              fields the data provider offers
  bars CODES START END [FIELD ...]    daily bars (long), e.g. bars 000001.SZ,600000.SH 20200101 20200331
  load FIELD CODES START END          a wide date x code frame into the workspace (ohlcv/ or indicators/)
  ws                                  frames in this session's workspace
  show NAME                           head and tail of a workspace frame
  help                                this text
  quit                                leave (end of input does too)"""


class Console:
    """One console session = one thread id with its own workspace."""

    def __init__(self, ctx: AppContext, runner: Runner, out: TextIO, thread_id: str = "console") -> None:
        self.ctx = ctx
        self.runner = runner
        self.out = out
        self.workspace = Workspace(ctx.engine, thread_id)
        self.user = getpass.getuser()
        self.waiting: tuple[str, str, str] | None = None  # (thread id, interrupt id, kind) of the pending pause
        self.editing: list[str] | None = None  # body lines of an `edit` being typed
        self.commands: dict[str, Callable[[list[str]], None]] = {
            "codes": self.codes,
            "fields": self.fields,
            "bars": self.bars,
            "load": self.load,
            "ws": self.ws,
            "show": self.show,
            "help": lambda _args: self.say(HELP),
        }

    def say(self, text: str) -> None:
        print(text, file=self.out, flush=True)

    def handle(self, line: str) -> bool:
        """Run one input line; False means the session is over."""
        if self.editing is not None:
            if line.rstrip("\n") == ".":
                body, self.editing = "\n".join(self.editing), None
                self.decide({"type": "edit", "edited_action": {"name": "code_review", "args": {"code": body}}})
            else:
                self.editing.append(line.rstrip("\n"))
            return True
        try:
            words = shlex.split(line)
        except ValueError as exc:
            self.say(f"error: {exc}")
            return True
        if not words:
            return True
        name, args = words[0].lower(), words[1:]
        if name in ("quit", "exit"):
            return False
        if self.waiting is not None:
            self.answer(name, line.strip())
            return True
        if name == "factor" and args[:1] in (["list"], ["show"]):
            self.say(factor_list_text(self.ctx.engine) if args[0] == "list"
                     else factor_show_text(self.ctx.engine, " ".join(args[1:])))
            return True
        command = self.commands.get(name)
        if command is None:
            self.show_outcome(self.runner.start(f"console-{uuid.uuid4().hex[:12]}", line.strip(), user=self.user))
            return True
        try:
            command(args)
        except (DataError, WorkspaceError) as exc:
            self.say(f"error: {exc}")
        except TypeError:
            self.say(f"error: wrong arguments for {name}; type help")
        return True

    def answer(self, word: str, line: str) -> None:
        """A line typed while the run waits: a clarify answer, or a review decision."""
        kind = self.waiting[2]  # type: ignore[index]
        if kind not in ("code_review", "approval"):
            self.decide({"type": "respond", "message": line})
            return
        rest = line.split(None, 1)[1].strip() if " " in line else ""
        if word == "approve":
            self.decide({"type": "approve"})
        elif word == "reject":
            self.decide({"type": "reject", "message": rest})
        elif kind == "approval":
            self.say("this waits for approval: approve, or reject REASON")
        elif word == "edit" and rest:
            try:
                body = Path(rest).expanduser().read_text()
            except OSError as exc:
                self.say(f"error: cannot read {rest}: {exc.strerror}")
                return
            self.decide({"type": "edit", "edited_action": {"name": "code_review", "args": {"code": body}}})
        elif word == "edit":
            self.editing = []
            self.say("type the new body of compute_factor; end with a line holding only `.`")
        else:
            self.say("the code is waiting for review: approve, edit [FILE], or reject REASON")

    def decide(self, decision: dict[str, Any]) -> None:
        thread, interrupt_id, _kind = self.waiting  # type: ignore[misc]
        self.show_outcome(self.runner.resume(thread, interrupt_id, {**decision, "user": self.user}))

    def show_outcome(self, outcome: Outcome) -> None:
        self.waiting = None
        if outcome.status == "waiting":
            pending = outcome.interrupts[0]
            value = pending["value"]
            self.waiting = (outcome.thread_id, pending["id"], value.get("type", "clarify"))
            if value.get("type") == "code_review":
                self.show_review(value)
                return
            if value.get("type") == "approval":
                self.say(f"--- approval: {value.get('title')} ---\n{value.get('description', '')}")
                self.say(f"--- approve | reject REASON ({value.get('on_reject') or 'the action is not taken'}) ---")
                return
            self.say(f"? {value.get('question', '')}")
            if value.get("choices"):
                self.say("  choices: " + " | ".join(value["choices"]))
            return
        if outcome.status == "failed":
            self.say(f"error: {outcome.text}")
            return
        self.say(outcome.text)
        for artifact in (outcome.result or {}).get("artifacts", []):
            self.say(f"  saved {artifact['kind']}: {artifact['path']}")

    def show_review(self, value: dict[str, Any]) -> None:
        verdict = f"checks FAILED: {value['failure']}" if value.get("failure") else "checks passed"
        self.say(f"--- code review: factor {value.get('name')} ({verdict}) ---")
        self.say(value.get("summary", ""))
        self.say("--- body of compute_factor ---")
        self.say(value.get("code", "").rstrip())
        self.say(f"--- review> {' | '.join(value.get('allowed', []))} (help lists the forms) ---")

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
        codes, start, end, *fields = args
        frame = self.ctx.provider.daily(codes, start, end, fields or None)
        with pd.option_context("display.width", 160, "display.max_columns", 12):
            self.say(f"{len(frame)} rows\n{frame.head(5)}\n...\n{frame.tail(5)}")

    def load(self, args: list[str]) -> None:
        field, codes, start, end = args
        namespace = "ohlcv" if dataset_of(field) == "daily" else "indicators"
        frame = self.ctx.provider.wide(field, codes, start, end)
        info = self.workspace.put(f"{namespace}/{field}", frame)
        self.say(f"stored {info.describe()}")

    def ws(self, _args: list[str]) -> None:
        items = self.workspace.list()
        self.say("\n".join(item.describe() for item in items) if items else "workspace is empty")

    def show(self, args: list[str]) -> None:
        (name,) = args
        frame = self.workspace.get(name)
        with pd.option_context("display.width", 160, "display.max_columns", 8):
            self.say(f"{frame.head(5)}\n...\n{frame.tail(5)}")


def run_console(ctx: AppContext, runner: Runner, stdin: TextIO = sys.stdin, out: TextIO = sys.stdout) -> int:
    console = Console(ctx, runner, out)
    interactive = stdin.isatty()
    if interactive:
        console.say("QuantDesk console. Type help.")
    while True:
        if interactive:
            out.write("... " if console.editing is not None else "review> " if console.waiting and
                      console.waiting[2] == "code_review" else "answer> " if console.waiting else "quant> ")
            out.flush()
        line = stdin.readline()
        if not line:
            return 0
        if not console.handle(line):
            return 0
