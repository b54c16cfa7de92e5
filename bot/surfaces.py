"""The surfaces QuantDesk serves, registered the way workflows are (graphs/registry.py): each declares its name (the
prefix of its threads' ids: `slack-…`, `console-…`), which teams are its own and which channels its background
service serves (a rule runs where its channel is served). The stores and the core read this table and name no
surface; a new surface is one package in bot/ plus one entry here, before the catch-all last one."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

CONSOLE_TEAM = "console"  # the console's threads: team and channel "console", a root of its own
CONSOLE_CHANNEL = "console"  # also the console's paper account, and the channel of the rules saved there


@dataclass(frozen=True)
class SurfaceEntry:
    name: str
    owns_team: Callable[[str], bool]  # whether a thread of this team id is this surface's
    serves_channel: Callable[[str], bool]  # whether this surface's background service runs this channel's work
    sources: tuple[str, ...]  # what its decisions are recorded as coming from (a button, a form, a typed line)

    @property
    def scope(self) -> str:
        """The prefix of its threads' ids: a process's queue, re-queues and re-posts take only these."""
        return f"{self.name}-"


CONSOLE = SurfaceEntry("console", lambda team: team == CONSOLE_TEAM, lambda channel: channel == CONSOLE_CHANNEL,
                       ("console",))
FEISHU_TEAM = "feishu"  # the team of Feishu threads (a self-built app serves one tenant); chats' ids start oc_
FEISHU = SurfaceEntry("feishu", lambda team: team == FEISHU_TEAM, lambda channel: channel.startswith("oc_"),
                      ("card form",))  # a card's button is recorded as "button", as Slack's are
SLACK = SurfaceEntry("slack", lambda team: True,  # every other team
                     lambda channel: channel != CONSOLE_CHANNEL and not FEISHU.serves_channel(channel),
                     ("button", "modal"))
SURFACES: tuple[SurfaceEntry, ...] = (CONSOLE, FEISHU, SLACK)  # the first that owns a team is its surface


def surface_of(team_id: str) -> SurfaceEntry:
    return next(entry for entry in SURFACES if entry.owns_team(team_id))
