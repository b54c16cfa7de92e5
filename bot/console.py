"""`quantdesk chat`: a local console that reads requests from a terminal or piped stdin."""

from __future__ import annotations

import shlex
import sys
import uuid
from collections.abc import Callable
from typing import TextIO

import pandas as pd

from bot.context import AppContext
from bot.runner import Outcome, Runner
from tools.data.schema import DATASET_FIELDS, DataError, dataset_of
from tools.workspace import Workspace, WorkspaceError

HELP = """\
workflow requests (anything that is not a command below):
  signal STRATEGY CODES START END [name=value ...]
      e.g. signal ma_cross 000001.SZ,600000.SH 20200101 20200630 fast=5 slow=20
      strategies: ma_cross, momentum, mean_reversion, rsi, bollinger, channel, valuation
  free text (needs an LLM: OPENAI_API_KEY / OPENAI_BASE_URL)
  while a question is pending, the next line is the answer (`cancel` to stop)
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
        self.waiting: tuple[str, str] | None = None  # (thread id, interrupt id) of the pending question
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
            thread, interrupt_id = self.waiting
            self.show_outcome(self.runner.resume(thread, interrupt_id, {"type": "respond", "message": line.strip()}))
            return True
        command = self.commands.get(name)
        if command is None:
            self.show_outcome(self.runner.start(f"console-{uuid.uuid4().hex[:12]}", line.strip()))
            return True
        try:
            command(args)
        except (DataError, WorkspaceError) as exc:
            self.say(f"error: {exc}")
        except TypeError:
            self.say(f"error: wrong arguments for {name}; type help")
        return True

    def show_outcome(self, outcome: Outcome) -> None:
        self.waiting = None
        if outcome.status == "waiting":
            pending = outcome.interrupts[0]
            self.waiting = (outcome.thread_id, pending["id"])
            self.say(f"? {pending['value'].get('question', '')}")
            if pending["value"].get("choices"):
                self.say("  choices: " + " | ".join(pending["value"]["choices"]))
            return
        if outcome.status == "failed":
            self.say(f"error: {outcome.text}")
            return
        self.say(outcome.text)
        for artifact in (outcome.result or {}).get("artifacts", []):
            self.say(f"  saved {artifact['kind']}: {artifact['path']}")

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
            out.write("answer> " if console.waiting else "quant> ")
            out.flush()
        line = stdin.readline()
        if not line:
            return 0
        if not console.handle(line):
            return 0
