"""The App Home: published when a person opens it; its "More" buttons open the whole list in a modal, and its
panels' buttons (a rule's pause, resume, run now, an admin's trading switch with the reason typed beside it) are done
as the person, answered on their Home."""

from __future__ import annotations

import json
import re
from typing import Any

from slack_bolt import App

from bot.core import Core
from bot.slack.home import NOT_MINE, TYPED, WAITING, WAITING_TITLE, more_modal, parse_action, typed_id
from tools.i18n import _, using


def register(app: App, core: Core) -> None:
    homes = core.homes
    if homes is None:
        return
    link = getattr(core.surface, "permalink", lambda place: None)
    names = getattr(core.surface, "names", None)

    def speak(user: str) -> Any:
        return using(core.language_of(user))

    @app.event("app_home_opened")
    def on_home_opened(event: dict[str, Any]) -> None:
        if event.get("tab", "home") == "home":
            homes.opened(event["user"])

    @app.action("home_more")
    def on_more(ack: Any, body: dict[str, Any], action: dict[str, Any]) -> None:
        ack()  # first: the trigger_id expires 3 s after the click
        user = body["user"]["id"]
        try:
            name = str(json.loads(action["value"])["p"])
        except (ValueError, TypeError, KeyError):
            return
        with speak(user):
            if name == WAITING:
                view = more_modal(_(WAITING_TITLE), None, homes.cards(user), link, names)
            else:
                panel = homes.panel(user, name)
                view = more_modal(panel.title if panel else name, panel, [], link, names)
        app.client.views_open(trigger_id=body["trigger_id"], view=view)

    @app.action(re.compile(r"^home_action_\d+$"))
    def on_action(ack: Any, body: dict[str, Any], action: dict[str, Any]) -> None:
        ack()
        user = body["user"]["id"]
        try:
            panel, home_action = parse_action(action["value"])
        except (ValueError, TypeError, KeyError):
            with speak(user):
                homes.opened(user, notice=_(NOT_MINE))
            return
        with speak(user):
            homes.opened(user, notice=core.home_action(user, panel, home_action, typed_beside(body, action)))


def typed_beside(body: dict[str, Any], action: dict[str, Any]) -> str:
    """What the person typed in the input beside the clicked button (the Home's state), else empty."""
    values = ((body.get("view") or {}).get("state") or {}).get("values") or {}
    n = str(action.get("action_id", "")).rsplit("_", 1)[-1]
    typed = ((values.get(typed_id(str(action.get("block_id", "")), int(n) if n.isdigit() else 0)) or {})
             .get(TYPED) or {}).get("value")
    return str(typed or "")
