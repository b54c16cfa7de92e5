"""The surface protocol: how the core reaches people, whatever the surface (a Slack thread, the console).

The core decides what to show (the content types below); a surface decides how: Block Kit in Slack, text in the
console. A post is keyed (its key travels with the message where the surface can carry it, so `find` can tell
whether an earlier attempt arrived); a post the surface refused raises `Refused`, and the core keeps its row for
the background service to post again."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from bot.cards import Card
from bot.stores.threads import thread_id_for
from graphs.home import HomePanel
from graphs.views import View


@dataclass(frozen=True)
class Place:
    """Where a thread lives: a Slack (team, channel, root ts), or the console's own names for the same three; `user`
    is who the message or decision being handled came from (private answers go to them)."""

    team: str
    channel: str
    thread_ts: str
    user: str = ""

    @property
    def thread_id(self) -> str:
        return thread_id_for(self.team, self.channel, self.thread_ts)


class Refused(Exception):
    """The surface did not take the post (an API error, a dropped connection); `reason` says which."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class Status:
    """A run's progress line; `running` offers a way to stop it; `step`: the step it is at (a short label)."""

    thread_id: str
    text: str
    running: bool = True
    step: str = ""


@dataclass(frozen=True)
class Question:
    """A pause for a human: a clarify question, a code review or an approval (its card)."""

    thread_id: str
    interrupt_id: str
    card: Card
    requester: str | None
    position: tuple[int, int] = (1, 1)  # which of the run's pending questions, of how many


@dataclass(frozen=True)
class Result:
    """A finished run or a command: its view, or plain text when it has none."""

    view: View | None = None
    text: str = ""


@dataclass(frozen=True)
class Notice:
    """A plain message in the thread: a fill, a warning, why a run stopped (`failure`)."""

    text: str
    failure: bool = False
    users: tuple[str, ...] = ()  # user ids named in the text (Slack shows them as mentions)


@dataclass(frozen=True)
class Decided:
    """What a review or approval card becomes once decided: who decided what, without buttons."""

    title: str
    user: str
    decision: str
    note: str = ""


@dataclass(frozen=True)
class Answered:
    """What a question becomes once answered."""

    title: str
    user: str
    answer: str


@dataclass(frozen=True)
class RetryOffer:
    """A decision that could not be applied, with a way to try again."""

    interrupt_id: str
    error: str


Content = Status | Question | Result | Notice | Decided | Answered | RetryOffer


@dataclass(frozen=True)
class StoredFile:
    """A chart, CSV or report to upload: its bytes come from the artifact store."""

    kind: str
    data: bytes
    filename: str
    title: str


@dataclass(frozen=True)
class ThreadStart:
    """A thread the background service opens itself (a scheduled run): where, the root's text, and a marker that
    lets `open_thread` find a root an earlier attempt posted."""

    channel: str
    text: str
    marker: str
    since: float = 0.0  # a root older than this (epoch seconds) cannot be the one looked for
    users: list[str] = field(default_factory=list)


class Surface(Protocol):
    """What a surface implements for the core."""

    def post(self, place: Place, content: Content, key: str | None = None) -> str:
        """Post into the thread; returns the message's reference. Raises Refused."""

    def update(self, place: Place, ref: str, content: Content) -> None:
        """Replace a posted message (a failure is logged, never raised)."""

    def upload(self, place: Place, files: list[StoredFile]) -> None:
        """Attach files to the thread. Raises Refused."""

    def find(self, place: Place, key: str) -> str | None:
        """The reference of a message posted with `key`, if the thread has one. Raises Refused."""

    def tell(self, place: Place, text: str) -> None:
        """A private note to `place.user` (a refusal, a hint); a failure is logged, never raised."""

    def open_thread(self, start: ThreadStart, again: bool) -> Place:
        """Root a new thread; `again`: look for a root an earlier attempt posted first. Raises Refused."""

    def locale(self, user: str) -> str | None:
        """The person's locale as the surface knows it (Slack's `en-US`, `zh-CN` …), or None; never raises."""


@runtime_checkable
class AckSurface(Protocol):
    """A surface that marks a person's message as seen (Slack: a reaction on it)."""

    def acknowledge(self, place: Place, ref: str) -> None:
        """Mark the message `ref` of the thread as seen; marking it again changes nothing. Raises Refused."""


DECIDE, ASKED, OTHERS = "decide", "asked", "others"  # why a card is on a home, in the order a home shows them


@dataclass(frozen=True)
class HomeCard:
    """A question on a person's home: its card, its thread, and why they may not decide it (then it is shown
    read-only, or without the buttons `withheld` from them: a four-eyes order's Approve for its first approver);
    `group`: a decision waiting for them (DECIDE), a question of theirs (ASKED) or one they may answer for others."""

    question: Question
    place: Place
    refusal: str = ""
    withheld: tuple[str, ...] = ()  # decisions not offered to them (`refusal` says why); the others are
    group: str = DECIDE

    @property
    def actionable(self) -> bool:
        return not self.refusal or bool(self.withheld)


@dataclass(frozen=True)
class Home:
    """A person's home as it is now: what waits for them, the workflows' panels, where the panels' threads are,
    and a line about what they just did there (`notice`)."""

    user: str
    cards: tuple[HomeCard, ...] = ()
    panels: tuple[HomePanel, ...] = ()
    places: dict[str, Place] = field(default_factory=dict)  # thread id -> where it is, for the panels' links
    notice: str = ""


@runtime_checkable
class HomeSurface(Protocol):
    """A surface with a home per person (Slack's App Home)."""

    def publish_home(self, user: str, home: Home) -> None:
        """Show `home` as the person's home. Raises Refused."""


@dataclass(frozen=True)
class Prose:
    """Long prose shown as it is written (an analyst's report, a debate turn, the trader's reasoning)."""

    title: str
    text: str


@runtime_checkable
class StreamSurface(Protocol):
    """A surface that streams long prose into a thread as one message (Slack's chat.startStream)."""

    def stream(self, place: Place, prose: Prose, key: str, started: Callable[[str], None]) -> str:
        """Stream `prose` to `place.user` in the thread; `started(ref)` as soon as the message exists, before any
        more is sent. Returns its reference. Raises Refused (after `started`, the message may be half)."""

    def replace(self, place: Place, ref: str, prose: Prose, key: str) -> str:
        """Make the message `ref` (a stream a dead process left half) the complete prose: updated, or deleted and
        posted again, never leaving the half as the only copy. Returns the complete one's reference. Raises
        Refused."""
