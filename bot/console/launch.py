"""`quantdesk chat` starts at once: on a terminal the prompt is shown before anything heavy is imported, and the
session (database, graphs, sandbox, worker, background service) warms up behind it. The warm-up builds the light
layer first (bot/console/early.py): a `help` typed meanwhile is answered from it; any other line waits for the
session. A start-up failure (database, configuration) is said as soon as it is known, and the command exits 2.

Only the standard library is imported here, at module level."""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import threading
from collections.abc import Callable
from contextlib import ExitStack
from typing import Any, TextIO

from bot.console.prompt import LINE_CANCELLED, LineReader
from tools.i18n import _

log = logging.getLogger(__name__)

BANNER = "QuantDesk console. Type help."
INTERRUPTED = 130
FIRST_PROMPT = "quant> "


class _Warmup(threading.Thread):
    """Builds the session in the background; `session()` waits for it."""

    def __init__(self, settings: Any, out: TextIO, failure_message: Callable[[BaseException, Any], str | None],
                 stack: ExitStack) -> None:
        super().__init__(name="quantdesk-warmup", daemon=True)
        self.settings, self.out, self.failure_message, self.stack = settings, out, failure_message, stack
        self._session: Any = None
        self._early: Any = None  # bot.console.early.EarlyAnswers, once the light layer is built (None: it failed)
        self._light = threading.Event()
        # held while a line is answered from the light layer: the warm-up waits for it before importing the rest,
        # which would otherwise take the interpreter from the answer for seconds
        self._answering = threading.Lock()

    def run(self) -> None:
        try:
            from bot.console.early import EarlyAnswers

            self._early = EarlyAnswers(self.settings)
        except Exception:  # noqa: BLE001 - the session's start meets the same failure and says it
            log.debug("the console's light layer could not be built", exc_info=True)
        finally:
            self._light.set()
        with self._answering:
            pass
        # after the light layer: its imports would share the interpreter with it (the probe imports the sandbox)
        threading.Thread(target=_probe_sandbox, name="quantdesk-sandbox-probe", daemon=True).start()
        try:
            from bot.console.session import open_session
            from bot.heap import startup_done
            from bot.startup import build_context
            from graphs.checkpointer import open_checkpointer

            ctx = build_context(self.settings)
            checkpointer = self.stack.enter_context(open_checkpointer(
                self.settings.database_url_value, max_connections=self.settings.checkpoint_pool_size))
            self._session = open_session(ctx, checkpointer, self.out)
            self.stack.callback(self._session.close)
            startup_done()
        except BaseException as exc:  # noqa: BLE001 - said at once: the person waits at a prompt for an answer
            message = self.failure_message(exc, self.settings)
            if message is None:
                log.exception("the console could not start")
                message = f"the console could not start: {type(exc).__name__}: {exc}"
            print(f"quantdesk: {message}", file=sys.stderr, flush=True)
            os._exit(2)  # nothing has started yet that an orderly exit would have to stop

    def session(self) -> Any:
        self.join()
        return self._session

    def early_answer(self, line: str) -> str | None:
        """`line`'s answer from the light layer while the session is not ready yet, else None (the session's)."""
        with self._answering:
            self._light.wait()
            if self._early is None or not self.is_alive():
                return None
            answer: str | None = self._early.answer(line)
            return answer


def _probe_sandbox() -> None:
    """The sandbox's isolation probe (it runs a process) while the warm-up imports the rest; the runner takes the
    sandbox it made. A failure is left for the runner, which asks again and says what failed."""
    with contextlib.suppress(Exception):
        from tools.sandbox import default_sandbox

        default_sandbox()


def launch(settings: Any, stdin: TextIO, out: TextIO,
           failure_message: Callable[[BaseException, Any], str | None]) -> int:
    """Run the console until end of input, `quit`, Ctrl-C at an empty prompt or a second Ctrl-C in a row. A Ctrl-C
    the session's own loop does not take (at the first prompt, during the warm-up) leaves at once, quietly: nothing
    durable is in flight that the next start would not pick up."""
    try:
        return _launch(settings, stdin, out, failure_message)
    except KeyboardInterrupt:
        out.write("\n")
        out.flush()
        os._exit(INTERRUPTED)


def _first_line(reader: LineReader, out: TextIO) -> str:
    """The line typed at the prompt shown during the warm-up. Ctrl-C on a line being typed cancels it; at an
    empty prompt, or twice, it leaves (KeyboardInterrupt)."""
    try:
        return reader.read(FIRST_PROMPT)
    except KeyboardInterrupt:
        if not reader.typed():
            raise
    out.write(f"\n{_(LINE_CANCELLED)}\n")
    out.flush()
    return reader.read(FIRST_PROMPT)


def _launch(settings: Any, stdin: TextIO, out: TextIO,
            failure_message: Callable[[BaseException, Any], str | None]) -> int:
    with ExitStack() as stack:
        reader = LineReader(stdin, out)
        interactive = stdin.isatty()
        if interactive:  # before the warm-up starts: its imports hold the interpreter for seconds at a time
            out.write(f"{BANNER}\n")
            out.flush()
        warmup = _Warmup(settings, out, failure_message, stack)
        warmup.start()
        first = None
        if interactive:
            first = _first_line(reader, out)
            while first and (early := warmup.early_answer(first)) is not None:
                out.write(f"{early}\n")
                out.flush()
                first = _first_line(reader, out)
            if not first:
                return 0
        session = warmup.session()
        return session.console.loop(stdin, out, first)
