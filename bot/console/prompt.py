"""Reading a line at the console's prompt. On a terminal it goes through GNU readline (line editing, history),
which also knows whether anything was typed when Ctrl-C came: at an empty prompt Ctrl-C leaves, on a line being
typed it only cancels that line, as a shell does.

Only the standard library and tools.i18n (which needs no more) are imported here: the first prompt is shown
before anything heavy is imported."""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from types import FrameType
from typing import TextIO

from tools.i18n import N_

LINE_CANCELLED = N_("(the line you were typing was cancelled)")  # Ctrl-C on a half-typed line


class _InterruptRelay:
    """Makes Ctrl-C reach the prompt at once. GNU readline blocks SIGINT for a moment while it sets the terminal
    up; a Ctrl-C then goes to another thread, or waits in the flag Python's handler checks, while readline sleeps
    in select() until the next key. So every SIGINT is also written to a wakeup pipe, and until the main thread has
    run its handler, a relay thread pokes it with a no-op SIGUSR1: the EINTR makes readline run pending handlers."""

    POKE_EVERY = 0.05  # seconds between pokes while a Ctrl-C is not yet handled
    POKE_FOR = 2.0  # then it stops (the main thread is busy outside the prompt and handles it when it returns)

    def __init__(self) -> None:
        self.handled = 0
        read_end, write_end = os.pipe()
        os.set_blocking(write_end, False)
        signal.set_wakeup_fd(write_end, warn_on_full_buffer=False)
        signal.signal(signal.SIGUSR1, lambda signum, frame: None)
        signal.signal(signal.SIGINT, self._on_interrupt)
        self.main = threading.main_thread().ident or 0
        threading.Thread(target=self._relay, args=(read_end,), name="quantdesk-ctrl-c", daemon=True).start()

    def _on_interrupt(self, signum: int, frame: FrameType | None) -> None:
        self.handled += 1
        raise KeyboardInterrupt

    def _relay(self, read_end: int) -> None:
        while True:
            if signal.SIGINT in os.read(read_end, 64):  # the wakeup pipe carries each signal's number
                self._poke(self.handled)

    def _poke(self, handled_before: int) -> None:
        deadline = time.monotonic() + self.POKE_FOR
        while self.handled == handled_before and time.monotonic() < deadline:
            signal.pthread_kill(self.main, signal.SIGUSR1)
            time.sleep(self.POKE_EVERY)


_relay: _InterruptRelay | None = None


class LineReader:
    """One line at a time from the console's input, with the prompt shown where a person types."""

    def __init__(self, stdin: TextIO, out: TextIO) -> None:
        self.stdin, self.out = stdin, out
        self.terminal = stdin is sys.stdin and out is sys.stdout and stdin.isatty() and out.isatty()
        if self.terminal:
            import readline  # noqa: F401 - once imported, input() edits the line with it

            global _relay
            if _relay is None and threading.current_thread() is threading.main_thread():
                _relay = _InterruptRelay()

    def read(self, prompt: str) -> str:
        """The next line with its newline, or "" at end of input; Ctrl-C raises KeyboardInterrupt."""
        if not self.terminal:
            if self.stdin.isatty():
                self.out.write(prompt)
                self.out.flush()
            return self.stdin.readline()
        try:
            return input(prompt) + "\n"
        except EOFError:
            return ""

    def typed(self) -> bool | None:
        """After a Ctrl-C at the prompt: whether a line was being typed (None: not known off a terminal)."""
        if not self.terminal:
            return None
        import readline

        return bool(readline.get_line_buffer())
