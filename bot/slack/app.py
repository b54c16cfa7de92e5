"""The Bolt app: its listeners (bot/slack/listeners/) hand every message, command and click to the core."""

from __future__ import annotations

from slack_bolt import App
from slack_sdk import WebClient
from slack_sdk.http_retry.builtin_handlers import ConnectionErrorRetryHandler, RateLimitErrorRetryHandler

from bot.core import Core
from bot.slack import listeners
from bot.surfaces import SLACK
from tools.settings import Settings

SLACK_SCOPE = SLACK.scope  # the thread-id prefix of Slack threads (bot/surfaces.py)


def make_client(settings: Settings) -> WebClient:
    token = settings.slack_bot_token.get_secret_value() if settings.slack_bot_token else None
    return WebClient(token=token, base_url=settings.slack_api_url,
                     retry_handlers=[RateLimitErrorRetryHandler(max_retry_count=2), ConnectionErrorRetryHandler()])


def build_app(settings: Settings, client: WebClient, core: Core) -> App:
    """The Bolt app (its constructor calls auth.test: the first request to Slack)."""
    secret = settings.slack_signing_secret.get_secret_value() if settings.slack_signing_secret else None
    # named: without a name Bolt reads it from inspect.stack(), about a second of every start
    app = App(name="quantdesk", client=client, signing_secret=secret, process_before_response=False)
    listeners.register(app, core, client.auth_test()["user_id"])
    return app
