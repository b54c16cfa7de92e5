"""`/quant`: what the core answers at once (help, status, a command's view) to the person alone, or to the channel
with its chart; a request or plain words start a thread of their own. The core reads the text
(bot/core/intake.py); this listener only renders."""

from __future__ import annotations

import logging
from typing import Any

from slack_bolt import App
from slack_sdk.errors import SlackApiError

from bot.core import Core, Place, Reply, Typed, channel_account, clean_text
from bot.slack import render
from tools.i18n import _, using

log = logging.getLogger(__name__)


def register(app: App, core: Core) -> None:
    client = app.client
    names = getattr(core.surface, "names", None)  # the people and channels a reply names, by name where plain

    @app.command("/quant")
    def on_command(ack: Any, command: dict[str, Any], respond: Any) -> None:
        ack()
        with using(core.language_of(command["user_id"])):  # what the person alone sees is in their language
            quant(command, respond)

    def quant(command: dict[str, Any], respond: Any) -> None:
        text = clean_text(command.get("text", "")) or "help"
        user, channel = command["user_id"], command["channel_id"]
        place = Place(command["team_id"], channel, "", user)
        title = _("<@{user}> asked: `/quant {text}`").format(user=user, text=text)
        reply = core.intake.start(Typed(place, text), channel_account(channel), title)
        if reply.view is not None and reply.view.artifacts:
            show_in_channel(respond, place, reply)
        elif reply.answered or reply.failed:
            respond(response_type="ephemeral", **render.reply_of(reply, names))

    def show_in_channel(respond: Any, place: Place, reply: Reply) -> None:
        """A command's view with a chart: to the channel, the chart uploaded beside it."""
        assert reply.view is not None
        try:
            ts = client.chat_postMessage(channel=place.channel, **render.view_message(reply.view, names))["ts"]
        except SlackApiError as exc:
            respond(response_type="ephemeral", **render.view_message(reply.view, names))
            log.warning("could not post a command's view: %s", exc.response.get("error"))
            return
        core.outbox.upload(Place(place.team, place.channel, ts, place.user), reply.view.artifacts)
