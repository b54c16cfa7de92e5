"""Drive `quantdesk serve`: signed Slack requests over real HTTP, and the payloads Socket Mode envelopes carry."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Callable
from itertools import count
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from slack_sdk.models.blocks import Block
from slack_sdk.signature import SignatureVerifier

from testkit.fakes.slack_server import BOT_USER, TEAM, Call, SlackServer

SECRET = "test-signing-secret"
_ids = count(1)
_ts = count(1)


def new_ts() -> str:
    """A Slack message ts no other test of this run uses."""
    return f"{1800000000 + next(_ts)}.{int(time.time() * 1000) % 1000000:06d}"


def _proc_text(path: Path) -> str:
    """A /proc file's text; empty when its process or thread has just gone."""
    try:
        return path.read_text()
    except (FileNotFoundError, ProcessLookupError):
        return ""


def children(pid: int) -> list[int]:
    """The child processes of every thread of `pid` (a child started by a thread is listed under that thread)."""
    try:
        tasks = list(Path(f"/proc/{pid}/task").iterdir())
    except FileNotFoundError:
        return []
    return [int(c) for task in tasks for c in _proc_text(task / "children").split()]


def descendants(pid: int) -> list[int]:
    """Every process below `pid`, deepest last."""
    found = children(pid)
    return [*found, *(d for child in found for d in descendants(child))]


def command_line(pid: int) -> list[str]:
    return _proc_text(Path(f"/proc/{pid}/cmdline")).split("\0")


class DrainedProcess:
    """A subprocess whose stdout and stderr are drained by threads (a full pipe would block it) and kept for
    `output()`."""

    def __init__(self, proc: subprocess.Popen) -> None:
        self.proc = proc
        self._output: list[str] = []
        self._drains = [threading.Thread(target=self._drain, args=(stream,), daemon=True)
                        for stream in (proc.stdout, proc.stderr)]
        for drain in self._drains:
            drain.start()

    def _drain(self, stream: Any) -> None:
        for line in stream:
            self._output.append(line)

    def output(self) -> str:
        """What the process wrote to stdout and stderr so far."""
        return "".join(self._output)

    def kill(self) -> int:
        """SIGKILL, as a crash or an OOM kill would: no handler runs, nothing is flushed or closed. Returns the
        exit status (-SIGKILL)."""
        os.kill(self.proc.pid, signal.SIGKILL)
        status = self.proc.wait(timeout=10)
        self._join()
        return status

    def kill_host(self) -> int:
        """SIGKILL the process and everything it started (serve's worker child, sandbox workers), as a crash of its
        host would. Returns the process's exit status (-SIGKILL)."""
        for pid in descendants(self.proc.pid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        return self.kill()

    def stop(self, timeout: float = 10) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=10)
        self._join()

    def _join(self) -> None:
        for drain in self._drains:
            drain.join(timeout=5)


def process_env(slack_url: str, database_url: str, data_dir: Path, **env: str) -> dict[str, str]:
    """The environment of a `quantdesk serve` or `quantdesk worker` under test: this one without QuantDesk's,
    Slack's or OpenAI's settings, pointed at the fake Slack API, logging at WARNING."""
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("QUANTDESK_", "SLACK_", "OPENAI_"))}
    environ.update(SLACK_BOT_TOKEN="xoxb-test-token", SLACK_SIGNING_SECRET=SECRET, SLACK_API_URL=slack_url,
                   DATABASE_URL=database_url, QUANTDESK_DATA_DIR=str(data_dir), QUANTDESK_LOG_LEVEL="WARNING", **env)
    return environ


class WorkerProcess(DrainedProcess):
    """A `quantdesk worker` subprocess (PostgreSQL), started with `start()`; `started()` once it runs jobs."""

    @classmethod
    def start(cls, slack_url: str, database_url: str, data_dir: Path, concurrency: int = 2,
              **env: str) -> WorkerProcess:
        return cls(subprocess.Popen([sys.executable, "-m", "bot.cli", "worker", "--concurrency", str(concurrency)],
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                    env=process_env(slack_url, database_url, data_dir, **env)))

    def started(self) -> bool:
        if self.proc.poll() is not None:
            raise AssertionError(f"worker exited with {self.proc.returncode}: {self.output()}")
        return any(line.startswith("worker on ") for line in self.output().splitlines())


