"""Mentions, direct messages (the assistant pane's threads too) and replies in the bot's threads, handed to the
core's one dispatcher (bot/core/intake.py): what it answers at once is posted in the thread, the rest it queues."""

from __future__ import annotations

import logging
from typing import Any

from slack_bolt import App
from slack_sdk.errors import SlackApiError

from bot.core import Core, Place, Reply, Typed, channel_account, clean_text
from bot.slack import render
from tools.i18n import using

log = logging.getLogger(__name__)

TITLE_MAX = 100


def register(app: App, core: Core, bot_user: str) -> None:
    def from_a_person(event: dict[str, Any]) -> bool:
        return not (event.get("subtype") or event.get("bot_id")) and event.get("user") not in (None, bot_user)

    def in_a_direct_message(event: dict[str, Any]) -> bool:
        return event.get("channel_type") == "im"

    def in_a_thread_of_mine(body: dict[str, Any], event: dict[str, Any]) -> bool:
        """A reply in a thread the bot runs; a reply that mentions the bot arrives as `app_mention` too."""
        thread_ts = str(event.get("thread_ts") or "")
        return bool(thread_ts) and f"<@{bot_user}>" not in event.get("text", "") and core.is_known_thread(
            Place(body["team_id"], event["channel"], thread_ts))

    def take(body: dict[str, Any], event: dict[str, Any], root: str) -> Reply:
        """The core's one dispatcher: a command, help or status answered in the thread at once (once: a retry, or
        the same post as `message` and `app_mention`, has the same key), anything else recorded and queued."""
        channel = event["channel"]
        place = Place(body["team_id"], channel, root, event["user"])
        reply = core.intake.take(Typed(place, event.get("text", ""), f"msg:{channel}:{event['ts']}",
                                       ref=str(event["ts"])), channel_account(channel))
        if reply.answered and (reply.text or reply.view is not None or reply.help):
            with using(core.language_of(event["user"])):
                show(place, reply)
        return reply

    def show(place: Place, reply: Reply) -> None:
        try:
            app.client.chat_postMessage(channel=place.channel, thread_ts=place.thread_ts,
                                        **render.reply_of(reply, getattr(core.surface, "names", None)))
        except SlackApiError as exc:
            log.warning("could not answer in a thread: %s", exc.response.get("error"))
            return
        if reply.view is not None:
            core.outbox.upload(place, reply.view.artifacts)

    @app.event("app_mention")
    def on_mention(body: dict[str, Any], event: dict[str, Any]) -> None:
        """A person's mention; one without a user (a bot's or a workflow's post) is acked and ignored, as the
        other messages not from a person are."""
        if not event.get("user"):
            log.debug("a mention without a user ignored (subtype %s, bot %s)", event.get("subtype"),
                      event.get("bot_id"))
            return
        take(body, event, event.get("thread_ts") or event["ts"])

    @app.event("message", matchers=[from_a_person, in_a_direct_message])
    def on_direct_message(body: dict[str, Any], event: dict[str, Any]) -> None:
        """A direct message, or a message in an assistant thread (the pane's threads are in the app's direct
        messages): the thread's first request names it (this listener alone takes it: Bolt runs the first that
        matches)."""
        channel, root, text = event["channel"], event.get("thread_ts") or event["ts"], event.get("text", "")
        first = bool(event.get("thread_ts")) and not core.is_known_thread(Place(body["team_id"], channel, root))
        reply = take(body, event, root)
        if reply.queued and first:
            title(channel, root, text)

    def title(channel: str, thread_ts: str, text: str) -> None:
        """An assistant thread's title, from its first request (not an assistant thread: Slack refuses; fine)."""
        try:
            app.client.assistant_threads_setTitle(channel_id=channel, thread_ts=thread_ts,
                                                  title=clean_text(text)[:TITLE_MAX] or "QuantDesk")
        except (SlackApiError, OSError) as exc:
            log.info("no thread title: %s", type(exc).__name__)

    @app.event("message", matchers=[from_a_person, in_a_thread_of_mine])
    def on_thread_reply(body: dict[str, Any], event: dict[str, Any]) -> None:
        take(body, event, event["thread_ts"])

    @app.event("message")
    def on_other_message() -> None:
        """Not for the bot (its own posts, edits, other threads): acked, nothing done."""
