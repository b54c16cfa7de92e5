"""Bolt listeners, one module per Slack surface kind (as Slack's own Bolt samples split them): events, slash
commands, block actions, view submissions and the App Home. Each `register(app, core)` hands the work to the core."""

from __future__ import annotations

from slack_bolt import App

from bot.core import Core
from bot.slack.listeners import actions, assistant, commands, events, home, views


def register(app: App, core: Core, bot_user: str) -> None:
    events.register(app, core, bot_user)
    commands.register(app, core)
    actions.register(app, core)
    views.register(app, core)
    home.register(app, core)
    assistant.register(app, core)
