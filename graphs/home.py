"""What a person's home shows besides the questions waiting for them: panels the workflows declare (the
registry's HOME), built fresh from the database each time, in plain text with no markup; a surface lays them out
(Slack's App Home) and offers their actions as buttons.

An action is honoured only if the same action is on the person's panel when it is built again at the click, so a
panel decides who may do what (a rule's owner or an admin pauses it) and a forged click finds nothing to match."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from graphs.context import WorkflowContext


@dataclass(frozen=True)
class HomeAction:
    """A button: a command's words (`rule pause 3`), or with `channel` a request run in a new thread there. `asks`:
    the label of a line of free text the surface offers beside it, appended to the words (a reason); `confirm`: what
    the surface asks the person to confirm before the click counts."""

    label: str
    words: tuple[str, ...]
    channel: str = ""
    style: str = ""  # "primary", "danger" or plain
    asks: str = ""
    confirm: str = ""


@dataclass(frozen=True)
class HomeRow:
    text: str
    actions: tuple[HomeAction, ...] = ()
    thread_id: str | None = None  # the thread it came from (a surface links to it)


@dataclass(frozen=True)
class HomePanel:
    """One block of a home: a title, a one-line summary and rows (a surface shows the first and offers the rest)."""

    name: str  # unique on a home: how a surface asks for the whole panel again ("more")
    title: str
    summary: str
    rows: tuple[HomeRow, ...] = ()
    notes: tuple[str, ...] = ()
    users: tuple[str, ...] = ()  # people named by id in its texts (graphs/views.py: `named`)
    accounts: tuple[str, ...] = ()  # paper accounts named in its texts

    def actions(self) -> list[HomeAction]:
        return [action for row in self.rows for action in row.actions]


HomeSection = Callable[["WorkflowContext", str], list[HomePanel]]  # (context, user) -> its panels, none when empty
