"""Slack's assistant pane (a paid plan or a developer sandbox): a new assistant thread gets suggested prompts, and
new ones when the person looks at another channel (`assistant_thread_context_changed`: that channel's account).
What is typed there arrives as a direct message in the thread and is handled by the direct-message listener
(bot/slack/listeners/events.py), once: one assistant thread is one LangGraph thread."""

from __future__ import annotations

import logging
from typing import Any

from slack_bolt import App
from slack_sdk.errors import SlackApiError

from bot.core import Core
from graphs.registry import suggested_prompts
from tools.i18n import N_, _, using

log = logging.getLogger(__name__)

PROMPTS_MAX = 4  # Slack shows at most four suggested prompts
PROMPTS_TITLE = N_("Try one of these")
WAITING_PROMPT = (N_("What waits for me"), "status")  # answered in the thread, as `/quant status` answers


def prompts_for(core: Core, channel: str | None, user: str | None) -> list[dict[str, str]]:
    """The suggested prompts: the workflows' (a channel in view brings its account, to those with a role on it),
    and what waits for me."""
    chosen = [*suggested_prompts(core.runner.context, channel, PROMPTS_MAX - 1, user),
              (_(WAITING_PROMPT[0]), WAITING_PROMPT[1])]
    return [{"title": title, "message": message} for title, message in chosen]


def register(app: App, core: Core) -> None:
    def suggest(event: dict[str, Any]) -> None:
        thread = event.get("assistant_thread") or {}
        context = thread.get("context") or {}
        try:
            with using(core.language_of(str(thread.get("user_id") or ""))):
                app.client.assistant_threads_setSuggestedPrompts(
                    channel_id=thread["channel_id"], thread_ts=thread["thread_ts"], title=_(PROMPTS_TITLE),
                    prompts=prompts_for(core, context.get("channel_id"), thread.get("user_id")))
        except (SlackApiError, OSError, KeyError) as exc:
            log.warning("suggested prompts not set: %s", type(exc).__name__)

    @app.event("assistant_thread_started")
    def on_thread_started(event: dict[str, Any]) -> None:
        suggest(event)

    @app.event("assistant_thread_context_changed")
    def on_context_changed(event: dict[str, Any]) -> None:
        suggest(event)
