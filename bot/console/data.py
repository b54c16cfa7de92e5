"""The console's own data commands: what the provider offers (`codes`, `fields`), daily bars, and the session's
workspace (`load` a wide frame into it, `ws` lists it with the current request's, `show` one frame). The core
reads them as the console's local commands (their usages, in bot/console/help.py, are handed to it with the line)."""

from __future__ import annotations

from collections.abc import Callable

import pandas as pd

from bot.console.help import DATA_COMMANDS
from bot.startup import AppServices
from tools.data.codes import bad_code_message, bad_codes
from tools.data.schema import DATASET_FIELDS, DataError, dataset_of
from tools.i18n import N_, _
from tools.storage.workspace import Workspace, WorkspaceError

HOME = "console"  # the session's own workspace: what `load` stores, kept across console runs


class DataCommands:
    def __init__(self, ctx: AppServices, say: Callable[[str], None], thread: Callable[[], str]) -> None:
        """`say`: prints a line; `thread`: the session's current thread id (its request's workspace)."""
        self.ctx, self.say, self.thread = ctx, say, thread
        self.handlers: dict[str, Callable[[list[str]], None]] = {
            "codes": self.codes, "fields": self.fields, "bars": self.bars, "load": self.load, "ws": self.ws,
            "show": self.show}

    def run(self, name: str, args: list[str]) -> None:
        """One command: its usage when the number of arguments is wrong, its error when it fails."""
        command = DATA_COMMANDS[name]
        low, high = command.arity
        if len(args) < low or (high is not None and len(args) > high):
            self.say(_("usage: {usage}").format(usage=command.usage))
            return
        try:
            self.handlers[name](args)
        except (DataError, WorkspaceError, ValueError) as exc:
            self.say(_("error: {error}").format(error=exc))

    @property
    def workspaces(self) -> list[tuple[str, Workspace]]:
        """The session's own workspace (what `load` stores; kept between console runs), then the current
        request's (what the workflow produced)."""
        return [("session", Workspace(self.ctx.engine, HOME)),
                (N_("current request"), Workspace(self.ctx.engine, self.thread()))]

    def say_warnings(self, notes: list[str]) -> None:
        """The data provider's warnings (e.g. codes without rows), shown here rather than only in the log."""
        for note in notes:
            self.say(_("warning: {note}").format(note=note))

    def codes(self, _args: list[str]) -> None:
        known = self.ctx.provider.known_codes()
        if known is None:
            name = self.ctx.provider.label()
            self.say(_("the {provider} provider serves any listed A-share code").format(provider=name))
        else:
            self.say(_("{n} codes: {codes}").format(n=len(known), codes=" ".join(sorted(known))))

    def fields(self, _args: list[str]) -> None:
        for dataset in DATASET_FIELDS:
            have = self.ctx.provider.available_fields(dataset)
            self.say(f"{dataset}: {', '.join(have) or _('none')}")

    def bars(self, args: list[str]) -> None:
        """Up to 10 rows (the first and last 5 of a longer frame) in one table: one number format per column."""
        codes, start, end, *fields = args
        if bad := bad_codes(codes):
            raise DataError(bad_code_message(bad))
        notes: list[str] = []
        frame = self.ctx.provider.daily(codes, start, end, fields or None, warnings=notes)
        shown = frame if len(frame) <= 10 else pd.concat([frame.head(5), frame.tail(5)])
        rows = shown.to_string(formatters={c: "{:.4f}".format for c in shown.select_dtypes("float").columns},
                               max_cols=12).splitlines()
        if len(frame) > 10:
            rows.insert(6, "...")
        self.say("\n".join([_("{n} rows").format(n=len(frame)), *rows]))
        self.say_warnings(notes)

    def load(self, args: list[str]) -> None:
        field, codes, start, end = args
        if bad := bad_codes(codes):
            raise DataError(bad_code_message(bad))
        namespace = "ohlcv" if dataset_of(field) == "daily" else "indicators"
        notes: list[str] = []
        frame = self.ctx.provider.wide(field, codes, start, end, warnings=notes)
        info = Workspace(self.ctx.engine, HOME).put(f"{namespace}/{field}", frame)
        self.say(_("stored {frame}").format(frame=info.describe()))
        self.say_warnings(notes)

    def ws(self, _args: list[str]) -> None:
        lines = []
        for label, workspace in self.workspaces:
            items = workspace.list()
            if items and label != "session":
                lines.append(f"{_(label)}:")
            lines += [item.describe() for item in items]
        self.say("\n".join(lines) if lines else _("workspace is empty"))

    def show(self, args: list[str]) -> None:
        """The frame from the current request's workspace, else from the session's."""
        found = [w for _label, w in reversed(self.workspaces) if any(i.name == args[0] for i in w.list())]
        frame = (found[0] if found else Workspace(self.ctx.engine, HOME)).get(args[0])
        with pd.option_context("display.width", 160, "display.max_columns", 8):
            self.say(f"{frame.head(5)}\n...\n{frame.tail(5)}")
