"""`audit verify --witness slack`: the heads the bot posted to QUANTDESK_AUDIT_CHANNEL, read back through the Web
API (every day's thread of the channel). What the bot token can delete, this cannot see: the Slack witness holds
against a database insider, not against whoever holds the bot token."""

from __future__ import annotations

from typing import Any

from slack_sdk import WebClient

from tools.audit.heads import RecordedHead
from tools.audit.witness import in_message


def slack_heads(client: WebClient, channel: str) -> list[RecordedHead]:
    """Every head witnessed in the channel (its threads' replies included)."""
    heads: list[RecordedHead] = []
    for root in _pages(client, "conversations_history", channel=channel):
        messages = _pages(client, "conversations_replies", channel=channel, ts=root["ts"])
        heads.extend(h for h in (in_message(str(m.get("text") or "")) for m in messages) if h is not None)
    return heads


def _pages(client: WebClient, method: str, **args: Any) -> list[dict[str, Any]]:
    """Every message a paged conversations.* call returns."""
    messages: list[dict[str, Any]] = []
    cursor = None
    while True:
        page = getattr(client, method)(limit=200, cursor=cursor, **args)
        messages.extend(page.get("messages", []))
        cursor = (page.get("response_metadata") or {}).get("next_cursor")
        if not (page.get("has_more") and cursor):
            return messages
