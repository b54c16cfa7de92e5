"""Background work the workflows declare (the registry's BACKGROUND): run by the bot's background service, in
`quantdesk serve` and in a `quantdesk chat` left open, whether or not anybody asks.

A job hands back notices, each posted into its thread once (keyed by `key`), and may start runs of its own
(`ScheduledRun`: a structured request in a new thread, never chat text)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from graphs.context import WorkflowContext
    from tools.rules.schedule import CatchUp


@dataclass(frozen=True)
class Notice:
    thread_id: str  # the LangGraph thread id (the surface maps it to its thread)
    key: str  # the post's once-only key
    text: str | Callable[[], str]  # or what composes it, called in the thread's language
    users: tuple[str, ...] = ()  # user ids named in the text (Slack shows them as mentions)

    def said(self) -> str:
        """The text, composed in the language in effect when it is a function."""
        return self.text() if callable(self.text) else self.text


@dataclass(frozen=True)
class ScheduledRun:
    """A run a background job starts: in a new thread of `channel`, for `owner`, with a structured `request`
    ({"workflow": name, ...}) that the workflow reads from its state. `key` names the run (its dedupe key, and
    the marker its thread's root carries, so a start tried again finds the root an earlier attempt posted);
    `title` is the root's text (or what composes it, called in the owner's language); `since` (epoch seconds)
    bounds that search."""

    channel: str
    owner: str
    key: str
    title: str | Callable[[], str]
    request: dict[str, Any]
    since: float = 0.0

    def titled(self) -> str:
        """The root's text, composed in the language in effect when it is a function."""
        return self.title() if callable(self.title) else self.title


@dataclass(frozen=True)
class BackgroundCall:
    """What a background job gets besides the workflow context."""

    now: datetime
    owner: str  # the process running it (claims are taken in its name)
    start: Callable[[ScheduledRun, bool], None]  # (run, again): root its thread and queue it; raises on failure
    catch_up: CatchUp = "once"  # QUANTDESK_RULE_CATCH_UP: what to do with schedule ticks missed while nothing ran
    serves: Callable[[str], bool] = field(default=lambda channel: True)  # whether this process's surface owns a channel


@dataclass(frozen=True)
class BackgroundJob:
    """One kind of background work and how often it runs."""

    every_seconds: float
    run: Callable[[WorkflowContext, BackgroundCall], list[Notice]]
    on_broker_news: bool = False  # also at once when a broker reports an order or a trade (tools/broker/news.py)
