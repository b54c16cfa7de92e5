"""The Slack surface: the core's posts as Block Kit through a bare WebClient (no Bolt app needed, so a worker
process can post). A card whose blocks Slack refuses falls back to its header and buttons (the details go up as a
file beside them), then to plain text; each keyed post carries its key in the message metadata, so `find` can
tell whether an earlier attempt reached the thread."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError

from bot.cards import CodeReviewCard
from bot.core.kinds import kind_of
from bot.core.surface import (
    Answered,
    Content,
    Decided,
    Home,
    Notice,
    Place,
    Prose,
    Question,
    Refused,
    Result,
    RetryOffer,
    Status,
    StoredFile,
    ThreadStart,
)
from bot.slack import render
from bot.slack.assistant_status import AssistantStatuses
from bot.slack.home import home_view
from bot.slack.names import Names, SlackNames, dressed
from tools.i18n import N_, _

log = logging.getLogger(__name__)

POST_EVENT = "quantdesk_post"  # message metadata event type: {"key": interrupt id or result key}
THREAD_EVENT = "quantdesk_rule_run"  # a background run's root message: {"execution": its marker}
BLOCKS_REFUSED = ("invalid_blocks", "invalid_blocks_format", "msg_too_long", "too_many_blocks")
PLAIN_TEXT_NOTE = N_("(Shown as plain text: Slack refused the formatted message. Reply here, or use `quantdesk "
                     "chat`.)")
PLAIN_TEXT_MAX = 39_000
STREAM_CHUNK = 1000  # characters a chat.appendStream carries
SEEN_REACTION = "eyes"  # on a request the bot took in, at once
ASSISTANT_STATUS = "assistant-status:"  # the reference of a status shown in the assistant pane, not as a message


def message_for(content: Content, names: Names | None = None) -> dict[str, Any]:
    """The Block Kit message of a content (`names`: the plain names of the people and channels it names)."""
    if isinstance(content, Question):
        return render.question_message(content.thread_id, content.interrupt_id, content.card, content.requester,
                                       names)
    if isinstance(content, Status):
        return render.status_message(content.thread_id, content.text, content.running)
    if isinstance(content, Result):
        return (render.view_message(content.view, names) if content.view else
                render.reply_message(content.text or _("Done.")))
    if isinstance(content, Notice):
        return dressed(render.reply_message(content.text), content.users, (), names)
    if isinstance(content, Decided):
        return render.decided_message(content.title, content.user, content.decision, content.note, names)
    if isinstance(content, Answered):
        return render.answered_message(content.title, content.user, content.answer, names)
    if isinstance(content, RetryOffer):
        return render.retry_message(content.interrupt_id, content.error)
    raise TypeError(f"no Slack message for {type(content).__name__}")


def in_direct_messages(place: Place) -> bool:
    """A thread in a direct message with the app, where Slack's assistant pane lives (channel ids start with D)."""
    return place.channel.startswith("D")


def assistant_status(content: Status) -> str:
    """A run's status as the assistant pane shows it after the app's name ("QuantDesk is working: …")."""
    return _("is working: {step}").format(step=content.step) if content.step else _("is working…")


def prose_text(prose: Prose) -> str:
    return f"*{prose.title}*\n{prose.text}" if prose.title else prose.text


def carries(message: dict[str, Any], event_type: str, field: str, value: str) -> bool:
    """Whether a Slack message's metadata is of `event_type` with `field` = `value` (how a post finds itself)."""
    metadata = message.get("metadata") or {}
    return metadata.get("event_type") == event_type and (metadata.get("event_payload") or {}).get(field) == value


def _reason(exc: Exception) -> str:
    return str(exc.response.get("error")) if isinstance(exc, SlackApiError) else type(exc).__name__