class BotProcess(DrainedProcess):
    """A `quantdesk serve` subprocess on an ephemeral port, pointed at the fake Slack API (logs at WARNING and
    above in `output()`)."""

    def __init__(self, slack_url: str, database_url: str, data_dir: Path, **env: str) -> None:
        self.database_url = database_url
        proc = subprocess.Popen([sys.executable, "-m", "bot.cli", "serve", "--host", "127.0.0.1", "--port", "0"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env=process_env(slack_url, database_url, data_dir, **env))
        line = proc.stdout.readline()  # type: ignore[union-attr]
        if "listening on" not in line and "Socket Mode" not in line:
            proc.kill()
            raise RuntimeError(f"bot did not start: {line}{proc.stderr.read()}")  # type: ignore[union-attr]
        self.url = line.split("listening on ", 1)[1].strip() if "listening on" in line else ""
        super().__init__(proc)


def post(url: str, body: str, content_type: str, retry: int | None = None) -> tuple[int, str]:
    timestamp = str(int(time.time()))
    headers = {"X-Slack-Request-Timestamp": timestamp, "Content-Type": content_type,
               "X-Slack-Signature": SignatureVerifier(SECRET).generate_signature(timestamp=timestamp, body=body)}
    if retry is not None:
        headers.update({"X-Slack-Retry-Num": str(retry), "X-Slack-Retry-Reason": "http_timeout"})
    request = urllib.request.Request(url, data=body.encode(), headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def event_payload(event: dict[str, Any], event_id: str | None = None) -> dict[str, Any]:
    """An Events API callback (the HTTP body, or a Socket Mode `events_api` envelope's payload)."""
    return {"token": "x", "team_id": TEAM, "api_app_id": "A1", "type": "event_callback",
            "event_id": event_id or f"Ev{next(_ids):06d}", "event_time": int(time.time()),
            "authorizations": [{"team_id": TEAM, "user_id": BOT_USER, "is_bot": True}], "event": event}


def event_body(event: dict[str, Any], event_id: str | None = None) -> str:
    return json.dumps(event_payload(event, event_id))


def mention(channel: str, user: str, text: str, ts: str, thread_ts: str | None = None) -> dict[str, Any]:
    event = {"type": "app_mention", "channel": channel, "user": user, "text": f"<@{BOT_USER}> {text}", "ts": ts,
             "event_ts": ts}
    if thread_ts:
        event["thread_ts"] = thread_ts
    return event


def message(channel: str, user: str, text: str, ts: str, thread_ts: str | None = None,
            channel_type: str = "channel") -> dict[str, Any]:
    event = {"type": "message", "channel": channel, "user": user, "text": text, "ts": ts, "event_ts": ts,
             "channel_type": channel_type}
    if thread_ts:
        event["thread_ts"] = thread_ts
    return event


def command_payload(text: str, channel: str, user: str, response_url: str) -> dict[str, Any]:
    """A `/quant` invocation's fields (form-encoded over HTTP, a `slash_commands` envelope's payload)."""
    return {"token": "x", "team_id": TEAM, "channel_id": channel, "user_id": user, "command": "/quant",
            "text": text, "response_url": response_url, "trigger_id": f"trig{next(_ids)}"}


def command_body(text: str, channel: str, user: str, response_url: str) -> str:
    return urlencode(command_payload(text, channel, user, response_url))


def action_payload(user: str, channel: str, message_ts: str, thread_ts: str, action: dict[str, Any]) -> dict[str, Any]:
    """A button click (`block_actions`; an `interactive` envelope's payload in Socket Mode)."""
    return {"type": "block_actions", "team": {"id": TEAM}, "user": {"id": user}, "api_app_id": "A1",
            "token": "x", "trigger_id": f"trig{next(_ids)}", "channel": {"id": channel},
            "container": {"type": "message", "message_ts": message_ts, "channel_id": channel},
            "message": {"ts": message_ts, "thread_ts": thread_ts, "text": "q"},
            "actions": [{**action, "type": "button", "action_ts": str(time.time())}]}


def action_body(user: str, channel: str, message_ts: str, thread_ts: str, action: dict[str, Any]) -> str:
    return urlencode({"payload": json.dumps(action_payload(user, channel, message_ts, thread_ts, action))})


def home_opened(user: str) -> dict[str, Any]:
    """The `app_home_opened` event of a person opening the app's Home tab."""
    return {"type": "app_home_opened", "user": user, "channel": f"D{user}", "tab": "home",
            "event_ts": str(time.time())}


def home_action_payload(user: str, action: dict[str, Any], typed: dict[str, str] | None = None) -> dict[str, Any]:
    """A button click on the App Home: the payload has the view, and no channel or message; `typed`: what the Home's
    plain-text inputs hold, {block_id: text} (their action id is `typed`)."""
    view_id = f"VH{user}"
    values = {block: {"typed": {"type": "plain_text_input", "value": text}} for block, text in (typed or {}).items()}
    return {"type": "block_actions", "team": {"id": TEAM}, "user": {"id": user}, "api_app_id": "A1", "token": "x",
            "trigger_id": f"trig{next(_ids)}", "container": {"type": "view", "view_id": view_id},
            "view": {"id": view_id, "type": "home", "team_id": TEAM, "blocks": [], "private_metadata": "",
                     "callback_id": "", "state": {"values": values}, "hash": "h"},
            "actions": [{**action, "type": "button", "action_ts": str(time.time())}]}


def home_action_body(user: str, action: dict[str, Any], typed: dict[str, str] | None = None) -> str:
    return urlencode({"payload": json.dumps(home_action_payload(user, action, typed))})


def view_body(user: str, callback_id: str, private_metadata: str, values: dict[str, Any]) -> str:
    """A view_submission of a modal: values as {block_id: {action_id: value}} for plain-text inputs."""
    state = {block: {action: {"type": "plain_text_input", "value": value} for action, value in inputs.items()}
             for block, inputs in values.items()}
    payload = {"type": "view_submission", "team": {"id": TEAM}, "user": {"id": user}, "api_app_id": "A1",
               "token": "x", "trigger_id": f"trig{next(_ids)}",
               "view": {"id": f"V{next(_ids)}", "type": "modal", "callback_id": callback_id, "team_id": TEAM,
                        "private_metadata": private_metadata, "state": {"values": state}, "hash": "h"}}
    return urlencode({"payload": json.dumps(payload)})


# --- reading what the bot sent -------------------------------------------------------------------------------


def in_thread(channel: str, thread_ts: str) -> Callable[[Call], bool]:
    return lambda c: c.args.get("channel") == channel and c.args.get("thread_ts") == thread_ts


def text_of(call: Call) -> str:
    return str(call.args.get("text") or "")


def blocks_valid(call: Call) -> list[dict[str, Any]]:
    """The call's blocks, each validated by slack_sdk.models; a plain-text fallback must be there too."""
    blocks = call.args.get("blocks")
    blocks = json.loads(blocks) if isinstance(blocks, str) else (blocks or [])
    for raw in blocks:
        Block.parse(raw).validate_json()
    assert call.args.get("text"), "a plain-text fallback is required"
    return blocks


def question_call(slack: SlackServer, channel: str, thread_ts: str, n: int = 1) -> Call:
    """The n-th clarify question posted in the thread."""
    calls = slack.fake.wait_for("chat.postMessage", n, where=lambda c: in_thread(channel, thread_ts)(c)
                                and "blocks" in c.args and ":question:" in json.dumps(c.args["blocks"]))
    return calls[n - 1]


def review_call(slack: SlackServer, channel: str, root: str, n: int = 1) -> Call:
    """The n-th code review posted in the thread."""
    calls = slack.fake.wait_for("chat.postMessage", n, where=lambda c: in_thread(channel, root)(c)
                                and text_of(c).startswith("Code review for factor"))
    return calls[n - 1]


def result_call(slack: SlackServer, channel: str, root: str, prefix: str) -> Call:
    """The first message posted (successfully) in the thread whose text starts with `prefix`."""
    return slack.fake.wait_for("chat.postMessage", where=lambda c: in_thread(channel, root)(c) and c.ok
                               and text_of(c).startswith(prefix))[0]


def button_of(call: Call, action_id: str) -> dict[str, Any]:
    blocks = blocks_valid(call)
    return next(e for b in blocks if b["type"] == "actions" for e in b["elements"] if e["action_id"] == action_id)


def run_background_job(core: Any, name: str, now: Any = None) -> None:
    """One of the registry's background jobs, now (as the background service runs it when it is due)."""
    from bot.core.background import BackgroundService
    from graphs.registry import BACKGROUND

    BackgroundService(core, jobs={name: BACKGROUND[name]}).run_jobs(now, force=True)


def run_background_pass(core: Any) -> None:
    """One background pass without the workflows' jobs: due decisions, unqueued messages, unposted posts."""
    from bot.core.background import BackgroundService

    BackgroundService(core, jobs={}).run_once()
