"""What a person sees of a request before a job slot is free: the acknowledgement at intake (an :eyes: reaction
in Slack), a line saying its place in the queue once it has waited WAIT_SECONDS, and the run's status line, which
replaces that line when the run starts.

Each is a post row first (bot/stores/posts.py), keyed by the message: the acknowledgement is made once, and the
status line is the queued line when there is one, so neither a second process nor a job run again after a crash
posts either twice. Whoever creates the status row posts it (the queued line's timer, or the job); the other one
takes it over."""

from __future__ import annotations

import logging
import threading
import time
from typing import TYPE_CHECKING

from bot.core.surface import AckSurface, Place, Refused, Status
from bot.stores.posts import Post
from bot.stores.threads import dedupe_key
from tools.i18n import _, ngettext, using

if TYPE_CHECKING:
    from bot.core.core import Core

log = logging.getLogger(__name__)

WAITING_POSTS = ("ack", "status")
WAIT_SECONDS = 2.0  # a request that waited this long for a job slot says so in its thread
KEY_MAX = 128  # posts.key
REF_MAX = 32  # posts.ts: a longer reference (the assistant pane's status) is not kept, only used
ACK_POST, STATUS_POST = WAITING_POSTS


def ack_key(message_key: str) -> str:
    return dedupe_key(f"ack:{message_key}", KEY_MAX)


def status_key(key: str) -> str:
    """The status line's post key of a message's run (or of a decision's apply)."""
    return dedupe_key(f"status:{key}", KEY_MAX)


def queued_text(ahead: int) -> str:
    if ahead == 0:
        return _(":hourglass: queued: every worker is busy; this request is next.")
    return ngettext(":hourglass: queued: every worker is busy; {n} request is ahead of this one.",
                    ":hourglass: queued: every worker is busy; {n} requests are ahead of this one.", ahead).format(
        n=ahead)


class Waiting:
    def __init__(self, core: Core, wait_seconds: float = WAIT_SECONDS) -> None:
        self.core, self.wait_seconds = core, wait_seconds

    # --- at intake (the listener) ---------------------------------------------------------------------------------

    def took_in(self, place: Place, message_key: str, ref: str) -> None:
        """A message was queued: acknowledge it now (`ref`: the surface's reference of the typed message, if it
        has one), and say where it stands in the queue if its run has not started after `wait_seconds`."""
        if ref:
            self.acknowledge(place, message_key, ref)
        timer = threading.Timer(self.wait_seconds, self.say_queued, (place, message_key))
        timer.daemon = True
        timer.start()

    def acknowledge(self, place: Place, message_key: str, ref: str) -> None:
        surface, posts = self.core.surface, self.core.posts
        if not isinstance(surface, AckSurface):
            return
        key = ack_key(message_key)
        body = {"ref": ref, "team": place.team, "channel": place.channel, "thread_ts": place.thread_ts}
        _post, created = posts.record(key, place.thread_id, ACK_POST, body)
        if created and posts.claim(key, self.core.owner):
            self._acknowledge(place, key, ref)

    def _acknowledge(self, place: Place, key: str, ref: str) -> None:
        surface = self.core.surface
        assert isinstance(surface, AckSurface)
        try:
            surface.acknowledge(place, ref)
        except Refused as exc:
            log.warning("acknowledgement %s not accepted: %s", key, exc.reason)
            self.core.posts.mark_failed(key, exc.reason)  # the background service tries again
            return
        self.core.posts.mark_posted(key, ref)
        self.core.posts.mark_complete(key)

    def say_queued(self, place: Place, message_key: str) -> None:
        """The queued line, unless the run started (or another process said it) meanwhile."""
        try:
            self._say_queued(place, message_key)
        except Exception:  # noqa: BLE001 - a timer thread: the run's own status line still comes
            log.warning("could not say that a request waits", exc_info=True)

    def _say_queued(self, place: Place, message_key: str) -> None:
        core = self.core
        ahead = core.queue.ahead_of(message_key)
        if ahead is None:
            return
        key = status_key(message_key)
        _post, created = core.posts.record(key, place.thread_id, STATUS_POST)
        if not (created and core.posts.claim(key, core.owner)):
            return
        with using(core.thread_language(place.thread_id) or core.language_of(place.user)):
            text = queued_text(ahead)
        try:
            ref = core.surface.post(place, Status(place.thread_id, text, running=False), key)
        except Refused as exc:
            log.warning("queued line %s not accepted: %s", key, exc.reason)
            core.posts.mark_complete(key)  # its run posts a status line of its own
            return
        self._posted(key, ref)
        log.info("thread %s: queued behind %d job(s)", place.thread_id, ahead)

    # --- in the job -----------------------------------------------------------------------------------------------

    def status(self, place: Place, key: str, status: Status) -> str | None:
        """The run's status line: the queued line (or the line an earlier attempt of this job posted) updated to
        `status`, else a new one posted. Returns its reference."""
        core, row = self.core, status_key(key)
        post, created = core.posts.record(row, place.thread_id, STATUS_POST)
        if created:
            core.posts.claim(row, core.owner)
        else:
            post = self._settled(row, post)
        ref = post.ts or (None if created else self._find(place, row))
        if ref:
            core.surface.update(place, ref, status)
            return ref
        try:
            ref = core.surface.post(place, status, row)
        except Refused as exc:
            log.warning("could not post a status message: %s", exc.reason)
            core.posts.mark_complete(row)
            return None
        self._posted(row, ref)
        return ref

    def _posted(self, row: str, ref: str) -> None:
        if len(ref) <= REF_MAX:
            self.core.posts.mark_posted(row, ref)
        self.core.posts.mark_complete(row)

    def hand_over(self, place: Place, message_key: str, key: str | None) -> None:
        """A message whose job runs no run of its own (an answer, a hint): no queued line is posted for it after
        now, and one posted before becomes the status line of the run its answer resumes (`key`)."""
        posts, row = self.core.posts, status_key(message_key)
        post, created = posts.record(row, place.thread_id, STATUS_POST)
        if not created:
            post = self._settled(row, post)
        posts.mark_complete(row)
        if post.ts and key is not None:
            target, made = status_key(key), posts.record(status_key(key), place.thread_id, STATUS_POST)[1]
            if made:
                self._posted(target, post.ts)

    def _settled(self, row: str, post: Post) -> Post:
        """The row once nobody else is posting it: it has its message, or it is complete, or this process claimed
        it (a claim a dead process left lapses: at most the claim's length)."""
        posts = self.core.posts
        deadline = time.monotonic() + posts.claim_seconds + 1
        while not (post.ts or post.complete or posts.claim(row, self.core.owner)) and time.monotonic() < deadline:
            time.sleep(0.1)
            post = posts.get(row) or post
        return post

    def _find(self, place: Place, row: str) -> str | None:
        """The status line an earlier attempt posted before it could record it (a crash in between)."""
        try:
            ref = self.core.surface.find(place, row)
        except Refused:
            return None
        if ref:
            self.core.posts.mark_posted(row, ref)
        return ref

    # --- the background service ----------------------------------------------------------------------------------

    def repost(self, post: Post) -> None:
        """An acknowledgement the surface refused is made again; a status line is not posted again (its run posts
        one of its own)."""
        body = post.body
        if post.kind == ACK_POST and isinstance(self.core.surface, AckSurface) and body.get("ref"):
            place = Place(str(body.get("team")), str(body.get("channel")), str(body.get("thread_ts")))
            self._acknowledge(place, post.key, str(body["ref"]))
            return
        self.core.posts.mark_complete(post.key)
