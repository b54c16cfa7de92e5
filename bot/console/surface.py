"""The console as a surface: posts printed as text (cards in their console form), files written to the data
directory's exports folder. Nothing is ever refused, so nothing is posted twice."""

from __future__ import annotations

import itertools
import threading
import uuid
from pathlib import Path
from typing import TextIO

from bot.cards import Card
from bot.console.progress import ProgressLine
from bot.console.text import view_text
from bot.core.kinds import kind_of
from bot.core.outbox import kind_word
from bot.core.surface import (
    Content,
    Notice,
    Place,
    Question,
    Result,
    RetryOffer,
    Status,
    StoredFile,
    ThreadStart,
)
from bot.surfaces import CONSOLE_CHANNEL, CONSOLE_TEAM
from graphs.views import named
from tools.i18n import _


def console_place(user: str, root: str | None = None) -> Place:
    """A console thread: a new one unless `root` names it."""
    return Place(CONSOLE_TEAM, CONSOLE_CHANNEL, root or uuid.uuid4().hex, user)


class ConsoleSurface:
    def __init__(self, out: TextIO, exports: Path, people: dict[str, str] | None = None, live: bool = False) -> None:
        """`people`: user id -> the name the console shows (the login the database maps to it); `live`: `out` is a
        terminal, where a run's progress shows as one line rewritten in place."""
        self.out, self.exports, self.people = out, exports, dict(people or {})
        self._lock = threading.Lock()
        self.progress = ProgressLine(out, self._lock) if live else None
        self._refs = itertools.count(1)
        self.last: dict[str, Content] = {}  # thread id -> the last content shown in it
        self.opened: set[str] = set()  # threads a background run opened (a scheduled rule's)
        self.asked: dict[str, Place] = {}  # those of them that asked a question (the console switches there)

    def say(self, text: str) -> None:
        with self._lock:
            if self.progress is not None:
                self.progress.clear()
            print(text, file=self.out, flush=True)
            if self.progress is not None:
                self.progress.redraw()

    def _track(self, place: Place, content: Content) -> None:
        """A run's status drives the progress line; its question or result ends it."""
        if self.progress is None:
            return
        with self._lock:
            if isinstance(content, Status) and content.running:
                self.progress.show(place.thread_id, content.step)
            elif isinstance(content, Status | Question | Result | RetryOffer):
                self.progress.stop(place.thread_id)

    def post(self, place: Place, content: Content, key: str | None = None) -> str:
        self._track(place, content)
        self.last[place.thread_id] = content
        text = self.text_of(content)
        if isinstance(content, Question) and place.thread_id in self.opened:
            self.asked[place.thread_id] = place
        if text is not None:
            self.say(text)
        return str(next(self._refs))

    def person(self, user: str) -> str:
        """How the console names a person: their console login when one is mapped to them."""
        return self.people.get(user, user)

    def card_text(self, card: Card) -> str:
        """A question's card as console text, the people it names by name."""
        return named(kind_of(card).console_text(card), list(card.users or ()), self.person)

    def text_of(self, content: Content) -> str | None:
        """A content as console text; None for what the console does not show (status lines)."""
        if isinstance(content, Question):
            number, total = content.position
            prefix = f"[{number}/{total}] " if total > 1 else ""
            return prefix + self.card_text(content.card)
        if isinstance(content, Result):
            return view_text(content.view, self.person) if content.view else content.text
        if isinstance(content, Notice):
            text = named(content.text, content.users, self.person)
            return _("error: {error}").format(error=text) if content.failure else text
        if isinstance(content, RetryOffer):
            return _("error: your decision is recorded but was not applied: {error}").format(error=content.error)
        return None

    def update(self, place: Place, ref: str, content: Content) -> None:
        """A status moves the progress line; a card becoming its decision shows nothing (the console showed the
        decision as it was typed)."""
        self._track(place, content)

    def upload(self, place: Place, files: list[StoredFile]) -> None:
        folder = self.exports / place.thread_id
        folder.mkdir(parents=True, exist_ok=True)
        for file in files:
            path = folder / file.filename
            path.write_bytes(file.data)
            self.say(_("  saved {kind}: {path}").format(kind=kind_word(file.kind), path=path))

    def find(self, place: Place, key: str) -> str | None:
        return None

    def tell(self, place: Place, text: str) -> None:
        self.say(text)

    def open_thread(self, start: ThreadStart, again: bool) -> Place:
        self.say(f"({start.text})")
        place = console_place("")
        self.opened.add(place.thread_id)
        return place

    def locale(self, user: str) -> str | None:
        """The console knows no locale: `lang zh|en` or the workspace's language applies."""
        return None