class SlackSurface:
    def __init__(self, client: WebClient, status_refresh_seconds: float = 90.0) -> None:
        """`status_refresh_seconds`: how often a run's status in the assistant pane is set again."""
        self.client = client
        self.statuses = AssistantStatuses(client, status_refresh_seconds)
        self.names = SlackNames(client)
        self._team: str | None = None  # the workspace's team id, for threads the bot roots itself
        self._url: str | None = None  # the workspace's address (auth.test), for links to threads

    def post(self, place: Place, content: Content, key: str | None = None) -> str:
        if isinstance(content, Status) and in_direct_messages(place) and self.statuses.set(
                place.channel, place.thread_ts, assistant_status(content)):
            return f"{ASSISTANT_STATUS}{place.channel}:{place.thread_ts}"  # the pane shows it: no status message
        message = message_for(content, self.names)
        extra: dict[str, Any] = {"metadata": {"event_type": POST_EVENT, "event_payload": {"key": key}}} if key else {}
        compact = render.compact_message(message)
        forms = [("full", message), *([("compact", compact)] if compact else [])]
        plain = {"text": (message["text"] + "\n" + _(PLAIN_TEXT_NOTE))[:PLAIN_TEXT_MAX]}
        try:
            for form, attempt in forms:
                try:
                    ts = str(self.client.chat_postMessage(channel=place.channel, thread_ts=place.thread_ts, **extra,
                                                          **attempt)["ts"])
                except SlackApiError as exc:
                    if exc.response.get("error") not in BLOCKS_REFUSED:
                        raise
                    continue
                if isinstance(content, Question):
                    self._beside_question(place, content, form)
                return ts
            return str(self.client.chat_postMessage(channel=place.channel, thread_ts=place.thread_ts, **extra,
                                                    **plain)["ts"])
        except (SlackApiError, OSError) as exc:
            raise Refused(_reason(exc)) from exc

    def _beside_question(self, place: Place, question: Question, form: str) -> None:
        """What goes beside a posted card: the details Slack refused to show, as a file; or a code body too long
        to show inline, as a snippet."""
        card, kind = question.card, kind_of(question.card)
        if form != "full":
            self._safe(self.client.files_upload_v2, content=kind.console_text(card), filename="details.txt",
                       title=_("{title} (details)").format(title=kind.title(card)), channel=place.channel,
                       thread_ts=place.thread_ts)
            return
        if not isinstance(card, CodeReviewCard) or len(card.code) <= render.CODE_INLINE_MAX:
            return
        try:
            self.client.files_upload_v2(content=card.program or card.code, filename=f"{card.name}.py",
                                        title=_("{name}.py (code under review)").format(name=card.name),
                                        channel=place.channel, thread_ts=place.thread_ts)
        except (SlackApiError, OSError) as exc:
            log.warning("code snippet upload failed: %s", _reason(exc))
            self._safe(self.client.chat_postMessage, channel=place.channel, thread_ts=place.thread_ts,
                       text=_(":warning: I could not attach the code under review; review it with `quantdesk chat` or "
                              "ask an admin to check the bot's file permissions."))

    def update(self, place: Place, ref: str, content: Content) -> None:
        if ref.startswith(ASSISTANT_STATUS) and isinstance(content, Status):
            if content.running:
                self.statuses.set(place.channel, place.thread_ts, assistant_status(content))
            else:
                self.statuses.clear(place.channel, place.thread_ts)
            return
        self._safe(self.client.chat_update, channel=place.channel, ts=ref, **message_for(content, self.names))

    def acknowledge(self, place: Place, ref: str) -> None:
        """An :eyes: reaction on the person's message (reactions:write); one already there is fine."""
        try:
            self.client.reactions_add(channel=place.channel, timestamp=ref, name=SEEN_REACTION)
        except SlackApiError as exc:
            if exc.response.get("error") != "already_reacted":
                raise Refused(_reason(exc)) from exc
        except OSError as exc:
            raise Refused(_reason(exc)) from exc

    def upload(self, place: Place, files: list[StoredFile]) -> None:
        uploads = [{"content": f.data, "filename": f.filename, "title": f.title} for f in files]
        try:
            self.client.files_upload_v2(file_uploads=uploads, channel=place.channel, thread_ts=place.thread_ts)
        except (SlackApiError, OSError) as exc:
            raise Refused(_reason(exc)) from exc

    def find(self, place: Place, key: str) -> str | None:
        try:
            replies = self.client.conversations_replies(channel=place.channel, ts=place.thread_ts,
                                                        include_all_metadata=True, limit=200)
        except (SlackApiError, OSError) as exc:
            log.warning("could not read the thread to check a re-post: %s", _reason(exc))
            raise Refused(_reason(exc)) from exc
        messages: list[dict[str, Any]] = replies.get("messages", [])
        return next((str(m["ts"]) for m in messages if carries(m, POST_EVENT, "key", key)), None)

    def locale(self, user: str) -> str | None:
        """The user's Slack locale (users.info with include_locale; needs users:read), read once per process; a
        failed read is logged and not kept, so the next message asks again."""
        locale = (self.names.user(user) or {}).get("locale")
        return str(locale) if locale else None

    def tell(self, place: Place, text: str) -> None:
        self._safe(self.client.chat_postEphemeral, channel=place.channel, user=place.user, text=text,
                   thread_ts=place.thread_ts)

    def open_thread(self, start: ThreadStart, again: bool) -> Place:
        """Root a new thread in the channel; `again`: first look for the root an earlier attempt posted (Slack has
        no idempotency key), by the marker in its metadata."""
        try:
            if self._team is None:
                self._team = str(self.client.auth_test()["team_id"])
            root = self._root(start) if again and start.marker else None
            if root is None:
                metadata = ({"event_type": THREAD_EVENT, "event_payload": {"execution": start.marker}}
                            if start.marker else None)  # None: none sent
                text = dressed({"text": start.text}, start.users, (), self.names)["text"]  # no blocks: mentions
                root = str(self.client.chat_postMessage(channel=start.channel, text=text, metadata=metadata)["ts"])
        except (SlackApiError, OSError) as exc:
            raise Refused(_reason(exc)) from exc
        return Place(self._team, start.channel, root)

    def _root(self, start: ThreadStart) -> str | None:
        """The ts of the root an earlier start posted in the channel, if any: the channel's messages newest first,
        page by page, until one older than `start.since` (the root came after it)."""
        cursor = None
        while True:
            page = self.client.conversations_history(channel=start.channel, limit=200, include_all_metadata=True,
                                                     cursor=cursor)
            messages: list[dict[str, Any]] = page.get("messages", [])
            for message in messages:
                if carries(message, THREAD_EVENT, "execution", start.marker):
                    log.info("%s: its root %s was posted before; not posting another", start.marker, message["ts"])
                    return str(message["ts"])
            cursor = (page.get("response_metadata") or {}).get("next_cursor")
            if not (page.get("has_more") and cursor and messages) or float(messages[-1]["ts"]) < start.since:
                return None

    def stream(self, place: Place, prose: Prose, key: str, started: Callable[[str], None]) -> str:
        """chat.startStream to the human (`place.user`; in a channel with their team), appendStream in chunks,
        stopStream with the post's key as metadata (startStream takes none). Where Slack refuses to stream, the
        prose is a keyed message updated chunk by chunk instead."""
        text = prose_text(prose)
        chunks = [text[i:i + STREAM_CHUNK] for i in range(0, len(text), STREAM_CHUNK)] or [""]
        team = None if in_direct_messages(place) else place.team  # None: none sent
        try:
            ts = str(self.client.chat_startStream(channel=place.channel, thread_ts=place.thread_ts,
                                                  markdown_text=chunks[0], recipient_user_id=place.user,
                                                  recipient_team_id=team)["ts"])
        except SlackApiError as exc:
            log.info("streaming refused (%s): the prose is a message updated as it goes", _reason(exc))
            return self._updated_message(place, chunks, key, started)
        except OSError as exc:
            raise Refused(_reason(exc)) from exc
        started(ts)
        try:
            for chunk in chunks[1:]:
                self.client.chat_appendStream(channel=place.channel, ts=ts, markdown_text=chunk)
            self.client.chat_stopStream(channel=place.channel, ts=ts,
                                        metadata={"event_type": POST_EVENT, "event_payload": {"key": key}})
        except (SlackApiError, OSError) as exc:
            raise Refused(_reason(exc)) from exc
        return ts

    def _updated_message(self, place: Place, chunks: list[str], key: str, started: Callable[[str], None]) -> str:
        metadata = {"event_type": POST_EVENT, "event_payload": {"key": key}}
        try:
            ts = str(self.client.chat_postMessage(channel=place.channel, thread_ts=place.thread_ts, text=chunks[0],
                                                  metadata=metadata)["ts"])
            started(ts)
            for end in range(2, len(chunks) + 1):
                self.client.chat_update(channel=place.channel, ts=ts, text="".join(chunks[:end]))
        except (SlackApiError, OSError) as exc:
            raise Refused(_reason(exc)) from exc
        return ts

    def replace(self, place: Place, ref: str, prose: Prose, key: str) -> str:
        """The complete prose over a half stream: chat.update (a stream its dead process never stopped may refuse
        it), else the half is deleted and the whole posted again."""
        text = prose_text(prose)
        metadata = {"event_type": POST_EVENT, "event_payload": {"key": key}}
        try:
            self.client.chat_update(channel=place.channel, ts=ref, text=text, metadata=metadata)
            return ref
        except (SlackApiError, OSError) as exc:
            log.info("the half stream %s was not updated (%s): posting it whole", ref, _reason(exc))
        try:
            ts = str(self.client.chat_postMessage(channel=place.channel, thread_ts=place.thread_ts, text=text,
                                                  metadata=metadata)["ts"])
        except (SlackApiError, OSError) as exc:
            raise Refused(_reason(exc)) from exc
        self._safe(self.client.chat_delete, channel=place.channel, ts=ref)
        return ts

    def publish_home(self, user: str, home: Home) -> None:
        try:
            self.client.views_publish(user_id=user, view=home_view(home, self.permalink, self.names))
        except (SlackApiError, OSError) as exc:
            raise Refused(_reason(exc)) from exc

    def permalink(self, place: Place) -> str | None:
        """A thread's address in the workspace (Slack's permalink form), or None when auth.test cannot say."""
        if self._url is None:
            try:
                self._url = str(self.client.auth_test().get("url") or "")
            except (SlackApiError, OSError) as exc:
                log.warning("could not read the workspace's address: %s", _reason(exc))
                return None
        if not self._url:
            return None
        return (f"{self._url.rstrip('/')}/archives/{place.channel}/p{place.thread_ts.replace('.', '')}"
                f"?thread_ts={place.thread_ts}&cid={place.channel}")

    @staticmethod
    def _safe(method: Any, **kwargs: Any) -> None:
        """A Slack call whose failure (an API error or a dropped connection) must not stop the run."""
        try:
            method(**kwargs)
        except (SlackApiError, OSError) as exc:
            log.warning("Slack call failed: %s", _reason(exc))
