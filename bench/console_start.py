"""`quantdesk chat` on a pseudo-terminal: the time from starting it until its prompt `quant> ` shows, warm (the data
dir made by a first start), median of STARTS starts, beside `python -c "import bot.cli"` in the same run (the
reference); goal: the prompt within GOAL_S. Also the time until the first command (`help`, typed as soon as the
prompt shows) has answered (from the light layer while the session warms up: bot/console/early.py), goal: within
GOAL_S too (issue 37); beside it the same command piped in (stdin not a terminal: the session is built before the
first line is read, as every start was before the prompt came first).

`python -m bench console_start`; `run(quick=True)`: one start on a fresh data dir, nothing judged (tests call it)."""

from __future__ import annotations

import os
import pty
import select
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from bench import goals

STARTS = 5
GOAL_S = 1.0
PROMPT = b"quant> "
HELP_END = b"leave (end of"  # the help's last entry
QUANTDESK = Path(sys.executable).with_name("quantdesk")
TIMEOUT = 120.0


@dataclass(frozen=True)
class Start:
    prompt_s: float  # start → the prompt shows
    help_s: float  # start → `help` has answered and the prompt is back
    piped_s: float  # start → `help`, piped in, has answered (the session built first, as before)


@dataclass(frozen=True)
class Result:
    warm: bool
    starts: list[Start]
    import_s: list[float]  # `python -c "import bot.cli"`, the reference

    @property
    def prompt_s(self) -> float:
        return statistics.median(s.prompt_s for s in self.starts)

    @property
    def help_s(self) -> float:
        return statistics.median(s.help_s for s in self.starts)

    @property
    def piped_s(self) -> float:
        return statistics.median(s.piped_s for s in self.starts)

    @property
    def reference_s(self) -> float:
        return statistics.median(self.import_s)


def _env(data_dir: Path) -> dict[str, str]:
    """This environment without QuantDesk's, Slack's, OpenAI's or the database's settings, on `data_dir`."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("QUANTDESK_", "SLACK_", "OPENAI_")) and k != "DATABASE_URL"}
    return {**env, "QUANTDESK_DATA_DIR": str(data_dir), "QUANTDESK_LOG_LEVEL": "WARNING", "TERM": "dumb"}


def _read_until(fd: int, done: bytes, seen: bytearray) -> float:
    """Read the terminal into `seen` until it holds `done`; the time it did (perf_counter)."""
    deadline = time.monotonic() + TIMEOUT
    while done not in seen:
        if time.monotonic() > deadline:
            raise TimeoutError(f"no {done!r} from quantdesk chat; it wrote: {bytes(seen)[-2000:]!r}")
        if select.select([fd], [], [], 0.5)[0]:
            try:
                seen += os.read(fd, 65536)
            except OSError:  # the child closed the terminal: it has exited
                raise RuntimeError(f"quantdesk chat exited; it wrote: {bytes(seen)[-2000:]!r}") from None
    return time.perf_counter()


def start_once(data_dir: Path) -> Start:
    """Start `quantdesk chat` on a pseudo-terminal, type `help` at its prompt, then `quit`."""
    master, slave = pty.openpty()
    started = time.perf_counter()
    proc = subprocess.Popen([str(QUANTDESK), "chat"], stdin=slave, stdout=slave, stderr=slave, cwd=data_dir,
                            env=_env(data_dir), close_fds=True)
    os.close(slave)
    with _reaped(proc, master):
        seen = bytearray()
        prompt = _read_until(master, PROMPT, seen)
        os.write(master, b"help\n")
        answer = bytearray()
        _read_until(master, HELP_END, answer)
        del answer[:answer.index(HELP_END)]
        helped = _read_until(master, PROMPT, answer)
        os.write(master, b"quit\n")
        proc.wait(timeout=TIMEOUT)
    return Start(prompt - started, helped - started, _piped_help_s(data_dir))


def _piped_help_s(data_dir: Path) -> float:
    """Start `quantdesk chat` with `help` and `quit` piped in; seconds until help's answer has been written."""
    read, write = os.pipe()
    started = time.perf_counter()
    proc = subprocess.Popen([str(QUANTDESK), "chat"], stdin=subprocess.PIPE, stdout=write, stderr=write,
                            cwd=data_dir, env=_env(data_dir), close_fds=True)
    os.close(write)
    with _reaped(proc, read):
        assert proc.stdin is not None
        proc.stdin.write(b"help\nquit\n")
        proc.stdin.close()
        helped = _read_until(read, HELP_END, bytearray())
        proc.wait(timeout=TIMEOUT)
    return helped - started


@contextmanager
def _reaped(proc: subprocess.Popen, fd: int) -> Iterator[None]:
    """On the way out, kill `proc` if it still runs, and close our end of its output."""
    try:
        yield
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(fd)


def _import_s() -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import bot.cli"], check=True)
    return time.perf_counter() - started


def run(quick: bool = False) -> Result:
    """Measure and print; quick: one start on a fresh data dir."""
    with tempfile.TemporaryDirectory() as tmp:
        if not quick:
            start_once(Path(tmp))  # makes the data dir and its database: the timed starts are warm
        starts, imports = [], []
        for _ in range(1 if quick else STARTS):
            imports.append(_import_s())
            starts.append(start_once(Path(tmp)))
    result = Result(not quick, starts, imports)
    kind = "warm (second start on the same data dir)" if result.warm else "cold (fresh data dir)"
    verdict = goals.judge(f"start → prompt <= {GOAL_S:.1f} s", result.prompt_s <= GOAL_S, quick)
    print(f"quantdesk chat on a pseudo-terminal, {kind}, median of {len(starts)} start(s); reference: "
          f"python -c \"import bot.cli\" in this run; goal: prompt and help each <= {GOAL_S:.1f} s")
    print(f"  {'':28} {'s':>7} {'import s':>9} {'ratio':>7}  goal")
    print(f"  {'start → prompt':28} {result.prompt_s:7.3f} {result.reference_s:9.3f} "
          f"{result.prompt_s / result.reference_s:6.2f}x  <= {GOAL_S:.1f} s: {verdict}")
    first = goals.judge(f"start → help answered <= {GOAL_S:.1f} s", result.help_s <= GOAL_S, quick)
    print(f"  {'start → help answered':28} {result.help_s:7.3f} {result.reference_s:9.3f} "
          f"{result.help_s / result.reference_s:6.2f}x  <= {GOAL_S:.1f} s: {first}")
    print(f"  {'start → help, piped (before)':28} {result.piped_s:7.3f} {result.reference_s:9.3f} "
          f"{result.piped_s / result.reference_s:6.2f}x  -")
    return result


def main(quick: bool = False) -> None:
    run(quick)


if __name__ == "__main__":
    main()
