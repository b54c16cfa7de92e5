"""People and channel accounts as Slack shows them: the texts a workflow writes name them by id (graphs/views.py);
in mrkdwn they become mentions and channel links, in what Slack shows as typed (a header, a button, code, a
message's notification text) plain names as the workspace knows them (users.info, conversations.info: each read
once per process; a failed read is logged, not kept, and the id stands in for the name meanwhile)."""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Protocol

from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError

from graphs.views import named

log = logging.getLogger(__name__)

CHANNEL = re.compile(r"[CG][A-Z0-9]{2,}")  # a channel's id: the name of the channel's paper account
FENCE = "```"  # mrkdwn code, where a mention shows as typed


class Names(Protocol):
    """Plain names of people and channels."""

    def person(self, user: str) -> str: ...

    def channel(self, channel: str) -> str: ...


class Ids:
    """Names that are the ids themselves (no lookup)."""

    @staticmethod
    def person(user: str) -> str:
        return user

    @staticmethod
    def channel(channel: str) -> str:
        return channel


@dataclass(frozen=True)
class _Dress:
    people: frozenset[str]
    channels: frozenset[str]
    names: Names

    def plain(self, text: str) -> str:
        return named(text, self.people | self.channels,
                     lambda i: self.names.person(i) if i in self.people else self.names.channel(i))

    def linked(self, text: str) -> str:
        parts = text.split(FENCE)
        return FENCE.join(self.plain(part) if n % 2 else named(
            part, self.people | self.channels, lambda i: f"<@{i}>" if i in self.people else f"<#{i}>")
                          for n, part in enumerate(parts))

    def walk(self, value: Any) -> Any:
        """Every text object under `value`: mrkdwn linked, plain text by name."""
        if isinstance(value, list):
            return [self.walk(v) for v in value]
        if not isinstance(value, dict):
            return value
        if value.get("type") in ("mrkdwn", "plain_text") and isinstance(value.get("text"), str):
            return {**value, "text": (self.linked if value["type"] == "mrkdwn" else self.plain)(value["text"])}
        return {k: self.walk(v) for k, v in value.items()}


def dressed(message: dict[str, Any], users: Iterable[str], accounts: Iterable[str], names: Names | None = None,
            ) -> dict[str, Any]:
    """A message or view whose texts name `users` and `accounts` by id, shown Slack's way: mentions and channel
    links (an account named after its channel; other accounts keep their names) in mrkdwn outside code, plain
    names elsewhere, in the notification `text` beside blocks too (without blocks the text is what Slack shows)."""
    dress = _Dress(frozenset(u for u in users if u), frozenset(a for a in accounts if a and CHANNEL.fullmatch(a)),
                   names or Ids())
    if not dress.people and not dress.channels:
        return message
    found = dress.walk(message)
    if isinstance(message.get("text"), str):
        found["text"] = (dress.plain if message.get("blocks") else dress.linked)(message["text"])
    return found


def _reason(exc: Exception) -> str:
    return str(exc.response.get("error")) if isinstance(exc, SlackApiError) else type(exc).__name__


class SlackNames:
    """The workspace's names of people and channels (a `Names`)."""

    def __init__(self, client: WebClient) -> None:
        self.client = client
        self._users: dict[str, dict[str, Any]] = {}  # user id -> users.info's user (with the locale)
        self._channels: dict[str, str] = {}  # channel id -> "#name"

    def user(self, user: str) -> dict[str, Any] | None:
        """users.info's record of the person (with their locale; needs users:read), or None when it cannot be read."""
        if user not in self._users:
            try:
                found = self.client.users_info(user=user, include_locale=True)
            except (SlackApiError, OSError) as exc:
                log.warning("could not read a user's record: %s", _reason(exc))
                return None
            self._users[user] = dict(found.get("user") or {})
        return self._users[user]

    def person(self, user: str) -> str:
        """The person's display name, else their full name, else their id."""
        record = self.user(user) or {}
        profile = record.get("profile") or {}
        return str(profile.get("display_name") or profile.get("real_name") or record.get("real_name") or user)

    def channel(self, channel: str) -> str:
        """`#name` of the channel (conversations.info; needs channels:read, groups:read), else its id."""
        if channel not in self._channels:
            try:
                found = self.client.conversations_info(channel=channel)
            except (SlackApiError, OSError) as exc:
                log.warning("could not read a channel's name: %s", _reason(exc))
                return channel
            name = (found.get("channel") or {}).get("name")
            self._channels[channel] = f"#{name}" if name else channel
        return self._channels[channel]
