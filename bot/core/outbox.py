"""Questions, results and notices as durable keyed posts on a surface.

Every post is a row first (keyed by its interrupt id, its result checkpoint or its notice key), so showing the same
outcome again after a crash posts nothing twice, and a post the surface refused stays for the background service."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from bot.cards import Card, Pending
from bot.core.kinds import kind_of
from bot.core.surface import (
    Decided,
    Notice,
    Place,
    Prose,
    Question,
    Refused,
    Result,
    StoredFile,
    StreamSurface,
    Surface,
)
from bot.stores.posts import Post, PostStore
from bot.stores.threads import ThreadInfo, ThreadRegistry
from graphs.registry import WORKFLOWS
from tools.i18n import N_, _, using
from tools.runs.hashing import digest
from tools.storage.artifacts import ArtifactRef, ArtifactStore

log = logging.getLogger(__name__)

DECIDED_POST = "decided"  # a card another surface decided: {"ref", "title", "user", "decision", "note"}
AMENDED_POST = "amended"  # a posted result shown again with fields added: {"result", "fields"} (the result's key)
# the stored files' kinds, every one uploaded with its result, and how a person is told each
KIND_WORDS = {"chart": N_("chart"), "signal_csv": N_("signal_csv"), "metrics_csv": N_("metrics_csv"),
              "ic_csv": N_("ic_csv"), "reports": N_("reports")}
UPLOADED_KINDS = tuple(KIND_WORDS)


def kind_word(kind: str) -> str:
    """A stored file's kind as the reader says it (an unknown kind as it is)."""
    return _(KIND_WORDS[kind]) if kind in KIND_WORDS else kind


def place_of(info: ThreadInfo, user: str | None = None) -> Place:
    """Where a registered thread lives; `user`: who is being answered (else its requester)."""
    return Place(info.team_id, info.channel_id, info.thread_ts, user if user is not None else info.user_id or "")


PendingReader = Callable[[str], list[Pending]]  # a thread's open pauses (Runner.pending)


def pending_entry(card: Card) -> dict[str, Any]:
    """What the registry keeps about a pause (a JSON row): its kind and the title its message shows."""
    kind = kind_of(card)
    return {"kind": kind.name, "question": kind.title(card)}


