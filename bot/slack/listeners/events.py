"""Mentions, direct messages and replies in the bot's threads: recorded and queued (the core's `submit_text`)."""

from __future__ import annotations

from typing import Any

from slack_bolt import App

from bot.core import Core, Place


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

    def submit(body: dict[str, Any], event: dict[str, Any], root: str) -> None:
        channel = event["channel"]  # a retry, or the same post as `message` and `app_mention`, has the same key
        core.submit_text(Place(body["team_id"], channel, root, event["user"]), event.get("text", ""),
                         f"msg:{channel}:{event['ts']}")

    @app.event("app_mention")
    def on_mention(body: dict[str, Any], event: dict[str, Any]) -> None:
        submit(body, event, event.get("thread_ts") or event["ts"])

    @app.event("message", matchers=[from_a_person, in_a_direct_message])
    def on_direct_message(body: dict[str, Any], event: dict[str, Any]) -> None:
        submit(body, event, event.get("thread_ts") or event["ts"])

    @app.event("message", matchers=[from_a_person, in_a_thread_of_mine])
    def on_thread_reply(body: dict[str, Any], event: dict[str, Any]) -> None:
        submit(body, event, event["thread_ts"])

    @app.event("message")
    def on_other_message() -> None:
        """Not for the bot (its own posts, edits, other threads): acked, nothing done."""
