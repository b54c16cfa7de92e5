"""Mentions, direct messages (the assistant pane's threads too) and replies in the bot's threads: recorded and
queued (the core's `submit_text`); a command typed in a direct message is answered in its thread at once."""

from __future__ import annotations

import logging
from typing import Any

from slack_bolt import App
from slack_sdk.errors import SlackApiError

from bot.core import Core, Place, clean_text
from bot.slack import render
from bot.slack.listeners.commands import command_reply
from graphs.views import View

log = logging.getLogger(__name__)

TITLE_MAX = 100


def register(app: App, core: Core, bot_user: str) -> None:
    def from_a_person(event: dict[str, Any]) -> bool:
        return not (event.get("subtype") or event.get("bot_id")) and event.get("user") not in (None, bot_user)

    def in_a_direct_message(event: dict[str, Any]) -> bool:
        return event.get("channel_type") == "im"

    def in_a_thread_of_mine(body: dict[str, Any], event: dict[str, Any]) -> bool:
        """A reply in a thread the bot runs; a reply that mentions the bot arrives as `app_mention` too."""
        thread_ts = event.get("thread_ts")
        return bool(thread_ts) and f"<@{bot_user}>" not in event.get("text", "") and core.is_known_thread(
            Place(body["team_id"], event["channel"], thread_ts))

    def submit(body: dict[str, Any], event: dict[str, Any], root: str) -> bool:
        """Record and queue the message; False when it was taken before (a redelivery)."""
        channel = event["channel"]  # a retry, or the same post as `message` and `app_mention`, has the same key
        return core.submit_text(Place(body["team_id"], channel, root, event["user"]), event.get("text", ""),
                         f"msg:{channel}:{event['ts']}")

    @app.event("app_mention")
    def on_mention(body: dict[str, Any], event: dict[str, Any]) -> None:
        submit(body, event, event.get("thread_ts") or event["ts"])

    @app.event("message", matchers=[from_a_person, in_a_direct_message])
    def on_direct_message(body: dict[str, Any], event: dict[str, Any]) -> None:
        """A direct message, or a message in an assistant thread (the pane's threads are in the app's direct
        messages): the thread's first message names it; a command is answered in the thread at once, anything
        else is submitted like a mention (this listener alone takes it: Bolt runs the first that matches)."""
        channel, root, text = event["channel"], event.get("thread_ts") or event["ts"], event.get("text", "")
        place = Place(body["team_id"], channel, root, event["user"])
        first = bool(event.get("thread_ts")) and not core.is_known_thread(place)
        reply = command_reply(core, event["user"], channel, text)
        if reply is None:
            if submit(body, event, root) and first:  # not for a redelivery
                title(channel, root, text)
        elif core.answered_once(place, text, f"msg:{channel}:{event['ts']}"):
            message = render.view_message(reply) if isinstance(reply, View) else render.reply_message(reply)
            try:
                app.client.chat_postMessage(channel=channel, thread_ts=root, **message)
            except SlackApiError as exc:
                log.warning("could not answer a command: %s", exc.response.get("error"))
                return
            if isinstance(reply, View):
                core.outbox.upload(place, reply.artifacts)

    def title(channel: str, thread_ts: str, text: str) -> None:
        """An assistant thread's title, from its first request (not an assistant thread: Slack refuses; fine)."""
        try:
            app.client.assistant_threads_setTitle(channel_id=channel, thread_ts=thread_ts,
                                                  title=clean_text(text)[:TITLE_MAX] or "QuantDesk")
        except (SlackApiError, OSError) as exc:
            log.info("no thread title: %s", type(exc).__name__)

    @app.event("message", matchers=[from_a_person, in_a_thread_of_mine])
    def on_thread_reply(body: dict[str, Any], event: dict[str, Any]) -> None:
        submit(body, event, event["thread_ts"])

    @app.event("message")
    def on_other_message() -> None:
        """Not for the bot (its own posts, edits, other threads): acked, nothing done."""