class Outbox:
    def __init__(self, surface: Surface, posts: PostStore, threads: ThreadRegistry, artifacts: ArtifactStore,
                 owner: str, scope: str) -> None:
        """`scope`: the thread-id prefix of the surface: a notice for another surface's thread is only recorded,
        and that surface's background service posts it."""
        self.surface, self.posts, self.threads, self.artifacts = surface, posts, threads, artifacts
        self.owner, self.scope = owner, scope

    def question(self, place: Place, info: ThreadInfo, interrupt: Pending, position: tuple[int, int],
                 pending: PendingReader) -> str | None:
        """Post one question, review or approval once; returns its message's reference. `pending` reads the
        thread's open interrupts (a re-post checks the question is still open)."""
        key = interrupt.id
        _post, created = self.posts.record(key, info.thread_id, "interrupt")
        if created and self.posts.claim(key, self.owner):  # the background service keeps off it
            return self._post_question(place, info, interrupt, position)
        self.repost(key, pending)  # shown before (a crash came after): check, and post only what never arrived
        post = self.posts.get(key)
        return post.ts if post else None

    def _post_question(self, place: Place, info: ThreadInfo, interrupt: Pending,
                       position: tuple[int, int] = (1, 1)) -> str | None:
        content = Question(info.thread_id, interrupt.id, interrupt.card, info.user_id, position)
        ref = self._post(place, interrupt.id, content)
        if ref is not None:
            self.posts.mark_complete(interrupt.id)
        return ref

    def result(self, place: Place, key: str, body: dict[str, Any]) -> None:
        """Post a finished run's result (or reply) once, then its files."""
        _post, created = self.posts.record(key, place.thread_id, "result", body)
        if created and self.posts.claim(key, self.owner):
            self._post_result(place, key, body)
        else:
            self.repost(key)

    def stream(self, place: Place, key: str, title: str, text: str) -> None:
        """Long prose streamed into the thread once (on a surface that streams): its row first, its message's
        reference recorded as soon as the stream starts, so a stream a crash cut short is replaced whole."""
        _post, created = self.posts.record(key, place.thread_id, "stream", {"title": title, "text": text})
        if created and self.posts.claim(key, self.owner):
            self._stream(place, key, Prose(title, text), None)
        else:
            self.repost(key)

    def _stream(self, place: Place, key: str, prose: Prose, half: str | None) -> None:
        """Stream the prose, or replace the message `half` an earlier attempt left with the complete prose."""
        surface = self.surface
        assert isinstance(surface, StreamSurface)
        try:
            ref = (surface.replace(place, half, prose, key) if half else
                   surface.stream(place, prose, key, lambda started: self.posts.mark_posted(key, started)))
        except Refused as exc:
            log.warning("stream %s not completed: %s", key, exc.reason)
            self.posts.mark_failed(key, exc.reason)
            return
        self.posts.mark_posted(key, ref)
        self.posts.mark_complete(key)

    def amend(self, thread_id: str, checkpoint: str, fields: dict[str, Any]) -> bool:
        """Show the result a run posted at `checkpoint` again, in place, with `fields` added to it; once per change
        (a row first), another surface's thread by that surface's background service. Whether there is such a
        result."""
        key = f"result:{thread_id}:{checkpoint}"
        shown = self.posts.get(key)
        if shown is None or not shown.body.get("result"):
            return False
        amended = f"amended:{key}:{digest(fields)[:16]}"
        _post, created = self.posts.record(amended, thread_id, AMENDED_POST, {"result": key, "fields": fields})
        if created and thread_id.startswith(self.scope):
            self.repost(amended)
        return True

    def _amend(self, place: Place, key: str, body: dict[str, Any]) -> None:
        shown = self.posts.get(str(body["result"]))
        posted = shown.body if shown else {}
        workflow, result = posted.get("workflow"), posted.get("result")
        if shown is None or not shown.ts or not result or workflow not in WORKFLOWS:
            log.info("amendment %s not shown: its result has no message", key)  # its own post, if ever, is whole
        else:
            self.surface.update(place, shown.ts, Result(WORKFLOWS[workflow].present({**result, **body["fields"]})))
        self.posts.mark_complete(key)

    def notify(self, thread_id: str, key: str, text: str, users: tuple[str, ...] = ()) -> None:
        """A notice into a thread, once (a fill, a resolved decision, a paused rule); `users`: ids named in it."""
        body = {"text": text, "notice": True, "users": list(users)}
        _post, created = self.posts.record(key, thread_id, "result", body)
        if not (created and thread_id.startswith(self.scope)):
            return
        info = self.threads.get(thread_id)
        if info is not None and self.posts.claim(key, self.owner):
            with using(info.language):
                self._post_result(place_of(info), key, body)

    def _post(self, place: Place, key: str, content: Any) -> str | None:
        try:
            ref = self.surface.post(place, content, key)
        except Refused as exc:
            log.warning("post %s not accepted: %s", key, exc.reason)
            self.posts.mark_failed(key, exc.reason)
            return None
        self.posts.mark_posted(key, ref)
        return ref

    def _post_result(self, place: Place, key: str, body: dict[str, Any], ref: str | None = None) -> None:
        """Post a result (unless `ref` says the surface has it already), then its files; complete once both are
        done."""
        workflow, result = body.get("workflow"), body.get("result")
        if body.get("notice"):
            content: Any = Notice(str(body.get("text") or ""), users=tuple(body.get("users") or ()))
        elif result and workflow in WORKFLOWS:
            content = Result(WORKFLOWS[workflow].present(result))
        else:
            content = Result(text=str(body.get("text") or _("Done.")))
        if not (ref or self._post(place, key, content)):
            return
        if result:
            self.upload(place, result.get("artifacts", []))
        self.posts.mark_complete(key)

    def repost(self, key: str, pending: PendingReader | None = None) -> None:
        """Post a question or result the surface refused before, unless the thread shows it already (a crash can
        come after the surface took a post and before its reference was saved) or the question is no longer
        open. `pending` reads the thread's open interrupts. In the thread's language."""
        post = self.posts.get(key)
        info = self.threads.get(post.thread_id) if post else None
        if post is None or post.complete or info is None or not self.posts.claim(key, self.owner):
            return
        with using(info.language):
            self._repost(key, post, info, pending)

    def _repost(self, key: str, post: Post, info: ThreadInfo, pending: PendingReader | None) -> None:
        place = place_of(info)
        if post.kind == DECIDED_POST:  # its card becomes the decision another surface's process took
            body = post.body
            self.surface.update(place, str(body["ref"]), Decided(str(body["title"]), str(body["user"]),
                                                                 str(body["decision"]), str(body["note"])))
            self.posts.mark_complete(key)
            return
        if post.kind == AMENDED_POST:
            self._amend(place, key, post.body)
            return
        if post.kind == "stream":
            self._stream(place, key, Prose(str(post.body.get("title") or ""), str(post.body.get("text") or "")),
                         post.ts or self.surface.find(place, key))
            return
        ref = post.ts or self.surface.find(place, key)
        if ref and not post.ts:
            self.posts.mark_posted(key, ref)
        if post.kind == "result":
            self._post_result(place, key, post.body, ref)
        elif ref:
            self.posts.mark_complete(key)
        else:
            interrupt = next((p for p in (pending(info.thread_id) if pending else []) if p.id == key), None)
            if interrupt is None:
                self.posts.mark_complete(key)  # answered or moved on meanwhile: nothing left to ask
                return
            ref = self._post_question(place, info, interrupt)
            if ref:
                latest = self.threads.get(info.thread_id) or info  # its pending as of now (info: as of the post)
                shown = dict(latest.pending)
                shown[key] = {**shown.get(key, pending_entry(interrupt.card)), "ts": ref}
                self.threads.update(info.thread_id, pending=shown)

    def upload(self, place: Place, artifacts: list[ArtifactRef]) -> None:
        """Upload the result's chart, CSVs and reports with their bytes from the database, so whichever worker
        finished the run can; a failure is said in the thread (the files stay stored), never with a host path."""
        refs = [a for a in artifacts if a["kind"] in UPLOADED_KINDS]
        stored = [s for s in (self.artifacts.get(a["id"]) for a in refs) if s is not None]
        if len(stored) < len(refs):
            log.warning("%d artifact(s) of thread %s are no longer stored", len(refs) - len(stored), place.thread_id)
        if not stored:
            return
        try:
            self.surface.upload(place, [StoredFile(s.kind, s.data, s.filename, s.title) for s in stored])
        except Refused as exc:
            log.warning("upload failed: %s", exc.reason)
            titles = "\n".join(f"• {s.title} ({s.filename})" for s in stored)
            kept = (_(":warning: I could not upload the files ({reason}). Nothing is lost: they are kept with this "
                      "thread in QuantDesk's database for {days} days and can be posted here again:")
                    if self.artifacts.retention_days else
                    _(":warning: I could not upload the files ({reason}). Nothing is lost: they are kept with this "
                      "thread in QuantDesk's database and can be posted here again:"))
            self.say(place, kept.format(reason=exc.reason, days=self.artifacts.retention_days) + "\n" + titles)

    def say(self, place: Place, text: str, failure: bool = False) -> str | None:
        """A plain message in the thread that need not survive a refusal (a warning, a hint)."""
        try:
            return self.surface.post(place, Notice(text, failure))
        except Refused as exc:
            log.warning("a notice was not accepted: %s", exc.reason)
            return None
