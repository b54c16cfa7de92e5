"""`quantdesk chat` on a real terminal (a pseudo-terminal): the prompt comes before the warm-up, the first line
waits for it, Ctrl-C at that first prompt leaves quietly, and a start-up failure is said at once (issue 27's
prompt-first start, issue 28 item 11)."""

from __future__ import annotations

import contextlib
import os
import pty
import re
import select
import signal
import sys
import time
from pathlib import Path

import pytest

from testkit.console import console_lines
from testkit.paths import REPO


class Terminal:
    """`quantdesk chat` on a pseudo-terminal: keys in, screen text out."""

    def __init__(self, data_dir: Path, **env: str) -> None:
        environ = {k: v for k, v in os.environ.items() if not k.startswith(("QUANTDESK_", "SLACK_", "OPENAI_"))}
        environ.update(QUANTDESK_DATA_DIR=str(data_dir), QUANTDESK_LOG_LEVEL="WARNING", PYTHONPATH=str(REPO), **env)
        self.pid, self.fd = pty.fork()
        if self.pid == 0:  # the child: the console on the terminal
            os.execve(sys.executable, [sys.executable, "-m", "bot.cli", "chat"], environ)
        self.screen = ""

    def _read(self, timeout: float) -> None:
        ready, _, _ = select.select([self.fd], [], [], timeout)
        if ready:
            with contextlib.suppress(OSError):  # the child has gone
                self.screen += os.read(self.fd, 65536).decode(errors="replace")

    def expect(self, text: str, after: int = 0, timeout: float = 120.0) -> int:
        """Wait until `text` shows on the screen after position `after`; returns where it ends."""
        deadline = time.monotonic() + timeout
        while (at := self.screen.find(text, after)) < 0:
            if time.monotonic() > deadline:
                pytest.fail(f"{text!r} did not show; the screen:\n{self.screen}")
            self._read(0.1)
        return at + len(text)

    def keys(self, data: bytes) -> None:
        os.write(self.fd, data)

    def exit_status(self, timeout: float = 60.0) -> int:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                return os.waitstatus_to_exitcode(status)
            self._read(0.1)
        os.kill(self.pid, signal.SIGKILL)
        pytest.fail(f"the console did not leave; the screen:\n{self.screen}")


def test_the_first_line_typed_at_the_early_prompt_is_answered_once_warm(tmp_path: Path) -> None:
    term = Terminal(tmp_path / "data")
    seen = term.expect("QuantDesk console. Type help.")
    seen = term.expect("quant> ", seen)
    term.keys(b"fields\r")
    seen = term.expect("daily: open, high, low, close", seen)
    seen = term.expect("quant> ", seen)
    term.keys(b"quit\r")
    assert term.exit_status() == 0
    assert "Traceback" not in term.screen


def test_help_typed_at_the_early_prompt_is_the_help_the_session_gives_later(tmp_path: Path) -> None:
    """The first `help` is answered from the light layer while the session warms up (bot/console/early.py), the
    second by the session: the same text."""
    term = Terminal(tmp_path / "data")
    seen = term.expect("quant> ")
    term.keys(b"help\r")
    end = term.expect("leave (end of input does too)", seen)
    first = term.screen[seen:end]
    seen = term.expect("quant> ", end)
    term.keys(b"help\r")
    end = term.expect("leave (end of input does too)", seen)
    second = term.screen[seen:end]
    term.expect("quant> ", end)
    term.keys(b"quit\r")
    assert term.exit_status() == 0
    assert "signal STRATEGY CODES START END" in first and first.strip() == second.strip()


def test_ctrl_c_at_the_first_prompt_leaves_quietly(tmp_path: Path) -> None:
    term = Terminal(tmp_path / "data")
    term.expect("quant> ")
    term.keys(b"\x03")
    assert term.exit_status() == 130
    assert "Traceback" not in term.screen and "KeyboardInterrupt" not in term.screen


def test_a_database_that_cannot_open_is_said_at_once_under_the_prompt(tmp_path: Path) -> None:
    term = Terminal(tmp_path / "data", DATABASE_URL="postgresql://nobody@127.0.0.1:9/none")
    term.expect("quant> ")
    term.expect("quantdesk: database postgresql://nobody@127.0.0.1:9/none failed")
    assert term.exit_status() == 2
    assert "Traceback" not in term.screen


def test_ctrl_c_cancels_the_line_being_typed_and_leaves_at_an_empty_prompt(tmp_path: Path) -> None:
    """Issue 28, item 11, as a shell does it: Ctrl-C on a half-typed line cancels only that line (at the early
    prompt during the warm-up too); Ctrl-C at an empty prompt leaves with 130 and no traceback."""
    term = Terminal(tmp_path / "data")
    seen = term.expect("quant> ")
    term.keys(b"fiel")
    seen = term.expect("fiel", seen)
    term.keys(b"\x03")  # during the warm-up
    seen = term.expect("(the line you were typing was cancelled)", seen)
    seen = term.expect("quant> ", seen)
    term.keys(b"fields\r")
    seen = term.expect("daily: open, high, low, close", seen)
    seen = term.expect("quant> ", seen)
    term.keys(b"hel")
    seen = term.expect("hel", seen)
    term.keys(b"\x03")  # in the session
    seen = term.expect("(the line you were typing was cancelled)", seen)
    seen = term.expect("quant> ", seen)
    term.keys(b"fields\r")
    seen = term.expect("daily: open, high, low, close", seen)
    seen = term.expect("quant> ", seen)
    term.keys(b"\x03")
    assert term.exit_status() == 130
    assert "Traceback" not in term.screen and "KeyboardInterrupt" not in term.screen
    assert "help" not in term.screen[seen:]  # the cancelled line never ran


def test_a_run_shows_its_step_and_time_on_one_line_that_goes_before_its_answer(tmp_path: Path) -> None:
    """Issue 39, item 13: on a terminal a run's step and its seconds so far are one line rewritten in place (erased
    and drawn again, never a new line per update), wiped before the run's answer prints."""
    term = Terminal(tmp_path / "data")
    seen = term.expect("quant> ")
    term.keys(b"factor momentum 20190301 20200601 window=20\r")
    shown = term.expect("\r\x1b[2K⏳ ", seen)
    term.expect(" s", shown)
    review = term.expect("approve", shown)
    run = term.screen[seen:review]
    last_draw = run.rfind("\r\x1b[2K⏳ ")
    assert run.find("\r\x1b[2K", last_draw + 1) > last_draw  # the last drawing was wiped before the card
    steps = [part.split(" · ")[0] for part in run.split("\r\x1b[2K⏳ ")[1:]]
    assert "reading the request" in steps
    assert re.search(r"⏳ [^\r\n]*\r?\n", run) is None  # never left standing as a line of its own
    term.expect("review> ", review)
    term.keys(b"quit\r")
    assert term.exit_status() == 0


def test_piped_output_carries_no_progress_line(tmp_path: Path) -> None:
    lines = console_lines(tmp_path, "factor momentum 20190301 20200601 window=20", "reject not needed")
    assert any(line.startswith("--- code review: factor momentum_20") for line in lines)
    assert not [line for line in lines if "\x1b" in line or "\r" in line or "⏳" in line]
