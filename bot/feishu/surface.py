"""The Feishu surface: the core's posts as message cards in a chat's thread (a reply in the thread of its root
message), charts as images and other files as files. A keyed post carries its key as Feishu's idempotency uuid, so
posting it again within the hour Feishu keeps a uuid (a retry, a re-post after a crash) never shows it twice; that
is how `find` is answered."""

from __future__ import annotations

import json
import logging
from typing import Any

from bot.cards import CodeReviewCard
from bot.core.surface import (
    Answered,
    Content,
    Decided,
    Notice,
    Place,
    Question,
    Refused,
    Result,
    RetryOffer,
    Status,
    StoredFile,
    ThreadStart,
)
from bot.feishu import render
from bot.feishu.client import FeishuClient, FeishuError
from bot.surfaces import FEISHU_TEAM
from tools.i18n import _

log = logging.getLogger(__name__)

IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".gif", ".webp")


def card_for(content: Content) -> dict[str, Any]:
    """The card of a content."""
    if isinstance(content, Question):
        return render.question_card(content.thread_id, content.interrupt_id, content.card, content.requester)
    if isinstance(content, Status):
        return render.status_card(content.thread_id, content.text, content.running)
    if isinstance(content, Result):
        return render.view_card(content.view) if content.view else render.notice_card(content.text or _("Done."))
    if isinstance(content, Notice):
        return render.notice_card(content.text, content.users, content.failure)
    if isinstance(content, Decided):
        return render.decided_card(content.title, content.user, content.decision, content.note)
    if isinstance(content, Answered):
        return render.answered_card(content.title, content.user, content.answer)
    if isinstance(content, RetryOffer):
        return render.retry_card("", content.interrupt_id, content.error)
    raise TypeError(f"no Feishu card for {type(content).__name__}")


def _reason(exc: Exception) -> str:
    return str(exc) if isinstance(exc, FeishuError) else type(exc).__name__


class FeishuSurface:
    def __init__(self, client: FeishuClient) -> None:
        self.client = client
        self.chat_types: dict[str, str] = {}  # chat id -> p2p or group, as its messages said

    def post(self, place: Place, content: Content, key: str | None = None) -> str:
        try:
            ref = self.client.reply(place.thread_ts, "interactive", render.content(card_for(content)), key)
        except (FeishuError, OSError) as exc:
            raise Refused(_reason(exc)) from exc
        if (isinstance(content, Question) and isinstance(content.card, CodeReviewCard)
                and len(content.card.code) > render.CODE_INLINE_MAX):
            self._code_beside(place, content.card, key)
        return ref

    def _code_beside(self, place: Place, card: CodeReviewCard, key: str | None) -> None:
        """A code body too long for its card, as a file in the thread (a failure is said, not raised)."""
        try:
            self.upload(place, [StoredFile("code", (card.program or card.code).encode(), f"{card.name}.py",
                                           card.name)])
        except Refused as exc:
            log.warning("the code under review was not attached: %s", exc.reason)
            self.say(place, _("⚠️ I could not attach the code under review; review it with `quantdesk chat`."))

    def say(self, place: Place, text: str) -> None:
        """A notice in the thread whose failure is logged, never raised."""
        try:
            self.client.reply(place.thread_ts, "interactive", render.content(render.notice_card(text)))
        except (FeishuError, OSError) as exc:
            log.warning("Feishu reply failed: %s", _reason(exc))

    def send_card(self, place: Place, card: dict[str, Any]) -> None:
        """A card in the thread (a command's answer); a failure is logged."""
        try:
            self.client.reply(place.thread_ts, "interactive", render.content(card))
        except (FeishuError, OSError) as exc:
            log.warning("Feishu reply failed: %s", _reason(exc))

    def update(self, place: Place, ref: str, content: Content) -> None:
        try:
            self.client.patch(ref, render.content(card_for(content)))
        except (FeishuError, OSError) as exc:
            log.warning("Feishu card update failed: %s", _reason(exc))

    def upload(self, place: Place, files: list[StoredFile]) -> None:
        """Charts as images (im.image.create), the rest as files, each a reply in the thread."""
        try:
            for stored in files:
                if stored.filename.lower().endswith(IMAGE_SUFFIXES):
                    image = self.client.upload_image(stored.data)
                    self.client.reply(place.thread_ts, "image", json.dumps({"image_key": image}))
                else:
                    file = self.client.upload_file(stored.data, stored.filename)
                    self.client.reply(place.thread_ts, "file", json.dumps({"file_key": file}))
        except (FeishuError, OSError) as exc:
            raise Refused(_reason(exc)) from exc

    def find(self, place: Place, key: str) -> str | None:
        """None: a keyed post is sent again with its uuid, and Feishu keeps one message per uuid."""
        return None

    def tell(self, place: Place, text: str) -> None:
        """Only `place.user` sees it: an ephemeral card in a group, a reply in a one-to-one chat."""
        if self.chat_types.get(place.channel) == "p2p":
            self.say(place, text)
            return
        try:
            self.client.ephemeral(place.channel, place.user, render.notice_card(text))
        except (FeishuError, OSError) as exc:
            log.warning("Feishu ephemeral card failed: %s", _reason(exc))

    def open_thread(self, start: ThreadStart, again: bool) -> Place:
        """A new root message in the chat; its marker is the uuid, so a second attempt finds the first's root."""
        text = render.named_text(start.text, start.users)
        try:
            root = self.client.send(start.channel, "text", json.dumps({"text": text}, ensure_ascii=False),
                                    f"root:{start.marker}" if start.marker else None)
        except (FeishuError, OSError) as exc:
            raise Refused(_reason(exc)) from exc
        return Place(FEISHU_TEAM, start.channel, root)

    def locale(self, user: str) -> str | None:
        """None: Feishu's user records carry no locale, so a person speaks the workspace's language until they
        choose theirs (`lang zh`)."""
        return None
