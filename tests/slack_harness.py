"""Drive `quantdesk serve`: signed Slack requests over real HTTP, and the payloads Socket Mode envelopes carry."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.request
from itertools import count
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from slack_sdk.signature import SignatureVerifier

from tests.fakes.slack_server import BOT_USER, TEAM

SECRET = "test-signing-secret"
_ids = count(1)


class BotProcess:
    """A `quantdesk serve` subprocess on an ephemeral port, pointed at the fake Slack API."""

    def __init__(self, slack_url: str, database_url: str, data_dir: Path, **env: str) -> None:
        environ = {k: v for k, v in os.environ.items() if not k.startswith(("QUANTDESK_", "SLACK_", "OPENAI_"))}
        environ.update(SLACK_BOT_TOKEN="xoxb-test-token", SLACK_SIGNING_SECRET=SECRET, SLACK_API_URL=slack_url,
                       DATABASE_URL=database_url, QUANTDESK_DATA_DIR=str(data_dir), QUANTDESK_LOG_LEVEL="WARNING",
                       **env)
        self.database_url = database_url
        self.proc = subprocess.Popen([sys.executable, "-m", "bot.cli", "serve", "--host", "127.0.0.1", "--port", "0"],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=environ)
        line = self.proc.stdout.readline()
        if "listening on" not in line and "Socket Mode" not in line:
            self.proc.kill()
            raise RuntimeError(f"bot did not start: {line}{self.proc.stderr.read()}")
        self.url = line.split("listening on ", 1)[1].strip() if "listening on" in line else ""

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()


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


def view_body(user: str, callback_id: str, private_metadata: str, values: dict[str, Any]) -> str:
    """A view_submission of a modal: values as {block_id: {action_id: value}} for plain-text inputs."""
    state = {block: {action: {"type": "plain_text_input", "value": value} for action, value in inputs.items()}
             for block, inputs in values.items()}
    payload = {"type": "view_submission", "team": {"id": TEAM}, "user": {"id": user}, "api_app_id": "A1",
               "token": "x", "trigger_id": f"trig{next(_ids)}",
               "view": {"id": f"V{next(_ids)}", "type": "modal", "callback_id": callback_id, "team_id": TEAM,
                        "private_metadata": private_metadata, "state": {"values": state}, "hash": "h"}}
    return urlencode({"payload": json.dumps(payload)})
