"""`quantdesk` as a subprocess, the way a person runs it from a shell: a clean environment of the test's own (no
QUANTDESK_, TUSHARE_, DATABASE_ or SLACK_ variable of the developer's shell leaks in), a data folder under the
test's tmp_path, and the console's output as lines."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from testkit.fakes.openai_server import API_KEY, OpenAIServer
from testkit.llm import LIGHT, MAIN

SESSION_DEADLINE_S = 600  # a hung session fails the test; a slow one on a loaded machine does not
SENTENCE = re.compile(r"(?<![\w./=@-])[A-Za-z]+(?: [A-Za-z]+){2,}(?![\w./=(-])")  # three plain words in a row


def cli_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("QUANTDESK_", "TUSHARE_", "DATABASE_", "SLACK_"))}
    env.update({"QUANTDESK_DATA_DIR": str(tmp_path / "data"), "QUANTDESK_LOG_LEVEL": "WARNING", **extra})
    return env


def quantdesk(args: list[str], tmp_path: Path, stdin: str = "", **extra: str) -> subprocess.CompletedProcess:
    """`quantdesk ARGS` run to its end with `stdin` as its input."""
    return subprocess.run([sys.executable, "-m", "bot.cli", *args], input=stdin, capture_output=True,
                          text=True, env=cli_env(tmp_path, **extra), cwd=tmp_path, timeout=SESSION_DEADLINE_S)


def console_lines(tmp_path: Path, *lines: str, **extra: str) -> list[str]:
    """The output lines of a `quantdesk chat` session typed as `lines`; it must end cleanly, with no traceback."""
    out = quantdesk(["chat"], tmp_path, "\n".join(lines) + "\n", **extra)
    assert out.returncode == 0, out.stderr
    assert "Traceback" not in out.stderr
    return out.stdout.splitlines()


def english_left(text: str, *typed: str) -> list[str]:
    """Runs of three or more plain English words in `text`: a sentence left in English. What the user typed
    (`typed`: a rule's words) and commands in backticks are left out; codes (600519.SH), numbers, identifiers
    (ma_cross, QUANTDESK_TRADERS), settings (size=100) and terms such as ma(30) are not plain words."""
    for words in typed:
        text = text.replace(words, "")
    return SENTENCE.findall(re.sub(r"`[^`]*`", "", text))


def model_chat(tmp_path: Path, server: OpenAIServer, *lines: str) -> str:
    """A `quantdesk chat` session whose models are the loopback fake server's MAIN and LIGHT; its output."""
    out = quantdesk(["chat"], tmp_path, "\n".join(lines) + "\n", OPENAI_BASE_URL=server.url, OPENAI_API_KEY=API_KEY,
                     QUANTDESK_MODEL=MAIN, QUANTDESK_LIGHT_MODEL=LIGHT)
    assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr
    return out.stdout


def console_session(folder: Path, script: str, **env: str) -> str:
    """`quantdesk chat` in a new data folder `folder` fed `script`; its output (a clean exit asserted)."""
    folder.mkdir()
    out = quantdesk(["chat"], folder, script, **env)
    assert out.returncode == 0, out.stderr
    assert "Traceback" not in out.stderr
    return out.stdout
